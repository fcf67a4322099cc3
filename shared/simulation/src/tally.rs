//! What a simulated run measured, and the figures it reports.

use serde::Serialize;
use std::collections::BTreeMap;

/// Counts kept while a policy runs.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// First submission of each pull request (resubmissions keep it).
    first_arrival: BTreeMap<u32, i64>,
    minutes_to_merge: Vec<f64>,
    /// When each merge happened, with its minutes to merge.
    merged_at: Vec<(i64, f64)>,
    /// When each test run started.
    run_started_at: Vec<i64>,
    /// When each pull request left the queue for good (merged or rejected), in order.
    done_at: Vec<i64>,
    pub merges: u32,
    /// Broken pull requests the queue rejected.
    pub rejected: u32,
    /// Test runs started (each costs a CI run, finished or not).
    pub ci_runs: u32,
    /// Broken promises: the target moved to a state that did not pass.
    pub violations: u32,
    pub end_ms: i64,
}

impl Tally {
    pub fn arrived(&mut self, pr: u32, at: i64) {
        self.first_arrival.entry(pr).or_insert(at);
    }

    pub fn merged(&mut self, pr: u32, at: i64) {
        self.merges += 1;
        let since = self.first_arrival.get(&pr).copied().unwrap_or(at);
        let minutes = (at - since) as f64 / 60_000.0;
        self.minutes_to_merge.push(minutes);
        self.merged_at.push((at, minutes));
        self.done_at.push(at);
        self.end_ms = self.end_ms.max(at);
    }

    pub fn rejected(&mut self, at: i64) {
        self.rejected += 1;
        self.done_at.push(at);
        self.end_ms = self.end_ms.max(at);
    }

    /// A test run started (it costs a CI run, finished or not).
    pub fn run_started(&mut self, at: i64) {
        self.ci_runs += 1;
        self.run_started_at.push(at);
    }

    /// When each pull request was first submitted.
    pub fn first_arrivals(&self) -> &BTreeMap<u32, i64> {
        &self.first_arrival
    }

    /// The figures of the steady part of a run: from the moment a share `warm_up` (0 to 1) of
    /// the pull requests submitted left the queue (or the first did, if that is later) to the last first submission, when the
    /// workload is exhausted and the queue starts to drain. Neither the queue filling up nor
    /// its draining count, so a short run measures what a long one would. `None` when that
    /// span is empty or holds no merge.
    pub fn steady(&self, warm_up: f64) -> Option<Steady> {
        let submitted = self.first_arrival.len() as f64;
        let k = (submitted * warm_up) as usize;
        let to = self.first_arrival.values().copied().max()?;
        // A queue that falls far behind may not get that many out before the last
        // submission: its span then starts at the first one out.
        let from = match k {
            0 => 0,
            _ if k < self.done_at.len() && self.done_at[k - 1] < to => self.done_at[k - 1],
            _ => *self.done_at.first().filter(|t| **t < to)?,
        };
        let within = |t: i64| from < t && t <= to;
        let mut minutes: Vec<f64> = self
            .merged_at
            .iter()
            .filter(|(t, _)| within(*t))
            .map(|(_, m)| *m)
            .collect();
        if minutes.is_empty() {
            return None;
        }
        // Merges come in time order: compare the last third's wait with the first third's.
        let third = minutes.len() / 3;
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let drift = if third == 0 {
            1.0
        } else {
            mean(&minutes[minutes.len() - third..]) / mean(&minutes[..third]).max(f64::MIN_POSITIVE)
        };
        minutes.sort_by(f64::total_cmp);
        let merges = minutes.len() as f64;
        let runs = self.run_started_at.iter().filter(|t| within(**t)).count() as f64;
        let hours = (to - from) as f64 / 3_600_000.0;
        let p95 = minutes[((merges * 0.95).ceil() as usize).saturating_sub(1)];
        Some(Steady {
            merges_per_hour: merges / hours,
            mean_minutes_to_merge: minutes.iter().sum::<f64>() / merges,
            p95_minutes_to_merge: p95,
            ci_runs_per_merge: runs / merges,
            ci_runs_per_hour: runs / hours,
            merges: minutes.len() as u32,
            hours,
            drift,
        })
    }

    /// Pull requests that left the queue for good.
    pub fn done(&self) -> u32 {
        self.merges + self.rejected
    }

    pub fn figures(&self, policy: &str, bound: Option<Bound>) -> Figures {
        let mut minutes = self.minutes_to_merge.clone();
        minutes.sort_by(f64::total_cmp);
        let mean = if minutes.is_empty() {
            0.0
        } else {
            minutes.iter().sum::<f64>() / minutes.len() as f64
        };
        let p95 = minutes
            .get(((minutes.len() as f64 * 0.95).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0);
        let hours = (self.end_ms as f64 / 3_600_000.0).max(f64::MIN_POSITIVE);
        let per_hour = f64::from(self.merges) / hours;
        let resolved_per_cycle = bound.map(|b| f64::from(self.done()) / hours * b.cycle_hours);
        Figures {
            policy: policy.to_owned(),
            merges_per_hour: round(per_hour, 2),
            mean_minutes_to_merge: round(mean, 1),
            p95_minutes_to_merge: round(p95, 1),
            ci_runs_per_merge: round(f64::from(self.ci_runs) / f64::from(self.merges.max(1)), 3),
            violations: self.violations,
            ratio_to_bound: bound
                .zip(resolved_per_cycle)
                .map(|(b, r)| round(r / b.per_cycle, 3)),
            merges: self.merges,
            rejected: self.rejected,
            hours: round(hours, 1),
            merge_ratio_to_bound: bound.map(|b| round(per_hour * b.cycle_hours / b.per_cycle, 3)),
        }
    }
}

/// What a run measured in its steady part ([`Tally::steady`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Steady {
    pub merges_per_hour: f64,
    pub mean_minutes_to_merge: f64,
    pub p95_minutes_to_merge: f64,
    pub ci_runs_per_merge: f64,
    pub ci_runs_per_hour: f64,
    pub merges: u32,
    pub hours: f64,
    /// The mean time to merge of the last third of the merges over that of the first third:
    /// well above 1 when the queue falls behind (pull requests wait longer and longer).
    pub drift: f64,
}

/// The throughput bound of predictive testing: `(1-(1-p)^W)/p` pull requests through the
/// queue per CI cycle (p the failure rate, W the concurrency).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub per_cycle: f64,
    pub cycle_hours: f64,
}

impl Bound {
    pub fn new(failure_rate: f64, concurrency: u32, ci_minutes: f64) -> Self {
        let w = f64::from(concurrency);
        let per_cycle = if failure_rate <= 0.0 {
            w
        } else {
            (1.0 - (1.0 - failure_rate).powf(w)) / failure_rate
        };
        Self {
            per_cycle,
            cycle_hours: ci_minutes / 60.0,
        }
    }
}

/// The figures of one policy. `--json` prints the first seven keys.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub policy: String,
    pub merges_per_hour: f64,
    pub mean_minutes_to_merge: f64,
    pub p95_minutes_to_merge: f64,
    pub ci_runs_per_merge: f64,
    pub violations: u32,
    /// Single mode only: pull requests through the queue (merged, or rejected as broken) per
    /// CI cycle, over the bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_bound: Option<f64>,
    #[serde(skip)]
    pub merges: u32,
    #[serde(skip)]
    pub rejected: u32,
    #[serde(skip)]
    pub hours: f64,
    /// Merges alone per CI cycle, over the bound (at most `1 - p` of it: a broken pull
    /// request uses a place in the cycle and never merges).
    #[serde(skip)]
    pub merge_ratio_to_bound: Option<f64>,
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
