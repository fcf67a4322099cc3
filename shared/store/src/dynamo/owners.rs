//! Owner links on DynamoDB: items of the ApiTokens table keyed `owner#<host/owner>`, of kind
//! `owner`, so a request's token and its repository's owner are looked up in one table.

use super::codec::{from_item, n, s, to_item};
use super::keys::*;
use super::{DynamoStore, map_sdk_error};
use crate::error::StoreError;
use crate::port::{OwnerLink, OwnerStore, StoreResult};
use async_trait::async_trait;
use mq_core::ids::{OrgId, OwnerRef};

/// The item key of an owner's link.
fn owner_item_key(owner_key: &str) -> String {
    format!("{OWNER_KEY_PREFIX}{}", owner_key.to_ascii_lowercase())
}

#[async_trait]
impl OwnerStore for DynamoStore {
    async fn owner_link(&self, owner_key: &str) -> StoreResult<Option<OwnerLink>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.tables.api_tokens)
            .key(TOKEN_HASH, s(owner_item_key(owner_key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(map_sdk_error)?;
        out.item.map(from_item).transpose()
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
        let put = self
            .client
            .put_item()
            .table_name(&self.tables.api_tokens)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#h)")
            .expression_attribute_names("#h", TOKEN_HASH)
            .send()
            .await
            .map_err(map_sdk_error);
        match put {
            Err(StoreError::Conflict) => match self.owner_link(&link.owner.key()).await? {
                Some(existing) if existing.org == link.org => Ok(()),
                _ => Err(StoreError::AlreadyExists),
            },
            other => other.map(|_| ()),
        }
    }

    async fn unlink_owner(&self, owner: &OwnerRef, org: &OrgId) -> StoreResult<()> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.tables.api_tokens)
            .key(TOKEN_HASH, s(owner_item_key(&owner.key())))
            .condition_expression("#o = :o")
            .expression_attribute_names("#o", "org")
            .expression_attribute_values(":o", s(org.as_str()))
            .send()
            .await
            .map_err(map_sdk_error);
        match deleted {
            Err(StoreError::Conflict) => Err(StoreError::NotFound),
            other => other.map(|_| ()),
        }
    }

    async fn owner_links(&self) -> StoreResult<Vec<OwnerLink>> {
        let mut links: Vec<OwnerLink> = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.tables.api_tokens)
                .index_name(CREATED_INDEX)
                .key_condition_expression("#k = :k")
                .expression_attribute_names("#k", KIND)
                .expression_attribute_values(":k", s(OWNER_KIND))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(map_sdk_error)?;
            for item in out.items.unwrap_or_default() {
                links.push(from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        links.sort_by_key(|l| l.owner.key());
        Ok(links)
    }
}
