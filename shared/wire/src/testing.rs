//! `getMergeQueueTestingDetails` (`TestingDetails` in `openapi/openapi.json`).

use super::common::{QueueTarget, RepoBody};
use mq_core::DomainError;
use mq_core::engine::view;
use mq_core::git::RequiredStatusesSource;
use mq_core::run::{RunStatus, TestRun};
use mq_core::snapshot::Queue;
use serde::{Deserialize, Serialize};

/// Longest accepted test run id.
pub const MAX_RUN_ID_LEN: usize = 200;

/// The body of `getMergeQueueTestingDetails`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestingDetailsRequest {
    pub repo: RepoBody,
    pub target_branch: String,
    pub test_run_id: String,
}

impl TestingDetailsRequest {
    pub fn target(&self) -> Result<(QueueTarget, String), DomainError> {
        let target = QueueTarget::new(&self.repo, &self.target_branch)?;
        let id = self.test_run_id.trim();
        if id.is_empty() || id.chars().count() > MAX_RUN_ID_LEN {
            return Err(DomainError::invalid(
                "testRunId",
                &format!("must be a run id of 1 to {MAX_RUN_ID_LEN} characters"),
            ));
        }
        Ok((target, id.to_owned()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRunView {
    pub name: String,
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckSuiteView {
    pub check_runs: Vec<CheckRunView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCheckView {
    pub context: String,
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestedPullRequestView {
    pub pr_number: u32,
    pub pr_url: String,
    pub title: String,
}

/// The `getMergeQueueTestingDetails` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestingDetails {
    pub required_statuses: Vec<String>,
    pub test_branch: String,
    pub test_branch_sha: String,
    pub check_suites: Vec<CheckSuiteView>,
    pub status_checks: Vec<StatusCheckView>,
    pub tested_pull_requests: Vec<TestedPullRequestView>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub required_statuses_source: Option<RequiredStatusesSource>,
    pub created_at: String,
    pub status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub impacted_targets: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub impacted_targets_for_tested_prs: Option<Vec<String>>,
    pub dependent_prs: Vec<u32>,
}

impl TestingDetails {
    /// A run of `queue`, active or finished.
    pub fn of(queue: &Queue, run: &TestRun) -> Self {
        let (required_statuses, required_statuses_source) = view::required_statuses(queue, run);
        Self {
            required_statuses,
            test_branch: run.branch.clone(),
            test_branch_sha: view::test_branch_sha(run),
            check_suites: view::check_suites(run)
                .into_iter()
                .map(|suite| CheckSuiteView {
                    check_runs: suite
                        .into_iter()
                        .map(|c| CheckRunView {
                            name: c.name.clone(),
                            url: c.url.clone(),
                        })
                        .collect(),
                })
                .collect(),
            status_checks: run
                .statuses
                .iter()
                .map(|s| StatusCheckView {
                    context: s.context.clone(),
                    url: s.url.clone(),
                })
                .collect(),
            tested_pull_requests: run
                .tested
                .iter()
                .map(|t| TestedPullRequestView {
                    pr_number: t.pr,
                    pr_url: view::pr_url(&queue.repo, t.pr),
                    title: t.title.clone(),
                })
                .collect(),
            required_statuses_source,
            created_at: run.created_at.to_rfc3339(),
            status: run.status,
            impacted_targets: run.impacted_targets.clone(),
            impacted_targets_for_tested_prs: run.impacted_targets_for_tested_prs.clone(),
            dependent_prs: run.dependent_prs.clone(),
        }
    }
}
