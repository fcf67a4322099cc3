//! Queue requests and responses (`openapi/openapi.json`), with the exact field names.

use super::advice::TuningView;
use super::common::{Int, QueueTarget, RepoBody};
use mq_core::DomainError;
use mq_core::entry::Entry;
use mq_core::settings::{
    DirectMergeMode, MergeMethod, OptimizationMode, QueueMode, QueueState, RequestedState,
    SettingsPatch, setting_int,
};
use mq_core::snapshot::Queue;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The body of `createQueue` and `updateQueue`: the queue, and any settings to set. A field
/// it does not know is refused (400, naming the nearest known one): a misspelt setting must
/// not be answered 200 and change nothing.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueueSettingsRequest {
    pub repo: RepoBody,
    pub target_branch: String,
    pub state: Option<RequestedState>,
    pub concurrency: Option<Int>,
    pub bisection_concurrency: Option<Int>,
    pub testing_timeout_minutes: Option<Int>,
    pub pending_failure_depth: Option<Int>,
    pub adaptive_pending_failure: Option<bool>,
    pub can_optimistically_merge: Option<bool>,
    pub batch: Option<bool>,
    pub batching_max_wait_time_minutes: Option<Int>,
    pub batching_min_size: Option<Int>,
    pub mode: Option<QueueMode>,
    pub comments_enabled: Option<bool>,
    pub commands_enabled: Option<bool>,
    pub create_prs_for_testing_branches: Option<bool>,
    pub direct_merge_mode: Option<DirectMergeMode>,
    pub optimization_mode: Option<OptimizationMode>,
    pub merge_method: Option<MergeMethod>,
    pub status_check_enabled: Option<bool>,
    pub required_statuses: Option<Vec<String>>,
    pub delete_required_statuses: Option<bool>,
    pub auto_tune: Option<bool>,
}

impl QueueSettingsRequest {
    pub fn target(&self) -> Result<QueueTarget, DomainError> {
        QueueTarget::new(&self.repo, &self.target_branch)
    }

    /// The settings as a validated patch; range errors name the field.
    pub fn patch(&self) -> Result<SettingsPatch, DomainError> {
        let int = |field: &str, v: Option<Int>| v.map(|Int(n)| setting_int(field, n)).transpose();
        let patch = SettingsPatch {
            state: self.state,
            concurrency: int("concurrency", self.concurrency)?,
            bisection_concurrency: int("bisectionConcurrency", self.bisection_concurrency)?,
            testing_timeout_minutes: int("testingTimeoutMinutes", self.testing_timeout_minutes)?,
            pending_failure_depth: int("pendingFailureDepth", self.pending_failure_depth)?,
            adaptive_pending_failure: self.adaptive_pending_failure,
            can_optimistically_merge: self.can_optimistically_merge,
            batch: self.batch,
            batching_max_wait_time_minutes: int(
                "batchingMaxWaitTimeMinutes",
                self.batching_max_wait_time_minutes,
            )?,
            batching_min_size: int("batchingMinSize", self.batching_min_size)?,
            mode: self.mode,
            comments_enabled: self.comments_enabled,
            commands_enabled: self.commands_enabled,
            create_prs_for_testing_branches: self.create_prs_for_testing_branches,
            direct_merge_mode: self.direct_merge_mode,
            optimization_mode: self.optimization_mode,
            merge_method: self.merge_method,
            status_check_enabled: self.status_check_enabled,
            required_statuses: self.required_statuses.clone(),
            delete_required_statuses: self.delete_required_statuses,
            auto_tune: self.auto_tune,
        };
        patch.validate()?;
        Ok(patch)
    }
}

/// A queue's state and configuration (`Queue` in `openapi/openapi.json`): the
/// `updateQueue`/`createQueue` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueView {
    pub state: QueueState,
    pub branch: String,
    pub concurrency: u32,
    pub testing_timeout_minutes: u32,
    pub mode: QueueMode,
    pub can_optimistically_merge: bool,
    pub pending_failure_depth: u32,
    pub adaptive_pending_failure: bool,
    pub batch: bool,
    pub batching_max_wait_time_minutes: u32,
    pub batching_min_size: u32,
    pub create_prs_for_testing_branches: bool,
    pub comments_enabled: bool,
    pub commands_enabled: bool,
    pub status_check_enabled: bool,
    pub bisection_concurrency: u32,
    pub required_statuses: Vec<String>,
    pub direct_merge_mode: DirectMergeMode,
    pub optimization_mode: OptimizationMode,
    pub merge_method: MergeMethod,
    pub auto_tune: bool,
    /// Auto-tuning's checks and changes.
    #[serde(default)]
    pub tuning: TuningView,
}

impl From<&Queue> for QueueView {
    fn from(q: &Queue) -> Self {
        let c = &q.config;
        Self {
            state: q.state,
            branch: q.branch.clone(),
            concurrency: c.concurrency,
            testing_timeout_minutes: c.testing_timeout_minutes,
            mode: c.mode,
            can_optimistically_merge: c.can_optimistically_merge,
            pending_failure_depth: c.pending_failure_depth,
            adaptive_pending_failure: c.adaptive_pending_failure,
            batch: c.batch,
            batching_max_wait_time_minutes: c.batching_max_wait_time_minutes,
            batching_min_size: c.batching_min_size,
            create_prs_for_testing_branches: c.create_prs_for_testing_branches,
            comments_enabled: c.comments_enabled,
            commands_enabled: c.commands_enabled,
            status_check_enabled: c.status_check_enabled,
            bisection_concurrency: c.bisection_concurrency,
            required_statuses: c.required_statuses.clone(),
            direct_merge_mode: c.direct_merge_mode,
            optimization_mode: c.optimization_mode,
            merge_method: c.merge_method,
            auto_tune: c.auto_tune,
            tuning: TuningView::from(&q.tuning),
        }
    }
}

/// The `getQueue` response: the queue and its enqueued pull requests, in queue order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueWithEntries<'a> {
    #[serde(flatten)]
    pub queue: QueueView,
    pub enqueued_pull_requests: Vec<EnqueuedPullRequest<'a>>,
}

/// An item of `enqueuedPullRequests` (`EnqueuedPullRequest` in `openapi/openapi.json`). Its text
/// borrows from the entry it shows (a queue lists many; a read answer copies none of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnqueuedPullRequest<'a> {
    pub state_changed_at: String,
    pub priority_value: u8,
    pub priority_name: Cow<'static, str>,
    pub skip_the_line: bool,
    pub no_batch: bool,
    pub pr_number: u32,
    pub pr_title: Cow<'a, str>,
    pub pr_sha: Cow<'a, str>,
    pub pr_base_branch: Cow<'a, str>,
    pub pr_author: Cow<'a, str>,
    pub id: Cow<'a, str>,
    /// The default priority's name, when the submission gave no priority.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub used_default_priority_name: Option<Cow<'static, str>>,
    /// The entry has not moved for longer than it should have, with nothing in flight that
    /// could move it (see `mq_core::engine::view::stuck_entries`).
    #[serde(default)]
    pub stuck: bool,
}

impl<'a> EnqueuedPullRequest<'a> {
    /// An active entry of the queue, borrowing its text; `stuck` as said.
    pub fn of(entry: &'a Entry, stuck: bool) -> Self {
        Self {
            state_changed_at: entry.state_changed_at.to_rfc3339(),
            priority_value: entry.priority.value,
            priority_name: entry.priority.name(),
            skip_the_line: entry.priority.is_urgent(),
            no_batch: entry.no_batch,
            pr_number: entry.pr,
            pr_title: Cow::Borrowed(&entry.pr_facts.title),
            pr_sha: Cow::Borrowed(entry.pr_facts.head_sha.as_str()),
            pr_base_branch: Cow::Borrowed(&entry.pr_facts.base_branch),
            pr_author: Cow::Borrowed(&entry.pr_facts.author),
            id: Cow::Borrowed(&entry.id),
            used_default_priority_name: entry.priority.defaulted_name(),
            stuck,
        }
    }
}
