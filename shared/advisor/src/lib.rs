//! A queue advises its own settings from its own history (docs/queue-semantics.md §13).
//!
//! The advice is made in two pure steps, both deterministic:
//!
//! 1. [`estimate()`]: the queue's workload from the facts a store keeps of a window of its
//!    history ([`Past`], by default the last seven days: [`mq_core::tuning::WINDOW_MS`]):
//!    how fast heads arrive, how long CI takes, how many heads are broken, how often CI
//!    flakes, how often pull requests conflict, and whether the queue was saturated. Each
//!    estimate says how many observations it rests on.
//! 2. [`advise`]: the settings (concurrency, batching and batch size, bisection concurrency,
//!    pending-failure depth, optimistic merge, adaptive pending failure) that the simulator,
//!    fed with those estimates, finds best for a [`Goal`], next to the projection of the
//!    current settings. The search spends a fixed amount of the simulator's work
//!    ([`Budget`], counted in engine steps, not seconds), so it makes the same projections on
//!    any machine and the same estimates always give the same advice.
//!
//! ```text
//! let past = Past::new(window, store.history(id, window)?, &snapshot);
//! let estimates = estimate(&past);
//! let advice = advise(&estimates, &snapshot.queue.config, Goal::MostMerges, Budget::default())?;
//! let update = Event::UpdateSettings { patch: advice.best.settings.patch() };
//! ```

pub mod estimate;
pub mod past;
pub mod project;
pub mod search;
pub mod settings;
pub mod tune;

pub use estimate::{Estimate, Estimates, Observed, estimate};
pub use past::Past;
pub use project::{Model, Projection};
pub use search::{Budget, Candidate, Goal};
pub use settings::{Settings, Space};
pub use tune::worth_changing;

use mq_core::settings::{QueueConfig, QueueMode};
use serde::Serialize;

/// The fewest heads, and runs to a verdict, a window must hold for advice.
pub const MIN_HEADS: u32 = 20;
pub const MIN_RUNS: u32 = 10;

/// Advice for one queue and one goal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Advice {
    pub goal: Goal,
    pub estimates: Estimates,
    /// The current settings and their projection.
    pub current: Candidate,
    /// The best settings found, best first (the current ones among them when they are as
    /// good), each with its projection at the same fidelity as the current one.
    pub candidates: Vec<Candidate>,
    /// The first of `candidates`.
    pub best: Candidate,
    /// Whether the best meets the goal's constraint (the CI budget); when none does, the
    /// best is the one that uses the least CI per hour.
    pub within_budget: bool,
    /// Projections made, the simulator's work they took (within [`Budget::work`], but for
    /// the last projection) and the pull requests they simulated.
    pub evaluations: u32,
    pub work: u64,
    pub simulated_prs: u64,
}

/// Why there is no advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdviceError {
    /// The window holds too little to estimate from.
    NotEnoughHistory { heads: u32, runs: u32 },
    /// The simulator models single mode; a parallel queue's lanes would need an estimate of
    /// how its pull requests' impacted targets overlap.
    ParallelMode,
}

impl AdviceError {
    /// The reason's name in the API (`noAdvice.reason`).
    pub fn reason(&self) -> &'static str {
        match self {
            AdviceError::NotEnoughHistory { .. } => "not_enough_history",
            AdviceError::ParallelMode => "parallel_mode",
        }
    }
}

impl std::fmt::Display for AdviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdviceError::NotEnoughHistory { heads, runs } => write!(
                f,
                "the window holds {heads} submitted heads and {runs} finished runs; advice needs at least {MIN_HEADS} and {MIN_RUNS}"
            ),
            AdviceError::ParallelMode => {
                f.write_str("advice is for queues in single mode; this queue is in parallel mode")
            }
        }
    }
}

impl std::error::Error for AdviceError {}

/// The settings the simulator finds best for `goal` on the workload `estimates` describe,
/// for a queue configured as `current`.
pub fn advise(
    estimates: &Estimates,
    current: &QueueConfig,
    goal: Goal,
    budget: Budget,
) -> Result<Advice, AdviceError> {
    advise_considering(estimates, current, goal, budget, None)
}

/// [`advise`], with `proposed` (what an earlier check proposed) projected and ranked among
/// the candidates whatever the search finds, so that auto-tuning can tell whether it is
/// still among the best.
pub fn advise_considering(
    estimates: &Estimates,
    current: &QueueConfig,
    goal: Goal,
    budget: Budget,
    proposed: Option<Settings>,
) -> Result<Advice, AdviceError> {
    if current.mode == QueueMode::Parallel {
        return Err(AdviceError::ParallelMode);
    }
    let heads = estimates.arrivals_per_hour.count;
    let runs = estimates.ci_minutes.count;
    if heads < MIN_HEADS || runs < MIN_RUNS {
        return Err(AdviceError::NotEnoughHistory { heads, runs });
    }
    let model = Model::new(estimates, current);
    let now = Settings::of(current);
    let mut search = search::Search::new(&model, now, budget);
    let (candidates, current) = search.run(goal, now, proposed.as_slice());
    let best = candidates[0];
    Ok(Advice {
        goal,
        estimates: estimates.clone(),
        current,
        within_budget: search::within(goal, &best.projection),
        best,
        candidates,
        evaluations: search.evaluations,
        work: search.spent,
        simulated_prs: search.simulated_prs,
    })
}
