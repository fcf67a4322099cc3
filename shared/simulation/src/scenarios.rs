//! The preset scenarios: each a workload and the engine policies run on it.

use crate::workload::{Arrivals, Workload};
use mq_core::settings::{OptimizationMode, QueueMode, SettingsPatch};

/// Queue settings under a name.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub settings: SettingsPatch,
}

impl Policy {
    /// Names a policy by its settings.
    pub fn named(settings: SettingsPatch) -> Self {
        Self {
            name: describe(&settings),
            settings,
        }
    }
}

/// `queue: single, concurrency 8, optimistic merge, batches of 4, ...`.
pub fn describe(s: &SettingsPatch) -> String {
    let mut parts = vec![
        match s.mode {
            Some(QueueMode::Parallel) => "parallel lanes".to_owned(),
            _ => "predictive".to_owned(),
        },
        format!("concurrency {}", s.concurrency.unwrap_or(1)),
    ];
    if s.can_optimistically_merge == Some(true) {
        parts.push("optimistic merge".into());
    }
    if let Some(d) = s.pending_failure_depth.filter(|&d| d > 1) {
        parts.push(format!("depth {d}"));
    }
    if s.adaptive_pending_failure == Some(true) {
        parts.push("adaptive pending failure".into());
    }
    if s.batch == Some(true) {
        parts.push(format!("batches of {}", s.batching_min_size.unwrap_or(4)));
    }
    if s.optimization_mode == Some(OptimizationMode::BisectionSkipRedundantTests) {
        parts.push("skip redundant bisection".into());
    }
    format!("queue: {}", parts.join(", "))
}

/// A workload and the policies to compare on it.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub workload: Workload,
    /// `W` of the bound and of the GitHub-style baseline.
    pub concurrency: u32,
    pub policies: Vec<Policy>,
}

/// Single mode, predictive testing with optimistic merge.
pub fn predictive(concurrency: u32, depth: u32) -> Policy {
    Policy::named(SettingsPatch {
        concurrency: Some(concurrency),
        can_optimistically_merge: Some(true),
        pending_failure_depth: Some(depth),
        ..Default::default()
    })
}

/// Predictive testing whose pending-failure window adapts to the flakes the queue observes.
pub fn adaptive(concurrency: u32, depth: u32) -> Policy {
    Policy::named(SettingsPatch {
        adaptive_pending_failure: Some(true),
        ..predictive(concurrency, depth).settings
    })
}

/// Single mode with batches of `size`.
pub fn batching(concurrency: u32, size: u32) -> Policy {
    Policy::named(SettingsPatch {
        concurrency: Some(concurrency),
        can_optimistically_merge: Some(true),
        batch: Some(true),
        batching_min_size: Some(size),
        batching_max_wait_time_minutes: Some(10),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    })
}

/// Parallel mode: lanes from impacted targets.
pub fn parallel(concurrency: u32) -> Policy {
    Policy::named(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(concurrency),
        can_optimistically_merge: Some(true),
        ..Default::default()
    })
}

/// The scenarios behind the targets: throughput at 10% failures, CI cost with batching,
/// safety over 10,000 pull requests with flaky CI.
pub fn presets() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "throughput",
            about: "saturated queue, 10% broken PRs, CI 30 min (±10%), concurrency 8",
            workload: Workload {
                prs: 3_000,
                arrivals: Arrivals::Saturated { backlog: 24 },
                ci_minutes: 30.0,
                ci_jitter: 0.1,
                failure_rate: 0.10,
                flake_rate: 0.0,
                conflict_rate: 0.0,
                ci_quantiles: None,
                exact_shares: false,
                targets: 50,
                seed: 7,
            },
            concurrency: 8,
            policies: vec![predictive(8, 1), adaptive(8, 1), batching(8, 4)],
        },
        Scenario {
            name: "batching",
            about: "saturated queue, 2% broken PRs, CI 30 min (±10%), batching",
            workload: Workload {
                prs: 3_000,
                arrivals: Arrivals::Saturated { backlog: 40 },
                ci_minutes: 30.0,
                ci_jitter: 0.1,
                failure_rate: 0.02,
                flake_rate: 0.0,
                conflict_rate: 0.0,
                ci_quantiles: None,
                exact_shares: false,
                targets: 50,
                seed: 11,
            },
            concurrency: 4,
            policies: vec![predictive(4, 1), adaptive(4, 1), batching(2, 12)],
        },
        Scenario {
            name: "flaky",
            about: "10,000 PRs at 12/hour, 3% broken, 5% of CI runs flaky, CI 30 min (±20%)",
            workload: Workload {
                prs: 10_000,
                arrivals: Arrivals::PerHour(12.0),
                ci_minutes: 30.0,
                ci_jitter: 0.2,
                failure_rate: 0.03,
                flake_rate: 0.05,
                conflict_rate: 0.0,
                ci_quantiles: None,
                exact_shares: false,
                targets: 50,
                seed: 13,
            },
            concurrency: 8,
            policies: vec![
                predictive(8, 2),
                adaptive(8, 2),
                batching(4, 4),
                parallel(8),
            ],
        },
    ]
}
