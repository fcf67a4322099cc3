//! `simulate`: runs the preset scenarios (or one, with overrides) and prints, per policy,
//! merges per hour, mean and p95 time to merge, CI runs per merged pull request, invariant
//! violations and the ratio to the predictive-testing bound, beside two baselines.
//!
//! ```sh
//! cargo run --release --bin simulate                      # every scenario, a table each
//! cargo run --release --bin simulate -- --json            # one JSON object per policy
//! cargo run --release --bin simulate -- --scenario flaky --prs 2000 --flake-rate 0.1
//! ```

use clap::Parser;
use mq_simulation::scenarios::describe;
use mq_simulation::workload::Arrivals;
use mq_simulation::{Bound, Figures, Scenario, presets, run};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "simulate",
    about = "Simulates the merge queue on a synthetic workload"
)]
struct Args {
    /// Print one JSON object per policy and line instead of tables.
    #[arg(long)]
    json: bool,
    /// Run one scenario: throughput, batching or flaky (default: all).
    #[arg(long)]
    scenario: Option<String>,
    /// Pull requests to simulate.
    #[arg(long)]
    prs: Option<u32>,
    /// Seed of the workload and of CI.
    #[arg(long)]
    seed: Option<u64>,
    /// Mean CI duration in minutes.
    #[arg(long)]
    ci_minutes: Option<f64>,
    /// CI durations vary uniformly by this fraction around the mean.
    #[arg(long)]
    ci_jitter: Option<f64>,
    /// Share of pull requests that break CI.
    #[arg(long)]
    failure_rate: Option<f64>,
    /// Chance that a CI run fails with nothing broken.
    #[arg(long)]
    flake_rate: Option<f64>,
    /// Share of pull requests whose first head conflicts in a test branch.
    #[arg(long)]
    conflict_rate: Option<f64>,
    /// Poisson arrivals per hour (instead of the scenario's arrivals).
    #[arg(long, conflicts_with = "saturated")]
    arrivals_per_hour: Option<f64>,
    /// Keep the queue saturated: this many pull requests always wait.
    #[arg(long)]
    saturated: Option<usize>,
    /// Concurrency of every policy, of the bound and of the GitHub-style baseline.
    #[arg(long)]
    concurrency: Option<u32>,
    /// Batch size of the batching policies.
    #[arg(long)]
    batch_size: Option<u32>,
}

impl Args {
    fn apply(&self, s: &mut Scenario) {
        let w = &mut s.workload;
        w.prs = self.prs.unwrap_or(w.prs);
        w.seed = self.seed.unwrap_or(w.seed);
        w.ci_minutes = self.ci_minutes.unwrap_or(w.ci_minutes);
        w.ci_jitter = self.ci_jitter.unwrap_or(w.ci_jitter);
        w.failure_rate = self.failure_rate.unwrap_or(w.failure_rate);
        w.flake_rate = self.flake_rate.unwrap_or(w.flake_rate);
        w.conflict_rate = self.conflict_rate.unwrap_or(w.conflict_rate);
        if let Some(rate) = self.arrivals_per_hour {
            w.arrivals = Arrivals::PerHour(rate);
        }
        if let Some(backlog) = self.saturated {
            w.arrivals = Arrivals::Saturated { backlog };
        }
        if let Some(c) = self.concurrency {
            s.concurrency = c;
            for p in &mut s.policies {
                p.settings.concurrency = Some(c);
            }
        }
        if let Some(size) = self.batch_size {
            for p in s
                .policies
                .iter_mut()
                .filter(|p| p.settings.batch == Some(true))
            {
                p.settings.batching_min_size = Some(size);
            }
        }
        for p in &mut s.policies {
            p.name = describe(&p.settings);
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut scenarios = presets();
    if let Some(name) = &args.scenario {
        scenarios.retain(|s| s.name == name);
        if scenarios.is_empty() {
            eprintln!("unknown scenario {name:?}: expected throughput, batching or flaky");
            return ExitCode::from(2);
        }
    }
    for s in &mut scenarios {
        args.apply(s);
        let figures = run(s);
        if args.json {
            print_json(s, &figures);
        } else {
            print_table(s, &figures);
        }
    }
    ExitCode::SUCCESS
}

fn print_json(s: &Scenario, figures: &[Figures]) {
    for f in figures {
        let mut f = f.clone();
        f.policy = format!("{}: {}", s.name, f.policy);
        println!("{}", serde_json::to_string(&f).expect("figures serialise"));
    }
}

fn print_table(s: &Scenario, figures: &[Figures]) {
    let w = &s.workload;
    let bound = Bound::new(w.failure_rate, s.concurrency, w.ci_minutes);
    let arrivals = match w.arrivals {
        Arrivals::Saturated { backlog } => format!("saturated ({backlog} waiting)"),
        Arrivals::PerHour(r) => format!("{r}/hour"),
    };
    println!("== {}: {}", s.name, s.about);
    println!(
        "   {} PRs, arrivals {arrivals}, CI {} min ±{:.0}%, {:.1}% broken, {:.1}% flaky, {:.1}% conflicting, seed {}",
        w.prs,
        w.ci_minutes,
        w.ci_jitter * 100.0,
        w.failure_rate * 100.0,
        w.flake_rate * 100.0,
        w.conflict_rate * 100.0,
        w.seed
    );
    println!(
        "   bound (1-(1-p)^W)/p with p={}, W={}: {:.2} PRs through the queue per CI cycle ({:.2} merges/hour at most)",
        w.failure_rate,
        s.concurrency,
        bound.per_cycle,
        bound.per_cycle * (1.0 - w.failure_rate) / bound.cycle_hours
    );
    let bors = figures
        .iter()
        .find(|f| f.policy.starts_with("baseline: bors"));
    let github = figures
        .iter()
        .find(|f| f.policy.starts_with("baseline: github"));
    let width = figures.iter().map(|f| f.policy.len()).max().unwrap_or(6);
    println!(
        "   {:<width$} {:>8} {:>8} {:>8} {:>10} {:>4} {:>6} {:>6} {:>6} {:>8}",
        "policy",
        "merges/h",
        "mean min",
        "p95 min",
        "runs/merge",
        "viol",
        "bound",
        "merges",
        "x bors",
        "x github"
    );
    for f in figures {
        let ratio = |b: Option<&Figures>| {
            b.map_or("-".to_owned(), |b| {
                format!(
                    "{:.2}",
                    f.merges_per_hour / b.merges_per_hour.max(f64::MIN_POSITIVE)
                )
            })
        };
        let opt = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.3}"));
        println!(
            "   {:<width$} {:>8.2} {:>8.1} {:>8.1} {:>10.3} {:>4} {:>6} {:>6} {:>6} {:>8}",
            f.policy,
            f.merges_per_hour,
            f.mean_minutes_to_merge,
            f.p95_minutes_to_merge,
            f.ci_runs_per_merge,
            f.violations,
            opt(f.ratio_to_bound),
            opt(f.merge_ratio_to_bound),
            ratio(bors),
            ratio(github),
        );
    }
    println!(
        "   bound: PRs merged or rejected as broken per CI cycle over the bound; merges: merges alone over it (at most 1-p)\n"
    );
}
