//! Idempotency keys in memory, with the DynamoDB adapter's conditions.

use super::MemoryStore;
use crate::error::StoreError;
use crate::port::{Claim, IdempotencyRecord, IdempotencyStore, StoreResult, StoredResponse};
use async_trait::async_trait;
use mq_core::time::Timestamp;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// The records, by scope.
#[derive(Default)]
pub(crate) struct IdempotencyKeys {
    inner: Mutex<HashMap<String, IdempotencyRecord>>,
}

impl IdempotencyKeys {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, IdempotencyRecord>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `existing` still holds its scope: not expired, and answered or freshly claimed.
pub(crate) fn still_holds(
    existing: &IdempotencyRecord,
    now: Timestamp,
    stale_before: Timestamp,
) -> bool {
    existing.keep_until > now
        && (existing.response.is_some() || existing.claimed_at >= stale_before)
}

#[async_trait]
impl IdempotencyStore for MemoryStore {
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> StoreResult<Claim> {
        let mut records = self.idempotency.lock();
        if let Some(existing) = records.get(&record.scope)
            && still_holds(existing, now, stale_before)
        {
            return Ok(Claim::found(record, existing.clone()));
        }
        let mut fresh = record.clone();
        fresh.response = None;
        records.insert(record.scope.clone(), fresh);
        Ok(Claim::Claimed)
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        claim_id: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        let mut records = self.idempotency.lock();
        match records.get_mut(scope) {
            Some(r) if r.claim_id == claim_id => {
                r.response = Some(response.clone());
                Ok(())
            }
            _ => Err(StoreError::Conflict),
        }
    }

    async fn release_idempotency_key(&self, scope: &str, claim_id: &str) -> StoreResult<()> {
        let mut records = self.idempotency.lock();
        if records.get(scope).is_some_and(|r| r.claim_id == claim_id) {
            records.remove(scope);
        }
        Ok(())
    }
}
