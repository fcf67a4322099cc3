//! What a queue's history says about its workload (docs/queue-semantics.md §13).
//!
//! Every estimate is a plain count over the window's facts, with the number of observations
//! it was computed from. A *head* is a pull request at one head sha.
//!
//! - **arrivals**: heads first submitted in the window, per hour. Submitting the same head
//!   again (after a flake) is not an arrival, nor is the head pushed to resolve a conflict
//!   (the simulator submits those by itself).
//! - **CI duration**: runs that ran to a verdict (passed, or failed for `tests_failed` or
//!   `timeout`), from their branch's creation to their result: the mean, and quantiles for
//!   the simulator to draw from.
//! - **broken**: of the heads first submitted in the window and decided an hour before its
//!   end (merged, or failed their tests and neither merged nor submitted again), the share
//!   that failed. A head that failed and then merged was failed by a flake; the hour leaves
//!   time to submit a flaky failure again.
//! - **flaky**: of the runs that ran to a verdict and held only heads that merged (nothing
//!   in them was broken), the share that failed. A flaky failure's head merges only after
//!   it is tested again, so runs of the last part of the window are left out: as long as a
//!   head that failed and merged later took from its failure to its merge (the 90th
//!   percentile in the window, at least an hour).
//! - **conflicts**: of the pull requests first submitted in the window whose first entry
//!   left the queue, the share that left `merge_conflict` or `conflicts_with_target`.
//! - **backlog**: the number of entries waiting for their first test, averaged over the
//!   window, and the number waiting nine tenths of the time; **departures**: pull requests
//!   that left for good, per hour. A queue that nearly always had more waiting than it could
//!   start, while pull requests came no faster than they left ([`Estimates::saturated`]), is
//!   projected saturated: its submission rate then only shows how fast it took them.
//!
//! Counting only what was first submitted in the window keeps a pull request that spent
//! long in the queue (or came back after a conflict) from counting more than once.

use crate::past::Past;
use mq_core::engine::reason;
use mq_core::entry::{Entry, EntryState};
use mq_core::ids::{PrNumber, Sha};
use mq_core::metrics::{Window, ran_to_verdict};
use mq_core::run::{RunStatus, TestRun};
use mq_core::time::Timestamp;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Reasons that say a pull request conflicted.
pub const CONFLICT_REASONS: [&str; 2] = [reason::MERGE_CONFLICT, "conflicts_with_target"];

/// Quantiles of the CI duration kept for the simulator: 0%, 5%, ..., 100%.
pub const CI_QUANTILES: usize = 21;

/// The shortest settling margin: an hour, to submit a flaky failure again.
pub const MIN_MARGIN_MS: i64 = 3_600_000;

/// One estimate and the number of observations behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub value: f64,
    pub count: u32,
}

impl Estimate {
    /// `count` observations over `hours`, per hour (0 over no time).
    fn per_hour(count: u32, hours: f64) -> Self {
        let value = if hours > 0.0 {
            f64::from(count) / hours
        } else {
            0.0
        };
        Self { value, count }
    }

    fn share(hits: u32, count: u32) -> Self {
        let value = if count == 0 {
            0.0
        } else {
            f64::from(hits) / f64::from(count)
        };
        Self { value, count }
    }
}

/// What the window measured of the queue as it ran: the same figures a projection gives.
/// The figures per merge are `None` when nothing merged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    pub merges_per_hour: f64,
    pub mean_minutes_to_merge: Option<f64>,
    pub p95_minutes_to_merge: Option<f64>,
    pub ci_runs_per_merge: Option<f64>,
    pub ci_runs_per_hour: f64,
    pub merges: u32,
}

/// The workload of a queue, estimated from its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimates {
    pub window_hours: f64,
    /// Heads submitted per hour.
    pub arrivals_per_hour: Estimate,
    /// Mean minutes a run takes to its verdict.
    pub ci_minutes: Estimate,
    /// Minutes at 0%, 5%, ..., 100% of the runs ([`CI_QUANTILES`] values; empty without runs).
    pub ci_quantiles: Vec<f64>,
    /// Share of heads that break CI.
    pub broken_rate: Estimate,
    /// Share of runs that fail with nothing broken in them.
    pub flake_rate: Estimate,
    /// Share of pull requests that conflict.
    pub conflict_rate: Estimate,
    /// Pull requests that left the queue for good (no entry of theirs active at the end),
    /// per hour.
    pub departures_per_hour: Estimate,
    /// Entries waiting for their first test, on average.
    pub backlog: Estimate,
    /// Entries waiting for their first test nine tenths of the time at least.
    pub backlog_floor: f64,
    /// Minutes before the window's end after which runs are not counted for flakes: how long
    /// a flaky failure's head took to merge.
    pub settling_minutes: f64,
    pub observed: Observed,
}

/// Arrivals this much above departures say the queue fell behind, not that it was kept full.
pub const FALLING_BEHIND: f64 = 1.15;

impl Estimates {
    /// Whether the queue was kept saturated: nine tenths of the time, more entries waited for
    /// their first test than two groups of `group_size` and two more, while pull requests came no faster
    /// than they left (they were submitted as room was made, so the submission rate only
    /// shows how fast the queue took them). A queue whose arrivals outran its departures fell
    /// behind instead: its arrival rate is the demand.
    pub fn saturated(&self, group_size: u32) -> bool {
        let full = self.backlog_floor >= 2.0 * f64::from(group_size.max(1)) + 2.0;
        let kept_pace =
            self.arrivals_per_hour.value <= FALLING_BEHIND * self.departures_per_hour.value;
        full && kept_pace
    }
}

/// The estimates of a queue's workload from its history.
pub fn estimate(past: &Past) -> Estimates {
    let entries = past.entries();
    let window = past.window;
    let runs = &past.kept.finished_runs;
    let heads = Heads::of(&entries);
    let margin = flake_margin(&heads);
    let settled = window.to.plus_millis(-margin);
    let (ci_minutes, ci_quantiles) = ci_durations(runs);
    let (backlog, backlog_floor) = backlog(&entries, past);
    Estimates {
        window_hours: past.hours(),
        arrivals_per_hour: arrivals(&heads, past),
        ci_minutes,
        ci_quantiles,
        broken_rate: broken(&heads, window),
        flake_rate: flaky(runs, &heads, settled),
        conflict_rate: conflicts(&heads, window),
        departures_per_hour: departures(&entries, past),
        backlog,
        backlog_floor,
        settling_minutes: margin as f64 / 60_000.0,
        observed: observed(&entries, runs, past),
    }
}

fn minutes(from: Timestamp, to: Timestamp) -> f64 {
    to.millis_since(from) as f64 / 60_000.0
}

/// How long a head that failed its tests took to merge after its failure (the 90th
/// percentile in the window), at least [`MIN_MARGIN_MS`].
fn flake_margin(heads: &Heads) -> i64 {
    let mut delays: Vec<i64> = heads
        .by_head
        .values()
        .filter_map(|h| Some(h.merged_at?.millis_since(h.failed_at?)))
        .filter(|d| *d > 0)
        .collect();
    delays.sort_unstable();
    let p90 = delays
        .get((delays.len() * 9).div_ceil(10).saturating_sub(1))
        .copied()
        .unwrap_or(0);
    p90.max(MIN_MARGIN_MS)
}

/// Every head of the window's entries, with what became of it.
struct Heads {
    /// (pr, head) → what happened to it.
    by_head: BTreeMap<(PrNumber, Sha), Head>,
    prs: BTreeMap<PrNumber, Pr>,
}

#[derive(Default)]
struct Head {
    first_submitted: Option<Timestamp>,
    merged_at: Option<Timestamp>,
    /// When it first failed its tests.
    failed_at: Option<Timestamp>,
    active: bool,
    /// Pushed to resolve a conflict of the pull request's previous head.
    fixes_conflict: bool,
}

impl Head {
    fn merged(&self) -> bool {
        self.merged_at.is_some()
    }
}

/// A pull request: when it was first submitted, and how its first entry ended.
struct Pr {
    first_submitted: Timestamp,
    /// Whether its first entry left the queue, and whether for a conflict.
    first_left: Option<bool>,
}

impl Heads {
    fn of(entries: &[&Entry]) -> Self {
        let mut by_head: BTreeMap<(PrNumber, Sha), Head> = BTreeMap::new();
        let mut prs: BTreeMap<PrNumber, Pr> = BTreeMap::new();
        // Entries come in submission order: a pull request's previous head is known first.
        let mut last_head: BTreeMap<PrNumber, (Sha, bool)> = BTreeMap::new();
        for e in entries {
            let conflicted = e
                .reason()
                .is_some_and(|r| e.state == EntryState::Failed && CONFLICT_REASONS.contains(&r));
            prs.entry(e.pr).or_insert(Pr {
                first_submitted: e.submitted_at,
                first_left: e.state.is_terminal().then_some(conflicted),
            });
            let after_conflict = match last_head.get(&e.pr) {
                Some((sha, conflict)) => *sha != e.pr_facts.head_sha && *conflict,
                None => false,
            };
            let head = by_head
                .entry((e.pr, e.pr_facts.head_sha.clone()))
                .or_default();
            if head.first_submitted.is_none() {
                head.first_submitted = Some(e.submitted_at);
                head.fixes_conflict = after_conflict;
            }
            if e.state == EntryState::Merged {
                head.merged_at = e.concluded_at;
            }
            head.active |= e.state.is_active();
            let tests = [reason::TESTS_FAILED, reason::TIMEOUT];
            let failed =
                e.state == EntryState::Failed && e.reason().is_some_and(|r| tests.contains(&r));
            if failed && head.failed_at.is_none() {
                head.failed_at = e.concluded_at;
            }
            last_head.insert(e.pr, (e.pr_facts.head_sha.clone(), conflicted));
        }
        Self { by_head, prs }
    }

    fn merged(&self, pr: PrNumber, sha: &Sha) -> bool {
        self.by_head
            .get(&(pr, sha.clone()))
            .is_some_and(Head::merged)
    }

    fn merged_pr(&self, pr: PrNumber) -> bool {
        self.by_head
            .range((pr, Sha::new(""))..)
            .take_while(|((p, _), _)| *p == pr)
            .any(|(_, h)| h.merged())
    }
}

fn arrivals(heads: &Heads, past: &Past) -> Estimate {
    let window = past.window;
    let count = heads
        .by_head
        .values()
        .filter(|h| h.first_submitted.is_some_and(|t| window.contains(t)) && !h.fixes_conflict)
        .count() as u32;
    Estimate::per_hour(count, past.hours())
}

fn ci_durations(runs: &[TestRun]) -> (Estimate, Vec<f64>) {
    let mut durations: Vec<f64> = runs
        .iter()
        .filter(|r| ran_to_verdict(r))
        .filter_map(|r| Some(minutes(r.started_at?, r.finished_at?)))
        .filter(|m| *m >= 0.0)
        .collect();
    durations.sort_by(f64::total_cmp);
    let count = durations.len() as u32;
    if durations.is_empty() {
        return (Estimate { value: 0.0, count }, Vec::new());
    }
    let mean = durations.iter().sum::<f64>() / durations.len() as f64;
    let quantiles = (0..CI_QUANTILES)
        .map(|i| quantile(&durations, i as f64 / (CI_QUANTILES - 1) as f64))
        .collect();
    (Estimate { value: mean, count }, quantiles)
}

/// The `q` quantile of sorted values, interpolated.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let x = q * (sorted.len() - 1) as f64;
    let i = x.floor() as usize;
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + (next - sorted[i]) * (x - i as f64),
        None => sorted[i],
    }
}

fn broken(heads: &Heads, window: Window) -> Estimate {
    let decided_by = window.to.plus_millis(-MIN_MARGIN_MS);
    let (mut broken, mut decided) = (0, 0);
    for h in heads.by_head.values() {
        if !h.first_submitted.is_some_and(|t| window.contains(t)) {
            continue;
        }
        match (h.merged_at, h.failed_at) {
            (Some(merged), _) if merged < decided_by => decided += 1,
            (None, Some(failed)) if failed < decided_by && !h.active => {
                decided += 1;
                broken += 1;
            }
            _ => {}
        }
    }
    Estimate::share(broken, decided)
}

fn flaky(runs: &[TestRun], heads: &Heads, settled: Timestamp) -> Estimate {
    // `settled`: the window's end, less the time a flaky failure's head takes to merge.
    let (mut failed, mut clean) = (0, 0);
    for run in runs.iter().filter(|r| ran_to_verdict(r)) {
        if run.finished_at.is_none_or(|t| t >= settled) {
            continue;
        }
        let all_merged = run.tested.iter().all(|t| heads.merged(t.pr, &t.head_sha))
            && run.dependent_prs.iter().all(|&pr| heads.merged_pr(pr));
        if all_merged && !run.tested.is_empty() {
            clean += 1;
            failed += u32::from(run.status == RunStatus::Failed);
        }
    }
    Estimate::share(failed, clean)
}

fn conflicts(heads: &Heads, window: Window) -> Estimate {
    let (mut hits, mut count) = (0, 0);
    for pr in heads.prs.values() {
        if let Some(conflicted) = pr
            .first_left
            .filter(|_| window.contains(pr.first_submitted))
        {
            count += 1;
            hits += u32::from(conflicted);
        }
    }
    Estimate::share(hits, count)
}

/// Pull requests with an entry concluded in the window and none active at its end.
fn departures(entries: &[&Entry], past: &Past) -> Estimate {
    // The entries are those concluded in the window and those active at its end.
    let mut left: BTreeMap<PrNumber, bool> = BTreeMap::new();
    for e in entries {
        *left.entry(e.pr).or_insert(true) &= !e.state.is_active();
    }
    let count = left.values().filter(|gone| **gone).count() as u32;
    Estimate::per_hour(count, past.hours())
}

/// Entries waiting for their first test: the average over the window, and the number that
/// waited at least nine tenths of the time.
fn backlog(entries: &[&Entry], past: &Past) -> (Estimate, f64) {
    let window = past.window;
    let span = window.to.millis_since(window.from);
    let mut changes: Vec<(Timestamp, i64)> = Vec::new();
    let mut count = 0;
    for e in entries {
        let start = e.ready_at.unwrap_or(e.submitted_at).max(window.from);
        let end = e
            .first_tested_at
            .or(e.concluded_at)
            .unwrap_or(window.to)
            .min(window.to);
        if end > start {
            changes.push((start, 1));
            changes.push((end, -1));
            count += 1;
        }
    }
    changes.sort_unstable();
    // Time spent with each number waiting.
    let mut time_at: BTreeMap<i64, i64> = BTreeMap::new();
    let (mut waiting, mut since) = (0i64, window.from);
    for (at, change) in changes {
        *time_at.entry(waiting).or_default() += at.millis_since(since);
        waiting += change;
        since = at;
    }
    *time_at.entry(waiting).or_default() += window.to.millis_since(since);
    let waited: i64 = time_at.iter().map(|(n, t)| n * t).sum();
    let mut at_least = 0i64;
    let mut floor = 0;
    for (n, t) in time_at.iter().rev() {
        at_least += t;
        if at_least * 10 >= span * 9 {
            floor = *n;
            break;
        }
    }
    let mean = if span > 0 {
        waited as f64 / span as f64
    } else {
        0.0
    };
    (Estimate { value: mean, count }, floor as f64)
}

/// The window's own figures: merges per hour, minutes from a pull request's first
/// submission to its merge, CI runs (branches built) per merge and per hour.
fn observed(entries: &[&Entry], runs: &[TestRun], past: &Past) -> Observed {
    let window = past.window;
    let mut first: BTreeMap<PrNumber, Timestamp> = BTreeMap::new();
    for e in entries {
        first.entry(e.pr).or_insert(e.submitted_at);
    }
    let mut times: Vec<f64> = entries
        .iter()
        .filter(|e| e.state == EntryState::Merged)
        .filter_map(|e| {
            let at = e.concluded_at.filter(|t| window.contains(*t))?;
            Some(minutes(first[&e.pr], at))
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let merges = times.len() as u32;
    let built: BTreeSet<&str> = runs
        .iter()
        .filter(|r| r.started_at.is_some())
        .map(|r| r.id.as_str())
        .collect();
    let hours = past.hours().max(f64::MIN_POSITIVE);
    let per_merge = |x: f64| (merges > 0).then(|| x / f64::from(merges));
    Observed {
        merges_per_hour: f64::from(merges) / hours,
        mean_minutes_to_merge: per_merge(times.iter().sum()),
        p95_minutes_to_merge: (!times.is_empty()).then(|| quantile(&times, 0.95)),
        ci_runs_per_merge: per_merge(built.len() as f64),
        ci_runs_per_hour: built.len() as f64 / hours,
        merges,
    }
}
