//! The queue simulator: drives the engine (`mq_core::engine::step`) with a synthetic
//! workload — arrivals, CI durations, broken pull requests, flaky CI — against a simulated
//! Git host and CI, and measures each policy beside two baselines (bors: one pull request at
//! a time; GitHub-style predictive testing that ejects failures).
//!
//! Every merge is checked: the target must move to a state that passed CI (single mode:
//! exactly, or a prefix of a passing chain; parallel mode: the merged pull requests end a
//! passing branch), and no broken pull request may merge. Anything else is a violation.
//!
//! The `simulate` binary (`infra/simulate`) prints the preset scenarios; the advisor
//! (`mq-advisor`) projects candidate settings with it.

pub mod baselines;
pub mod host;
pub mod queue;
pub mod scenarios;
pub mod tally;
pub mod workload;

pub use queue::{CiAnswer, Options, STEP_WORK, Simulated, Trace, simulate};
pub use scenarios::{Policy, Scenario, presets};
pub use tally::{Bound, Figures, Steady, Tally};

/// Runs every policy of a scenario, then the two baselines.
pub fn run(scenario: &Scenario) -> Vec<Figures> {
    let w = &scenario.workload;
    let bound = Bound::new(w.failure_rate, scenario.concurrency, w.ci_minutes);
    let mut out: Vec<Figures> = scenario
        .policies
        .iter()
        .map(|p| {
            let single = p.settings.mode != Some(mq_core::settings::QueueMode::Parallel);
            queue::run(w, &p.name, &p.settings, single.then_some(bound))
        })
        .collect();
    out.push(baselines::bors(w, Some(bound)));
    out.push(baselines::github(w, scenario.concurrency, Some(bound)));
    out
}
