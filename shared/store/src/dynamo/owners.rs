//! Owner links on DynamoDB: items of the ApiTokens table keyed `owner#<host/owner>`, of kind
//! `owner`, so a request's token and its repository's owner are looked up in one table.

use super::DynamoStore;
use super::codec::{Item, from_items, from_optional_item, hash_key, n, s, to_item};
use super::keys::*;
use super::requests::query_all;
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
                Some(existing) if existing.org == link.org => Ok(()),
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
