//! The expiry of test cases written before they were forgotten (`mq-admin test-cases expire`):
//! a one-off after an upgrade, a `Scan` of the TestHealth table, never done by the service.

use super::DynamoStore;
use super::codec::{Item, from_item, n, s};
use super::health::{CASE_SK, case_expires_at};
use super::keys::{EXPIRES_AT, PK, SK, VERSION};
use super::requests::map_sdk_error;
use crate::error::StoreError;
use crate::port::StoreResult;
use mq_core::health::TestCase;

/// What [`DynamoStore::expire_forgotten_tests`] did with the test cases it found without an
/// expiry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpiryBackfill {
    /// Given one.
    pub given: usize,
    /// Kept by a user's quarantine override: they get none.
    pub kept: usize,
    /// Written meanwhile (the write gave them theirs), or not readable by this version
    /// (logged): left as they are.
    pub skipped: usize,
}

/// What became of one test case.
enum Expiry {
    Given,
    Kept,
    Skipped,
}

impl DynamoStore {
    /// Gives every test case item without an expiry (written by a version before test cases
    /// were forgotten) the one it is written with now
    /// ([`TestCase::forgotten_after`]): a test last seen more than 90 days ago, a BROKEN one
    /// removed from the code among them, then leaves the lists within days. An item written
    /// meanwhile (its version moved on) is left as that write made it.
    pub async fn expire_forgotten_tests(&self) -> StoreResult<ExpiryBackfill> {
        let mut done = ExpiryBackfill::default();
        let mut start = None;
        loop {
            let page = self
                .client()
                .scan()
                .table_name(&self.tables().test_health)
                .filter_expression("#sk = :case AND attribute_not_exists(#e)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_names("#e", EXPIRES_AT)
                .expression_attribute_values(":case", s(CASE_SK))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(map_sdk_error)?;
            for item in page.items() {
                match self.give_expiry(item).await? {
                    Expiry::Given => done.given += 1,
                    Expiry::Kept => done.kept += 1,
                    Expiry::Skipped => done.skipped += 1,
                }
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(done);
            }
        }
    }

    /// Sets the expiry of the test case `item` unless it is kept, or was written meanwhile.
    async fn give_expiry(&self, item: &Item) -> StoreResult<Expiry> {
        let (case, pk) = match (from_item::<TestCase>(item.clone()), item.get(PK)) {
            (Ok(case), Some(pk)) => (case, pk.clone()),
            (Err(e), _) => {
                let pk = item.get(PK).and_then(|v| v.as_s().ok());
                tracing::warn!(?pk, error = %e, "a test case not readable: left as it is");
                return Ok(Expiry::Skipped);
            }
            (_, None) => return Ok(Expiry::Skipped),
        };
        let Some(expires) = case_expires_at(&case) else {
            return Ok(Expiry::Kept);
        };
        let update = self
            .client()
            .update_item()
            .table_name(&self.tables().test_health)
            .key(PK, pk)
            .key(SK, s(CASE_SK))
            .update_expression("SET #e = :e")
            .condition_expression("#v = :v")
            .expression_attribute_names("#e", EXPIRES_AT)
            .expression_attribute_names("#v", VERSION)
            .expression_attribute_values(":e", n(expires))
            .expression_attribute_values(":v", n(case.version))
            .send()
            .await;
        match update.map_err(map_sdk_error) {
            Ok(_) => Ok(Expiry::Given),
            Err(StoreError::Conflict) => Ok(Expiry::Skipped),
            Err(e) => Err(e),
        }
    }
}
