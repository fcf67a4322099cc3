//! Projections: a setting run by the simulator on the workload the estimates describe.

use crate::estimate::Estimates;
use crate::settings::{BATCH_SIZES, CONCURRENCY, Settings, Space};
use mq_core::settings::QueueConfig;
use mq_simulation::workload::{Arrivals, Workload};
use mq_simulation::{Options, simulate};
use serde::{Deserialize, Serialize};

/// The share of pull requests left out of a run's figures while the queue fills up.
pub const WARM_UP: f64 = 0.1;

/// A projection simulates at least this many times the pull requests a full queue holds.
pub const MIN_LINES: usize = 4;

/// `settings` as a projection simulates them: a concurrency, bisection concurrency and
/// batch size at most the largest the search tries ([`CONCURRENCY`], [`BATCH_SIZES`]). A
/// queue's own settings beyond them (a concurrency of thousands) are projected as those, so
/// that a projection's work stays bounded whatever the queue's settings.
fn bounded(settings: &Settings) -> Settings {
    let most = |values: &[u32]| values.iter().copied().max().unwrap_or(1);
    let concurrency = settings.concurrency.clamp(1, most(&CONCURRENCY));
    Settings {
        concurrency,
        batching_min_size: settings.batching_min_size.min(most(&BATCH_SIZES)),
        bisection_concurrency: settings.bisection_concurrency.min(concurrency),
        ..*settings
    }
}

/// The pull requests a group takes.
fn group_size(settings: &Settings) -> u32 {
    mq_core::settings::group_size(settings.batch, settings.batching_min_size)
}

/// What a setting is projected to do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Projection {
    pub merges_per_hour: f64,
    pub mean_minutes_to_merge: f64,
    pub p95_minutes_to_merge: f64,
    pub ci_runs_per_merge: f64,
    pub ci_runs_per_hour: f64,
    /// Whether the queue keeps up with its arrivals. A queue that falls behind holds more
    /// and more entries (waiting, or failed and waiting for bisection): it is stopped once
    /// it holds [`MAX_ACTIVE`] more than a full line, and counts as falling behind when it
    /// ends with half as many again as it held a quarter of the way (and twenty more); its
    /// merges per hour
    /// are then all it can do, and its time to merge only grows with the length of the run.
    pub keeps_up: bool,
}

/// Entries beyond a full line (the backlog, and two groups per testing slot) at which a
/// projection stops.
pub const MAX_ACTIVE: usize = 200;

impl Projection {
    /// A setting under which nothing merged.
    const STUCK: Projection = Projection {
        merges_per_hour: 0.0,
        mean_minutes_to_merge: f64::INFINITY,
        p95_minutes_to_merge: f64::INFINITY,
        ci_runs_per_merge: f64::INFINITY,
        ci_runs_per_hour: 0.0,
        keeps_up: false,
    };
}

/// The simulated world of a queue: its workload and the settings the advice leaves alone.
#[derive(Debug, Clone)]
pub struct Model {
    workload: Workload,
    current: QueueConfig,
}

impl Model {
    /// The workload the estimates describe, for a queue configured as `current`: saturated
    /// with the backlog it had, when it was ([`Estimates::saturated`]), else Poisson arrivals
    /// at its submission rate.
    pub fn new(estimates: &Estimates, current: &QueueConfig) -> Self {
        let arrivals = if estimates.saturated(current.group_size()) {
            Arrivals::Saturated {
                backlog: estimates.backlog.value.round().max(1.0) as usize,
            }
        } else {
            Arrivals::PerHour(estimates.arrivals_per_hour.value)
        };
        let workload = Workload {
            prs: 0,
            arrivals,
            ci_minutes: estimates.ci_minutes.value,
            ci_jitter: 0.0,
            failure_rate: estimates.broken_rate.value,
            flake_rate: estimates.flake_rate.value,
            conflict_rate: estimates.conflict_rate.value,
            ci_quantiles: Some(estimates.ci_quantiles.clone()),
            exact_shares: true,
            targets: 1,
            seed: 0,
        };
        Self {
            workload,
            current: current.clone(),
        }
    }

    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The backlog a saturated workload keeps (0 for arrivals at a rate).
    fn backlog(&self) -> usize {
        match self.workload.arrivals {
            Arrivals::Saturated { backlog } => backlog,
            Arrivals::PerHour(_) => 0,
        }
    }

    /// The pull requests a projection of `settings` needs at least: [`MIN_LINES`] times what
    /// the queue holds when full (a saturated backlog, and a group per testing slot), so
    /// that a large line is measured past its filling up.
    pub fn prs_for(&self, settings: &Settings, prs: u32) -> u32 {
        let settings = &bounded(settings);
        let full = self.backlog() + settings.concurrency as usize * group_size(settings) as usize;
        prs.max(u32::try_from(MIN_LINES * full).unwrap_or(u32::MAX))
    }

    /// Projects `settings` over `prs` pull requests, averaged over one run per seed (the same
    /// seeds give every setting the same pull requests).
    pub fn project(&self, settings: &Settings, prs: u32, seeds: &[u64]) -> Projection {
        self.project_costed(settings, prs, seeds).0
    }

    /// [`Model::project`], with the simulator's work it took (see `Simulated::work`).
    pub fn project_costed(
        &self,
        settings: &Settings,
        prs: u32,
        seeds: &[u64],
    ) -> (Projection, u64) {
        let settings = &bounded(settings);
        let patch = settings.simulated(&self.current);
        let backlog = self.backlog();
        let line = 2 * settings.concurrency as usize * group_size(settings) as usize;
        let options = Options {
            trace: false,
            until_fed: true,
            max_active: Some(MAX_ACTIVE + backlog + line),
        };
        let mut keeps_up = true;
        let mut work = 0;
        let mut sum = [0.0f64; 5];
        for &seed in seeds {
            let workload = Workload {
                prs,
                seed,
                ..self.workload.clone()
            };
            let run = simulate(&workload, &patch, options);
            work += run.work;
            // It grew past what it held early on, and past a full line: a short run's
            // early count may be taken while the line still fills up.
            let full = backlog + line + 20;
            let grew = run.active_at_end > (run.active_early * 3 / 2 + 20).max(full);
            keeps_up &= !run.overloaded && !grew;
            let Some(s) = run.tally.steady(WARM_UP) else {
                return (Projection::STUCK, work);
            };
            let figures = [
                s.merges_per_hour,
                s.mean_minutes_to_merge,
                s.p95_minutes_to_merge,
                s.ci_runs_per_merge,
                s.ci_runs_per_hour,
            ];
            for (total, x) in sum.iter_mut().zip(figures) {
                *total += x;
            }
        }
        let n = seeds.len().max(1) as f64;
        let projection = Projection {
            merges_per_hour: sum[0] / n,
            mean_minutes_to_merge: sum[1] / n,
            p95_minutes_to_merge: sum[2] / n,
            ci_runs_per_merge: sum[3] / n,
            ci_runs_per_hour: sum[4] / n,
            keeps_up,
        };
        (projection, work)
    }
}
