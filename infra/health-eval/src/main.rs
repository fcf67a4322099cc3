//! `health-eval`: how well the test-health rules judge, on generated histories whose truth is
//! known.
//!
//! ```text
//! cargo run --release -p health-eval                # a table
//! cargo run --release -p health-eval -- --json      # {"flaky_precision": ..., ...}
//! cargo run --release -p health-eval -- --seed 7 --repos 40
//! ```
//!
//! Each simulated repository has tests that are healthy, flaky (each attempt fails with a
//! probability drawn from 5–50%), broken from a given upload on, or broken and fixed later.
//! Its CI uploads results per run, on `main` or on pull request branches, sometimes re-running
//! a commit, with retries in half of the repositories, and now and then an infrastructure
//! failure that fails everything. Results are judged as the service judges them (the same
//! functions), and compared with the truth at checkpoints: every test once it has 30 results,
//! and broken tests 3 stable results after they broke.

mod simulate;

use clap::Parser;
use simulate::{Checkpoint, Truth, simulate};

/// How well the test-health rules judge, on generated histories whose truth is known.
#[derive(Parser)]
struct Args {
    /// The seed of the generated histories.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Repositories simulated.
    #[arg(long, default_value_t = 40)]
    repos: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Precision and recall of one predicted status.
#[derive(Debug, Clone, Copy, Default)]
struct Score {
    true_positive: u32,
    predicted: u32,
    actual: u32,
}

impl Score {
    fn of(checkpoints: &[Checkpoint], status: Truth) -> Self {
        let mut s = Score::default();
        for c in checkpoints {
            let predicted = c.predicted == status;
            let actual = c.truth == status;
            s.predicted += u32::from(predicted);
            s.actual += u32::from(actual);
            s.true_positive += u32::from(predicted && actual);
        }
        s
    }

    fn precision(self) -> f64 {
        ratio(self.true_positive, self.predicted)
    }

    fn recall(self) -> f64 {
        ratio(self.true_positive, self.actual)
    }
}

fn ratio(a: u32, b: u32) -> f64 {
    if b == 0 {
        1.0
    } else {
        f64::from(a) / f64::from(b)
    }
}

fn main() {
    let args = Args::parse();
    let run = simulate(args.seed, args.repos);
    let flaky = Score::of(&run.checkpoints, Truth::Flaky);
    let broken = Score::of(&run.checkpoints, Truth::Broken);
    if args.json {
        let out = serde_json::json!({
            "flaky_precision": round(flaky.precision()),
            "flaky_recall": round(flaky.recall()),
            "broken_precision": round(broken.precision()),
            "broken_recall": round(broken.recall()),
        });
        println!("{out}");
    } else {
        print_table(&args, &run, flaky, broken);
    }
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn print_table(args: &Args, run: &simulate::Run, flaky: Score, broken: Score) {
    println!(
        "health-eval: seed {}, {} repositories, {} tests, {} uploads ({} infrastructure failures ignored), {} checkpoints",
        args.seed,
        args.repos,
        run.tests,
        run.uploads,
        run.infrastructure_uploads,
        run.checkpoints.len()
    );
    println!("status  precision  recall   (true positives / predicted / actual)   target");
    println!(
        "FLAKY   {:>9.4}  {:>6.4}   ({} / {} / {})   precision >= 0.95, recall >= 0.90 at 30 results",
        flaky.precision(),
        flaky.recall(),
        flaky.true_positive,
        flaky.predicted,
        flaky.actual
    );
    println!(
        "BROKEN  {:>9.4}  {:>6.4}   ({} / {} / {})   both >= 0.98 within 3 results of breaking",
        broken.precision(),
        broken.recall(),
        broken.true_positive,
        broken.predicted,
        broken.actual
    );
}
