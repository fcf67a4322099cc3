//! An upload as evidence: one that failed almost every test is an infrastructure failure
//! (a broken runner, a full disk), not news about the tests.

use super::settings::Thresholds;

/// At least `infra_failure_percent`% of at least `infra_min_tests` tests that ran failed.
pub fn is_infrastructure_failure(ran: usize, failed: usize, t: &Thresholds) -> bool {
    ran >= t.infra_min_tests as usize && failed * 100 >= t.infra_failure_percent as usize * ran
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_tests_failing_in_one_upload_is_infrastructure() {
        let t = Thresholds::default();
        assert!(is_infrastructure_failure(10, 8, &t));
        assert!(is_infrastructure_failure(500, 499, &t));
        assert!(!is_infrastructure_failure(10, 7, &t), "70% is evidence");
        assert!(
            !is_infrastructure_failure(9, 9, &t),
            "too few tests to tell"
        );
    }
}

/// What an upload says about the run its reports come from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UploadMetadata {
    pub repo: crate::ids::RepoRef,
    pub commit_sha: String,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_number: Option<crate::ids::PrNumber>,
    #[serde(default)]
    pub variant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_url: Option<String>,
    /// The client's id of the upload: sending it again changes nothing.
    pub upload_id: String,
}

/// What an upload held, once ingested.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct UploadSummary {
    pub files: u32,
    pub test_cases: u32,
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    pub retries: u32,
    pub passed_on_retry: u32,
    /// Ignored as evidence: most tests failed.
    pub infrastructure_failure: bool,
}

/// The id of an upload: stable per (organisation, repository, upload id).
pub fn upload_key(org: &crate::ids::OrgId, meta: &UploadMetadata) -> uuid::Uuid {
    let name = format!("{}\u{1f}{}\u{1f}{}", org, meta.repo.key(), meta.upload_id);
    uuid::Uuid::new_v5(&super::identity::TEST_CASE_NAMESPACE, name.as_bytes())
}
