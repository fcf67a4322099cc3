//! What reading a queue's finished runs as summaries saves over reading them whole, on
//! DynamoDB items as the adapter writes them.
//!
//! `cargo bench -p mq-store --features dynamodb --bench history_summaries` builds the finished
//! runs of a busy week (3,000) and of the most the advice reads (20,000), in two shapes: a
//! monorepo's CI (40 check runs, 3 commit statuses, 10 required names, two pull requests
//! tested) in single mode, and the same in parallel mode with 200 impacted targets. For each,
//! it prints the items' size as DynamoDB counts it (`dynamo::item_bytes`, as the adapter
//! counts a transaction's), whole and with the summary's attributes
//! only (`RUN_SUMMARY`, the projection the advice reads with), and the time to decode them
//! (fastest of three). DynamoDB bills and pages a read by whole items either way: the
//! projection saves what is sent, decoded and held.

use aws_sdk_dynamodb::types::AttributeValue;
use mq_core::git::{
    CheckConclusion, CheckRunReport, CheckStatus, RequiredStatuses, StatusReport, StatusState,
};
use mq_core::ids::Sha;
use mq_core::run::{BranchPr, RunStatus, TestRun, TestedPr};
use mq_core::time::Timestamp;
use mq_store::dynamo::{RUN_SUMMARY, item_bytes};
use std::collections::HashMap;
use std::time::{Duration, Instant};

type Item = HashMap<String, AttributeValue>;

fn main() {
    for (shape, targets) in [("single mode", 0), ("parallel mode, 200 targets", 200)] {
        for count in [3_000, 20_000] {
            let whole: Vec<Item> = (0..count)
                .map(|i| serde_dynamo::to_item(run(i, targets)).expect("an item"))
                .collect();
            let summaries: Vec<Item> = whole.iter().map(projected).collect();
            let (whole_mb, summary_mb) = (megabytes(&whole), megabytes(&summaries));
            let (whole_ms, summary_ms) = (decode(&whole), decode(&summaries));
            println!(
                "{shape}, {count} runs: whole {whole_mb:.1} MB, decoded in {whole_ms:.0} ms; \
                 summaries {summary_mb:.1} MB, decoded in {summary_ms:.0} ms"
            );
        }
    }
}

/// Finished run `i`: two pull requests tested, a monorepo's CI reports, `targets` impacted.
fn run(i: u64, targets: usize) -> TestRun {
    let at = Timestamp(1_795_000_000_000 + i as i64 * 60_000);
    let pr = |n: u64| 1_000 + 2 * i + n;
    let sha = |n: u64| Sha::new(format!("{:040x}", pr(n)));
    let mut run = TestRun::sample(&format!("run-{i:06}-a1b2c3"));
    run.status = RunStatus::Succeeded;
    run.created_at = at;
    run.started_at = Some(at.plus_millis(5_000));
    run.finished_at = Some(at.plus_millis(1_800_000));
    run.base_sha = Some(Sha::new(format!("{:040x}", i)));
    run.sha = Some(Sha::new(format!("{:040x}", i + 1)));
    run.tested = (0..2)
        .map(|n| TestedPr {
            entry_id: format!("entry-{}-{}", pr(n), at.millis()),
            pr: pr(n) as u32,
            title: format!("Make the scheduler {n} times faster on large inputs"),
            head_sha: sha(n),
        })
        .collect();
    run.chain = (0..2)
        .map(|n| BranchPr {
            pr: pr(n) as u32,
            head_sha: sha(n),
            title: format!("Make the scheduler {n} times faster on large inputs"),
            stamp: None,
        })
        .collect();
    run.required = Some(RequiredStatuses {
        contexts: (0..10).map(|n| format!("test (shard {n})")).collect(),
        source: None,
    });
    run.statuses = (0..3)
        .map(|n| StatusReport {
            context: format!("ci/external-{n}"),
            state: StatusState::Success,
            url: format!("https://ci.example.com/acme/rocket/builds/{i}{n:03}"),
            description: "The build passed".to_owned(),
            updated_at: at,
        })
        .collect();
    run.check_runs = (0..40)
        .map(|n| CheckRunReport {
            id: 9_000_000_000 + i * 100 + n,
            name: format!("test (ubuntu-latest, stable, shard {n})"),
            status: CheckStatus::Completed,
            conclusion: Some(CheckConclusion::Success),
            url: format!("https://github.com/acme/rocket/actions/runs/{i}/job/{n}"),
            suite_id: 7_000_000 + i,
            updated_at: at,
        })
        .collect();
    if targets > 0 {
        let names: Vec<String> = (0..targets)
            .map(|n| format!("//services/payments/{n:04}/integration-tests:all"))
            .collect();
        run.impacted_targets = Some(names.clone());
        run.impacted_targets_for_tested_prs = Some(names);
    }
    run
}

/// The item with the summary's attributes only, as a projected read answers.
fn projected(item: &Item) -> Item {
    item.iter()
        .filter(|(name, _)| RUN_SUMMARY.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The fastest of three decodes of `items` into runs, in milliseconds.
fn decode(items: &[Item]) -> f64 {
    let mut fastest = Duration::MAX;
    for _ in 0..3 {
        let items = items.to_vec();
        let started = Instant::now();
        let runs: Vec<TestRun> = serde_dynamo::from_items(items).expect("runs");
        fastest = fastest.min(started.elapsed());
        assert!(runs.iter().all(|r| !r.tested.is_empty()));
    }
    fastest.as_secs_f64() * 1e3
}

fn megabytes(items: &[Item]) -> f64 {
    let bytes: usize = items.iter().map(item_bytes).sum();
    bytes as f64 / 1e6
}
