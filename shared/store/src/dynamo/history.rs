//! The DynamoDB adapter's [`HistoryStore`]: the conclusion log (`DONE#<ms>#<entry id>` items
//! of the PullRequests table) and the finished runs (the TestRuns table's `finished-index`),
//! each read backwards from the end of the window, every attribute, or for their summaries
//! the summary's attributes only; the restarts (`RESTART#<ms>#…` items of the PullRequests
//! table), read forwards.

use super::DynamoStore;
use super::codec::from_items;
use super::keys::{done_range, restart_range};
use super::requests::{query_all, query_up_to};
use crate::history::HistoryStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use mq_core::entry::Entry;
use mq_core::history::Restart;
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;
use serde::de::DeserializeOwned;

/// The attributes of an [`Entry::summary`]: every field of an entry but `impacted`.
pub const ENTRY_SUMMARY: [&str; 23] = [
    "id",
    "pr",
    "seq",
    "state",
    "state_changed_at",
    "priority",
    "no_batch",
    "force_enqueued",
    "submitted_at",
    "pr_facts",
    "current_run",
    "last_run",
    "dependent_prs",
    "ready_at",
    "first_tested_at",
    "concluded_at",
    "ci_runs",
    "restarts",
    "conclusion",
    "cancel_after_merge",
    "commented",
    "status_pending",
    "passed_split",
];

/// The attributes of a [`TestRun::summary`]: every field of a run but those it leaves out.
pub const RUN_SUMMARY: [&str; 18] = [
    "id",
    "kind",
    "branch",
    "status",
    "created_at",
    "tested",
    "dependent_prs",
    "base_sha",
    "sha",
    "started_at",
    "finished_at",
    "reason",
    "place",
    "held",
    "diverged",
    "pushes_discarded",
    "test_pull_request",
    "bisection_of",
];

/// `query`, reading only `attributes` of each item.
fn projected(query: QueryFluentBuilder, attributes: &[&str]) -> QueryFluentBuilder {
    let mut expression = Vec::with_capacity(attributes.len());
    let mut query = query;
    for (i, name) in attributes.iter().enumerate() {
        let placeholder = format!("#a{i}");
        query = query.expression_attribute_names(&placeholder, *name);
        expression.push(placeholder);
    }
    query.projection_expression(expression.join(", "))
}

#[async_trait]
impl HistoryStore for DynamoStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        let query = self.pull_requests_between(id, done_range(window));
        read_newest(window, limit, query).await
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        let query = self.finished_runs_query(id, window);
        read_newest(window, limit, query).await
    }

    async fn conclusion_summaries_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        let query = self.pull_requests_between(id, done_range(window));
        read_newest(window, limit, projected(query, &ENTRY_SUMMARY)).await
    }

    async fn finished_run_summaries_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        let query = self.finished_runs_query(id, window);
        read_newest(window, limit, projected(query, &RUN_SUMMARY)).await
    }

    async fn restarts_between(&self, id: &QueueId, window: Window) -> StoreResult<Vec<Restart>> {
        if window.to <= window.from {
            return Ok(Vec::new());
        }
        let query = self.pull_requests_between(id, restart_range(window));
        from_items(query_all(query).await?)
    }
}

/// The decoded items of a history query over `window`, read backwards: newest first, at most
/// `limit`; nothing (and no request) when the window is empty or `limit` is 0.
async fn read_newest<T: DeserializeOwned>(
    window: Window,
    limit: usize,
    query: QueryFluentBuilder,
) -> StoreResult<Vec<T>> {
    if window.to <= window.from || limit == 0 {
        return Ok(Vec::new());
    }
    from_items(query_up_to(query.scan_index_forward(false), limit).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamo::codec::to_item;
    use mq_core::entry::Entry;
    use mq_core::git::PrFacts;
    use mq_core::time::Timestamp;
    use std::collections::BTreeSet;

    fn names<T: serde::Serialize>(value: &T) -> BTreeSet<String> {
        to_item(value, &[]).unwrap().into_keys().collect()
    }

    fn with<const N: usize>(listed: [&str; N], left_out: &[&str]) -> BTreeSet<String> {
        listed
            .iter()
            .chain(left_out)
            .map(|n| (*n).to_owned())
            .collect()
    }

    /// A field added to an entry is in the summary's attributes or left out on purpose: a
    /// summary read from DynamoDB would otherwise lose it.
    #[test]
    fn an_entry_summary_names_every_field_but_the_impacted_targets() {
        let entry = Entry {
            last_run: Some("r1".to_owned()),
            cancel_after_merge: Some("pr_closed".to_owned()),
            commented: true,
            status_pending: true,
            passed_split: Some("r2".to_owned()),
            ..Entry::submitted("e1".to_owned(), 1, PrFacts::sample(1), Timestamp(0))
        };
        assert_eq!(names(&entry), with(ENTRY_SUMMARY, &["impacted"]));
    }

    #[test]
    fn a_run_summary_names_every_field_but_those_it_leaves_out() {
        let left_out = [
            "statuses",
            "check_runs",
            "chain",
            "required",
            "impacted_targets",
            "impacted_targets_for_tested_prs",
            "host_error",
            "stamped_at",
        ];
        assert_eq!(names(&TestRun::sample("r1")), with(RUN_SUMMARY, &left_out));
    }
}
