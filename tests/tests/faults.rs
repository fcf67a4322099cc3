//! Faults, over DynamoDB (moto) and real repositories.
//!
//! - The store fails at random (throttling, timeouts, failed conditions, cancelled
//!   transactions; [`FaultyStore`], seeded): every mutating request either happens whole or
//!   answers a retryable 503 and changes nothing (the store, read directly, is compared before
//!   and after), also while the Git host fails at random (transient errors); once the faults
//!   stop the queue finishes its work with every promise kept.
//! - The Git host fails a merge ([`FaultyGitHost`]) before or after merging: the merge stays
//!   recorded for the tick, which retries it; it happens once, whole.
//! - A pull request that changed between its test and its merge is refused by the host at
//!   merge time: it leaves the queue (cancelled, new commits) and nothing is merged.
//! - A resubmission that read the pull request just before it merged does not enqueue it
//!   again.
//!
//! Figures (requests, faults by kind, outcomes) are printed:
//! `cargo test -p e2e-tests --test faults -- --nocapture`.

use e2e::deliveries::{deliver, pull_request_event, status_event, status_on};
use e2e::git_repo::GitRepo;
use e2e::live::{CI, LiveEnv, LiveOptions, body, pr_body, repo_ref};
use e2e::tally::Tally;
use e2e::{ACME, Backend, Reply};
use mq_core::engine::{Effect, invariants};
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::ids::{OrgId, QueueId};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_githost::GitHost;
use mq_githost::faults::{FaultyGitHost, MergeFault};
use mq_service::{ServiceError, drive, tick};
use mq_store::Store;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

const SECRET: &str = "faults-secret";
const SEED: u64 = 0xfa_0175;

/// The seed of the random faults and requests: [`SEED`], or `MQ_FAULT_SEED` to explore others.
fn seed() -> u64 {
    std::env::var("MQ_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED)
}
const PRS: u32 = 5;
const REQUESTS: usize = 100;
/// The chance that a store call fails while the requests run.
const RATE: f64 = 0.12;
/// The chance that a Git host call fails (transient) while the requests run.
const HOST_RATE: f64 = 0.08;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_store_faults_every_request_happens_whole_or_changes_nothing() {
    let seed = seed();
    let host_slot = Arc::new(OnceLock::new());
    let set_host = host_slot.clone();
    let (env, faulty) = LiveEnv::options()
        .webhook(SECRET)
        .without_tick()
        .wrap_host(move |host: Arc<dyn GitHost>| {
            let wrapper = Arc::new(FaultyGitHost::new(host, seed));
            let _ = set_host.set(wrapper.clone());
            wrapper
        })
        .start_with_faulty_store(Backend::DynamoDb, seed)
        .await;
    let faulty_host: Arc<FaultyGitHost> = host_slot.get().expect("host wrapped").clone();
    let repo = env.repo("sturdy");
    repo.add_prs(PRS, &[]);
    env.create_queue(
        &repo,
        json!({"requiredStatuses": ["build"], "concurrency": 2}),
    )
    .await;
    let scratch = env.repo("scratch");

    let tally = Tally::default();
    let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..REQUESTS {
        let request = Request::pick(&mut rng, &repo);
        let before = stored(faulty.inner().as_ref(), &repo, &scratch).await;
        faulty.set_rate(RATE);
        faulty_host.set_rate(HOST_RATE);
        let reply = request.send(&env, &repo, &scratch).await;
        faulty.set_rate(0.0);
        faulty_host.set_rate(0.0);
        let Some(reply) = reply else {
            *outcomes.entry("tick or nothing to send").or_default() += 1;
            continue;
        };
        tally.record(request.endpoint(), &reply);
        let after = stored(faulty.inner().as_ref(), &repo, &scratch).await;
        let outcome = if reply.status == 503 {
            let changed = before.differences(&after);
            assert!(
                changed.is_empty(),
                "{request:?} answered 503 ({}) and changed the store: {changed:#?}",
                reply.body
            );
            "503, nothing changed"
        } else if reply.status == 200 {
            request.assert_happened(&after, &repo, &scratch);
            "200, happened"
        } else {
            "refused (4xx)"
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    let counts = faulty.counts();
    let host_counts = faulty_host.counts();

    let rounds = drain(&env, &repo).await;
    let snapshot = faulty
        .inner()
        .load(&queue_id(&repo))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(invariants::violations(&snapshot), Vec::<String>::new());
    let states = assert_concluded_once(&env, &repo).await;

    println!(
        "faults: {REQUESTS} requests, store fault rate {RATE}, Git host fault rate {HOST_RATE}, \
         seed {seed}"
    );
    print!("requests by endpoint and status:\n{}", tally.table());
    let injected: BTreeMap<&str, u64> = counts
        .injected
        .iter()
        .map(|(k, n)| (k.name(), *n))
        .collect();
    println!(
        "store calls: {}; faults injected: {} {injected:?}; real version conflicts: {}",
        counts.calls,
        counts.total_injected(),
        counts.conflicts
    );
    println!(
        "Git host calls: {}; transient faults injected: {}",
        host_counts.calls, host_counts.transient
    );
    println!("outcomes: {outcomes:?}");
    println!("after the faults: drained in {rounds} rounds; pull requests {states:?}");
    let unexpected = tally.unexpected_answers();
    assert!(unexpected.is_empty(), "unexpected answers: {unexpected:#?}");
    assert!(
        counts.total_injected() > REQUESTS as u64 / 4,
        "faults were injected"
    );
    assert!(outcomes.get("503, nothing changed").copied().unwrap_or(0) > 5);
}

/// One mutating request.
#[derive(Debug, Clone)]
enum Request {
    Submit(u32),
    Cancel(u32),
    Restart(u32),
    Update(Value),
    ImpactedTargets(u32),
    Status,
    Closed(u32),
    CreateScratch,
    DeleteScratch,
    Tick,
}

impl Request {
    fn pick(rng: &mut fastrand::Rng, repo: &GitRepo) -> Self {
        let pr = rng.u32(1..=PRS);
        match rng.u32(0..20) {
            0..=4 => Request::Submit(pr),
            5 => Request::Cancel(pr),
            6 => Request::Restart(pr),
            7 => Request::Update(match rng.u32(0..3) {
                0 => json!({"state": "paused"}),
                1 => json!({"state": "running"}),
                _ => json!({"concurrency": rng.u32(1..=3)}),
            }),
            8 => Request::ImpactedTargets(pr),
            9..=12 if !repo.test_branches().is_empty() => Request::Status,
            13 => Request::Closed(pr),
            14 => Request::CreateScratch,
            15 => Request::DeleteScratch,
            _ => Request::Tick,
        }
    }

    fn endpoint(&self) -> &'static str {
        match self {
            Request::Submit(_) => "submitPullRequest",
            Request::Cancel(_) => "cancelPullRequest",
            Request::Restart(_) => "restartTestsOnPullRequest",
            Request::Update(_) => "updateQueue",
            Request::ImpactedTargets(_) => "setImpactedTargets",
            Request::Status => "webhook status",
            Request::Closed(_) => "webhook pull_request",
            Request::CreateScratch => "createQueue",
            Request::DeleteScratch => "deleteQueue",
            Request::Tick => "tick",
        }
    }

    /// Sends the request; `None` for the tick, which answers nobody (it is run, and must not
    /// fail other than with a retryable error).
    async fn send(&self, env: &LiveEnv, repo: &GitRepo, scratch: &GitRepo) -> Option<Reply> {
        let post = |path: &'static str, body: Value| async move {
            Some(env.post(path, Some(ACME), &body).await)
        };
        match self {
            Request::Submit(pr) => post("submitPullRequest", pr_body(repo, *pr, json!({}))).await,
            Request::Cancel(pr) => post("cancelPullRequest", pr_body(repo, *pr, json!({}))).await,
            Request::Restart(pr) => {
                post("restartTestsOnPullRequest", pr_body(repo, *pr, json!({}))).await
            }
            Request::Update(settings) => post("updateQueue", body(repo, settings.clone())).await,
            Request::ImpactedTargets(pr) => {
                let mut b = body(repo, json!({"impactedTargets": ["rocket"]}));
                b["pr"] = json!({"number": pr, "sha": repo.pr_head(*pr)});
                post("setImpactedTargets", b).await
            }
            Request::Status => {
                let branches = repo.test_branches();
                let branch = branches.first()?;
                let sha = repo.head(branch)?;
                let payload = status_on(repo, &sha, branch, "build", "success");
                Some(deliver(env, "status", &payload, SECRET).await)
            }
            Request::Closed(pr) => {
                repo.set_pr_state(*pr, "closed");
                let payload = pull_request_event(repo, *pr, "closed");
                Some(deliver(env, "pull_request", &payload, SECRET).await)
            }
            Request::CreateScratch => post("createQueue", body(scratch, json!({}))).await,
            Request::DeleteScratch => post("deleteQueue", body(scratch, json!({}))).await,
            Request::Tick => {
                if let Err(e) = tick::run(&env.app, "faults").await {
                    assert!(
                        matches!(e, ServiceError::Unavailable { .. }),
                        "the tick failed: {e}"
                    );
                }
                None
            }
        }
    }

    /// What a 200 promises, as stored.
    fn assert_happened(&self, stored: &Stored, repo: &GitRepo, scratch: &GitRepo) {
        let entry = |pr: u32| {
            stored.entries[(pr - 1) as usize]
                .as_ref()
                .and_then(|(_, e)| e.as_ref())
        };
        match self {
            Request::Submit(pr) => assert!(entry(*pr).is_some(), "#{pr} submitted"),
            Request::Cancel(pr) => {
                let state = entry(*pr).map(|e| e.state.as_str());
                assert_eq!(state, Some("cancelled"), "#{pr} cancelled");
            }
            Request::Update(settings) => {
                let queue = &stored.snapshots[0].as_ref().expect("queue").queue;
                if let Some(c) = settings["concurrency"].as_u64() {
                    assert_eq!(u64::from(queue.config.concurrency), c);
                }
            }
            Request::ImpactedTargets(pr) => {
                let uploaded = stored.uploaded[(pr - 1) as usize].as_ref();
                let head = repo.pr_head(*pr);
                assert_eq!(uploaded.map(|u| u.head_sha.as_str()), Some(head.as_str()));
            }
            Request::CreateScratch => {
                let id = queue_id(scratch);
                assert!(stored.queues.iter().any(|q| q.id == id), "created");
            }
            Request::DeleteScratch => {
                let id = queue_id(scratch);
                assert!(!stored.queues.iter().any(|q| q.id == id), "deleted");
            }
            Request::Restart(_) | Request::Status | Request::Closed(_) | Request::Tick => {}
        }
    }
}

/// Everything the requests can change, read from the store itself.
#[derive(Debug, PartialEq)]
struct Stored {
    queues: Vec<Queue>,
    snapshots: Vec<Option<QueueSnapshot>>,
    /// By pull request, from 1.
    entries: Vec<Option<(Queue, Option<Entry>)>>,
    uploaded: Vec<Option<UploadedTargets>>,
}

impl Stored {
    /// What differs from `other`, item by item (`before -> after`).
    fn differences(&self, other: &Stored) -> Vec<String> {
        let mut found = Vec::new();
        let mut compare = |what: String, a: String, b: String| {
            if a != b {
                found.push(format!("{what}: {a} -> {b}"));
            }
        };
        compare(
            "queues".into(),
            format!("{:?}", self.queues),
            format!("{:?}", other.queues),
        );
        for (i, (a, b)) in self.snapshots.iter().zip(&other.snapshots).enumerate() {
            let part = |s: &Option<QueueSnapshot>, f: fn(&QueueSnapshot) -> String| {
                s.as_ref().map(f).unwrap_or_default()
            };
            compare(
                format!("queue {i}"),
                part(a, |s| format!("{:?}", s.queue)),
                part(b, |s| format!("{:?}", s.queue)),
            );
            compare(
                format!("queue {i} entries"),
                part(a, |s| format!("{:?}", s.entries)),
                part(b, |s| format!("{:?}", s.entries)),
            );
            compare(
                format!("queue {i} runs"),
                part(a, |s| format!("{:?}", s.runs)),
                part(b, |s| format!("{:?}", s.runs)),
            );
            compare(
                format!("queue {i} outbox"),
                part(a, |s| format!("{:?}", s.outbox)),
                part(b, |s| format!("{:?}", s.outbox)),
            );
        }
        for (i, (a, b)) in self.entries.iter().zip(&other.entries).enumerate() {
            let entry =
                |e: &Option<(Queue, Option<Entry>)>| format!("{:?}", e.as_ref().map(|(_, e)| e));
            compare(format!("latest entry of #{}", i + 1), entry(a), entry(b));
        }
        for (i, (a, b)) in self.uploaded.iter().zip(&other.uploaded).enumerate() {
            compare(
                format!("uploaded targets of #{}", i + 1),
                format!("{a:?}"),
                format!("{b:?}"),
            );
        }
        found
    }
}

async fn stored(store: &dyn Store, repo: &GitRepo, scratch: &GitRepo) -> Stored {
    let id = queue_id(repo);
    let mut queues = store
        .queues_of_org(&OrgId::parse("acme").unwrap())
        .await
        .unwrap();
    queues.sort_by(|a, b| a.id.cmp(&b.id));
    let mut snapshots = Vec::new();
    for q in [&id, &queue_id(scratch)] {
        snapshots.push(store.load(q).await.unwrap());
    }
    let mut entries = Vec::new();
    let mut uploaded = Vec::new();
    for pr in 1..=PRS {
        entries.push(store.load_entry(&id, pr).await.unwrap());
        uploaded.push(store.uploaded_targets(&id, pr).await.unwrap());
    }
    Stored {
        queues,
        snapshots,
        entries,
        uploaded,
    }
}

fn queue_id(repo: &GitRepo) -> QueueId {
    QueueId::new(&repo_ref(repo), "main")
}

/// Resumes the queue and passes every test branch, running the tick, until nothing is active.
async fn drain(env: &LiveEnv, repo: &GitRepo) -> usize {
    env.update_queue(repo, json!({"state": "running"})).await;
    for round in 1..=100 {
        for branch in repo.test_branches() {
            if let Some(sha) = repo.head(&branch) {
                let payload = status_on(repo, &sha, &branch, "build", "success");
                deliver(env, "status", &payload, SECRET).await;
            }
        }
        if env.queue(repo).await["enqueuedPullRequests"] == json!([]) {
            return round;
        }
        env.clock.advance_minutes(5);
        tick::run(&env.app, "drain").await.expect("tick runs");
    }
    panic!("not drained: {}", env.queue(repo).await);
}

/// Every pull request submitted concluded, and a merged one is in `main` exactly once (the
/// others not at all); returns how many ended in each state.
async fn assert_concluded_once(env: &LiveEnv, repo: &GitRepo) -> BTreeMap<String, u32> {
    let history = repo.history_subjects("main");
    let mut states = BTreeMap::new();
    for pr in 1..=PRS {
        let reply = env.pr_call("getSubmittedPullRequest", repo, pr).await;
        let in_main = history
            .iter()
            .filter(|s| **s == format!("Change {pr} (#{pr})"))
            .count();
        let state = match reply.status {
            404 => "never submitted".to_owned(),
            200 => reply.body["state"].as_str().unwrap_or_default().to_owned(),
            other => panic!("getSubmittedPullRequest #{pr}: {other}"),
        };
        assert!(
            ["merged", "failed", "cancelled", "never submitted"].contains(&state.as_str()),
            "#{pr} ended {state}"
        );
        assert_eq!(
            in_main,
            usize::from(state == "merged"),
            "#{pr}: {history:?}"
        );
        *states.entry(state).or_default() += 1;
    }
    states
}

// ---- the Git host failing ------------------------------------------------------------------

/// A live queue whose Git host is wrapped in a [`FaultyGitHost`]; no background tick.
async fn with_faulty_host(settings: Value, prs: u32) -> (LiveEnv, GitRepo, Arc<FaultyGitHost>) {
    faulty_queue(LiveEnv::options(), Backend::DynamoDb, settings, prs).await
}

/// A live queue started with `options`, its Git host wrapped in a [`FaultyGitHost`]; no
/// background tick.
async fn faulty_queue(
    options: LiveOptions,
    backend: Backend,
    settings: Value,
    prs: u32,
) -> (LiveEnv, GitRepo, Arc<FaultyGitHost>) {
    let slot = Arc::new(OnceLock::new());
    let set = slot.clone();
    let env = options
        .without_tick()
        .wrap_host(move |host: Arc<dyn GitHost>| {
            let wrapper = Arc::new(FaultyGitHost::new(host, SEED));
            let _ = set.set(wrapper.clone());
            wrapper
        })
        .start(backend)
        .await;
    let host = slot.get().expect("host wrapped").clone();
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(prs, &[]);
    env.create_queue(&repo, settings).await;
    (env, repo, host)
}

/// The merge effects waiting in the queue's outbox, with their attempts so far.
async fn pending_merges(env: &LiveEnv, repo: &GitRepo) -> Vec<u32> {
    let snapshot = env.store.load(&queue_id(repo)).await.unwrap().unwrap();
    snapshot
        .outbox
        .iter()
        .filter(|p| matches!(p.effect, Effect::Merge { .. }))
        .map(|p| p.attempts)
        .collect()
}

/// Runs the tick after the effects' backoff has passed.
async fn tick_later(env: &LiveEnv) {
    env.clock.advance_minutes(10);
    env.tick().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_failing_on_the_git_host_is_retried_by_the_tick_and_happens_once() {
    let settings = json!({"batch": true, "batchingMinSize": 2});
    let (env, repo, host) = with_faulty_host(settings, 2).await;
    let main_before = repo.head("main").unwrap();
    // Twice the request never reaches the host; the third time the host merges and the
    // answer is lost.
    host.fail_merges(2, MergeFault::Before);
    host.fail_merges(1, MergeFault::After);
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let run = env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 2, "tests_passed").await;
    assert_eq!(env.pull_request(&repo, 1).await["state"], "tests_passed");

    let mut seen = Vec::new();
    while host.merge_faults_left() > 0 {
        if host.counts().merges_failed_before < 2 {
            assert_eq!(
                repo.head("main").unwrap(),
                main_before,
                "nothing merged yet"
            );
        }
        let merges = pending_merges(&env, &repo).await;
        assert_eq!(merges.len(), 1, "the merge waits in the outbox: {merges:?}");
        seen.push(merges[0]);
        for pr in [1, 2] {
            assert_eq!(env.pull_request(&repo, pr).await["state"], "tests_passed");
        }
        tick_later(&env).await;
    }
    tick_later(&env).await;
    for pr in [1, 2] {
        env.wait_for_state(&repo, pr, "merged").await;
    }
    assert_eq!(
        repo.history_subjects("main"),
        ["Change 1 (#1)", "Change 2 (#2)"]
    );
    assert_eq!(repo.moves("main").len(), 1, "main moved once, to both");
    assert_eq!(repo.tree("main"), repo.tree(&run.sha));
    assert!(pending_merges(&env, &repo).await.is_empty());
    let counts = host.counts();
    println!(
        "merge faults: {} before the host, {} after it (answer lost); attempts seen in the \
         outbox {seen:?}; Git host calls {}",
        counts.merges_failed_before, counts.merges_failed_after, counts.calls
    );
    assert_eq!(
        (counts.merges_failed_before, counts.merges_failed_after),
        (2, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_changed_at_merge_time_is_cancelled_and_not_merged() {
    let (env, repo, host) = with_faulty_host(json!({}), 1).await;
    let main_before = repo.head("main").unwrap();
    host.fail_merges(1, MergeFault::Before);
    env.submit(&repo, 1).await;
    let run = env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "tests_passed").await;
    assert_eq!(pending_merges(&env, &repo).await.len(), 1);

    // New commits on the pull request between its test and the retried merge.
    repo.push_to_pr(1, "late.txt");
    tick_later(&env).await;
    let pr = env.wait_for_state(&repo, 1, "cancelled").await;
    assert_eq!(repo.head("main").unwrap(), main_before, "nothing merged");
    assert!(repo.moves("main").is_empty());
    assert!(pending_merges(&env, &repo).await.is_empty());
    assert_ne!(repo.tree(&run.sha), repo.tree("main"));
    assert_eq!(pr["isCurrentlySubmittedToQueue"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_racing_with_the_merge_of_its_pull_request_does_not_enqueue_it_again() {
    let (env, repo, host) = with_faulty_host(json!({}), 1).await;
    host.fail_merges(1, MergeFault::Before);
    env.submit(&repo, 1).await;
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "tests_passed").await;

    // A resubmission (a priority change) reads the pull request while it is still open; the
    // merge lands before the resubmission commits.
    let held = host.hold_next_pull_request_answer();
    let resubmit = env.submit_with(&repo, 1, json!({"priority": "high"}));
    let merge_meanwhile = async {
        held.reached.notified().await;
        tick_later(&env).await;
        held.release.notify_one();
    };
    let (reply, ()) = tokio::join!(resubmit, merge_meanwhile);

    let pr = env.pull_request(&repo, 1).await;
    assert_eq!(pr["state"], "merged", "answered {}: {pr}", reply.status);
    assert_eq!(repo.history_subjects("main"), ["Change 1 (#1)"]);
    assert_eq!(env.queue(&repo).await["enqueuedPullRequests"], json!([]));
    assert!(
        [409, 503].contains(&reply.status),
        "the resubmission of a merged pull request is refused: {} {}",
        reply.status,
        reply.body
    );
}

/// A delivery (a review dismissed) reads the pull request; meanwhile its author pushes, gets
/// an approval again, and submits it again. The delivery's read, older than the new entry,
/// does not cancel it for commits it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_read_before_a_resubmission_does_not_cancel_it() {
    let options = LiveEnv::options().webhook(SECRET);
    let (env, repo, host) = faulty_queue(options, Backend::DynamoDb, json!({}), 1).await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;
    let held = host.hold_next_pull_request_answer();
    repo.set_pr_review(1, "review_required");
    let payload = pull_request_event(&repo, 1, "synchronize");
    let delivery = deliver(&env, "pull_request", &payload, SECRET);
    let resubmit_meanwhile = async {
        let read = held.reached.notified();
        tokio::time::timeout(std::time::Duration::from_secs(60), read)
            .await
            .expect("the delivery reads the pull request");
        repo.push_to_pr(1, "more.txt");
        repo.set_pr_review(1, "approved");
        env.clock.advance_minutes(1);
        env.submit(&repo, 1).await;
        held.release.notify_one();
    };
    let (delivered, ()) = tokio::join!(delivery, resubmit_meanwhile);
    assert_eq!(delivered.status, 200, "{}", delivered.body);
    let pr = env.pull_request(&repo, 1).await;
    assert_ne!(pr["state"], "cancelled", "{pr}");
    assert_eq!(pr["isCurrentlySubmittedToQueue"], true, "{pr}");
    env.wait_for_run(&repo, 1).await;
    let run = env.current_run(&repo, 1).await.expect("a run");
    assert!(
        repo.files(&run.sha).contains(&"more.txt".to_owned()),
        "the new entry tests the new head: {:?}",
        repo.files(&run.sha)
    );
}

/// A Git host that never answers a read: a webhook delivery and an upload of impacted targets
/// answer 503 at the request's deadline (15 s), within the functions' 29 s, instead of
/// running until Lambda stops them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_whose_git_host_read_never_answers_answer_503_in_time() {
    let options = LiveEnv::options().webhook(SECRET);
    let (env, repo, host) = faulty_queue(options, Backend::DynamoDb, json!({}), 2).await;
    env.submit(&repo, 1).await;
    let in_time = std::time::Duration::from_secs(25);

    let _never = host.hold_next_pull_request_answer();
    let payload = pull_request_event(&repo, 1, "synchronize");
    let delivery = deliver(&env, "pull_request", &payload, SECRET);
    let delivered = tokio::time::timeout(in_time, delivery).await;
    assert_eq!(delivered.expect("answered in time").status, 503);

    let _never = host.hold_next_pull_request_answer();
    let targets = pr_body(&repo, 2, json!({"impactedTargets": ["api"]}));
    let upload = env.post("setImpactedTargets", Some(ACME), &targets);
    let uploaded = tokio::time::timeout(in_time, upload).await;
    assert_eq!(uploaded.expect("answered in time").status, 503);
}

/// An upload of impacted targets for a pull request not in the queue yet reads the queue,
/// then the pull request from the Git host; the pull request is submitted in between. The
/// upload stores the targets after the submission committed without them, and gives them
/// to its entry: the pull request does not wait for targets already uploaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_uploaded_while_their_pull_request_is_submitted_reach_its_entry() {
    let parallel = json!({"mode": "parallel", "requiredStatuses": [CI]});
    let (env, repo, host) = with_faulty_host(parallel, 1).await;
    let held = host.hold_next_pull_request_answer();
    let targets = pr_body(&repo, 1, json!({"impactedTargets": ["api"]}));
    let upload = env.post("setImpactedTargets", Some(ACME), &targets);
    let submit_meanwhile = async {
        held.reached.notified().await;
        env.submit(&repo, 1).await;
        assert_eq!(
            env.pull_request(&repo, 1).await["readiness"]["hasImpactedTargets"],
            false,
            "the submission committed before the targets were stored"
        );
        held.release.notify_one();
    };
    let (uploaded, ()) = tokio::join!(upload, submit_meanwhile);
    assert_eq!(uploaded.status, 200, "{}", uploaded.body);
    let pr = env.pull_request(&repo, 1).await;
    assert_eq!(pr["readiness"]["hasImpactedTargets"], true, "{pr}");
    env.wait_for_run(&repo, 1).await;
}

/// The other order: a submission reads the stored targets (none yet), the upload stores
/// them and finds no entry, then the submission commits. The submission looks for targets
/// again after its commit and gives them to the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_uploaded_after_a_submission_read_them_reach_its_entry() {
    use mq_core::engine::Event;
    use mq_core::priority::Priority;
    use mq_service::pull_requests::{submit_with, uploaded_targets_events};
    use mq_service::shell::contention_deadline;
    use std::sync::atomic::{AtomicBool, Ordering};

    let parallel = json!({"mode": "parallel", "requiredStatuses": [CI]});
    let (env, repo, _host) = with_faulty_host(parallel, 1).await;
    let acme = OrgId::parse("acme").unwrap();
    let id = queue_id(&repo);
    let facts = env
        .host
        .pull_request(&repo_ref(&repo), 1, "main")
        .await
        .unwrap();
    let uploaded_once = AtomicBool::new(false);
    // The submission's events, as `submitPullRequest` builds them; the upload lands right
    // after the submission read the stored targets, before it commits.
    let events_for = |queue: Queue| -> mq_service::pull_requests::EventsFuture<'_> {
        let (app, facts, env, repo, uploaded_once) =
            (&env.app, facts.clone(), &env, &repo, &uploaded_once);
        Box::pin(async move {
            let mut events = vec![Event::Submit {
                pr: facts.clone(),
                priority: Priority::from_name("medium").unwrap(),
                no_batch: None,
                force: false,
                head_checks_passed: false,
            }];
            events.extend(uploaded_targets_events(app, &queue, &[facts]).await?);
            assert_eq!(events.len(), 1, "no targets stored yet");
            if !uploaded_once.swap(true, Ordering::SeqCst) {
                let body = pr_body(repo, 1, json!({"impactedTargets": ["api"]}));
                let uploaded = env.post("setImpactedTargets", Some(ACME), &body).await;
                assert_eq!(uploaded.status, 200, "{}", uploaded.body);
            }
            Ok(events)
        })
    };
    submit_with(&env.app, &acme, &id, 1, contention_deadline(), events_for)
        .await
        .unwrap();
    let pr = env.pull_request(&repo, 1).await;
    assert_eq!(pr["readiness"]["hasImpactedTargets"], true, "{pr}");
    env.wait_for_run(&repo, 1).await;
}

/// Three queues, each with a run in flight, on a Git host that answers in 200 ms.
async fn three_queues_on_a_slow_host() -> LiveEnv {
    let (env, repo, host) = with_faulty_host(json!({}), 1).await;
    let mut repos = vec![repo];
    for name in ["comet", "meteor"] {
        let other = env.repo(name);
        other.require_statuses("main", &[CI]);
        other.add_prs(1, &[]);
        env.create_queue(&other, json!({})).await;
        repos.push(other);
    }
    for repo in &repos {
        env.submit(repo, 1).await;
        env.wait_for_run(repo, 1).await;
    }
    // Every queue's tick asks the Git host for its run's checks: 200 ms each.
    let latency = std::time::Duration::from_millis(200);
    host.set_latency(latency, latency);
    env
}

/// A tick slowed down by the Git host starts queues for a while only, leaving the rest of
/// its minute to the queues it is on and to the work after the queues; the queues it did not
/// reach go first in later minutes, so each is reached in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_tick_reaches_every_queue_in_turn() {
    use std::collections::BTreeSet;

    let env = three_queues_on_a_slow_host().await;
    let one_at_a_time = tick::Pace {
        start_for: std::time::Duration::from_millis(100),
        at_once: 1,
        ..tick::Pace::STANDARD
    };
    let mut reached = BTreeSet::new();
    for _ in 0..3 {
        let report = tick::run_at_pace(&env.app, "slow", one_at_a_time)
            .await
            .unwrap();
        assert_eq!(
            (report.queues, report.worked, report.not_reached),
            (3, 1, 2),
            "{report:?}"
        );
        reached.extend(report.worked_queues);
        env.clock.advance_minutes(1);
    }
    assert_eq!(
        reached.len(),
        3,
        "each queue in one of three minutes: {reached:?}"
    );
}

/// A tick works several queues at once: while one waits on the Git host, the others are
/// started, so a slow host does not leave them for later minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_tick_works_queues_at_once() {
    let env = three_queues_on_a_slow_host().await;
    let pace = tick::Pace {
        start_for: std::time::Duration::from_millis(100),
        ..tick::Pace::STANDARD
    };
    let report = tick::run_at_pace(&env.app, "slow", pace).await.unwrap();
    assert_eq!(
        (
            report.queues,
            report.worked,
            report.not_reached,
            report.failed
        ),
        (3, 3, 0, 0),
        "{report:?}"
    );
}

/// A read of CI's checks the Git host never answers (a hanging call: on GitHub three
/// attempts of 30 s) is left to the next tick once the tick's time for reads is up: the tick
/// still commits what it read, the queue's other runs being read beside it, and ends in its
/// minute, where it would otherwise be stopped with nothing committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_the_git_host_never_answers_leaves_the_tick_its_minute() {
    use mq_core::git::StatusState;
    let options = LiveEnv::options().webhook(SECRET);
    let settings = json!({"concurrency": 2});
    let (env, repo, host) = faulty_queue(options, Backend::Memory, settings, 2).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    // CI passes both runs, and its deliveries are lost: only the tick's reads see it.
    for pr in [1, 2] {
        let run = env.wait_for_run(&repo, pr).await;
        env.set_status(&repo, &run.sha, CI, StatusState::Success)
            .await;
    }
    let _held = host.hold_next_checks_answer();
    let pace = tick::Pace {
        reads_for: std::time::Duration::from_secs(2),
        ..tick::Pace::STANDARD
    };
    let tick = tick::run_at_pace(&env.app, "hanging", pace);
    let report = tokio::time::timeout(std::time::Duration::from_secs(30), tick)
        .await
        .expect("the tick ends though a read never does")
        .unwrap();
    assert_eq!((report.worked, report.failed), (1, 0), "{report:?}");
    // The run whose read was answered first is held; the other's result was taken.
    let mut states = Vec::new();
    for pr in [1, 2] {
        states.push(env.pull_request(&repo, pr).await["state"].clone());
    }
    assert!(
        states == ["testing", "tests_passed"] || states == ["merged", "testing"],
        "one read taken, one left to the next tick: {states:?}"
    );

    // The next tick reads the other run's checks again.
    env.tick().await;
    env.wait_for_state(&repo, 1, "merged").await;
    env.wait_for_state(&repo, 2, "merged").await;
}

/// An effect of the tick still under way when the tick's time for effects ends is stopped
/// and counts as a failed attempt, retried later: the function would otherwise be killed
/// with it at the end of its minute, nothing recorded, and the effect handed out again every
/// minute without end (a merge of a long chain on a slow host would hold its queue for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_effect_outlasting_the_tick_is_stopped_and_counted() {
    let (env, repo, host) = with_faulty_host(json!({}), 1).await;
    let main_before = repo.head("main").unwrap();
    host.fail_merges(1, MergeFault::Before);
    env.submit(&repo, 1).await;
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "tests_passed").await;
    assert_eq!(pending_merges(&env, &repo).await, [1]);

    // The merge's answer never comes before the tick's time for effects is up (an effect
    // starts only while it has `EFFECT_OVERRUN` left).
    let _held = host.hold_next_merge_answer();
    let short = tick::Pace {
        start_for: tick::START_QUEUES_FOR,
        at_once: 1,
        effects_for: drive::EFFECT_OVERRUN + std::time::Duration::from_secs(1),
        ..tick::Pace::STANDARD
    };
    env.clock.advance_minutes(10);
    let report = tick::run_at_pace(&env.app, "short", short).await.unwrap();
    assert_eq!((report.worked, report.failed), (1, 0), "{report:?}");
    assert_eq!(
        pending_merges(&env, &repo).await,
        [2],
        "stopped and counted"
    );

    // The held merge had landed: the next attempt finds it done.
    tick_later(&env).await;
    env.wait_for_state(&repo, 1, "merged").await;
    assert_ne!(repo.head("main").unwrap(), main_before);
}

/// A pause answered after a merge's step committed, but before the merge was sent, stops
/// it: the merge is withdrawn, and emitted again once the queue runs. Here #2 passes
/// while #1's merge is under way (CI's deliveries, each its own request), so #2's merge comes
/// in the round after #1's, behind #1's "merged" comment, which the host holds while the
/// operator pauses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_answered_before_a_merge_is_sent_stops_it() {
    let options = LiveEnv::options().webhook(SECRET);
    let settings = json!({"concurrency": 2});
    let (env, repo, host) = faulty_queue(options, Backend::Memory, settings, 2).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let (one, two) = (
        env.wait_for_run(&repo, 1).await,
        env.wait_for_run(&repo, 2).await,
    );
    let passed = |run| status_event(&repo, run, CI, "success");

    let merging = host.hold_next_merge_answer();
    let pause_behind_the_comment = async {
        merging.reached.notified().await;
        let reply = deliver(&env, "status", &passed(&two), SECRET).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(env.pull_request(&repo, 2).await["state"], "tests_passed");
        let commenting = host.hold_next_comment_answer();
        merging.release.notify_one();
        commenting.reached.notified().await;
        let paused = json!({"state": "paused"});
        let paused = env
            .post("updateQueue", Some(ACME), &body(&repo, paused))
            .await;
        assert_eq!(paused.status, 200, "{}", paused.body);
        commenting.release.notify_one();
    };
    let first_passed = passed(&one);
    let (reply, ()) = tokio::join!(
        deliver(&env, "status", &first_passed, SECRET),
        pause_behind_the_comment
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    env.wait_for_state(&repo, 1, "merged").await;
    let after_one = repo.head("main").unwrap();
    tick_later(&env).await;
    assert_eq!(env.pull_request(&repo, 2).await["state"], "tests_passed");
    assert_eq!(
        repo.head("main").unwrap(),
        after_one,
        "nothing merged while paused"
    );
    assert!(pending_merges(&env, &repo).await.is_empty(), "withdrawn");

    let running = json!({"state": "running"});
    let resumed = env
        .post("updateQueue", Some(ACME), &body(&repo, running))
        .await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    env.wait_for_state(&repo, 2, "merged").await;
}

/// A merge that did not reach the Git host before the queue was paused (here its attempt
/// failed; a request that ran out of time leaves one unsent alike) is not sent while the queue
/// is paused, and does not hold the line for the whole pause: once nothing can be sending it,
/// the tick asks the host, finds it is not on the target, and withdraws it. The pull request
/// can then be cancelled (while its merge was under way, that answered 409), and a pull
/// request that stays is merged when the queue runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_not_sent_before_a_pause_is_withdrawn_by_the_tick() {
    let (env, repo, host) = with_faulty_host(json!({"concurrency": 2}), 2).await;
    let main_before = repo.head("main").unwrap();
    host.fail_merges(1, MergeFault::Before);
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "tests_passed").await;
    assert_eq!(pending_merges(&env, &repo).await, [1], "its attempt failed");
    env.update_queue(&repo, json!({"state": "paused"})).await;
    let cancel = env.pr_call("cancelPullRequest", &repo, 1).await;
    assert_eq!(
        cancel.status, 409,
        "its merge is under way: {}",
        cancel.body
    );

    tick_later(&env).await;
    assert!(pending_merges(&env, &repo).await.is_empty(), "withdrawn");
    assert!(repo.moves("main").is_empty(), "not sent while paused");
    assert_eq!(env.pull_request(&repo, 1).await["state"], "tests_passed");
    let cancel = env.pr_call("cancelPullRequest", &repo, 1).await;
    assert_eq!(cancel.status, 200, "{}", cancel.body);
    env.wait_for_state(&repo, 1, "cancelled").await;

    env.update_queue(&repo, json!({"state": "running"})).await;
    env.pass(&repo, 2).await;
    tick_later(&env).await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_ne!(repo.head("main").unwrap(), main_before);
    assert_eq!(repo.history_subjects("main"), ["Change 2 (#2)"]);
}

/// Deleting a queue carries out the effects left in its outbox first: a pull request cancelled
/// while the Git host failed left its run's branch (and CI) to delete, and the delete deletes
/// it instead of leaving it behind. While the host still fails, the queue is not deleted (503,
/// to be tried again): nothing would carry the effects out once it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_queue_carries_out_the_effects_left_in_its_outbox() {
    let (env, repo, host) = with_faulty_host(json!({}), 1).await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;
    host.set_rate(1.0);
    let cancelled = env.pr_call("cancelPullRequest", &repo, 1).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(
        repo.test_branches().len(),
        1,
        "the host failed: the branch is left"
    );
    let refused = env
        .post("deleteQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(
        env.post("getQueue", Some(ACME), &body(&repo, json!({})))
            .await
            .status,
        200
    );
    host.set_rate(0.0);
    let deleted = env
        .post("deleteQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(repo.test_branches(), Vec::<String>::new());
}

/// A test branch whose creation waits to be tried again when its pull request is cancelled is
/// not created by the queue's delete (nothing would delete it, or stop its CI, once the queue
/// is gone): the delete deletes it instead, in case an earlier attempt created it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_queue_builds_no_branch_of_a_cancelled_run() {
    let (env, repo, host) = with_faulty_host(json!({"state": "paused"}), 1).await;
    env.submit(&repo, 1).await;
    host.set_rate(1.0);
    env.update_queue(&repo, json!({"state": "running"})).await;
    let snapshot = env.store.load(&queue_id(&repo)).await.unwrap().unwrap();
    let building = |p: &mq_core::effects::PendingEffect| {
        matches!(p.effect, Effect::CreateTestBranch { .. }) && p.attempts == 1
    };
    assert!(
        snapshot.outbox.iter().any(building),
        "{:?}",
        snapshot.outbox
    );
    host.set_rate(0.0);
    let cancelled = env.pr_call("cancelPullRequest", &repo, 1).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let deleted = env
        .post("deleteQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(repo.test_branches(), Vec::<String>::new());
}

/// A request executes no effect after its deadline. With the Git host answering slowly, a
/// change that starts seven more test branches builds those it can before the deadline and
/// leaves the rest in the outbox, so the request answers within the functions' time limit;
/// the tick builds the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_executes_no_effect_after_its_deadline() {
    use mq_core::engine::Event;
    use mq_core::settings::SettingsPatch;
    use mq_service::drive::{Actor, Start, apply};
    use std::time::Duration;

    let (env, repo, host) = with_faulty_host(json!({"concurrency": 1}), 8).await;
    for pr in 1..=8 {
        env.submit(&repo, pr).await;
    }
    env.wait_for_run(&repo, 1).await;
    host.set_latency(Duration::from_millis(300), Duration::from_millis(300));
    let raise = [Event::UpdateSettings {
        patch: SettingsPatch {
            concurrency: Some(8),
            ..SettingsPatch::default()
        },
    }];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    let start = Start::fresh().until(deadline);
    apply(&env.app, Actor::Service, &queue_id(&repo), &raise, start)
        .await
        .unwrap();
    let built = repo.test_branches().len();
    assert!(
        built < 8,
        "{built} test branches: effects ran past the deadline"
    );
    host.set_latency(Duration::ZERO, Duration::ZERO);
    tick_later(&env).await;
    assert_eq!(repo.test_branches().len(), 8, "the tick built the rest");
}
