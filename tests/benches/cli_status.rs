//! Start-up of the release `mq` binary, alone and with one `status` call against the local
//! gateway (in-memory store, a local Git host, one pull request in the queue), as a CI step
//! or a shell prompt would run it: process spawn to exit, wall clock.
//!
//! `cargo bench -p e2e-tests --bench cli_status` builds `mq` with the release profile, then
//! prints for `mq --version` (start-up and exit, no request) and `mq status` (start-up, the
//! configuration from the environment, one HTTPS-capable client, one request, the answer
//! printed) the runs timed, the fastest, median, 90th percentile and slowest run, and the
//! binary's size. The target is a `status` well under 50 ms.

use e2e::cli::{Mq, mq_release_binary};
use e2e::live::LiveEnv;
use e2e::{ACME, Backend};
use serde_json::json;
use std::time::{Duration, Instant};

/// Runs timed per command, after as many untimed ones.
const RUNS: usize = 200;
const WARM_UP: usize = 20;

fn main() {
    let binary = mq_release_binary();
    let size = std::fs::metadata(&binary).expect("mq built").len();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let env = runtime.block_on(queue_with_a_pull_request());
    let mq = Mq::new(&env.gateway.base_url(), ACME)
        .with_binary(binary)
        .var("MQ_REPO", "acme/rocket")
        .var("MQ_TARGET_BRANCH", "main")
        .var("MQ_PR", "1");
    println!("mq (release): {:.2} MB", size as f64 / 1e6);
    for args in [&["--version"][..], &["status"][..]] {
        let times = measure(&mq, args);
        report(args, &times);
    }
    drop(env);
}

/// The gateway with a queue on `main` of a real repository and pull request #1 in it.
async fn queue_with_a_pull_request() -> LiveEnv {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({})).await;
    env.submit(&repo, 1).await;
    env
}

/// The wall-clock time of each run; every run must succeed.
fn measure(mq: &Mq, args: &[&str]) -> Vec<Duration> {
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..WARM_UP + RUNS {
        let mut command = mq.command(args);
        let started = Instant::now();
        let out = command.output().expect("mq runs");
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "mq {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if i >= WARM_UP {
            times.push(took);
        }
    }
    times.sort();
    times
}

fn report(args: &[&str], times: &[Duration]) {
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "mq {:<10} {} runs: fastest {:.2} ms, median {:.2} ms, p90 {:.2} ms, slowest {:.2} ms",
        args.join(" "),
        times.len(),
        ms(times[0]),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(times[times.len() - 1])
    );
}
