//! The estimated time to merge of a pull request waiting in a queue (docs/queue-semantics.md
//! §12), from the queue's recent test durations and failure rate. Pure: the caller passes the
//! finished runs of the last hour and the line as it stands.
//!
//! The formula, for a pull request at position `p` among the waiting pull requests (1 is the
//! next to start):
//!
//! - `T`: the mean duration (start to result) of the main runs that passed or failed in the
//!   window; `f`: the share of them that failed, at most [`MAX_FAILURE_RATE`]. Without such a
//!   run there is no estimate.
//! - `b`: pull requests per group: `batchingMinSize` with batching on, else 1; `c`:
//!   `concurrency`; `L`: groups in the line (testing, or tested and waiting to merge).
//! - The pull request joins group `G = L + ceil(p / b)` of the line; groups test `c` at a time,
//!   so its group has its result at the end of wave `w = ceil(G / c)`.
//! - A failure ahead makes the groups behind test again: a wave takes `T / (1 - f)` on
//!   average (the expected number of attempts of a run that fails with chance `f`).
//! - The first wave is under way: the time the front group has tested, `e` (at most `T`),
//!   is already spent.
//! - Estimate: `max(0, w × T / (1 - f) - e)` seconds. Merging itself is counted as instant.

use crate::metrics::tested_seconds;
use crate::run::{RunKind, RunStatus, TestRun};

/// The failure rate used is at most this: beyond it a queue merges nothing, and the estimate
/// would grow without bound.
pub const MAX_FAILURE_RATE: f64 = 0.9;

/// What the queue's recent main runs say: how long a run tests and how often it fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecentTesting {
    /// Main runs that ran to a verdict in the window ([`crate::metrics::ran_to_verdict`]).
    pub runs: u32,
    /// Their mean duration, start to result, in seconds.
    pub mean_test_seconds: f64,
    /// The share of them that failed (0 to 1, before the cap of [`MAX_FAILURE_RATE`]).
    pub failure_rate: f64,
}

impl RecentTesting {
    /// From the runs finished in the window; `None` when no main run passed or failed in it.
    pub fn of<'a>(finished: impl IntoIterator<Item = &'a TestRun>) -> Option<Self> {
        let mut runs = 0u32;
        let mut failed = 0u32;
        let mut total_seconds = 0.0;
        for run in finished.into_iter().filter(|r| r.kind == RunKind::Main) {
            let Some(tested) = tested_seconds(run) else {
                continue;
            };
            runs += 1;
            failed += u32::from(run.status == RunStatus::Failed);
            total_seconds += tested;
        }
        (runs > 0).then(|| Self {
            runs,
            mean_test_seconds: total_seconds / f64::from(runs),
            failure_rate: f64::from(failed) / f64::from(runs),
        })
    }

    /// The mean time a wave of runs takes, counting the runs again after failures ahead:
    /// `T / (1 - f)`.
    pub fn seconds_per_wave(&self) -> f64 {
        self.mean_test_seconds / (1.0 - self.failure_rate.clamp(0.0, MAX_FAILURE_RATE))
    }
}

/// The line a waiting pull request is behind, and how it is tested.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineShape {
    /// Groups in the line: testing, or tested and waiting to merge or to be decided.
    pub groups: usize,
    /// Seconds the front group of the line has been testing (0 for an empty line).
    pub front_elapsed_seconds: f64,
    /// `concurrency` (at least 1).
    pub concurrency: u32,
    /// Pull requests per group: `batchingMinSize` with batching, else 1 (at least 1).
    pub batch_size: u32,
}

/// Seconds until the pull request at `position` among the waiting ones (1: next to start)
/// has been tested and merged, by the formula of this module. `position` 0 is read as 1.
pub fn seconds_to_merge(recent: &RecentTesting, line: &LineShape, position: usize) -> f64 {
    let batch = line.batch_size.max(1) as usize;
    let concurrency = line.concurrency.max(1) as usize;
    let group = line.groups + position.max(1).div_ceil(batch);
    let waves = group.div_ceil(concurrency);
    let spent = match line.groups {
        0 => 0.0,
        _ => line
            .front_elapsed_seconds
            .clamp(0.0, recent.mean_test_seconds),
    };
    (waves as f64 * recent.seconds_per_wave() - spent).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    fn run(kind: RunKind, status: RunStatus, started_s: i64, finished_s: i64) -> TestRun {
        TestRun {
            kind,
            status,
            created_at: Timestamp(started_s * 1000 - 500),
            started_at: Some(Timestamp(started_s * 1000)),
            finished_at: Some(Timestamp(finished_s * 1000)),
            ..TestRun::sample("r")
        }
    }

    fn testing(mean: f64, failure_rate: f64) -> RecentTesting {
        RecentTesting {
            runs: 10,
            mean_test_seconds: mean,
            failure_rate,
        }
    }

    fn line(groups: usize, elapsed: f64, concurrency: u32, batch_size: u32) -> LineShape {
        LineShape {
            groups,
            front_elapsed_seconds: elapsed,
            concurrency,
            batch_size,
        }
    }

    #[test]
    fn recent_testing_is_the_mean_and_failure_share_of_main_runs_with_a_result() {
        let finished = [
            run(RunKind::Main, RunStatus::Succeeded, 0, 100),
            run(RunKind::Main, RunStatus::Failed, 0, 300),
            run(RunKind::Main, RunStatus::Succeeded, 50, 250),
            run(RunKind::Main, RunStatus::Succeeded, 0, 400),
            // Neither a cancelled run nor a bisection run says how the line moves.
            run(RunKind::Main, RunStatus::Cancelled, 0, 10_000),
            run(RunKind::Bisection, RunStatus::Failed, 0, 10_000),
        ];
        let recent = RecentTesting::of(&finished).unwrap();
        assert_eq!(recent.runs, 4);
        assert_eq!(
            recent.mean_test_seconds,
            (100.0 + 300.0 + 200.0 + 400.0) / 4.0
        );
        assert_eq!(recent.failure_rate, 0.25);
        let only_cancelled = [run(RunKind::Main, RunStatus::Cancelled, 0, 10)];
        assert_eq!(RecentTesting::of(&only_cancelled), None);
        assert_eq!(RecentTesting::of(&[]), None);
    }

    #[test]
    fn a_run_without_a_start_counts_from_its_creation() {
        let mut r = run(RunKind::Main, RunStatus::Succeeded, 10, 70);
        r.started_at = None;
        let recent = RecentTesting::of(&[r]).unwrap();
        assert_eq!(recent.mean_test_seconds, 60.5);
    }

    #[test]
    fn the_next_pull_request_of_an_empty_line_merges_after_one_run() {
        let recent = testing(600.0, 0.0);
        assert_eq!(seconds_to_merge(&recent, &line(0, 0.0, 1, 1), 1), 600.0);
        assert_eq!(seconds_to_merge(&recent, &line(0, 0.0, 1, 1), 0), 600.0);
    }

    #[test]
    fn each_position_behind_adds_a_wave_at_concurrency_one() {
        let recent = testing(600.0, 0.0);
        let shape = line(2, 0.0, 1, 1);
        let expected = [1800.0, 2400.0, 3000.0];
        for (position, want) in (1..=3).zip(expected) {
            assert_eq!(seconds_to_merge(&recent, &shape, position), want);
        }
    }

    #[test]
    fn concurrency_tests_groups_side_by_side() {
        let recent = testing(600.0, 0.0);
        let shape = line(0, 0.0, 3, 1);
        let waits: Vec<f64> = (1..=7)
            .map(|p| seconds_to_merge(&recent, &shape, p))
            .collect();
        assert_eq!(waits, [600.0, 600.0, 600.0, 1200.0, 1200.0, 1200.0, 1800.0]);
    }

    #[test]
    fn batching_puts_several_pull_requests_in_one_group() {
        let recent = testing(600.0, 0.0);
        let shape = line(1, 0.0, 1, 4);
        // Behind the group in flight: positions 1-4 form the second group, 5-8 the third.
        assert_eq!(seconds_to_merge(&recent, &shape, 1), 1200.0);
        assert_eq!(seconds_to_merge(&recent, &shape, 4), 1200.0);
        assert_eq!(seconds_to_merge(&recent, &shape, 5), 1800.0);
    }

    #[test]
    fn failures_ahead_stretch_every_wave() {
        let shape = line(0, 0.0, 1, 1);
        assert_eq!(
            seconds_to_merge(&testing(600.0, 0.5), &shape, 2),
            2.0 * 1200.0
        );
        // The rate is capped: a queue where everything fails still gets a finite estimate.
        let hopeless = seconds_to_merge(&testing(600.0, 1.0), &shape, 1);
        assert!((hopeless - 6000.0).abs() < 1e-6, "{hopeless}");
    }

    #[test]
    fn the_time_the_front_group_has_tested_is_already_spent() {
        let recent = testing(600.0, 0.0);
        assert_eq!(seconds_to_merge(&recent, &line(1, 200.0, 2, 1), 1), 400.0);
        // No more than one run's mean is taken off, and an estimate is never negative.
        assert_eq!(seconds_to_merge(&recent, &line(1, 5000.0, 2, 1), 1), 0.0);
        assert_eq!(seconds_to_merge(&recent, &line(1, 5000.0, 1, 1), 1), 600.0);
        // An empty line has nothing under way, whatever is passed.
        assert_eq!(seconds_to_merge(&recent, &line(0, 300.0, 1, 1), 1), 600.0);
    }
}
