//! Per-repository settings of test health: quarantine switches and the thresholds of the
//! classification rules (defaults from docs/queue-semantics.md §9).

use crate::error::DomainError;
use crate::ids::check_branch;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Results kept per test case: enough for every window below.
pub const HISTORY_CAPACITY: usize = 40;

/// The thresholds of the status rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    /// Branches whose results judge BROKEN and alternation (`main`, `master`).
    pub stable_branches: Vec<String>,
    /// BROKEN when this many latest stable results failed.
    pub broken_consecutive_failures: u32,
    /// BROKEN when at least this percentage of the latest `broken_window` stable results
    /// failed, given at least `broken_min_results` of them.
    pub broken_failure_percent: u32,
    pub broken_window: u32,
    pub broken_min_results: u32,
    /// A BROKEN test recovers after this many stable passes in a row.
    pub broken_recovery_passes: u32,
    /// FLAKY when intermittent failures are at least this percentage of the latest
    /// `flaky_window` stable results, given at least `flaky_min_results` of them.
    pub flaky_failure_percent: u32,
    pub flaky_window: u32,
    pub flaky_min_results: u32,
    /// A FLAKY test recovers after this many days without new evidence.
    pub flaky_recovery_days: u32,
    /// An upload where at least this percentage of at least `infra_min_tests` tests failed is
    /// an infrastructure failure, not evidence.
    pub infra_failure_percent: u32,
    pub infra_min_tests: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            stable_branches: vec!["main".to_owned(), "master".to_owned()],
            broken_consecutive_failures: 3,
            broken_failure_percent: 80,
            broken_window: 20,
            broken_min_results: 5,
            broken_recovery_passes: 2,
            flaky_failure_percent: 20,
            flaky_window: 30,
            flaky_min_results: 10,
            flaky_recovery_days: 7,
            infra_failure_percent: 80,
            infra_min_tests: 10,
        }
    }
}

impl Thresholds {
    /// Whether results on `branch` are stable-branch evidence.
    pub fn is_stable(&self, branch: &str) -> bool {
        self.stable_branches.iter().any(|b| b == branch)
    }

    /// Checks every value; the error names the field (`thresholds.broken_window`).
    pub fn validate(&self) -> Result<(), DomainError> {
        let window = HISTORY_CAPACITY as u32;
        let checks: [(&str, u32, u32, u32); 12] = [
            (
                "broken_consecutive_failures",
                self.broken_consecutive_failures,
                1,
                window,
            ),
            (
                "broken_failure_percent",
                self.broken_failure_percent,
                1,
                100,
            ),
            ("broken_window", self.broken_window, 1, window),
            ("broken_min_results", self.broken_min_results, 1, window),
            (
                "broken_recovery_passes",
                self.broken_recovery_passes,
                1,
                window,
            ),
            ("flaky_failure_percent", self.flaky_failure_percent, 1, 100),
            ("flaky_window", self.flaky_window, 1, window),
            ("flaky_min_results", self.flaky_min_results, 1, window),
            ("flaky_recovery_days", self.flaky_recovery_days, 1, 365),
            ("infra_failure_percent", self.infra_failure_percent, 1, 100),
            ("infra_min_tests", self.infra_min_tests, 1, 1_000_000),
            ("stable_branches", self.stable_branches.len() as u32, 1, 20),
        ];
        for (field, value, lo, hi) in checks {
            if !(lo..=hi).contains(&value) {
                let what = if field == "stable_branches" {
                    format!("must list 1 to {hi} branches")
                } else {
                    format!("must be an integer from {lo} to {hi}, got {value}")
                };
                return Err(DomainError::invalid(&format!("thresholds.{field}"), &what));
            }
        }
        for branch in &self.stable_branches {
            check_branch("thresholds.stable_branches", branch)?;
        }
        Ok(())
    }
}

/// A repository's test-health settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RepoHealthSettings {
    /// Quarantining on: quarantined tests are listed and reported to CI as quarantined.
    pub quarantining: bool,
    /// FLAKY tests are quarantined without an override (broken ones never are).
    pub auto_quarantine: bool,
    /// When quarantining was last turned on (`None` while it is off, and in settings stored
    /// before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantining_since: Option<Timestamp>,
    /// When auto-quarantine was last turned on (as `quarantining_since`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_quarantine_since: Option<Timestamp>,
    #[serde(default)]
    pub thresholds: Thresholds,
    /// The variants uploads of the repository have named (escaped as in test identities),
    /// at most [`MAX_REMEMBERED_VARIANTS`], sorted: a failed test checked without a variant
    /// matches the one variant of it that is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// When an upload last named each variant, to within [`VARIANT_SEEN_PRECISION_MS`] (so
    /// that remembering it writes the settings at most once a day). A variant remembered
    /// before this was kept, or by an older version, has none: it counts as the oldest.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants_seen: BTreeMap<String, Timestamp>,
    /// Bumped by every change; writes are conditional on it.
    #[serde(default)]
    pub version: u64,
}

/// How many variants of a repository are remembered: a new one takes the place of the one
/// named longest ago (CI's matrix changes over a year: runner images, shard counts).
pub const MAX_REMEMBERED_VARIANTS: usize = 16;

/// How stale a variant's last-seen time may be.
pub const VARIANT_SEEN_PRECISION_MS: i64 = 86_400_000;

impl RepoHealthSettings {
    /// Turns the switches given on or off at `now`, keeping when each was last turned on.
    pub fn switch(
        &mut self,
        quarantining: Option<bool>,
        auto_quarantine: Option<bool>,
        now: Timestamp,
    ) {
        if let Some(on) = quarantining {
            self.quarantining_since = since(self.quarantining, self.quarantining_since, on, now);
            self.quarantining = on;
        }
        if let Some(on) = auto_quarantine {
            self.auto_quarantine_since =
                since(self.auto_quarantine, self.auto_quarantine_since, on, now);
            self.auto_quarantine = on;
        }
    }

    /// The settings with `variant` remembered as named at `now`, or `None` when nothing
    /// changes: it is empty, or known and named less than [`VARIANT_SEEN_PRECISION_MS`] ago. A
    /// new variant on a full list takes the place of the one named longest ago.
    pub fn with_variant(&self, variant: &str, now: Timestamp) -> Option<Self> {
        let seen = self.variants_seen.get(variant).copied();
        let fresh = seen.is_some_and(|at| now.millis_since(at) < VARIANT_SEEN_PRECISION_MS);
        let known = self.variants.iter().any(|v| v == variant);
        if variant.is_empty() || (known && fresh) {
            return None;
        }
        let mut next = self.clone();
        if !known {
            if next.variants.len() >= MAX_REMEMBERED_VARIANTS
                && let Some(oldest) = next.named_longest_ago()
            {
                next.variants.retain(|v| *v != oldest);
                next.variants_seen.remove(&oldest);
            }
            next.variants.push(variant.to_owned());
            next.variants.sort();
        }
        next.variants_seen.insert(variant.to_owned(), now);
        next.version += 1;
        Some(next)
    }

    /// The variant named longest ago (one never timed first; by name among equals).
    fn named_longest_ago(&self) -> Option<String> {
        self.variants
            .iter()
            .min_by_key(|v| (self.variants_seen.get(*v).copied(), (*v).clone()))
            .cloned()
    }
}

/// When a switch that was `was` (on since `since`) and is now `on` was last turned on.
fn since(was: bool, since: Option<Timestamp>, on: bool, now: Timestamp) -> Option<Timestamp> {
    match (was, on) {
        (_, false) => None,
        (false, true) => Some(now),
        (true, true) => since,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variant is remembered once a day at most; on a full list, a new one takes the place
    /// of the one named longest ago.
    #[test]
    fn variants_are_remembered_and_the_stalest_forgotten() {
        let day = VARIANT_SEEN_PRECISION_MS;
        let mut s = RepoHealthSettings::default();
        for i in 0..MAX_REMEMBERED_VARIANTS as i64 {
            s = s
                .with_variant(&format!("v{i:02}"), Timestamp(i * day))
                .unwrap();
        }
        assert_eq!(
            s.with_variant("v03", Timestamp(3 * day + 1)),
            None,
            "seen today"
        );
        s = s
            .with_variant("v00", Timestamp(20 * day))
            .expect("a day later");
        assert!(s.with_variant("", Timestamp(21 * day)).is_none());
        let next = s.with_variant("linux-x86", Timestamp(21 * day)).unwrap();
        assert_eq!(next.variants.len(), MAX_REMEMBERED_VARIANTS);
        assert!(next.variants.contains(&"linux-x86".to_owned()));
        assert!(
            !next.variants.contains(&"v01".to_owned()),
            "v01 was named longest ago"
        );
        assert!(next.variants.contains(&"v00".to_owned()));
        assert!(next.variants.is_sorted());
        assert_eq!(next.version, s.version + 1);
    }

    #[test]
    fn defaults_are_the_documented_rules_and_valid() {
        let t = Thresholds::default();
        assert_eq!(t.broken_consecutive_failures, 3);
        assert_eq!((t.broken_failure_percent, t.broken_window), (80, 20));
        assert_eq!((t.flaky_failure_percent, t.flaky_min_results), (20, 10));
        assert!(t.is_stable("main") && t.is_stable("master") && !t.is_stable("dev"));
        assert_eq!(t.validate(), Ok(()));
        let settings = RepoHealthSettings::default();
        assert!(!settings.quarantining && !settings.auto_quarantine);
    }

    #[test]
    fn invalid_values_name_their_field() {
        let t = Thresholds {
            broken_window: 0,
            ..Thresholds::default()
        };
        let err = t.validate().unwrap_err();
        assert!(
            err.message.starts_with("thresholds.broken_window "),
            "{}",
            err.message
        );
        let t = Thresholds {
            stable_branches: vec!["bad branch".into()],
            ..Thresholds::default()
        };
        assert!(
            t.validate()
                .unwrap_err()
                .message
                .starts_with("thresholds.stable_branches")
        );
    }
}
