//! `getMergeQueueTestingDetails` (`TestingDetails` in `openapi/openapi.json`).

use super::common::{QueueTarget, RepoBody};
use mq_core::DomainError;
use mq_core::engine::view::TestRunView;
use mq_core::git::RequiredStatusesSource;
use mq_core::run::RunStatus;
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
        if id.is_empty() || id.len() > MAX_RUN_ID_LEN {
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

impl From<TestRunView> for TestingDetails {
    fn from(v: TestRunView) -> Self {
        Self {
            required_statuses: v.required_statuses,
            test_branch: v.test_branch,
            test_branch_sha: v.test_branch_sha,
            check_suites: v
                .check_suites
                .into_iter()
                .map(|s| CheckSuiteView {
                    check_runs: s
                        .check_runs
                        .into_iter()
                        .map(|c| CheckRunView {
                            name: c.name,
                            url: c.url,
                        })
                        .collect(),
                })
                .collect(),
            status_checks: v
                .status_checks
                .into_iter()
                .map(|s| StatusCheckView {
                    context: s.context,
                    url: s.url,
                })
                .collect(),
            tested_pull_requests: v
                .tested_pull_requests
                .into_iter()
                .map(|t| TestedPullRequestView {
                    pr_number: t.pr_number,
                    pr_url: t.pr_url,
                    title: t.title,
                })
                .collect(),
            required_statuses_source: v.required_statuses_source,
            created_at: v.created_at.to_rfc3339(),
            status: v.status,
            impacted_targets: v.impacted_targets,
            impacted_targets_for_tested_prs: v.impacted_targets_for_tested_prs,
            dependent_prs: v.dependent_prs,
        }
    }
}
