//! The DynamoDB requests every table's code sends: reads and writes of one item, batches,
//! transactions and paged queries, the retry of what DynamoDB leaves unprocessed, and the one
//! mapping of SDK errors to [`StoreError`].

use super::DynamoStore;
use super::codec::{Item, s};
use super::keys::{PK, SK};
use super::transaction_limits::{DYNAMODB_TRANSACTION_BYTES, actions_bytes};
use crate::error::StoreError;
use crate::port::StoreResult;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, KeysAndAttributes, PutRequest, TransactWriteItem,
    WriteRequest,
};
use std::collections::HashMap;
use std::time::Duration;

/// BatchGetItem reads at most this many keys.
const MAX_BATCH_GET: usize = 100;
/// BatchWriteItem takes at most this many requests.
const MAX_BATCH_WRITE: usize = 25;
/// Retries of unprocessed items or keys before the store counts as unavailable.
const MAX_RETRIES: u32 = 9;
/// What a batch request that kept leaving items unprocessed answers.
const UNPROCESSED: &str = "DynamoDB left items unprocessed";

/// Error codes of DynamoDB's answers worth retrying: throttling, capacity, a failure or an
/// outage of the service (HTTP 500 and 503), and a transaction sent again while the first
/// attempt is still being applied (the SDK retried it: it may well land).
const RETRYABLE_CODES: [&str; 10] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "LimitExceededException",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
    "RequestTimeout",
    "TransactionInProgressException",
    // A single write that met a transaction on its item.
    "TransactionConflictException",
];

/// A retryable error: DynamoDB throttled, did not answer or left work undone.
fn unavailable(message: impl Into<String>) -> StoreError {
    StoreError::Unavailable {
        message: message.into(),
        retry_after: Some(Duration::from_secs(1)),
    }
}

/// Maps an SDK error to a store error: a failed condition is a `Conflict`; throttling, a
/// failure of the service, transport problems and answers without an error code (a proxy's
/// 502 or 504) are `Unavailable` (retryable, and the write may have happened); anything else
/// (a request DynamoDB refused as invalid) is `Internal`.
pub(crate) fn map_sdk_error<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            unavailable("DynamoDB did not answer")
        }
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or_default();
            if code == "ConditionalCheckFailedException" {
                StoreError::Conflict
            } else if code.is_empty() || RETRYABLE_CODES.contains(&code) {
                unavailable(code)
            } else {
                StoreError::Internal(format!(
                    "{code}: {}",
                    service.err().message().unwrap_or_default()
                ))
            }
        }
        _ => StoreError::Internal(err.to_string()),
    }
}

/// A cancelled transaction: a failed condition or a conflicting transaction is a `Conflict`
/// (it wins over throttling of another action: a retry must read again anyway); throttling is
/// `Unavailable`; anything else (a validation error, an item collection too large) is
/// `Internal`.
fn cancellation_error(reasons: &[CancellationReason]) -> StoreError {
    let codes: Vec<&str> = reasons.iter().filter_map(|r| r.code()).collect();
    let any = |wanted: [&str; 2]| codes.iter().any(|c| wanted.contains(c));
    if any(["ConditionalCheckFailed", "TransactionConflict"]) {
        StoreError::Conflict
    } else if any(["ThrottlingError", "ProvisionedThroughputExceeded"]) {
        unavailable("transaction throttled")
    } else {
        StoreError::Internal(format!("transaction cancelled: {codes:?}"))
    }
}

/// Waits before retry number `retry` (0 first): 25 ms, doubling up to 1.6 s; `Unavailable`,
/// saying `gave_up`, once [`MAX_RETRIES`] retries did not succeed.
pub(crate) async fn backoff(retry: u32, gave_up: &str) -> StoreResult<()> {
    if retry >= MAX_RETRIES {
        return Err(unavailable(gave_up));
    }
    tokio::time::sleep(retry_delay(retry)).await;
    Ok(())
}

/// The wait before retry number `retry` (0 first): 25 ms, doubling up to 1.6 s.
fn retry_delay(retry: u32) -> Duration {
    Duration::from_millis(25 << retry.min(6))
}

/// A failed transaction.
pub(crate) struct TransactionFailed {
    pub error: StoreError,
    /// The reasons, one per action in order, when DynamoDB cancelled the transaction.
    pub reasons: Option<Vec<CancellationReason>>,
}

impl TransactionFailed {
    /// Whether the transaction was cancelled only because another one was writing its items
    /// at the same moment (no condition failed): trying again may well succeed.
    pub fn met_another_transaction(&self) -> bool {
        let codes: Vec<&str> = self
            .reasons
            .iter()
            .flatten()
            .filter_map(|r| r.code())
            .collect();
        codes.contains(&"TransactionConflict") && !codes.contains(&"ConditionalCheckFailed")
    }
}

impl DynamoStore {
    /// The item at `key` (a consistent read); `None` when there is none.
    pub(crate) async fn get_item(&self, table: &str, key: Item) -> StoreResult<Option<Item>> {
        let out = self
            .client
            .get_item()
            .table_name(table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(out.item)
    }

    /// Puts `item`, replacing whatever has its key.
    pub(crate) async fn put_item(&self, table: &str, item: Item) -> StoreResult<()> {
        self.client
            .put_item()
            .table_name(table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(())
    }

    /// Puts `item` if no item has its key (`key_attribute` names the table's partition key);
    /// `Conflict`, and nothing written, when one has.
    pub(crate) async fn put_new_item(
        &self,
        table: &str,
        item: Item,
        key_attribute: &str,
    ) -> StoreResult<()> {
        self.client
            .put_item()
            .table_name(table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", key_attribute)
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(())
    }

    /// Deletes the item at `key` if its attribute `name` is `value`; `Conflict` when it is
    /// not, or there is no item.
    pub(crate) async fn delete_item_if(
        &self,
        table: &str,
        key: Item,
        name: &str,
        value: AttributeValue,
    ) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(table)
            .set_key(Some(key))
            .condition_expression("#a = :a")
            .expression_attribute_names("#a", name)
            .expression_attribute_values(":a", value)
            .send()
            .await
            .map_err(map_sdk_error)?;
        Ok(())
    }

    /// Writes `actions` in one transaction: all of them or none.
    pub(crate) async fn transact(&self, actions: Vec<TransactWriteItem>) -> StoreResult<()> {
        self.transact_write(actions).await.map_err(|f| f.error)
    }

    /// [`DynamoStore::transact`], with the cancellation reasons of a failure.
    pub(crate) async fn transact_write(
        &self,
        actions: Vec<TransactWriteItem>,
    ) -> Result<(), TransactionFailed> {
        debug_assert!(
            actions_bytes(&actions) <= DYNAMODB_TRANSACTION_BYTES,
            "a transaction of {} bytes: DynamoDB refuses more than {DYNAMODB_TRANSACTION_BYTES}",
            actions_bytes(&actions)
        );
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(actions))
            .send()
            .await;
        let Err(err) = result else {
            return Ok(());
        };
        Err(match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(e)) => TransactionFailed {
                error: cancellation_error(e.cancellation_reasons()),
                reasons: Some(e.cancellation_reasons().to_vec()),
            },
            _ => TransactionFailed {
                error: map_sdk_error(err),
                reasons: None,
            },
        })
    }

    /// Reads the items at `keys` (table, key) with consistent reads, 100 keys per
    /// `BatchGetItem` in the order given, retrying unprocessed keys. Returns what exists, with
    /// its table, in no particular order, each item once: a key asked twice is read once
    /// (DynamoDB refuses a batch that names a key twice).
    pub(crate) async fn batch_get(
        &self,
        keys: Vec<(String, Item)>,
    ) -> StoreResult<Vec<(String, Item)>> {
        let mut keys = distinct(keys);
        let mut found = Vec::new();
        while !keys.is_empty() {
            let rest = keys.split_off(keys.len().min(MAX_BATCH_GET));
            let mut request: HashMap<String, KeysAndAttributes> = HashMap::new();
            for (table, keys) in group_by_table(std::mem::replace(&mut keys, rest)) {
                let keys = KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .consistent_read(true)
                    .build()
                    .map_err(StoreError::internal)?;
                request.insert(table, keys);
            }
            for retry in 0.. {
                let out = self
                    .client
                    .batch_get_item()
                    .set_request_items(Some(request))
                    .send()
                    .await
                    .map_err(map_sdk_error)?;
                for (table, items) in out.responses.unwrap_or_default() {
                    found.extend(items.into_iter().map(|i| (table.clone(), i)));
                }
                request = out.unprocessed_keys.unwrap_or_default();
                if request.is_empty() {
                    break;
                }
                backoff(retry, UNPROCESSED).await?;
            }
        }
        Ok(found)
    }

    /// Puts `items` (table, item) outside a transaction, 25 per `BatchWriteItem`, retrying
    /// unprocessed ones, each retry waiting longer (up to 1.6 s). It gives up only after
    /// [`MAX_RETRIES`] calls in a row that wrote none of their items: a partition written
    /// faster than it takes writes part of each call, and a large write goes on while it
    /// progresses.
    pub(crate) async fn batch_put(&self, items: Vec<(String, Item)>) -> StoreResult<()> {
        let mut pending = items
            .into_iter()
            .map(|(table, item)| {
                let put = PutRequest::builder().set_item(Some(item)).build()?;
                Ok((table, WriteRequest::builder().put_request(put).build()))
            })
            .collect::<Result<Vec<_>, aws_sdk_dynamodb::error::BuildError>>()
            .map_err(StoreError::internal)?;
        let (mut retries, mut stalled) = (0u32, 0u32);
        while !pending.is_empty() {
            let chunk: Vec<_> = pending
                .drain(..pending.len().min(MAX_BATCH_WRITE))
                .collect();
            let sent = chunk.len();
            let out = self
                .client
                .batch_write_item()
                .set_request_items(Some(group_by_table(chunk)))
                .send()
                .await
                .map_err(map_sdk_error)?;
            let unprocessed = out.unprocessed_items.unwrap_or_default();
            let before = pending.len();
            for (table, requests) in unprocessed {
                pending.extend(requests.into_iter().map(|r| (table.clone(), r)));
            }
            let left = pending.len() - before;
            if left > 0 {
                stalled = if left < sent { 0 } else { stalled + 1 };
                if stalled >= MAX_RETRIES {
                    return Err(unavailable(UNPROCESSED));
                }
                tokio::time::sleep(retry_delay(retries)).await;
                retries += 1;
            }
        }
        Ok(())
    }
}

/// `keys` (table, key) without repeats, in their first order.
fn distinct(keys: Vec<(String, Item)>) -> Vec<(String, Item)> {
    let mut seen = std::collections::HashSet::new();
    keys.into_iter()
        .filter(|(table, key)| {
            let mut fields: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
            fields.sort_unstable();
            seen.insert((table.clone(), fields))
        })
        .collect()
}

fn group_by_table<T>(requests: Vec<(String, T)>) -> HashMap<String, Vec<T>> {
    let mut by_table: HashMap<String, Vec<T>> = HashMap::new();
    for (table, request) in requests {
        by_table.entry(table).or_default().push(request);
    }
    by_table
}

/// A query read page by page, each from where the last one stopped (`LastEvaluatedKey`).
pub(crate) struct Pages {
    query: QueryFluentBuilder,
    start: Option<Item>,
    done: bool,
}

impl Pages {
    pub(crate) fn of(query: QueryFluentBuilder) -> Self {
        Self {
            query,
            start: None,
            done: false,
        }
    }

    /// Whether the last page has been read.
    pub(crate) fn finished(&self) -> bool {
        self.done
    }

    /// The next page, of at most `limit` items when given; `None` after the last.
    pub(crate) async fn next(&mut self, limit: Option<i32>) -> StoreResult<Option<QueryOutput>> {
        if self.done {
            return Ok(None);
        }
        let out = self
            .query
            .clone()
            .set_limit(limit)
            .set_exclusive_start_key(self.start.take())
            .send()
            .await
            .map_err(map_sdk_error)?;
        match &out.last_evaluated_key {
            Some(k) if !k.is_empty() => self.start = Some(k.clone()),
            _ => self.done = true,
        }
        Ok(Some(out))
    }
}

/// Every item of a query, to its last page.
pub(crate) async fn query_all(query: QueryFluentBuilder) -> StoreResult<Vec<Item>> {
    let mut pages = Pages::of(query);
    let mut items = Vec::new();
    while let Some(out) = pages.next(None).await? {
        items.extend(out.items.unwrap_or_default());
    }
    Ok(items)
}

/// The first `limit` items of a query: pages of what is still wanted (at most 1,000) until
/// enough came back (filters may make pages short) or the query ends.
pub(crate) async fn query_up_to(query: QueryFluentBuilder, limit: usize) -> StoreResult<Vec<Item>> {
    let mut pages = Pages::of(query);
    let mut items = Vec::new();
    while items.len() < limit {
        let want = (limit - items.len()).min(1000) as i32;
        let Some(out) = pages.next(Some(want)).await? else {
            break;
        };
        items.extend(out.items.unwrap_or_default());
    }
    items.truncate(limit);
    Ok(items)
}

/// How many items a query (with `Select::Count`) matches, over all its pages.
pub(crate) async fn query_count(query: QueryFluentBuilder) -> StoreResult<u64> {
    let mut pages = Pages::of(query);
    let mut total = 0u64;
    while let Some(out) = pages.next(None).await? {
        total += out.count.max(0) as u64;
    }
    Ok(total)
}

impl DynamoStore {
    /// A query of the items of partition `pk` of `table` (a consistent read).
    pub(crate) fn partition_query(&self, table: &str, pk: &str) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(table)
            .consistent_read(true)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":pk", s(pk))
    }

    /// A query of the items of partition `pk` of `table` whose sort key is in `[lo, hi]`, in
    /// key order (a consistent read).
    pub(crate) fn partition_between(
        &self,
        table: &str,
        pk: &str,
        (lo, hi): (String, String),
    ) -> QueryFluentBuilder {
        self.partition_query(table, pk)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :lo AND :hi")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":lo", s(lo))
            .expression_attribute_values(":hi", s(hi))
    }

    /// A query of the items of a table's `index` whose attribute `attribute` is `value` (a
    /// global index: eventually consistent).
    pub(crate) fn index_query(
        &self,
        table: &str,
        index: &str,
        attribute: &str,
        value: &str,
    ) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(table)
            .index_name(index)
            .key_condition_expression("#k = :v")
            .expression_attribute_names("#k", attribute)
            .expression_attribute_values(":v", s(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;

    fn answered(code: Option<&str>) -> StoreError {
        let mut meta = ErrorMetadata::builder().message("from the service");
        if let Some(code) = code {
            meta = meta.code(code);
        }
        map_sdk_error(SdkError::<GetItemError, ()>::service_error(
            GetItemError::generic(meta.build()),
            (),
        ))
    }

    #[test]
    fn failures_of_the_service_are_retryable_and_refusals_are_not() {
        for code in [
            "ThrottlingException",
            "InternalServerError",
            "ServiceUnavailable",
            "TransactionInProgressException",
        ] {
            assert!(
                matches!(answered(Some(code)), StoreError::Unavailable { .. }),
                "{code}"
            );
        }
        assert!(
            matches!(answered(None), StoreError::Unavailable { .. }),
            "an answer without an error code (a proxy's 502)"
        );
        assert_eq!(
            answered(Some("ConditionalCheckFailedException")),
            StoreError::Conflict
        );
        assert!(matches!(
            answered(Some("ValidationException")),
            StoreError::Internal(_)
        ));
    }

    fn cancelled(codes: &[&str]) -> TransactionFailed {
        let reasons = codes
            .iter()
            .map(|code| CancellationReason::builder().code(*code).build())
            .collect();
        TransactionFailed {
            error: StoreError::Conflict,
            reasons: Some(reasons),
        }
    }

    #[test]
    fn a_transaction_that_only_met_another_is_worth_trying_again() {
        assert!(cancelled(&["None", "TransactionConflict"]).met_another_transaction());
        assert!(
            !cancelled(&["TransactionConflict", "ConditionalCheckFailed"])
                .met_another_transaction()
        );
        assert!(!cancelled(&["None", "ConditionalCheckFailed"]).met_another_transaction());
    }
}
