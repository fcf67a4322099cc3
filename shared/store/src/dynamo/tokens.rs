//! API tokens on DynamoDB, keyed by the hash of the secret.

use super::DynamoStore;
use super::codec::{from_items, from_optional_item, hash_key, n, s, to_item};
use super::keys::*;
use super::requests::{map_sdk_error, query_all};
use crate::error::StoreError;
use crate::port::{StoreResult, TokenRecord, TokenStore};
use async_trait::async_trait;
use mq_core::time::Timestamp;

#[async_trait]
impl TokenStore for DynamoStore {
    async fn find_token(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>> {
        let key = hash_key(TOKEN_HASH, token_hash);
        from_optional_item(self.get_item(&self.tables.api_tokens, key).await?)
    }

    async fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        let item = to_item(token, &[(KIND, s(TOKEN_KIND))])?;
        match self
            .put_new_item(&self.tables.api_tokens, item, TOKEN_HASH)
            .await
        {
            Err(StoreError::Conflict) => Err(StoreError::AlreadyExists),
            other => other,
        }
    }

    async fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        let query = self.index_query(&self.tables.api_tokens, CREATED_INDEX, KIND, TOKEN_KIND);
        from_items(query_all(query).await?)
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
            .set_key(Some(hash_key(TOKEN_HASH, &token.token_hash)))
            .update_expression("SET #r = if_not_exists(#r, :at)")
            .expression_attribute_names("#r", "revoked_at")
            .expression_attribute_values(":at", n(at.millis()))
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(())
    }
}
