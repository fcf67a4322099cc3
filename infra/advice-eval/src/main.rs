//! `advice-eval`: how well the advisor estimates and advises, on generated histories whose
//! parameters are known.
//!
//! ```text
//! cargo run --release -p advice-eval                    # every case, tables
//! cargo run --release -p advice-eval -- --json          # one JSON object per case
//! cargo run --release -p advice-eval -- --cases flaky --seeds 3 --no-grid
//! ```
//!
//! Each case is a queue: a workload (arrivals, CI durations, broken pull requests, flaky CI,
//! conflicts) and its current settings. The simulator runs the engine on it and keeps what a
//! store would keep; a window holding a given number of pull requests is cut out of the
//! middle of the run.
//!
//! 1. *Estimates*: for windows of 200 and 500 pull requests, over several seeds, each
//!    estimate against what the window really held (the arrivals, CI durations, broken and
//!    conflicting pull requests and flaky runs the workload drew in it). Target: within 10%
//!    once the window holds 200 pull requests.
//! 2. *Advice*: from the estimates of a 500-PR window, the advice for each goal, against a
//!    grid search over the same settings on the same estimates (every setting projected as
//!    the advice projects its finalists: same runs, same seeds).
//!    Target: the advice within 5% of the grid's best (merges per hour; runs per merge;
//!    time to merge within the CI budget), and within the budget. Both are also run on the
//!    true workload at a higher fidelity, and the time each advice took is printed.

mod generate;

use generate::{Case, Generated, Truth, generate};
use mq_advisor::search::{DECIDE, rank, within};
use mq_advisor::{Budget, Candidate, Estimates, Goal, Model, Settings, Space, advise, estimate};
use mq_core::settings::{OptimizationMode, SettingsPatch};
use mq_simulation::workload::{Arrivals, Workload};
use std::time::Instant;

use clap::Parser;

/// How well the advisor estimates and advises, on generated histories whose parameters are
/// known.
#[derive(Parser)]
struct Args {
    /// Print one JSON object per case instead of tables.
    #[arg(long)]
    json: bool,
    /// Windows per size whose estimates are checked.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Only these cases (names, comma-separated).
    #[arg(long, value_delimiter = ',')]
    cases: Option<Vec<String>>,
    /// Skip the grid search the advice is compared with.
    #[arg(long = "no-grid", action = clap::ArgAction::SetFalse)]
    grid: bool,
    /// Check the estimates only, without advice.
    #[arg(long = "estimates-only", action = clap::ArgAction::SetFalse)]
    advice: bool,
}

fn workload(
    arrivals: Arrivals,
    ci: (f64, f64),
    broken: f64,
    flaky: f64,
    conflicts: f64,
) -> Workload {
    Workload {
        prs: 0,
        arrivals,
        ci_minutes: ci.0,
        ci_jitter: ci.1,
        failure_rate: broken,
        flake_rate: flaky,
        conflict_rate: conflicts,
        ci_quantiles: None,
        exact_shares: false,
        targets: 50,
        seed: 0,
    }
}

fn settings(concurrency: u32, depth: u32, batch: Option<u32>) -> SettingsPatch {
    SettingsPatch {
        concurrency: Some(concurrency),
        can_optimistically_merge: Some(true),
        pending_failure_depth: Some(depth),
        batch: Some(batch.is_some()),
        batching_min_size: batch,
        batching_max_wait_time_minutes: Some(10),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..SettingsPatch::default()
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "throughput",
            about: "saturated (24 waiting), CI 30 min ±10%, 10% broken, no flakes, no conflicts; concurrency 8",
            workload: workload(
                Arrivals::Saturated { backlog: 24 },
                (30.0, 0.1),
                0.10,
                0.0,
                0.0,
            ),
            settings: settings(8, 1, None),
            ci_budget: 30.0,
        },
        Case {
            name: "batching",
            about: "saturated (40 waiting), CI 30 min ±10%, 2% broken, 1% flaky, no conflicts; concurrency 4",
            workload: workload(
                Arrivals::Saturated { backlog: 40 },
                (30.0, 0.1),
                0.02,
                0.01,
                0.0,
            ),
            settings: settings(4, 1, None),
            ci_budget: 8.0,
        },
        Case {
            name: "flaky",
            about: "12 PRs/hour, CI 30 min ±20%, 3% broken, 5% flaky, 2% conflicts; concurrency 8, depth 2",
            workload: workload(Arrivals::PerHour(12.0), (30.0, 0.2), 0.03, 0.05, 0.02),
            settings: settings(8, 2, None),
            ci_budget: 15.0,
        },
        Case {
            name: "quiet",
            about: "4 PRs/hour, CI 20 min ±30%, 8% broken, 2% flaky, 5% conflicts; the defaults (concurrency 1)",
            workload: workload(Arrivals::PerHour(4.0), (20.0, 0.3), 0.08, 0.02, 0.05),
            settings: SettingsPatch::default(),
            ci_budget: 6.0,
        },
        Case {
            name: "busy",
            about: "20 PRs/hour, CI 45 min ±20%, 5% broken, 10% flaky, 3% conflicts; concurrency 4, batches of 4",
            workload: workload(Arrivals::PerHour(20.0), (45.0, 0.2), 0.05, 0.10, 0.03),
            settings: settings(4, 1, Some(4)),
            ci_budget: 20.0,
        },
    ]
}

/// The error of an estimate: relative to the truth, or absolute when the truth is zero.
fn error(estimate: f64, truth: f64) -> f64 {
    if truth == 0.0 {
        estimate.abs()
    } else {
        (estimate - truth).abs() / truth
    }
}

/// One estimate over several windows: the truths, the estimates, their counts, and the
/// workload's parameter.
#[derive(Default)]
struct Accuracy {
    truth: Vec<f64>,
    estimate: Vec<f64>,
    count: Vec<u32>,
    parameter: f64,
    /// A share of its count (broken, flaky, conflicts): its sampling error can be told.
    share: bool,
}

impl Accuracy {
    fn push(&mut self, truth: f64, estimate: f64, count: u32) {
        self.truth.push(truth);
        self.estimate.push(estimate);
        self.count.push(count);
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }

    fn errors(&self) -> impl Iterator<Item = f64> + '_ {
        self.truth
            .iter()
            .zip(&self.estimate)
            .map(|(t, e)| error(*e, *t))
    }

    fn mean_error(&self) -> f64 {
        self.errors().sum::<f64>() / self.truth.len().max(1) as f64
    }

    fn max_error(&self) -> f64 {
        self.errors().fold(0.0, f64::max)
    }

    fn relative(&self) -> bool {
        self.truth.iter().all(|t| *t != 0.0)
    }

    fn mean_count(&self) -> f64 {
        self.count.iter().map(|c| f64::from(*c)).sum::<f64>() / self.count.len().max(1) as f64
    }

    /// The mean estimate against the workload's parameter.
    fn bias(&self) -> f64 {
        let mean = Self::mean(&self.estimate);
        if self.parameter == 0.0 {
            mean
        } else {
            mean / self.parameter - 1.0
        }
    }

    /// The relative standard error of a share of `count` observations at the truth: what
    /// counting alone leaves, whatever the estimator.
    fn sampling_error(&self) -> Option<f64> {
        let p = Self::mean(&self.truth);
        let n = self.mean_count();
        (self.share && p > 0.0 && n > 0.0).then(|| ((1.0 - p) / (n * p)).sqrt())
    }
}

/// The windows the estimates are judged on, in pull requests.
const WINDOWS: [u32; 2] = [200, 1_000];

const ESTIMATES: [&str; 6] = [
    "arrivals/hour",
    "CI minutes",
    "broken",
    "flaky",
    "conflicts",
    "backlog",
];

fn accuracies(case: &Case, prs: u32, seeds: u64) -> Vec<(&'static str, Accuracy)> {
    let w = &case.workload;
    let parameters = [
        match w.arrivals {
            Arrivals::PerHour(rate) => rate,
            Arrivals::Saturated { .. } => 0.0,
        },
        w.ci_minutes,
        w.failure_rate,
        w.flake_rate,
        w.conflict_rate,
        match w.arrivals {
            Arrivals::Saturated { backlog } => backlog as f64,
            Arrivals::PerHour(_) => 0.0,
        },
    ];
    let mut out: Vec<(&'static str, Accuracy)> = ESTIMATES
        .iter()
        .zip(parameters)
        .enumerate()
        .map(|(i, (n, parameter))| {
            let share = (2..=4).contains(&i);
            (
                *n,
                Accuracy {
                    parameter,
                    share,
                    ..Accuracy::default()
                },
            )
        })
        .collect();
    for seed in 1..=seeds {
        let g = generate(case, prs, seed);
        let e = estimate(&g.past);
        let t = g.truth;
        let saturated = t.backlog.is_some();
        if !saturated {
            out[0].1.push(
                t.arrivals_per_hour,
                e.arrivals_per_hour.value,
                e.arrivals_per_hour.count,
            );
        }
        out[1]
            .1
            .push(t.ci_minutes, e.ci_minutes.value, e.ci_minutes.count);
        out[2]
            .1
            .push(t.broken_rate, e.broken_rate.value, e.broken_rate.count);
        out[3]
            .1
            .push(t.flake_rate, e.flake_rate.value, e.flake_rate.count);
        out[4].1.push(
            t.conflict_rate,
            e.conflict_rate.value,
            e.conflict_rate.count,
        );
        if let Some(backlog) = t.backlog {
            out[5].1.push(backlog, e.backlog.value, e.backlog.count);
        }
    }
    out.retain(|(_, a)| !a.truth.is_empty());
    out
}

fn print_accuracy(prs: u32, seeds: u64, acc: &[(&str, Accuracy)]) {
    println!("   window of {prs} PRs, {seeds} windows:");
    println!(
        "     {:<14} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>9}",
        "estimate", "truth", "estimate", "mean err", "max err", "count", "bias", "counting"
    );
    for (name, a) in acc {
        let pct = |x: f64| {
            if a.relative() {
                format!("{:.1}%", x * 100.0)
            } else {
                format!("{x:.4}")
            }
        };
        println!(
            "     {:<14} {:>8.4} {:>8.4} {:>8} {:>8} {:>7.0} {:>6.1}% {:>9}",
            name,
            Accuracy::mean(&a.truth),
            Accuracy::mean(&a.estimate),
            pct(a.mean_error()),
            pct(a.max_error()),
            a.mean_count(),
            a.bias() * 100.0,
            a.sampling_error()
                .map_or("-".to_owned(), |s| format!("{:.1}%", s * 100.0)),
        );
    }
}

/// The goals each case is advised for.
fn goals(case: &Case) -> [Goal; 3] {
    [
        Goal::MostMerges,
        Goal::FewestCiRuns,
        Goal::FastestWithinBudget {
            ci_runs_per_hour: case.ci_budget,
        },
    ]
}

fn goal_name(goal: Goal) -> String {
    match goal {
        Goal::MostMerges => "most merges/hour".to_owned(),
        Goal::FewestCiRuns => "fewest CI runs/merge".to_owned(),
        Goal::FastestWithinBudget { ci_runs_per_hour } => {
            format!("fastest within {ci_runs_per_hour} runs/hour")
        }
    }
}

/// The figure a goal is judged by, and whether higher is better.
fn judged(goal: Goal, c: &Candidate) -> (f64, bool) {
    match goal {
        Goal::MostMerges => (c.projection.merges_per_hour, true),
        Goal::FewestCiRuns => (c.projection.ci_runs_per_merge, false),
        Goal::FastestWithinBudget { .. } => (c.projection.mean_minutes_to_merge, false),
    }
}

/// How far the advice is from the grid's best: 0 when as good or better.
fn shortfall(goal: Goal, advice: &Candidate, grid: &Candidate) -> f64 {
    let (a, higher) = judged(goal, advice);
    let (g, _) = judged(goal, grid);
    if higher {
        ((g - a) / g).max(0.0)
    } else {
        ((a - g) / g).max(0.0)
    }
}

/// Every setting of the space at the decision fidelity, on the advice's seeds, spread over
/// the machine's cores.
fn grid(model: &Model, base: &Settings, budget: Budget) -> Vec<Candidate> {
    let space = Settings::space(base);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = space.len().div_ceil(threads).max(1);
    let seeds: Vec<u64> = (0..DECIDE.1 as u64)
        .map(|i| budget.seed.wrapping_add(i))
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = space
            .chunks(chunk)
            .map(|part| {
                let seeds = &seeds;
                scope.spawn(move || {
                    part.iter()
                        .map(|s| Candidate {
                            settings: *s,
                            projection: model.project(s, model.prs_for(s, DECIDE.0), seeds),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a grid thread"))
            .collect()
    })
}

/// Pull requests and seeds of the check of both picks.
const VERIFY: (u32, [u64; 2]) = (3_000, [101, 102]);

/// The grid's best for a goal.
fn grid_best(grid: &[Candidate], goal: Goal) -> Candidate {
    let mut ranked = grid.to_vec();
    rank(goal, &mut ranked);
    ranked[0]
}

/// A setting on the case's true workload, at a high fidelity on other seeds.
fn on_truth(case: &Case, g: &Generated, settings: &Settings) -> mq_advisor::Projection {
    let truth = Estimates {
        ci_quantiles: (0..21)
            .map(|i| {
                let q = f64::from(i) / 20.0;
                case.workload.ci_minutes * (1.0 + (2.0 * q - 1.0) * case.workload.ci_jitter)
            })
            .collect(),
        ..true_estimates(case, &g.truth)
    };
    let model = Model::new(&truth, &g.config);
    model.project(settings, 2_000, &[101, 102])
}

/// The estimates a perfect estimator would make: the workload's own parameters.
fn true_estimates(case: &Case, truth: &Truth) -> Estimates {
    let w = &case.workload;
    let exact = |value: f64| mq_advisor::Estimate { value, count: 0 };
    let (arrivals, backlog) = match w.arrivals {
        Arrivals::PerHour(rate) => (rate, 0.0),
        Arrivals::Saturated { backlog } => (truth.arrivals_per_hour, backlog as f64),
    };
    Estimates {
        window_hours: 0.0,
        arrivals_per_hour: exact(arrivals),
        ci_minutes: exact(w.ci_minutes),
        ci_quantiles: Vec::new(),
        broken_rate: exact(w.failure_rate),
        flake_rate: exact(w.flake_rate),
        conflict_rate: exact(w.conflict_rate),
        departures_per_hour: exact(arrivals),
        backlog: exact(backlog),
        backlog_floor: backlog,
        settling_minutes: 0.0,
        observed: mq_advisor::Observed {
            merges_per_hour: 0.0,
            mean_minutes_to_merge: None,
            p95_minutes_to_merge: None,
            ci_runs_per_merge: None,
            ci_runs_per_hour: 0.0,
            merges: 0,
        },
    }
}

fn main() {
    let args = Args::parse();
    let mut all = cases();
    if let Some(names) = &args.cases {
        all.retain(|c| names.iter().any(|n| n == c.name));
    }
    let budget = Budget::default();
    for case in &all {
        let mut json = serde_json::json!({ "case": case.name });
        if !args.json {
            println!("== {}: {}", case.name, case.about);
        }
        for prs in WINDOWS {
            let acc = accuracies(case, prs, args.seeds);
            if args.json {
                for (name, a) in &acc {
                    let r4 = |x: f64| serde_json::json!((x * 10_000.0).round() / 10_000.0);
                    json[format!("{name} mean error ({prs} PRs)")] = r4(a.mean_error());
                    json[format!("{name} max error ({prs} PRs)")] = r4(a.max_error());
                }
            } else {
                print_accuracy(prs, args.seeds, &acc);
            }
        }
        if !args.advice {
            if args.json {
                println!("{json}");
            }
            continue;
        }
        let g = generate(case, 500, 1);
        let estimates = estimate(&g.past);
        let model = Model::new(&estimates, &g.config);
        let saturated = matches!(model.workload().arrivals, Arrivals::Saturated { .. });
        if !args.json {
            println!(
                "     (figures: as projected for the pick | again over {} PRs on two fresh seeds | on the true workload; * falls behind)",
                VERIFY.0
            );
            let o = &estimates.observed;
            println!(
                "   advice from a window of {} PRs ({:.1} hours, projected {}): observed {:.2} merges/h, {:.1} min to merge (p95 {:.1}), {:.3} runs/merge, {:.1} runs/h (NaN: nothing merged)",
                g.prs,
                estimates.window_hours,
                if saturated {
                    "saturated"
                } else {
                    "at its arrival rate"
                },
                o.merges_per_hour,
                o.mean_minutes_to_merge.unwrap_or(f64::NAN),
                o.p95_minutes_to_merge.unwrap_or(f64::NAN),
                o.ci_runs_per_merge.unwrap_or(f64::NAN),
                o.ci_runs_per_hour,
            );
        }
        let compared = if args.grid {
            let t = Instant::now();
            let c = grid(&model, &Settings::of(&g.config), budget);
            if !args.json {
                println!(
                    "   grid: {} settings at {} PRs x {} seeds in {:.0} s",
                    c.len(),
                    DECIDE.0,
                    DECIDE.1,
                    t.elapsed().as_secs_f64()
                );
            }
            c
        } else {
            Vec::new()
        };
        for goal in goals(case) {
            let t = Instant::now();
            let advice = advise(&estimates, &g.config, goal, budget).expect("advice");
            let seconds = t.elapsed().as_secs_f64();
            let best = advice.best;
            let grid_best = args.grid.then(|| grid_best(&compared, goal));
            // Both picks again on fresh seeds and longer runs: the grid's best is the best of
            // many noisy projections, which flatters it at the fidelity it was picked at.
            let again = |c: &Candidate| Candidate {
                settings: c.settings,
                projection: model.project(&c.settings, VERIFY.0, &VERIFY.1),
            };
            let best_again = again(&best);
            let grid_again = grid_best.as_ref().map(again);
            let short = grid_best.map(|gb| shortfall(goal, &best, &gb));
            let short_again = grid_again.map(|gb| shortfall(goal, &best_again, &gb));
            let within_again = within(goal, &best_again.projection);
            if args.json {
                let key = goal_name(goal);
                let r4 = |x: f64| serde_json::json!((x * 10_000.0).round() / 10_000.0);
                json[format!("{key}: seconds")] = r4(seconds);
                json[format!("{key}: within budget")] = serde_json::json!(within_again);
                if let (Some(s), Some(a)) = (short, short_again) {
                    json[format!("{key}: shortfall to grid")] = r4(s);
                    json[format!("{key}: shortfall to grid, fresh seeds")] = r4(a);
                }
                continue;
            }
            println!(
                "   goal {}: advice in {:.2} s ({} projections, {} simulated PRs, work {}){}",
                goal_name(goal),
                seconds,
                advice.evaluations,
                advice.simulated_prs,
                advice.work,
                match (short, short_again) {
                    (Some(s), Some(a)) => format!(
                        "; short of the grid's best by {:.1}% as picked, {:.1}% on fresh seeds{}",
                        s * 100.0,
                        a * 100.0,
                        if within_again {
                            ""
                        } else {
                            " (over the budget)"
                        }
                    ),
                    _ => String::new(),
                }
            );
            let figures = |p: &mq_advisor::Projection| {
                format!(
                    "{:>6.2}/h{} {:>6.1} min {:>6.3} runs/merge {:>5.1} runs/h",
                    p.merges_per_hour,
                    if p.keeps_up { " " } else { "*" },
                    p.mean_minutes_to_merge,
                    p.ci_runs_per_merge,
                    p.ci_runs_per_hour
                )
            };
            let row = |label: &str, c: &Candidate, fresh: Option<&Candidate>| {
                let fresh =
                    fresh.map_or(String::new(), |f| format!(" | {}", figures(&f.projection)));
                let truth = on_truth(case, &g, &c.settings);
                println!(
                    "     {label:<8} {:<62} {}{fresh} | {}",
                    c.settings.describe(),
                    figures(&c.projection),
                    figures(&truth)
                );
            };
            row("current", &advice.current, None);
            row("advice", &best, Some(&best_again));
            if let (Some(gb), Some(ga)) = (grid_best, grid_again) {
                row("grid", &gb, Some(&ga));
            }
        }
        if args.json {
            println!("{json}");
        } else {
            println!();
        }
    }
}
