//! Owner links on DynamoDB: items of the ApiTokens table keyed `owner#<host/owner>`, of kind
//! `owner`, so a request's token and its repository's owner are looked up in one table.

use super::DynamoStore;
use super::codec::{Item, from_items, from_optional_item, hash_key, n, s, to_item};
use super::keys::*;
use super::requests::{map_sdk_error, query_all};
use crate::error::StoreError;
use crate::port::{OwnerLink, OwnerStore, StoreResult};
use async_trait::async_trait;
use mq_core::ids::{OrgId, OwnerRef};

/// The item key of an owner's link.
fn owner_item_key(owner_key: &str) -> String {
    format!("{OWNER_KEY_PREFIX}{}", owner_key.to_ascii_lowercase())
}

/// The key of an owner's link.
fn link_key(owner_key: &str) -> Item {
    hash_key(TOKEN_HASH, &owner_item_key(owner_key))
}

impl DynamoStore {
    /// Records `account` on `link`'s owner's link, while it is still linked to `link.org` and
    /// records none (one write: the link is never absent meanwhile); `AlreadyExists` when
    /// that no longer holds.
    async fn record_account(&self, link: &OwnerLink, account: u64) -> StoreResult<()> {
        let updated = self
            .client
            .update_item()
            .table_name(&self.tables.api_tokens)
            .set_key(Some(link_key(&link.owner.key())))
            .update_expression("SET #account = :account")
            .condition_expression("#org = :org AND attribute_not_exists(#account)")
            .expression_attribute_names("#account", "account_id")
            .expression_attribute_names("#org", "org")
            .expression_attribute_values(":account", n(account))
            .expression_attribute_values(":org", s(link.org.as_str()))
            .send()
            .await
            .map_err(map_sdk_error);
        match updated {
            Err(StoreError::Conflict) => match self.owner_link(&link.owner.key()).await? {
                Some(now) if now.org == link.org && now.account_id == Some(account) => Ok(()),
                _ => Err(StoreError::AlreadyExists),
            },
            other => other.map(drop),
        }
    }
}

#[async_trait]
impl OwnerStore for DynamoStore {
    async fn owner_link(&self, owner_key: &str) -> StoreResult<Option<OwnerLink>> {
        let key = link_key(owner_key);
        from_optional_item(self.get_item(&self.tables.api_tokens, key).await?)
    }

    async fn link_owner(&self, link: &OwnerLink) -> StoreResult<()> {
        let item = to_item(
            link,
            &[
                (TOKEN_HASH, s(owner_item_key(&link.owner.key()))),
                (KIND, s(OWNER_KIND)),
                (CREATED_AT, n(link.linked_at.millis())),
            ],
        )?;
        let put = self.put_new_item(&self.tables.api_tokens, item, TOKEN_HASH);
        match put.await {
            Err(StoreError::Conflict) => match self.owner_link(&link.owner.key()).await? {
                Some(existing) if existing.org == link.org => {
                    match (existing.account_id, link.account_id) {
                        (None, Some(account)) => self.record_account(link, account).await,
                        _ => Ok(()),
                    }
                }
                _ => Err(StoreError::AlreadyExists),
            },
            other => other,
        }
    }

    async fn unlink_owner(&self, owner: &OwnerRef, org: &OrgId) -> StoreResult<()> {
        let key = link_key(&owner.key());
        let deleted = self.delete_item_if(&self.tables.api_tokens, key, "org", s(org.as_str()));
        match deleted.await {
            Err(StoreError::Conflict) => Err(StoreError::NotFound),
            other => other,
        }
    }

    async fn owner_links(&self) -> StoreResult<Vec<OwnerLink>> {
        let query = self.index_query(&self.tables.api_tokens, CREATED_INDEX, KIND, OWNER_KIND);
        let mut links: Vec<OwnerLink> = from_items(query_all(query).await?)?;
        links.sort_by_key(|l| l.owner.key());
        Ok(links)
    }
}
