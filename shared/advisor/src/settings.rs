//! The settings the advisor tunes, and the values it tries.

use mq_core::settings::{QueueConfig, QueueMode, SettingsPatch};

/// The queue settings the advice is about (the settings auto-tuning changes).
pub use mq_core::tuning::TunedSettings as Settings;

/// Concurrencies the search tries.
pub const CONCURRENCY: [u32; 8] = [1, 2, 3, 4, 6, 8, 12, 16];
/// Batch sizes the search tries (batching off is tried too).
pub const BATCH_SIZES: [u32; 7] = [2, 3, 4, 6, 8, 12, 16];
/// Bisection concurrencies the search tries, with batching, as divisors of the concurrency:
/// a quarter of it, half of it, all of it (the default of `createQueue`), at least 1. Fewer
/// bisection slots than failing batches need makes bisected pull requests pile up.
pub const BISECTION: [u32; 3] = [4, 2, 1];

/// The bisection concurrency a divisor of [`BISECTION`] gives at `concurrency`.
pub fn bisection_for(concurrency: u32, divisor: u32) -> u32 {
    (concurrency / divisor.max(1)).max(1)
}

/// The divisor of [`BISECTION`] whose bisection concurrency at `concurrency` is nearest
/// `bisection` (the largest share on a tie).
fn divisor_of(concurrency: u32, bisection: u32) -> u32 {
    let mut best = 1;
    for d in BISECTION {
        if bisection_for(concurrency, d).abs_diff(bisection)
            <= bisection_for(concurrency, best).abs_diff(bisection)
        {
            best = d;
        }
    }
    best
}

/// How failures are handled: optimistic merge, the pending-failure depth, adaptive pending
/// failure. Without optimistic merge the window can only delay a failure, so it is depth 1
/// and adaptive (a failure fails at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Failure {
    pub optimistic: bool,
    pub depth: u32,
    pub adaptive: bool,
}

/// The ways of handling failures the search tries.
pub const FAILURE: [Failure; 7] = [
    Failure {
        optimistic: false,
        depth: 1,
        adaptive: true,
    },
    Failure {
        optimistic: true,
        depth: 1,
        adaptive: false,
    },
    Failure {
        optimistic: true,
        depth: 1,
        adaptive: true,
    },
    Failure {
        optimistic: true,
        depth: 2,
        adaptive: false,
    },
    Failure {
        optimistic: true,
        depth: 2,
        adaptive: true,
    },
    Failure {
        optimistic: true,
        depth: 3,
        adaptive: false,
    },
    Failure {
        optimistic: true,
        depth: 3,
        adaptive: true,
    },
];

/// The search space around a setting, and the configuration the simulator runs for it.
pub trait Space: Sized {
    fn simulated(&self, current: &QueueConfig) -> SettingsPatch;
    fn failure(&self) -> Failure;
    fn with_failure(self, f: Failure) -> Self;
    fn candidate(
        base: &Self,
        concurrency: u32,
        batch: Option<(u32, u32)>,
        failure: Failure,
    ) -> Self;
    fn space(base: &Self) -> Vec<Self>;
    fn neighbours(&self, base: &Self) -> Vec<Self>;
}

impl Space for Settings {
    /// The whole configuration the simulator runs: `current` with these settings, in single
    /// mode, as a patch of the defaults.
    fn simulated(&self, current: &QueueConfig) -> SettingsPatch {
        let c = self.applied_to(current);
        SettingsPatch {
            mode: Some(QueueMode::Single),
            concurrency: Some(c.concurrency),
            bisection_concurrency: Some(c.bisection_concurrency),
            testing_timeout_minutes: Some(c.testing_timeout_minutes),
            pending_failure_depth: Some(c.pending_failure_depth),
            adaptive_pending_failure: Some(c.adaptive_pending_failure),
            can_optimistically_merge: Some(c.can_optimistically_merge),
            batch: Some(c.batch),
            batching_max_wait_time_minutes: Some(c.batching_max_wait_time_minutes),
            batching_min_size: Some(c.batching_min_size),
            optimization_mode: Some(c.optimization_mode),
            merge_method: Some(c.merge_method),
            ..SettingsPatch::default()
        }
    }

    fn failure(&self) -> Failure {
        Failure {
            optimistic: self.can_optimistically_merge,
            depth: self.pending_failure_depth,
            adaptive: self.adaptive_pending_failure,
        }
    }

    fn with_failure(self, f: Failure) -> Self {
        Self {
            can_optimistically_merge: f.optimistic,
            pending_failure_depth: f.depth,
            adaptive_pending_failure: f.adaptive,
            ..self
        }
    }

    /// A setting of the search space: `batch` is a batch size and a divisor of [`BISECTION`];
    /// batching's size and bisection concurrency are those of `base` when batching is off
    /// (they change nothing then).
    fn candidate(
        base: &Settings,
        concurrency: u32,
        batch: Option<(u32, u32)>,
        failure: Failure,
    ) -> Self {
        let (batch, size, bisection) = match batch {
            Some((size, divisor)) => (true, size, bisection_for(concurrency, divisor)),
            None => (false, base.batching_min_size, base.bisection_concurrency),
        };
        Settings {
            concurrency,
            batch,
            batching_min_size: size,
            bisection_concurrency: bisection,
            ..*base
        }
        .with_failure(failure)
    }

    /// Every setting of the search space (with `base`'s values where they change nothing).
    fn space(base: &Settings) -> Vec<Settings> {
        let mut batches: Vec<Option<(u32, u32)>> = vec![None];
        for size in BATCH_SIZES {
            for bisection in BISECTION {
                batches.push(Some((size, bisection)));
            }
        }
        let mut out = Vec::new();
        for concurrency in CONCURRENCY {
            for &batch in &batches {
                for failure in FAILURE {
                    out.push(Self::candidate(base, concurrency, batch, failure));
                }
            }
        }
        // At a low concurrency some divisors give the same bisection concurrency.
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The settings of the space one step away from this one in one dimension, or in
    /// concurrency and batch size together.
    fn neighbours(&self, base: &Settings) -> Vec<Settings> {
        let divisor = divisor_of(self.concurrency, self.bisection_concurrency);
        let batch = self.batch.then_some((self.batching_min_size, divisor));
        let mut out = Vec::new();
        for c in steps(&CONCURRENCY, self.concurrency) {
            out.push(Self::candidate(base, c, batch, self.failure()));
        }
        match batch {
            None => {
                for size in [2, 4] {
                    out.push(Self::candidate(
                        base,
                        self.concurrency,
                        Some((size, 1)),
                        self.failure(),
                    ));
                }
            }
            Some((size, divisor)) => {
                out.push(Self::candidate(
                    base,
                    self.concurrency,
                    None,
                    self.failure(),
                ));
                for s in steps(&BATCH_SIZES, size) {
                    let b = Some((s, divisor));
                    out.push(Self::candidate(base, self.concurrency, b, self.failure()));
                }
                for d in steps(&[1, 2, 4], divisor) {
                    let b = Some((size, d));
                    out.push(Self::candidate(base, self.concurrency, b, self.failure()));
                }
            }
        }
        for f in FAILURE.into_iter().filter(|f| *f != self.failure()) {
            out.push(Self::candidate(base, self.concurrency, batch, f));
        }
        // Concurrency and batch size together: fewer larger batches, or more smaller ones.
        if let Some((size, divisor)) = batch {
            for c in steps(&CONCURRENCY, self.concurrency) {
                for s in steps(&BATCH_SIZES, size) {
                    out.push(Self::candidate(base, c, Some((s, divisor)), self.failure()));
                }
            }
        }
        out
    }
}

/// The values of `values` next to `v` (below and above; `v` need not be one of them).
fn steps(values: &[u32], v: u32) -> Vec<u32> {
    let below = values.iter().rev().find(|&&x| x < v);
    let above = values.iter().find(|&&x| x > v);
    below.into_iter().chain(above).copied().collect()
}
