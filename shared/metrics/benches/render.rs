//! The Prometheus text of 50 queues with a busy hour (the figures the handlers bench's
//! `getMergeQueueMetrics` reads), rendered on its own: `cargo bench -p mq-metrics --bench render`.
//! The target is under 10 ms for the call (`BENCHMARKS.md`).

use mq_core::metrics::{
    CI_RUNS_BUCKETS, CiRuns, DURATION_BUCKETS, Durations, LaneFigures, OutcomeFigures, QueueFigures,
};
use mq_core::settings::QueueState;
use mq_metrics::prometheus_text::render;
use std::hint::black_box;
use std::time::{Duration, Instant};

const QUEUES: usize = 50;
const CALLS: usize = 2_000;

fn main() {
    let figures: Vec<QueueFigures> = (0..QUEUES).map(busy_hour).collect();
    let mut bytes = 0;
    let mut times: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let started = Instant::now();
            let text = render(black_box(&figures), &[]).expect("text");
            let elapsed = started.elapsed();
            bytes = text.len();
            elapsed
        })
        .collect();
    report(
        &format!(
            "render, {QUEUES} queues with a busy hour ({} KiB)",
            bytes / 1024
        ),
        &mut times,
    );
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    println!(
        "{what}: {CALLS} calls, median {:.2} ms, p90 {:.2} ms",
        millis(times[CALLS / 2]),
        millis(times[CALLS * 9 / 10]),
    );
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Twelve pull requests merged in the hour, each tested once for three minutes after a
/// minute's wait; two testing now.
fn busy_hour(q: usize) -> QueueFigures {
    let twelve = |seconds: f64| Durations::of(&DURATION_BUCKETS, [seconds; 12]);
    QueueFigures {
        repo: "acme/rocket".into(),
        branch: format!("release/{q:02}"),
        state: QueueState::Running,
        depth: 2,
        awaiting_mergeability: 0,
        effects_pending: 3,
        entries_stuck: 0,
        restarts: 0,
        wait_seconds: twelve(60.0),
        main: LaneFigures {
            prs_testing: 2,
            runs_active: 2,
            runs_limit: 2,
            // Succeeded, failed, cancelled.
            runs_finished: [12, 0, 0],
            test_seconds: twelve(180.0),
        },
        bisection: LaneFigures {
            runs_limit: 1,
            ..LaneFigures::default()
        },
        // Merged, failed, cancelled.
        outcomes: [
            OutcomeFigures {
                count: 12,
                time_in_queue_seconds: twelve(300.0),
                ci_runs: CiRuns::of(&CI_RUNS_BUCKETS, [1.0; 12]),
            },
            OutcomeFigures::default(),
            OutcomeFigures::default(),
        ],
    }
}
