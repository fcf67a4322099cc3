//! The status rules (docs/queue-semantics.md §9), most severe first:
//!
//! - **BROKEN** when, on stable branches, the last 3 results failed, or at least 80% of the
//!   last 20 did (given at least 5). A test that already failed intermittently needs a longer
//!   streak, one its own failure rate makes unlikely (`required_streak`). It recovers after
//!   2 passes: in a row for a test that was really broken (it does not pass at all until
//!   fixed); a test that passes between failures while "broken" was intermittent, and the
//!   FLAKY rules judge it. Results before the recovery no longer count towards BROKEN.
//! - **FLAKY** on evidence of inconsistency: one commit with both a pass and a fail (any
//!   branch, retries within one run included); a short run of failures between passes on
//!   stable branches; or intermittent failures making at least 20% of at least 10 stable
//!   results. A run of failures as long as the BROKEN streak is a breakage, not flakiness.
//!   FLAKY recovers after 7 days without new evidence.
//! - **HEALTHY** otherwise.
//!
//! The numbers are [`Thresholds`]; results of infrastructure-failure uploads never reach here.

use super::history::ResultRecord;
use super::settings::Thresholds;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

const DAY_MS: i64 = 86_400_000;

/// A test case's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StatusKind {
    #[default]
    Healthy,
    Flaky,
    Broken,
}

impl StatusKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            StatusKind::Healthy => "HEALTHY",
            StatusKind::Flaky => "FLAKY",
            StatusKind::Broken => "BROKEN",
        }
    }
}

/// A status with the rule that set it and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HealthStatus {
    pub kind: StatusKind,
    /// Which rule fired, on what evidence.
    pub reason: String,
    /// When `kind` last changed.
    pub since: Timestamp,
}

impl HealthStatus {
    /// The status after a verdict: `since` moves only when the kind changes.
    pub fn after(previous: Option<&HealthStatus>, verdict: &Verdict, now: Timestamp) -> Self {
        let since = match previous {
            Some(p) if p.kind == verdict.kind => p.since,
            _ => now,
        };
        Self {
            kind: verdict.kind,
            reason: verdict.reason.clone(),
            since,
        }
    }
}

/// What the rules say about a history at a moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub kind: StatusKind,
    pub reason: String,
    /// For FLAKY: when it recovers unless new evidence arrives.
    pub flaky_until: Option<Timestamp>,
}

/// Applies the rules to a test's results (oldest first) at `now`.
pub fn classify(history: &[ResultRecord], t: &Thresholds, now: Timestamp) -> Verdict {
    let stable: Vec<&ResultRecord> = history.iter().filter(|r| r.stable).collect();
    let replay = replay_broken(history, &stable, t);
    if let Some(reason) = replay.broken {
        return verdict(StatusKind::Broken, reason, None);
    }
    let evidence = [
        same_commit(history),
        alternation(&stable, t),
        intermittent_rate(&stable, t),
    ]
    .into_iter()
    .flatten()
    .max_by_key(|e| e.at);
    let recovery_ms = i64::from(t.flaky_recovery_days) * DAY_MS;
    match evidence {
        Some(e) if e.at.millis() + recovery_ms > now.millis() => verdict(
            StatusKind::Flaky,
            e.reason,
            Some(e.at.plus_millis(recovery_ms)),
        ),
        Some(e) => verdict(
            StatusKind::Healthy,
            format!(
                "recovered: no new flaky evidence for {} days (last: {})",
                t.flaky_recovery_days, e.reason
            ),
            None,
        ),
        None => verdict(StatusKind::Healthy, healthy_reason(&replay, t), None),
    }
}

/// The verdict on the kept results, held to a status they no longer show: only the last
/// results of a test are kept (on every branch), and those that made it BROKEN or FLAKY can
/// leave before the status may end. A BROKEN test stays BROKEN until
/// `broken_recovery_passes` passes on stable branches came after it broke; a FLAKY one stays
/// FLAKY until its `flaky_until`. A more severe verdict always stands.
pub fn held(
    previous: &HealthStatus,
    flaky_until: Option<Timestamp>,
    verdict: Verdict,
    history: &[ResultRecord],
    t: &Thresholds,
    now: Timestamp,
) -> Verdict {
    let still = |kind, flaky_until| Verdict {
        kind,
        reason: previous.reason.clone(),
        flaky_until,
    };
    match (previous.kind, verdict.kind) {
        (StatusKind::Broken, StatusKind::Flaky | StatusKind::Healthy)
            if stable_passes_since(history, previous.since) < t.broken_recovery_passes =>
        {
            still(StatusKind::Broken, None)
        }
        (StatusKind::Flaky, StatusKind::Healthy) if flaky_until.is_some_and(|u| u > now) => {
            still(StatusKind::Flaky, flaky_until)
        }
        _ => verdict,
    }
}

/// Passes on stable branches recorded at or after `since`.
fn stable_passes_since(history: &[ResultRecord], since: Timestamp) -> u32 {
    let passes = history
        .iter()
        .filter(|r| r.stable && r.at >= since && r.outcome.passed())
        .count();
    u32::try_from(passes).unwrap_or(u32::MAX)
}

fn verdict(kind: StatusKind, reason: String, flaky_until: Option<Timestamp>) -> Verdict {
    Verdict {
        kind,
        reason,
        flaky_until,
    }
}

fn healthy_reason(replay: &Replay, t: &Thresholds) -> String {
    match &replay.recovered {
        Some(commit) => format!(
            "recovered: {} passes on stable branches (through commit {commit}) after being broken",
            t.broken_recovery_passes
        ),
        None => "no rule fired: no breakage or flaky evidence".to_owned(),
    }
}

/// The BROKEN state after walking the stable results in order.
struct Replay {
    broken: Option<String>,
    /// The commit of the pass that last ended a breakage.
    recovered: Option<String>,
}

/// Walks the stable results in order: a breakage starts when a BROKEN rule fires on the
/// results since the last recovery, and ends after `broken_recovery_passes` passes.
fn replay_broken(history: &[ResultRecord], stable: &[&ResultRecord], t: &Thresholds) -> Replay {
    let mut replay = Replay {
        broken: None,
        recovered: None,
    };
    let mut since = 0;
    let mut passes = 0;
    // When each past breakage began and ended: its failures are not intermittency.
    let mut breakages: Vec<(Timestamp, Timestamp)> = Vec::new();
    let mut began = Timestamp(0);
    for (i, r) in stable.iter().enumerate() {
        if replay.broken.is_some() {
            passes += u32::from(r.outcome.passed());
            if passes >= t.broken_recovery_passes {
                breakages.push((began, r.at));
                replay.broken = None;
                replay.recovered = Some(r.commit.clone());
                since = i + 1;
                passes = 0;
            }
            continue;
        }
        let past = Past {
            history,
            breakages: &breakages,
        };
        if let Some((reason, at)) = broken_rule(&past, &stable[since..=i], t) {
            replay.broken = Some(reason);
            began = at;
            passes = 0;
        }
    }
    replay
}

/// Every result, and the spans of the breakages already recognised.
struct Past<'a> {
    history: &'a [ResultRecord],
    breakages: &'a [(Timestamp, Timestamp)],
}

impl Past<'_> {
    /// Results (any branch) before `at` that were not part of a breakage: the trailing
    /// failures just before `at` belong to the streak that begins there.
    fn before(&self, at: Timestamp) -> Vec<&ResultRecord> {
        let mut before: Vec<&ResultRecord> = self
            .history
            .iter()
            .filter(|r| r.at < at)
            .filter(|r| {
                !self
                    .breakages
                    .iter()
                    .any(|(b, e)| (*b..=*e).contains(&r.at))
            })
            .collect();
        while before.last().is_some_and(|r| r.outcome.failed()) {
            before.pop();
        }
        before
    }
}

/// The BROKEN rules on the stable results since the last recovery (newest last): the
/// reason and when the breakage began.
fn broken_rule(
    past: &Past<'_>,
    results: &[&ResultRecord],
    t: &Thresholds,
) -> Option<(String, Timestamp)> {
    let streak = results
        .iter()
        .rev()
        .take_while(|r| r.outcome.failed())
        .count();
    if streak > 0 {
        let first = results[results.len() - streak];
        if streak >= required_streak(&past.before(first.at), t) {
            let commits: Vec<&str> = results[results.len() - streak..]
                .iter()
                .map(|r| r.commit.as_str())
                .collect();
            let reason = format!(
                "broken: the last {streak} results on stable branches failed (commits {})",
                commits.join(", ")
            );
            return Some((reason, first.at));
        }
    }
    let window = &results[results.len().saturating_sub(t.broken_window as usize)..];
    let failed = window.iter().filter(|r| r.outcome.failed()).count();
    let enough = window.len() >= t.broken_min_results as usize;
    (enough && failed * 100 >= t.broken_failure_percent as usize * window.len()).then(|| {
        let reason = format!(
            "broken: {failed} of the last {} results on stable branches failed (threshold {}%)",
            window.len(),
            t.broken_failure_percent
        );
        (reason, window[0].at)
    })
}

/// How unlikely a streak must be, under the test's own failure rate, to be a breakage rather
/// than bad luck.
const STREAK_CHANCE: f64 = 0.01;

/// The failures in a row that make a test BROKEN: `broken_consecutive_failures` for a test
/// that did not fail before. A test that failed and passed before the streak (failure rate
/// `f` over its last `flaky_window` results on any branch, breakages left out) needs a streak
/// its flakiness explains less than 1% of the time (`f^k < 0.01`: 4 at 25%, 7 at 50%), at
/// most `broken_window`, where the failure-rate rule takes over. Without this, a test failing
/// half of its runs would be called BROKEN by every chance streak of three.
fn required_streak(before: &[&ResultRecord], t: &Thresholds) -> usize {
    let base = t.broken_consecutive_failures as usize;
    let window = &before[before.len().saturating_sub(t.flaky_window as usize)..];
    let failed = window.iter().filter(|r| r.outcome.failed()).count();
    if failed == 0 {
        return base;
    }
    let rate = failed as f64 / window.len() as f64;
    let needed = (STREAK_CHANCE.ln() / rate.ln()).ceil();
    (needed as usize).clamp(base, (t.broken_window as usize).max(base))
}

/// Evidence of flakiness: when it was seen and what it was.
struct Evidence {
    at: Timestamp,
    reason: String,
}

/// A commit with a pass and a fail, within one run (a retry) or across uploads.
fn same_commit(history: &[ResultRecord]) -> Option<Evidence> {
    let mut seen: HashMap<&str, (bool, bool)> = HashMap::new();
    let mut latest: Option<Evidence> = None;
    for r in history {
        let (passed, failed) = seen.entry(&r.commit).or_default();
        let was_mixed = *passed && *failed;
        *passed |= r.outcome.saw_pass();
        *failed |= r.outcome.saw_failure();
        let retried = r.outcome.saw_pass() && r.outcome.saw_failure();
        // New evidence: the result that first showed both on the commit, or a failure on a
        // commit known to pass. A pass on it is no new evidence: the commit keeps being
        // tested, and the test may recover meanwhile.
        if *passed && *failed && (!was_mixed || r.outcome.saw_failure()) {
            let how = if retried && r.outcome.passed() {
                "failed, then passed on a retry"
            } else if retried {
                "passed, then failed on a retry"
            } else {
                "passed and failed across runs"
            };
            latest = Some(Evidence {
                at: r.at,
                reason: format!("flaky: commit {} {how}", r.commit),
            });
        }
    }
    latest
}

/// The runs of consecutive failures among stable results: (start, length).
fn failure_runs(stable: &[&ResultRecord]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < stable.len() {
        if stable[i].outcome.failed() {
            let start = i;
            while i < stable.len() && stable[i].outcome.failed() {
                i += 1;
            }
            runs.push((start, i - start));
        } else {
            i += 1;
        }
    }
    runs
}

/// A run of failures shorter than a breakage, with passes on both sides.
fn alternation(stable: &[&ResultRecord], t: &Thresholds) -> Option<Evidence> {
    let short = t.broken_consecutive_failures as usize;
    failure_runs(stable)
        .into_iter()
        .filter(|&(start, len)| len < short && start > 0 && start + len < stable.len())
        .map(|(start, len)| Evidence {
            at: stable[start + len].at,
            reason: format!(
                "flaky: failed on a stable branch between passes (commit {}, passed again at {})",
                stable[start].commit,
                stable[start + len].commit
            ),
        })
        .max_by_key(|e| e.at)
}

/// Intermittent failures (outside breakage-long runs) over the latest stable results.
fn intermittent_rate(stable: &[&ResultRecord], t: &Thresholds) -> Option<Evidence> {
    let from = stable.len().saturating_sub(t.flaky_window as usize);
    let window = &stable[from..];
    if window.len() < t.flaky_min_results as usize {
        return None;
    }
    let short = t.broken_consecutive_failures as usize;
    let intermittent: Vec<&ResultRecord> = failure_runs(window)
        .into_iter()
        .filter(|&(_, len)| len < short)
        .flat_map(|(start, len)| window[start..start + len].iter().copied())
        .collect();
    let last = intermittent.iter().map(|r| r.at).max()?;
    (intermittent.len() * 100 >= t.flaky_failure_percent as usize * window.len()).then(|| {
        Evidence {
            at: last,
            reason: format!(
                "flaky: {} of the last {} results on stable branches failed intermittently (threshold {}%)",
                intermittent.len(),
                window.len(),
                t.flaky_failure_percent
            ),
        }
    })
}
