//! Idempotency keys on DynamoDB: one item per scope, claimed with a conditional put and
//! removed by TTL (`expires_at`, epoch seconds) once kept long enough.

use super::DynamoStore;
use super::codec::{from_optional_item, hash_key, n, s, to_item};
use super::keys::{EXPIRES_AT, PK};
use super::requests::map_sdk_error;
use crate::error::StoreError;
use crate::port::{Claim, IdempotencyRecord, IdempotencyStore, StoreResult, StoredResponse};
use async_trait::async_trait;
use mq_core::time::Timestamp;

/// A claim is refused when the item exists, has not expired and is answered or fresh.
const CLAIM_CONDITION: &str = "attribute_not_exists(#pk) OR #keep <= :now \
     OR (attribute_not_exists(#response) AND #claimed < :stale)";

impl DynamoStore {
    async fn idempotency_record(&self, scope: &str) -> StoreResult<Option<IdempotencyRecord>> {
        let item = self.get_item(&self.tables.idempotency_keys, hash_key(PK, scope));
        from_optional_item(item.await?)
    }
}

#[async_trait]
impl IdempotencyStore for DynamoStore {
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> StoreResult<Claim> {
        let mut fresh = record.clone();
        fresh.response = None;
        let item = to_item(
            &fresh,
            &[
                (PK, s(&record.scope)),
                (EXPIRES_AT, n(record.keep_until.millis() / 1000 + 1)),
            ],
        )?;
        // The item can change between a refused put and the read: try again a few times.
        for _ in 0..3 {
            let result = self
                .client
                .put_item()
                .table_name(&self.tables.idempotency_keys)
                .set_item(Some(item.clone()))
                .condition_expression(CLAIM_CONDITION)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#keep", "keep_until")
                .expression_attribute_names("#response", "response")
                .expression_attribute_names("#claimed", "claimed_at")
                .expression_attribute_values(":now", n(now.millis()))
                .expression_attribute_values(":stale", n(stale_before.millis()))
                .send()
                .await;
            match result.map_err(map_sdk_error) {
                Ok(_) => return Ok(Claim::Claimed),
                Err(StoreError::Conflict) => {
                    if let Some(existing) = self.idempotency_record(&record.scope).await? {
                        return Ok(Claim::found(record, existing));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict)
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        claim_id: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        let stored = serde_dynamo::to_attribute_value(response).map_err(StoreError::internal)?;
        self.client
            .update_item()
            .table_name(&self.tables.idempotency_keys)
            .set_key(Some(hash_key(PK, scope)))
            .update_expression("SET #response = :response")
            .condition_expression("#claim = :claim")
            .expression_attribute_names("#response", "response")
            .expression_attribute_names("#claim", "claim_id")
            .expression_attribute_values(":response", stored)
            .expression_attribute_values(":claim", s(claim_id))
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(())
    }

    async fn release_idempotency_key(&self, scope: &str, claim_id: &str) -> StoreResult<()> {
        let table = &self.tables.idempotency_keys;
        let released = self.delete_item_if(table, hash_key(PK, scope), "claim_id", s(claim_id));
        match released.await {
            Ok(_) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
