//! A test case's summary: identity, status, quarantine, and the recent results the rules need.
//! One item per test case, updated by every result; its size is bounded.

use super::classify::{HealthStatus, StatusKind, classify, held};
use super::history::{DAY_MS, PrFailure, ResultRecord, impacted_last_7d, note_pr_failure};
use super::identity::TestIdentity;
use super::quarantine::{QuarantineOverride, is_candidate, is_quarantined};
use super::settings::{HISTORY_CAPACITY, RepoHealthSettings, Thresholds};
use crate::ids::{OrgId, PrNumber, RepoRef};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Days without a result after which a test case is forgotten, unless an override was set
/// for it: a test removed from the code (or renamed) leaves the lists, a BROKEN one too.
pub const FORGOTTEN_AFTER_DAYS: i64 = 90;

/// A test case of a repository and what is known about its health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    pub id: Uuid,
    pub org: OrgId,
    pub repo: RepoRef,
    pub identity: TestIdentity,
    pub status: HealthStatus,
    /// For FLAKY: when it recovers without new evidence (the tick looks for these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaky_until: Option<Timestamp>,
    /// The latest results, oldest first, at most [`HISTORY_CAPACITY`]; one with an outcome
    /// this version does not know (written by a newer one) is left out when read.
    #[serde(default, deserialize_with = "crate::readable::list")]
    pub history: Vec<ResultRecord>,
    /// Pull requests that saw it fail recently.
    #[serde(default)]
    pub pr_failures: Vec<PrFailure>,
    #[serde(default)]
    pub codeowners: Vec<String>,
    #[serde(default)]
    pub quarantine: QuarantineOverride,
    /// Since when the override or the status makes it a quarantine candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine_since: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket_url: Option<String>,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    /// Bumped by every write; writes are conditional on it (0: not stored yet).
    #[serde(default)]
    pub version: u64,
}

/// One new result of a test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewResult {
    pub record: ResultRecord,
    /// The pull request the run was for, if any.
    pub pr: Option<PrNumber>,
}

impl TestCase {
    /// A test case seen for the first time at `now`.
    pub fn new(
        id: Uuid,
        org: OrgId,
        repo: RepoRef,
        identity: TestIdentity,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            org,
            repo,
            identity,
            status: HealthStatus {
                kind: StatusKind::Healthy,
                reason: "no results yet".to_owned(),
                since: now,
            },
            flaky_until: None,
            history: Vec::new(),
            pr_failures: Vec::new(),
            codeowners: Vec::new(),
            quarantine: QuarantineOverride::Auto,
            quarantine_since: None,
            ticket_url: None,
            first_seen: now,
            last_seen: now,
            version: 0,
        }
    }

    /// Whether this upload's result is already recorded (uploads are idempotent).
    pub fn has_upload(&self, upload: &str) -> bool {
        self.history.iter().any(|r| r.upload == upload)
    }

    /// Adds a result and re-judges the status. Returns false (and changes nothing) when the
    /// same upload was already recorded.
    pub fn record(&mut self, result: NewResult, t: &Thresholds, now: Timestamp) -> bool {
        if self.has_upload(&result.record.upload) {
            return false;
        }
        if let Some(pr) = result.pr.filter(|_| result.record.outcome.saw_failure()) {
            note_pr_failure(&mut self.pr_failures, pr, result.record.at);
        }
        self.history.push(result.record);
        let excess = self.history.len().saturating_sub(HISTORY_CAPACITY);
        self.history.drain(..excess);
        self.last_seen = self.last_seen.max(now);
        self.reclassify(t, now);
        true
    }

    /// Applies the rules at `now` (also how FLAKY expires). Returns whether the status kind
    /// changed.
    pub fn reclassify(&mut self, t: &Thresholds, now: Timestamp) -> bool {
        let verdict = classify(&self.history, t, now);
        let verdict = held(
            &self.status,
            self.flaky_until,
            verdict,
            &self.history,
            t,
            now,
        );
        let changed = verdict.kind != self.status.kind;
        self.status = HealthStatus::after(Some(&self.status), &verdict, now);
        self.flaky_until = verdict.flaky_until;
        self.update_quarantine_since(now);
        changed
    }

    /// Sets the quarantine override.
    pub fn set_quarantine(&mut self, rule: QuarantineOverride, now: Timestamp) {
        self.quarantine = rule;
        self.update_quarantine_since(now);
    }

    fn update_quarantine_since(&mut self, now: Timestamp) {
        let candidate = is_candidate(self.quarantine, self.status.kind);
        self.quarantine_since = match (candidate, self.quarantine_since) {
            (true, Some(since)) => Some(since),
            (true, None) => Some(now),
            (false, _) => None,
        };
    }

    /// A quarantine candidate: quarantined when the repository's switches allow it.
    pub fn is_quarantine_candidate(&self) -> bool {
        self.quarantine_since.is_some()
    }

    /// Whether the candidate needs auto-quarantine on (its override is `Auto`).
    pub fn needs_auto_quarantine(&self) -> bool {
        self.quarantine == QuarantineOverride::Auto
    }

    pub fn quarantined(&self, settings: &RepoHealthSettings) -> bool {
        is_quarantined(settings, self.quarantine, self.status.kind)
    }

    /// When it became quarantined, `None` when it is not: the latest of when it became a
    /// candidate and when the repository's switches it needs were turned on. A test moved
    /// from auto-quarantine to an `ALWAYS_QUARANTINE` override while quarantined counts from
    /// when it became a candidate and quarantining was turned on.
    pub fn quarantined_at(&self, settings: &RepoHealthSettings) -> Option<Timestamp> {
        if !self.quarantined(settings) {
            return None;
        }
        let candidate = self.quarantine_since.unwrap_or(self.status.since);
        let auto = settings
            .auto_quarantine_since
            .filter(|_| self.needs_auto_quarantine());
        [Some(candidate), settings.quarantining_since, auto]
            .into_iter()
            .flatten()
            .max()
    }

    pub fn is_unhealthy(&self) -> bool {
        self.status.kind != StatusKind::Healthy
    }

    /// When it is forgotten: [`FORGOTTEN_AFTER_DAYS`] after its last result, never while a
    /// quarantine override (always or never) is set, which only a user takes back.
    pub fn forgotten_after(&self) -> Option<Timestamp> {
        let forgettable = self.quarantine == QuarantineOverride::Auto;
        forgettable.then(|| self.last_seen.plus_millis(FORGOTTEN_AFTER_DAYS * DAY_MS))
    }

    pub fn pull_requests_impacted_last_7d(&self, now: Timestamp) -> u32 {
        impacted_last_7d(&self.pr_failures, now)
    }
}
