//! The compact record of one result of a test case: what the rules need, nothing more.

use crate::ids::PrNumber;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// A result's outcome across the attempts of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// Every attempt passed (there was one).
    #[serde(rename = "P")]
    Passed,
    /// Failed, then passed on a retry: a pass and a fail on one commit.
    #[serde(rename = "R")]
    PassedOnRetry,
    /// The last attempt failed, and none passed.
    #[serde(rename = "F")]
    Failed,
    /// Passed, then failed on a later attempt (the same test in two reports of one upload,
    /// `go test -count=2`): a fail, and a pass and a fail on one commit.
    #[serde(rename = "A")]
    FailedAfterPass,
}

impl Outcome {
    /// From counts of attempts in one run; `None` when nothing ran (skipped).
    pub fn from_attempts(passed: usize, failed: usize, last_passed: bool) -> Option<Self> {
        match (passed, failed) {
            (0, 0) => None,
            (0, _) => Some(Outcome::Failed),
            _ if !last_passed => Some(Outcome::FailedAfterPass),
            (_, 0) => Some(Outcome::Passed),
            _ => Some(Outcome::PassedOnRetry),
        }
    }

    /// The run's final outcome was a pass.
    pub fn passed(self) -> bool {
        matches!(self, Outcome::Passed | Outcome::PassedOnRetry)
    }

    /// The run's final outcome was a failure.
    pub fn failed(self) -> bool {
        !self.passed()
    }

    /// Whether any attempt passed.
    pub fn saw_pass(self) -> bool {
        !matches!(self, Outcome::Failed)
    }

    /// Whether any attempt failed.
    pub fn saw_failure(self) -> bool {
        !matches!(self, Outcome::Passed)
    }
}

/// One result, as kept in a test case's history (short field names: it is stored many times).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// The commit, shortened to 12 characters (enough within one test's recent history).
    #[serde(rename = "c")]
    pub commit: String,
    /// On a stable branch at the time of the upload.
    #[serde(rename = "s")]
    pub stable: bool,
    #[serde(rename = "o")]
    pub outcome: Outcome,
    #[serde(rename = "t")]
    pub at: Timestamp,
    /// A short digest of the upload id, so the same upload is never counted twice.
    #[serde(rename = "u")]
    pub upload: String,
}

impl ResultRecord {
    /// Shortens a commit sha to the length kept.
    pub fn short_commit(sha: &str) -> String {
        sha.chars()
            .take(12)
            .collect::<String>()
            .to_ascii_lowercase()
    }
}

/// A pull request that saw the test fail, and when it last did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrFailure {
    #[serde(rename = "n")]
    pub pr: PrNumber,
    #[serde(rename = "t")]
    pub at: Timestamp,
}

/// Days of pull request failures counted by `pull_requests_impacted_last_7d`.
pub const IMPACT_DAYS: i64 = 7;
pub const DAY_MS: i64 = 86_400_000;
/// Pull requests remembered per test case (the most recent).
pub const MAX_PR_FAILURES: usize = 200;

/// Notes that `pr` saw the test fail at `at`, dropping what is older than the window.
pub fn note_pr_failure(failures: &mut Vec<PrFailure>, pr: PrNumber, at: Timestamp) {
    match failures.iter_mut().find(|f| f.pr == pr) {
        Some(f) => f.at = f.at.max(at),
        None => failures.push(PrFailure { pr, at }),
    }
    let horizon = at.millis() - IMPACT_DAYS * DAY_MS;
    failures.retain(|f| f.at.millis() > horizon);
    failures.sort_by_key(|f| std::cmp::Reverse(f.at));
    failures.truncate(MAX_PR_FAILURES);
}

/// Distinct pull requests with a failed result in the 7 days before `now`.
pub fn impacted_last_7d(failures: &[PrFailure], now: Timestamp) -> u32 {
    let horizon = now.millis() - IMPACT_DAYS * DAY_MS;
    failures.iter().filter(|f| f.at.millis() > horizon).count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_from_attempts() {
        assert_eq!(Outcome::from_attempts(1, 0, true), Some(Outcome::Passed));
        assert_eq!(
            Outcome::from_attempts(1, 2, true),
            Some(Outcome::PassedOnRetry)
        );
        assert_eq!(Outcome::from_attempts(0, 3, false), Some(Outcome::Failed));
        assert_eq!(
            Outcome::from_attempts(1, 1, false),
            Some(Outcome::FailedAfterPass)
        );
        assert_eq!(Outcome::from_attempts(0, 0, false), None);
    }

    #[test]
    fn impacted_pull_requests_are_distinct_and_recent() {
        let day = |d: i64| Timestamp(d * DAY_MS);
        let mut f = Vec::new();
        note_pr_failure(&mut f, 1, day(10));
        note_pr_failure(&mut f, 2, day(11));
        note_pr_failure(&mut f, 1, day(12));
        assert_eq!(impacted_last_7d(&f, day(12)), 2);
        assert_eq!(impacted_last_7d(&f, Timestamp(18 * DAY_MS + 1)), 1);
        assert_eq!(impacted_last_7d(&f, day(30)), 0);
        note_pr_failure(&mut f, 3, day(30));
        assert_eq!(
            f.len(),
            1,
            "older failures are dropped when a new one arrives"
        );
    }
}
