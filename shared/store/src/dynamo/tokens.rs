//! API tokens on DynamoDB, keyed by the hash of the secret.

use super::codec::{from_item, n, s, to_item};
use super::keys::*;
use super::{DynamoStore, map_sdk_error};
use crate::error::StoreError;
use crate::port::{StoreResult, TokenRecord, TokenStore};
use async_trait::async_trait;
use mq_core::time::Timestamp;
use std::collections::HashMap;

#[async_trait]
impl TokenStore for DynamoStore {
    async fn find_token(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.tables.api_tokens)
            .key(TOKEN_HASH, s(token_hash))
            .consistent_read(true)
            .send()
            .await
            .map_err(map_sdk_error)?;
        out.item.map(from_item).transpose()
    }

    async fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        let item = to_item(token, &[(KIND, s(TOKEN_KIND))])?;
        let result = self
            .client
            .put_item()
            .table_name(&self.tables.api_tokens)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#h)")
            .expression_attribute_names("#h", TOKEN_HASH)
            .send()
            .await;
        match result.map_err(map_sdk_error) {
            Err(StoreError::Conflict) => Err(StoreError::AlreadyExists),
            other => other.map(|_| ()),
        }
    }

    async fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        let mut tokens = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.tables.api_tokens)
                .index_name(CREATED_INDEX)
                .key_condition_expression("#k = :k")
                .expression_attribute_names("#k", KIND)
                .expression_attribute_values(":k", s(TOKEN_KIND))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(map_sdk_error)?;
            for item in out.items.unwrap_or_default() {
                tokens.push(from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(tokens),
            }
        }
    }

    async fn revoke_token(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        let token = self
            .list_tokens()
            .await?
            .into_iter()
            .find(|t| t.id == id)
            .ok_or(StoreError::NotFound)?;
        self.client
            .update_item()
            .table_name(&self.tables.api_tokens)
            .set_key(Some(HashMap::from([(
                TOKEN_HASH.to_owned(),
                s(token.token_hash),
            )])))
            .update_expression("SET #r = if_not_exists(#r, :at)")
            .expression_attribute_names("#r", "revoked_at")
            .expression_attribute_values(":at", n(at.millis()))
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(())
    }
}
