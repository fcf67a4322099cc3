//! The test-health endpoints' bodies: the list endpoints of `openapi/openapi.json`
//! (snake_case, as the spec spells them), and the upload, settings, quarantine-check and
//! ticket endpoints that feed them.

use super::common::{Int, RepoBody};
use mq_core::health::upload::UploadSummary;
use serde::{Deserialize, Serialize};

/// `page_query` (`PageQuery`).
#[derive(Debug, Clone, Deserialize)]
pub struct PageQuery {
    pub page_size: Int,
    #[serde(default)]
    pub page_token: String,
}

/// `POST /flaky-tests/list-unhealthy-tests`.
#[derive(Debug, Clone, Deserialize)]
pub struct ListUnhealthyRequest {
    pub repo: RepoBody,
    pub org_url_slug: String,
    pub page_query: PageQuery,
    pub status: String,
}

/// `POST /flaky-tests/list-quarantined-tests`.
#[derive(Debug, Clone, Deserialize)]
pub struct ListQuarantinedRequest {
    pub repo: RepoBody,
    pub org_url_slug: String,
    pub page_query: PageQuery,
}

/// `page` (`Page`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Page {
    pub total_rows: u64,
    pub total_pages: u64,
    pub next_page_token: String,
    pub prev_page_token: String,
    pub last_page_token: String,
    pub page_index: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HtmlUrl {
    pub html_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusView {
    pub reason: String,
    pub timestamp: String,
}

/// An unhealthy test (`UnhealthyTest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnhealthyTest {
    pub id: String,
    pub repository: HtmlUrl,
    pub html_url: String,
    pub name: String,
    pub variant: String,
    pub status: StatusView,
    pub codeowners: Vec<String>,
    pub pull_requests_impacted_last_7d: u32,
    pub quarantined: bool,
    pub file_path: String,
    pub parent: String,
    pub classname: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket: Option<HtmlUrl>,
    /// Its kept results, oldest first.
    pub recent_results: Vec<crate::dashboard::RecentResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnhealthyTestsPage {
    pub tests: Vec<UnhealthyTest>,
    pub page: Page,
}

/// A quarantined test (`QuarantinedTest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuarantinedTest {
    pub name: String,
    pub parent: String,
    pub file: String,
    pub classname: String,
    pub codeowners: Vec<String>,
    pub quarantined_at: String,
    pub status_last_updated_at: String,
    pub test_case_id: String,
    pub variant: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket: Option<HtmlUrl>,
    /// Its kept results, oldest first.
    pub recent_results: Vec<crate::dashboard::RecentResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QuarantinedTestsPage {
    pub quarantined_tests: Vec<QuarantinedTest>,
    pub page: Page,
}

/// The metadata of an upload, as JSON (`upload-url`) or as form fields (`upload`).
#[derive(Debug, Clone, Deserialize, Default)]
pub struct UploadFields {
    pub repo: Option<RepoBody>,
    pub org_url_slug: Option<String>,
    pub commit_sha: Option<String>,
    pub branch: Option<String>,
    pub pr_number: Option<Int>,
    pub variant: Option<String>,
    pub job_url: Option<String>,
    pub upload_id: Option<String>,
    pub codeowners: Option<String>,
}

/// What an upload recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UploadResponse {
    pub upload_id: String,
    /// What the upload held (its counts, and whether most tests failed: then it is kept,
    /// but not evidence about the tests).
    #[serde(flatten)]
    pub summary: UploadSummary,
    /// The upload id was already ingested: nothing changed.
    pub duplicate: bool,
}

/// Where to PUT a large report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UploadUrlResponse {
    pub upload_id: String,
    pub upload_url: String,
    pub method: String,
    pub expires_at: String,
}

/// A threshold change: only the fields given change; an unknown field is refused.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsPatch {
    pub stable_branches: Option<Vec<String>>,
    pub broken_consecutive_failures: Option<Int>,
    pub broken_failure_percent: Option<Int>,
    pub broken_window: Option<Int>,
    pub broken_min_results: Option<Int>,
    pub broken_recovery_passes: Option<Int>,
    pub flaky_failure_percent: Option<Int>,
    pub flaky_window: Option<Int>,
    pub flaky_min_results: Option<Int>,
    pub flaky_recovery_days: Option<Int>,
    pub infra_failure_percent: Option<Int>,
    pub infra_min_tests: Option<Int>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestOverride {
    pub test_case_id: String,
    pub quarantine: String,
}

/// `POST /flaky-tests/update-settings`. Like the queue settings, a field it does not know is
/// refused.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateSettingsRequest {
    pub repo: RepoBody,
    pub org_url_slug: String,
    pub quarantining: Option<bool>,
    pub auto_quarantine: Option<bool>,
    pub thresholds: Option<ThresholdsPatch>,
    #[serde(default)]
    pub test_overrides: Vec<TestOverride>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OverrideView {
    pub test_case_id: String,
    pub quarantine: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SettingsResponse {
    pub quarantining: bool,
    pub auto_quarantine: bool,
    pub thresholds: mq_core::health::Thresholds,
    pub test_overrides: Vec<OverrideView>,
}

/// A failed test as CI names it (from its JUnit report), or by id.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct FailedTest {
    pub test_case_id: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub classname: String,
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub parent: String,
}

/// `POST /flaky-tests/check-quarantined`.
#[derive(Debug, Clone, Deserialize)]
pub struct CheckQuarantinedRequest {
    pub repo: RepoBody,
    pub org_url_slug: String,
    #[serde(default)]
    pub variant: String,
    pub failed_tests: Vec<FailedTest>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckedTest {
    pub test_case_id: String,
    pub name: String,
    pub classname: String,
    pub file: String,
    pub parent: String,
    /// The variant of the test case matched: the one asked for, or, when none was, the one
    /// variant whose uploads named the test.
    pub variant: String,
    /// Known from an earlier upload.
    pub known: bool,
    pub quarantined: bool,
    /// Why no test case was matched, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckQuarantinedResponse {
    /// True when every failed test is quarantined: CI may pass.
    pub all_quarantined: bool,
    pub quarantined_count: u32,
    pub unquarantined_count: u32,
    pub tests: Vec<CheckedTest>,
}

/// `POST /flaky-tests/link-ticket`: an empty `ticket_url` removes the link.
#[derive(Debug, Clone, Deserialize)]
pub struct LinkTicketRequest {
    pub repo: RepoBody,
    pub org_url_slug: String,
    pub test_case_id: String,
    pub ticket_url: String,
}
