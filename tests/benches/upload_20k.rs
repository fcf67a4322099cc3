//! One upload of 20,000 test cases (about 5 MB of JUnit XML), ingested through the local
//! gateway over HTTP with the in-memory store; the same upload into a store whose every call
//! takes 20 ms (a slow day's DynamoDB: a merge's time is its calls, one after another or a
//! few at once); then the same kind of upload against DynamoDB (moto on loopback), counting
//! the requests it sends by operation.
//!
//! moto slows down with every transactional write (2,000 test cases took 514 s on a 2-core
//! machine), so the DynamoDB part uploads `--dynamodb-cases N` test cases (500 unless given;
//! `--dynamodb-cases 20000` is the full upload, for very patient runs). Every request batches
//! a fixed number of items, so the counts scale linearly; the bench prints the count for
//! 20,000 from the measured one.
//!
//! ```text
//! cargo bench -p e2e-tests --bench upload_20k
//! cargo bench -p e2e-tests --bench upload_20k -- --memory-only
//! cargo bench -p e2e-tests --bench upload_20k -- --dynamodb-cases 20000
//! ```

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use e2e::health::{Run, generated_mix, upload};
use e2e::{Backend, TestEnv};
use mq_core::health::UploadMetadata;
use mq_core::ids::{OrgId, RepoRef};
use mq_service::test_health::ingest::{Limits, MERGE_FOR_A_REQUEST};
use mq_service::test_health::{IncomingUpload, ReportFile, ingest};
use mq_service::{App, SystemClock};
use mq_store::{DynamoStore, TableNames};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const CASES: usize = 20_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let memory_only = args.iter().any(|a| a == "--memory-only");
    let dynamodb_cases = args
        .iter()
        .position(|a| a == "--dynamodb-cases")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(500);
    let report = generated_mix(CASES);
    println!(
        "report: {CASES} test cases, {:.2} MB of XML",
        report.len() as f64 / 1e6
    );
    through_the_gateway(&report).await;
    into_a_slow_store(&report).await;
    if !memory_only {
        dynamodb_requests(dynamodb_cases).await;
    }
}

/// Three uploads of the report (new test cases, then updates), timed end to end over HTTP.
async fn through_the_gateway(report: &[u8]) {
    let env = TestEnv::start(Backend::Memory).await;
    for (i, what) in [
        "first upload (creates every test case)",
        "second upload (updates)",
        "third upload (updates)",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("bench-{i}");
        let commit = format!("C{i}");
        let started = Instant::now();
        let r = upload(
            &env,
            &Run::main(&commit, &id),
            &[],
            &[("big.xml", report.to_vec())],
        )
        .await;
        let elapsed = started.elapsed();
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(r.body["test_cases"], CASES as u64);
        println!(
            "in-memory store, HTTP through the local gateway, {what}: {:.3} s",
            elapsed.as_secs_f64()
        );
    }
}

/// Counts DynamoDB requests by operation (`X-Amz-Target`).
#[derive(Debug, Default, Clone)]
struct Counter(Arc<Mutex<BTreeMap<String, u32>>>);

impl Intercept for Counter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("?")
            .rsplit('.')
            .next()
            .unwrap_or("?")
            .to_owned();
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(target).or_default() += 1;
        Ok(())
    }
}

/// The report ingested into the in-memory store with 20 ms added to every call.
async fn into_a_slow_store(report: &[u8]) {
    let memory: Arc<dyn mq_store::Store> = Arc::new(mq_store::MemoryStore::new());
    let slow = mq_store::faults::FaultyStore::new(memory, 1);
    let latency = std::time::Duration::from_millis(20);
    slow.set_latency(latency, latency);
    let app = App::new(Arc::new(slow), Arc::new(SystemClock));
    let started = Instant::now();
    ingest(
        &app,
        &acme(),
        incoming(report, "slow-1"),
        &Limits::default(),
        MERGE_FOR_A_REQUEST,
    )
    .await
    .expect("ingested");
    println!(
        "into a store whose calls take 20 ms: {:.3} s for {CASES} new test cases",
        started.elapsed().as_secs_f64()
    );
}

/// `report` as upload `id` of a run on `main`.
fn incoming(report: &[u8], id: &str) -> IncomingUpload {
    IncomingUpload {
        metadata: UploadMetadata {
            repo: RepoRef::new("github.com", "acme", "rocket").expect("repo"),
            commit_sha: "d".repeat(40),
            branch: "main".into(),
            pr_number: None,
            variant: String::new(),
            job_url: None,
            upload_id: id.into(),
        },
        codeowners: None,
        files: vec![ReportFile {
            name: "big.xml".into(),
            bytes: report.to_vec(),
        }],
    }
}

fn acme() -> OrgId {
    OrgId::parse("acme").expect("org")
}

/// An upload of `cases` test cases ingested into DynamoDB (moto on 127.0.0.1).
async fn dynamodb_requests(cases: usize) {
    let report = generated_mix(cases);
    let endpoint = mq_tables::moto::endpoint();
    let plain = mq_tables::local_client(&endpoint).await;
    let tables = TableNames::with_prefix(&format!("bench{}-", std::process::id()));
    mq_tables::create_missing_tables(&plain, &tables)
        .await
        .expect("tables");
    let counter = Counter::default();
    let config = plain
        .config()
        .to_builder()
        .interceptor(counter.clone())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let app = App::new(
        Arc::new(DynamoStore::new(client, tables)),
        Arc::new(SystemClock),
    );
    let upload = incoming(&report, "dynamo-1");
    let started = Instant::now();
    ingest(
        &app,
        &acme(),
        upload,
        &Limits::default(),
        // moto takes minutes for what DynamoDB does in seconds: no deadline that matters.
        std::time::Duration::from_secs(24 * 3600),
    )
    .await
    .expect("ingested");
    let elapsed = started.elapsed().as_secs_f64();
    let counts = counter.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let writes: u32 = [
        "PutItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "UpdateItem",
        "DeleteItem",
    ]
    .iter()
    .filter_map(|op| counts.get(*op))
    .sum();
    let transactions = counts
        .get("TransactWriteItems")
        .copied()
        .unwrap_or_default() as usize;
    let other = writes as usize - transactions;
    // One transaction per 100 test cases; the other writes (upload record, raw results in
    // items of 1,000, 25 per batch) are one or two requests at either size.
    let at_full = CASES.div_ceil(100) + other;
    println!(
        "DynamoDB (moto), one upload creating {cases} test cases: {writes} write requests ({transactions} TransactWriteItems of up to 100 puts, {other} other), {} requests in all {counts:?}; {elapsed:.1} s on moto",
        counts.values().sum::<u32>()
    );
    println!("  the same upload of {CASES} test cases: {at_full} write requests");
}
