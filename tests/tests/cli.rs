//! The `mq` binary against the local gateway on real repositories: submitting and waiting
//! for the verdict, what a GitHub Actions job tells it, uploads of the real JUnit fixtures,
//! the quarantine check, retries under one idempotency key, the operators' commands, help
//! and errors.

use e2e::cli::{Fault, Mq, Proxy};
use e2e::git_repo::{GitRepo, PrSpec};
use e2e::health::health_body;
use e2e::live::{LiveEnv, body};
use e2e::{ACME, Backend, TestEnv};
use mq_lambda::s3::UploadBucket;
use mq_service::test_health::objects::ingest_object;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CI command of the local Git host: a tree holding `FAIL` fails, after half a second
/// (so that `--wait` sees the pull request testing before its verdict).
const CI: &str = "sleep 0.5; test ! -e FAIL";

fn fixtures_dir() -> PathBuf {
    e2e::cli::workspace_root().join("shared/junit/tests/fixtures")
}

fn fixture(name: &str) -> String {
    fixtures_dir().join(name).display().to_string()
}

fn mq(env: &LiveEnv) -> Mq {
    Mq::new(&env.gateway.base_url(), ACME)
}

/// `mq` for `repo`'s queue on main (`MQ_REPO`, `MQ_TARGET_BRANCH`).
fn mq_for(env: &LiveEnv, repo: &GitRepo) -> Mq {
    mq(env)
        .var("MQ_REPO", &format!("acme/{}", repo.name))
        .var("MQ_TARGET_BRANCH", "main")
}

async fn started_with_ci() -> LiveEnv {
    LiveEnv::options().ci(CI).start(Backend::Memory).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_exits_0_on_a_merge_and_1_on_a_failure() {
    let env = started_with_ci().await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_pr(PrSpec::new(1));
    repo.add_pr(PrSpec::new(2).failing());
    env.create_queue(&repo, json!({})).await;
    let mq = mq_for(&env, &repo);

    let merged = mq
        .run(&[
            "submit",
            "--pr",
            "1",
            "--wait",
            "--interval",
            "100ms",
            "--timeout",
            "60s",
        ])
        .await
        .expect(0);
    let states = printed_states(&merged.stdout);
    assert_eq!(
        states.last().map(String::as_str),
        Some("merged"),
        "{}",
        merged.stdout
    );
    assert!(
        states.len() >= 2,
        "each change is printed: {}",
        merged.stdout
    );
    assert!(repo.files("main").contains(&"change-1.txt".to_owned()));

    let failed = mq
        .run(&[
            "submit",
            "--pr",
            "2",
            "--wait",
            "--interval",
            "100ms",
            "--timeout",
            "60s",
        ])
        .await
        .expect(1);
    assert_eq!(
        printed_states(&failed.stdout).last().map(String::as_str),
        Some("failed")
    );
    assert!(!repo.files("main").contains(&"FAIL".to_owned()));
    assert_eq!(env.pull_request(&repo, 2).await["state"], "failed");
}

/// A poll of `--wait` that fails (a function that crashed answers 502 through API Gateway;
/// the API unavailable through every retry of one poll) is missed, not the end of the wait:
/// the pull request merges, and `mq` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_outlasts_polls_that_fail() {
    let env = started_with_ci().await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_pr(PrSpec::new(1));
    env.create_queue(&repo, json!({})).await;
    let proxy = Proxy::start(&env.gateway.base_url(), |path, nth| match (path, nth) {
        ("getSubmittedPullRequest", 0) => Fault::BadGateway,
        ("getSubmittedPullRequest", 1..=6) => Fault::Refuse,
        _ => Fault::None,
    })
    .await;
    let ran = Mq::new(&proxy.url, ACME)
        .var("MQ_REPO", "acme/rocket")
        .var("MQ_TARGET_BRANCH", "main")
        .run(&[
            "submit",
            "--pr",
            "1",
            "--wait",
            "--interval",
            "100ms",
            "--timeout",
            "60s",
        ])
        .await
        .expect(0);
    assert_eq!(
        printed_states(&ran.stdout).last().map(String::as_str),
        Some("merged"),
        "{}",
        ran.stdout
    );
    assert_eq!(
        ran.stderr.matches("asking again").count(),
        2,
        "{}",
        ran.stderr
    );
}

/// The states of the lines `--wait` prints (`<time> #<n> <state>...`).
fn printed_states(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let _time = words.next()?;
            words.next().filter(|w| w.starts_with('#'))?;
            words.next().map(|s| s.trim_end_matches(':').to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_exits_3_when_it_times_out_and_2_when_cancelled() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"concurrency": 2})).await;
    let mq = mq_for(&env, &repo);

    // Without a CI, nothing ends: --timeout runs out and the pull request stays queued.
    let timed_out = mq
        .run(&[
            "submit",
            "--pr",
            "1",
            "--wait",
            "--interval",
            "100ms",
            "--timeout",
            "1s",
        ])
        .await
        .expect(3);
    assert!(
        timed_out.stderr.contains("stays in the queue"),
        "{}",
        timed_out.stderr
    );
    assert_eq!(
        env.pull_request(&repo, 1).await["isCurrentlySubmittedToQueue"],
        true
    );

    let mut waiting = mq.command(&[
        "submit",
        "--pr",
        "2",
        "--wait",
        "--interval",
        "100ms",
        "--timeout",
        "60s",
    ]);
    let waiting = tokio::task::spawn_blocking(move || waiting.output());
    e2e::live::wait_until("#2 submitted and testing", || async {
        let seen = env.pr_call("getSubmittedPullRequest", &repo, 2).await;
        (seen.status == 200 && seen.body["state"] == "testing").then_some(())
    })
    .await;
    mq.run(&["cancel", "--pr", "2"]).await.expect(0);
    let out = waiting.await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert_eq!(
        printed_states(&stdout).last().map(String::as_str),
        Some("cancelled")
    );
}

/// A clone of `repo` whose `HEAD` is the merge of pull request `pr` into main, as
/// actions/checkout leaves a `pull_request` job; returns the checkout.
fn merge_ref_checkout(repo: &GitRepo, pr: u32, dir: &Path) -> PathBuf {
    let checkout = dir.join("checkout");
    let bare = repo.bare.display().to_string();
    git(dir, &["clone", "--quiet", &bare, "checkout"]);
    let fetch = format!("refs/pull/{pr}/head:refs/remotes/pull/{pr}/head");
    git(&checkout, &["fetch", "--quiet", "origin", &fetch]);
    git(
        &checkout,
        &["checkout", "--quiet", "--detach", "origin/main"],
    );
    let head = format!("refs/remotes/pull/{pr}/head");
    git(
        &checkout,
        &["merge", "--quiet", "--no-ff", "-m", "Merge", &head],
    );
    checkout
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=CI", "-c", "user.email=ci@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_variables_are_inferred_from_a_github_actions_environment() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    let head = repo.add_pr(PrSpec::new(1));
    env.create_queue(&repo, json!({})).await;
    let scratch = tempfile::tempdir().unwrap();
    let checkout = merge_ref_checkout(&repo, 1, scratch.path());
    let merge = git(&checkout, &["rev-parse", "HEAD"]);
    let actions = mq(&env)
        .in_dir(&checkout)
        .var("GITHUB_ACTIONS", "true")
        .var("GITHUB_SERVER_URL", "https://github.com")
        .var("GITHUB_REPOSITORY", "acme/rocket")
        .var("GITHUB_REF", "refs/pull/1/merge")
        .var("GITHUB_REF_NAME", "1/merge")
        .var("GITHUB_SHA", &merge)
        .var("GITHUB_BASE_REF", "main")
        .var("GITHUB_HEAD_REF", "feature-1")
        .var("GITHUB_RUN_ID", "4242")
        .var("GITHUB_RUN_ATTEMPT", "1")
        .var("GITHUB_JOB", "test");

    let submitted = actions.run(&["-v", "submit"]).await.expect(0);
    for shown in [
        "repository: github.com/acme/rocket (from GITHUB_REPOSITORY)",
        "pull request: 1 (from GITHUB_REF (refs/pull/1/merge))",
        "target branch: main (from GITHUB_BASE_REF)",
        "token: from MQ_API_TOKEN (not shown)",
    ] {
        assert!(
            submitted.stderr.contains(shown),
            "{shown}: {}",
            submitted.stderr
        );
    }
    assert_eq!(
        env.pull_request(&repo, 1).await["isCurrentlySubmittedToQueue"],
        true
    );

    let uploaded = actions
        .run(&["-v", "upload", &fixture("pytest-xunit2.xml")])
        .await
        .expect(0);
    for shown in [
        // The results are of the merge commit CI tested, not of the head on its own.
        format!("tested commit: {merge} (from the checkout (HEAD))"),
        "branch: feature-1 (from GITHUB_HEAD_REF)".to_owned(),
        "upload id: gha-4242-1-test-".to_owned(),
        "(from GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_JOB, the variant and the reports)"
            .to_owned(),
        "job URL: https://github.com/acme/rocket/actions/runs/4242".to_owned(),
    ] {
        assert!(
            uploaded.stderr.contains(&shown),
            "{shown}: {}",
            uploaded.stderr
        );
    }
    for ran in [&submitted, &uploaded] {
        assert!(
            !format!("{}{}", ran.stdout, ran.stderr).contains(ACME),
            "the token is never printed"
        );
    }

    // A workflow's event file alone tells the pull request, its head and its base.
    let event = scratch.path().join("event.json");
    let pr = json!({"pull_request": {"number": 1, "head": {"sha": head, "ref": "feature-1"},
                    "base": {"ref": "main"}}});
    std::fs::write(&event, pr.to_string()).unwrap();
    let from_event = mq(&env)
        .var("GITHUB_REPOSITORY", "acme/rocket")
        .var("GITHUB_EVENT_PATH", event.to_str().unwrap())
        .run(&["-v", "status"])
        .await
        .expect(0);
    for shown in [
        "pull request: 1 (from GITHUB_EVENT_PATH /pull_request/number)",
        "target branch: main (from GITHUB_EVENT_PATH /pull_request/base/ref)",
    ] {
        assert!(
            from_event.stderr.contains(shown),
            "{shown}: {}",
            from_event.stderr
        );
    }
    assert!(
        from_event.stdout.contains("#1 Change 1"),
        "{}",
        from_event.stdout
    );

    // Outside CI: the repository from the origin remote, the pull request from the checkout.
    git(
        &checkout,
        &[
            "checkout",
            "--quiet",
            "--detach",
            "refs/remotes/pull/1/head",
        ],
    );
    let local = mq(&env)
        .in_dir(&checkout)
        .run(&["-v", "status"])
        .await
        .expect(0);
    for shown in [
        "repository: github.com/acme/rocket (from the origin remote",
        "pull request: 1 (from the checkout (refs/remotes/pull/1/head is HEAD))",
    ] {
        assert!(local.stderr.contains(shown), "{shown}: {}", local.stderr);
    }
}

/// A copy of a fixture, gzipped, in `dir`.
fn gzipped_fixture(name: &str, dir: &Path) -> String {
    let path = dir.join(format!("{name}.gz"));
    let out = Command::new("gzip")
        .args(["-c", &fixture(name)])
        .output()
        .expect("gzip runs");
    std::fs::write(&path, out.stdout).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_real_junit_fixture_uploads_plain_or_gzip() {
    let env = LiveEnv::start(Backend::Memory).await;
    let scratch = tempfile::tempdir().unwrap();
    let plain: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "xml"))
        .collect();
    assert!(plain.len() >= 14, "the fixtures: {plain:?}");
    // The surefire reports go gzipped; the glob takes the rest.
    let gz = gzipped_fixture("surefire-2.22-noretry.xml", scratch.path());
    let pattern = format!("{}/[gjnp]*.xml", fixtures_dir().display());
    let mq = mq(&env).var("MQ_REPO", "acme/rocket");
    let args = [
        "--json", "upload", "--sha", "abc1234", "--branch", "main", &pattern, &gz,
    ];
    let first = mq.run(&args).await.expect(0);
    let answer: Value = serde_json::from_str(&first.stdout).unwrap();
    let sent = plain
        .iter()
        .filter(|p| !p.to_string_lossy().contains("surefire"))
        .count()
        + 1;
    assert_eq!(answer["files"], sent as u64, "{answer}");
    assert_eq!(answer["duplicate"], false);
    assert!(answer["failed"].as_u64().unwrap() > 0 && answer["retries"].as_u64().unwrap() > 0);
    assert!(
        answer["upload_id"]
            .as_str()
            .unwrap()
            .starts_with("reports-")
    );

    // The same reports again, outside CI, are the same upload: nothing is counted twice.
    let again: Value = serde_json::from_str(&mq.run(&args).await.expect(0).stdout).unwrap();
    assert_eq!(
        (&again["duplicate"], &again["upload_id"]),
        (&json!(true), &answer["upload_id"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_upload_counts_once_and_a_rerun_job_makes_tests_flaky() {
    let env = LiveEnv::start(Backend::Memory).await;
    let job = |run: &str, attempt: &str| {
        mq(&env)
            .var("GITHUB_REPOSITORY", "acme/rocket")
            .var("GITHUB_RUN_ID", run)
            .var("GITHUB_RUN_ATTEMPT", attempt)
            .var("GITHUB_JOB", "test")
            .var("GITHUB_REF_NAME", "main")
            .var("GITHUB_SHA", "a1a1a1a")
    };
    let upload = |mq: Mq, report: &'static str| async move {
        let ran = mq.run(&["upload", &fixture(report)]).await.expect(0);
        ran.stdout
    };
    let first = upload(job("100", "1"), "nextest-noretry-run1.xml").await;
    assert!(first.contains("upload id gha-100-1-test"), "{first}");
    let retried = upload(job("100", "1"), "nextest-noretry-run1.xml").await;
    assert!(
        retried.contains("received before: nothing changed"),
        "{retried}"
    );
    // Another shard of the same job (a matrix leg shares its job's name): another upload.
    let shard = upload(job("100", "1"), "pytest-xunit2.xml").await;
    assert!(shard.contains("upload id gha-100-1-test-"), "{shard}");
    assert!(!shard.contains("received before"), "{shard}");
    // "Re-run failed jobs": the job's second attempt tests the same commit again.
    let rerun = upload(job("100", "2"), "nextest-noretry-run2.xml").await;
    assert!(rerun.contains("upload id gha-100-2-test"), "{rerun}");

    // Two attempts at one commit, a pass and a failure each: flaky.
    let listed = mq(&env)
        .var("MQ_REPO", "acme/rocket")
        .run(&["tests", "unhealthy", "--status", "flaky"])
        .await
        .expect(0);
    for name in [
        "flaky_demo::tests::sometimes_fails",
        "flaky_demo::integration::integration_flaky",
    ] {
        assert!(listed.stdout.contains(name), "{name}: {}", listed.stdout);
    }
    assert!(!listed.stdout.contains("always_fails"), "{}", listed.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_quarantined_passes_a_job_only_when_every_failure_is_quarantined() {
    let env = LiveEnv::start(Backend::Memory).await;
    let mq = mq(&env).var("MQ_REPO", "acme/rocket");
    let runs = [
        ("nextest-noretry-run1.xml", "a1a1a1a", "a-1"),
        ("nextest-noretry-run2.xml", "a1a1a1a", "a-2"),
        ("nextest-retries-flaky.xml", "b2b2b2b", "b-1"),
    ];
    for (report, sha, id) in runs {
        let path = fixture(report);
        let args = [
            "upload",
            "--sha",
            sha,
            "--branch",
            "main",
            "--upload-id",
            id,
            &path,
        ];
        mq.run(&args).await.expect(0);
    }
    let settings = health_body(json!({"quarantining": true, "auto_quarantine": true}));
    env.ok("flaky-tests/update-settings", &settings).await;

    // run2 failed always_fails (broken, not quarantined) and integration_flaky (quarantined).
    let failing = mq
        .run(&["check-quarantined", &fixture("nextest-noretry-run2.xml")])
        .await
        .expect(1);
    assert!(
        failing
            .stdout
            .starts_with("1 of 2 failed tests are not quarantined:"),
        "{}",
        failing.stdout
    );
    assert!(
        failing.stdout.contains("  flaky_demo::tests::always_fails"),
        "{}",
        failing.stdout
    );
    assert!(
        !failing.stdout.contains("integration_flaky"),
        "{}",
        failing.stdout
    );

    let quarantined = mq
        .run(&["--json", "tests", "unhealthy", "--status", "broken"])
        .await
        .expect(0);
    let page: Value = serde_json::from_str(quarantined.stdout.lines().next().unwrap()).unwrap();
    let broken = page["tests"][0]["id"].as_str().unwrap().to_owned();
    let always =
        json!({"test_overrides": [{"test_case_id": broken, "quarantine": "ALWAYS_QUARANTINE"}]});
    env.ok("flaky-tests/update-settings", &health_body(always))
        .await;

    let both = [
        fixture("nextest-noretry-run1.xml"),
        fixture("nextest-noretry-run2.xml"),
    ];
    let passing = mq
        .run(&["check-quarantined", &both[0], &both[1]])
        .await
        .expect(0);
    assert!(
        passing
            .stdout
            .starts_with("all 3 failed tests are quarantined"),
        "{}",
        passing.stdout
    );
    let listed = mq.run(&["tests", "quarantined"]).await.expect(0);
    assert_eq!(
        listed.stdout.lines().count(),
        4,
        "a header and 3 tests: {}",
        listed.stdout
    );

    // A failure the service never saw is not quarantined; a report without failures passes.
    let other = mq
        .run(&["check-quarantined", &fixture("pytest-xunit2.xml")])
        .await
        .expect(1);
    assert!(
        other.stdout.contains("(no upload has named this test)"),
        "{}",
        other.stdout
    );
    let scratch = tempfile::tempdir().unwrap();
    let green = scratch.path().join("green.xml");
    let report = r#"<testsuite name="s"><testcase classname="c" name="passes"/></testsuite>"#;
    std::fs::write(&green, report).unwrap();
    let clean = mq
        .run(&["check-quarantined", green.to_str().unwrap()])
        .await
        .expect(0);
    assert_eq!(clean.stdout.trim(), "no failed test in 1 report(s)");
    // Its test step failed, though: the reports do not say why, and no quarantine explains it.
    let unexplained = mq
        .run(&[
            "check-quarantined",
            "--step-failed",
            green.to_str().unwrap(),
        ])
        .await
        .expect(1);
    assert!(
        unexplained.stdout.contains("though the test step failed"),
        "{}",
        unexplained.stdout
    );
}

/// The organisation of the test-health endpoints is the token's, which the API tells: acme
/// also owns `acme-labs`, whose repository's owner is not acme's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_health_commands_name_the_tokens_organisation_not_the_repository_owner() {
    let env = LiveEnv::start(Backend::Memory).await;
    let link = mq_store::OwnerLink {
        owner: mq_core::ids::OwnerRef::parse("owner", "github.com/acme-labs").unwrap(),
        org: mq_core::ids::OrgId::parse("acme").unwrap(),
        linked_at: mq_core::time::Timestamp(0),
        account_id: None,
    };
    env.app.store.link_owner(&link).await.unwrap();
    let mq = mq(&env).var("MQ_REPO", "acme-labs/rocket");
    let report = fixture("nextest-noretry-run2.xml");
    let args = ["upload", "--sha", "a1a1a1a", "--branch", "main", &report];
    mq.run(&args).await.expect(0);
    let checked = mq
        .run(&["-v", "check-quarantined", &report])
        .await
        .expect(1);
    assert!(
        checked
            .stderr
            .contains("organisation: acme (from the API token's organisation)"),
        "{}",
        checked.stderr
    );
    assert!(
        checked
            .stdout
            .starts_with("2 of 2 failed tests are not quarantined:"),
        "{}",
        checked.stdout
    );
    mq.run(&["tests", "unhealthy"]).await.expect(0);
}

/// An API URL that redirects elsewhere is not followed: the token (`x-api-token`) would go
/// with it to whatever host the redirect names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_with_the_token() {
    use axum::http::{HeaderMap, StatusCode};
    use std::sync::{Arc, Mutex};
    async fn listen(app: axum::Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }
    let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = tokens.clone();
    let elsewhere = listen(axum::Router::new().fallback(move |headers: HeaderMap| {
        let seen = seen.clone();
        async move {
            let token = headers
                .get("x-api-token")
                .map(|v| v.to_str().unwrap().to_owned());
            seen.lock().unwrap().extend(token);
            "{}"
        }
    }))
    .await;
    let redirect = listen(axum::Router::new().fallback(move || {
        let to = format!("{elsewhere}/v1/listQueues");
        async move { (StatusCode::TEMPORARY_REDIRECT, [("location", to)]) }
    }))
    .await;
    let ran = Mq::new(&format!("{redirect}/v1"), ACME)
        .var("MQ_REPO", "acme/rocket")
        .run(&["tests", "quarantined"])
        .await
        .expect(4);
    assert!(ran.stderr.contains("HTTP_REDIRECT"), "{}", ran.stderr);
    assert!(
        tokens.lock().unwrap().is_empty(),
        "the token went elsewhere"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_is_retried_with_the_same_idempotency_key() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({})).await;
    // The first attempt is refused; the second acts but its answer is lost; the third is
    // answered by the gateway.
    let proxy = Proxy::start(&env.gateway.base_url(), |path, nth| match (path, nth) {
        ("submitPullRequest", 0) => Fault::Refuse,
        ("submitPullRequest", 1) => Fault::LoseAnswer,
        _ => Fault::None,
    })
    .await;
    let ran = Mq::new(&proxy.url, ACME)
        .var("MQ_REPO", "acme/rocket")
        .run(&["submit", "--pr", "1"])
        .await
        .expect(0);
    let attempts: Vec<_> = proxy
        .seen()
        .into_iter()
        .filter(|s| s.path == "submitPullRequest")
        .collect();
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    let key = attempts[0].idempotency_key.clone().expect("a key is sent");
    assert!(
        attempts
            .iter()
            .all(|a| a.idempotency_key.as_deref() == Some(key.as_str()))
    );
    assert_eq!(
        attempts
            .iter()
            .map(|a| (a.status, a.replayed))
            .collect::<Vec<_>>(),
        [(503, false), (503, false), (200, true)],
        "the third attempt got the answer of the second, which acted"
    );
    assert_eq!(
        ran.stderr.matches("same Idempotency-Key").count(),
        2,
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("503 UNAVAILABLE; retry 1 of 5 in 1.0 s"),
        "{}",
        ran.stderr
    );
    let queued = env.queue(&repo).await["enqueuedPullRequests"].clone();
    assert_eq!(
        queued.as_array().map(Vec::len),
        Some(1),
        "submitted once: {queued}"
    );

    // Another command gets another key.
    Mq::new(&proxy.url, ACME)
        .var("MQ_REPO", "acme/rocket")
        .run(&["cancel", "--pr", "1"])
        .await
        .expect(0);
    let cancel = proxy
        .seen()
        .into_iter()
        .find(|s| s.path == "cancelPullRequest")
        .unwrap();
    assert_ne!(cancel.idempotency_key, Some(key));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_see_and_steer_the_queue() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_prs(2, &[]);
    let mq = mq_for(&env, &repo);
    let created = mq
        .run(&["queues", "create", "--concurrency", "1"])
        .await
        .expect(0);
    assert_eq!(
        created.stdout.trim(),
        "github.com/acme/rocket main: queue created"
    );
    mq.run(&["settings", "--batch", "false", "--merge-method", "squash"])
        .await
        .expect(0);
    let shown = mq.run(&["settings"]).await.expect(0);
    for setting in [
        "  concurrency: 1",
        "  batch: false",
        "  mergeMethod: squash",
    ] {
        assert!(
            shown.stdout.contains(setting),
            "{setting}: {}",
            shown.stdout
        );
    }
    mq.run(&["submit", "--pr", "1"]).await.expect(0);
    mq.run(&["submit", "--pr", "2", "--priority", "low"])
        .await
        .expect(0);
    env.wait_for_run(&repo, 1).await;

    let table = mq.run(&["queue"]).await.expect(0).stdout;
    let mut lines = table.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("github.com/acme/rocket main: running, concurrency 1")
    );
    let rows: Vec<Vec<&str>> = lines
        .skip(2)
        .map(|l| {
            l.split("  ")
                .filter(|c| !c.is_empty())
                .map(str::trim)
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    for (row, pr) in rows.iter().zip([1, 2]) {
        let state = env.pull_request(&repo, pr).await["state"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            (row[1], row[2]),
            (format!("#{pr} Change {pr}").as_str(), state.as_str()),
            "{table}"
        );
    }
    let testing = env.wait_for_run(&repo, 1).await;
    assert_eq!(rows[0][3], testing.id, "the run testing #1: {table}");
    assert_eq!((rows[1][0], rows[1][3]), ("-", "-"), "#2 waits: {table}");
    let json: Value =
        serde_json::from_str(&mq.run(&["--json", "queue"]).await.expect(0).stdout).unwrap();
    assert_eq!(json, env.queue(&repo).await, "--json is the API's JSON");

    let run = env.wait_for_run(&repo, 1).await;
    let shown = mq.run(&["run", &run.id]).await.expect(0).stdout;
    assert!(
        shown.starts_with(&format!("run {}: in_progress", run.id)),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("commit:    {}", run.sha)),
        "{shown}"
    );
    assert!(shown.contains("tests:     #1 Change 1"), "{shown}");

    for (command, state) in [
        ("pause", "paused"),
        ("drain", "draining"),
        ("resume", "running"),
    ] {
        let ran = mq.run(&[command]).await.expect(0);
        assert_eq!(
            ran.stdout.trim(),
            format!("github.com/acme/rocket main: {state}")
        );
        assert_eq!(env.queue(&repo).await["state"], state);
    }

    let metrics = mq.run(&["metrics"]).await.expect(0).stdout;
    let depth = metrics
        .lines()
        .find(|l| l.starts_with("mq_queue_depth_current{"));
    assert!(
        depth.is_some_and(|l| l.contains("repo=\"acme/rocket\"")),
        "{metrics}"
    );

    let refused = mq.run(&["queues", "delete"]).await.expect(4);
    assert!(
        refused
            .stderr
            .contains("deleteQueue: 409 QUEUE_NOT_EMPTY: "),
        "{}",
        refused.stderr
    );
    mq.run(&["restart", "--pr", "1"]).await.expect(0);
    for pr in ["1", "2"] {
        mq.run(&["cancel", "--pr", pr]).await.expect(0);
    }
    let status: Value = serde_json::from_str(
        &mq.run(&["--json", "status", "--pr", "2"])
            .await
            .expect(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(status, env.pull_request(&repo, 2).await);
    assert_eq!(status["state"], "cancelled");
    mq.run(&["queues", "delete"]).await.expect(0);
    assert_eq!(
        env.post("getQueue", Some(ACME), &body(&repo, json!({})))
            .await
            .status,
        404
    );
}

/// `mq advice` on a fresh queue: the estimates and why there is no advice, exit 0; a goal
/// without its budget refused before any request, a budget without its goal by the API; and
/// `mq settings --auto-tune` turning auto-tuning on, shown by `mq settings` and `mq advice`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_ask_for_advice_and_turn_auto_tuning_on() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    let mq = mq_for(&env, &repo);
    mq.run(&["queues", "create"]).await.expect(0);

    let advice = mq.run(&["advice"]).await.expect(0).stdout;
    for expected in [
        "github.com/acme/rocket main: advice for the most merges per hour",
        "window: ",
        "arrivals per hour",
        "mean CI minutes",
        "no advice (not enough history): the window holds 0 submitted heads",
        "autoTune: off\n  last check: never\n  changes: none",
    ] {
        assert!(advice.contains(expected), "{expected}:\n{advice}");
    }
    let answer: Value = serde_json::from_str(
        &mq.run(&[
            "--json",
            "advice",
            "--goal",
            "fewest-ci-runs",
            "--window-days",
            "3",
        ])
        .await
        .expect(0)
        .stdout,
    )
    .unwrap();
    assert_eq!(answer["goal"], "fewestCiRuns", "{answer}");
    assert_eq!(answer["noAdvice"]["reason"], "not_enough_history");

    let cases: [(&[&str], &str); 3] = [
        (
            &["advice", "--goal", "fastest-within-budget"],
            "the following required arguments were not provided:\n  --ci-runs-per-hour <N>",
        ),
        (
            &["advice", "--ci-runs-per-hour", "10"],
            "getQueueAdvice: 400 INVALID_FIELD: ciRunsPerHour",
        ),
        (
            &["advice", "--window-days", "31"],
            "getQueueAdvice: 400 INVALID_FIELD: windowDays",
        ),
    ];
    for (args, error) in cases {
        let ran = mq.run(args).await.expect(4);
        assert!(ran.stderr.contains(error), "{args:?}: {}", ran.stderr);
    }

    mq.run(&["settings", "--auto-tune", "true"]).await.expect(0);
    assert_eq!(env.queue(&repo).await["autoTune"], true);
    let shown = mq.run(&["settings"]).await.expect(0).stdout;
    assert!(shown.contains("  autoTune: true\n"), "{shown}");
    assert!(
        shown.contains("  tuning:\n    last check: never\n    changes: none\n"),
        "{shown}"
    );
    let advice = mq.run(&["advice"]).await.expect(0).stdout;
    assert!(advice.contains("autoTune: on"), "{advice}");

    mq.run(&["settings", "--concurrency", "2"]).await.expect(0);
    let shown = mq.run(&["settings"]).await.expect(0).stdout;
    assert!(
        shown.contains(
            "    changes: none
    changed by an operator: "
        ),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impacted_targets_are_set_from_arguments_a_file_or_all() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    let head = repo.add_pr(PrSpec::new(1));
    env.create_queue(&repo, json!({"mode": "parallel"})).await;
    let mq = mq_for(&env, &repo).var("MQ_PR", "1");
    mq.run(&["targets", "//app", "//lib"]).await.expect(0);
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("targets.json");
    std::fs::write(&file, r#"["//app", "//docs"]"#).unwrap();
    let ran = mq
        .run(&["targets", "--sha", &head, "--file", file.to_str().unwrap()])
        .await
        .expect(0);
    assert_eq!(ran.stdout.trim(), "#1: 2 impacted targets set");
    let many: Vec<String> = (0..=4_096).map(|n| format!("//t{n}")).collect();
    std::fs::write(&file, many.join("\n")).unwrap();
    let ran = mq
        .run(&["targets", "--file", file.to_str().unwrap()])
        .await
        .expect(0);
    assert_eq!(ran.stdout.trim(), "#1: every target impacted");
    assert!(ran.stderr.contains("sent as ALL"), "{}", ran.stderr);
    let stale = mq
        .run(&["targets", "--sha", "0000000", "--all"])
        .await
        .expect(4);
    assert!(
        stale.stderr.contains("409 SHA_MISMATCH"),
        "{}",
        stale.stderr
    );
    mq.run(&["targets", "--all"]).await.expect(0);
    mq.run(&["submit"]).await.expect(0);
    env.wait_for_testing_to_start(&repo, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_of_every_command_is_complete_with_an_example() {
    let mq = Mq::new("http://127.0.0.1:9/v1", "unused");
    let top = mq.run(&["--help"]).await.expect(0).stdout;
    assert!(
        top.contains("Exit codes:") && top.contains("Examples:"),
        "{top}"
    );
    let commands = listed_commands(&top);
    assert!(commands.len() >= 17, "{commands:?}");
    let mut checked = 0;
    let mut todo: Vec<Vec<String>> = commands.into_iter().map(|c| vec![c]).collect();
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = mq.run(&args).await.expect(0).stdout;
        let name = format!("mq {}", path.join(" "));
        assert!(help.contains(&format!("Usage: {name}")), "{help}");
        assert!(help.contains("Example"), "{name} shows no example:\n{help}");
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(&name)),
            "{name}: no example of itself:\n{help}"
        );
        args.pop();
        args.push("-h");
        let short = mq.run(&args).await.expect(0).stdout;
        assert_options_described(&name, &short);
        for sub in listed_commands(&help) {
            let mut deeper = path.clone();
            deeper.push(sub);
            todo.push(deeper);
        }
        checked += 1;
    }
    assert!(checked >= 20, "{checked} commands checked");
    for shell in ["bash", "zsh", "fish"] {
        let script = mq.run(&["completions", shell]).await.expect(0).stdout;
        assert!(
            script.contains("check-quarantined") && script.len() > 1000,
            "{shell}"
        );
    }
}

/// Every option line of a help text has a description: after the option, or on the next
/// line (clap's layout when the options are wide).
fn assert_options_described(name: &str, help: &str) {
    let lines: Vec<&str> = help.lines().collect();
    for (i, option) in lines.iter().enumerate() {
        if !option.trim_start().starts_with('-') {
            continue;
        }
        let beside = option
            .trim()
            .split("  ")
            .filter(|p| !p.trim().is_empty())
            .count()
            >= 2;
        let below = lines.get(i + 1).is_some_and(|next| {
            let next = next.trim();
            !next.is_empty() && !next.starts_with('-')
        });
        assert!(
            beside || below,
            "{name}: an option without a description: {option}"
        );
    }
}

/// The names under `Commands:` in a help text.
fn listed_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_a_clear_error() {
    let env = LiveEnv::start(Backend::Memory).await;
    let mq = mq(&env).var("MQ_REPO", "acme/rocket").var("MQ_PR", "1");
    let cases: [(&[&str], &str); 9] = [
        (
            &["submit", "--priority", "soon"],
            "`soon` is not a priority",
        ),
        (
            &["submit", "--wait", "--timeout", "5x"],
            "`5x` is not a duration",
        ),
        (
            &["status"],
            "getSubmittedPullRequest: 404 QUEUE_NOT_FOUND: ",
        ),
        (&["status", "--repo", "acme"], "`acme` is not a repository"),
        (
            &["status", "--target", "a..b"],
            "`a..b` is not a valid target branch",
        ),
        (
            &["status", "--target", "release/.next"],
            "`release/.next` is not a valid target branch",
        ),
        (
            &[
                "upload",
                "--sha",
                "abc1234",
                "--branch",
                "main",
                "missing/*.xml",
            ],
            "no report file matches missing/*.xml",
        ),
        (
            &["targets"],
            "the following required arguments were not provided",
        ),
        (
            &["settings", "--concurrency", "0"],
            "updateQueue: 400 INVALID_FIELD: concurrency",
        ),
    ];
    for (args, error) in cases {
        let ran = mq.run(args).await.expect(4);
        assert!(ran.stderr.contains(error), "{args:?}: {}", ran.stderr);
    }
    let scratch = tempfile::tempdir().unwrap();
    let not_junit = scratch.path().join("notes.xml");
    std::fs::write(&not_junit, "<notes><note/></notes>").unwrap();
    let ran = mq
        .run(&[
            "upload",
            "--sha",
            "abc1234",
            "--branch",
            "main",
            not_junit.to_str().unwrap(),
        ])
        .await
        .expect(4);
    assert!(
        ran.stderr.contains("notes.xml is not a JUnit report"),
        "{}",
        ran.stderr
    );

    let unconfigured = Mq::new("", "")
        .unset("MQ_API_URL")
        .run(&["status"])
        .await
        .expect(4);
    assert!(
        unconfigured
            .stderr
            .contains("set MQ_API_URL or pass --api-url"),
        "{}",
        unconfigured.stderr
    );
    let wrong = Mq::new(&env.gateway.base_url(), "not-a-token").var("MQ_REPO", "acme/rocket");
    let ran = wrong.run(&["status", "--pr", "1"]).await.expect(4);
    assert!(ran.stderr.contains("401 UNAUTHORIZED"), "{}", ran.stderr);
    assert!(!ran.stderr.contains("not-a-token"), "{}", ran.stderr);
}

/// Maven Surefire writes a report per test class: 1,001 small reports are more than one
/// upload request may carry (1,000 files), however few bytes they are. They go through
/// upload URLs, each an upload of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_reports_than_one_request_takes_go_through_upload_urls() {
    let endpoint = mq_tables::moto::endpoint();
    let name = format!("mq-cli-many-{}", std::process::id());
    let bucket = UploadBucket::local(&mq_tables::local_config(&endpoint).await, &name);
    bucket.create().await.expect("bucket created on moto");
    let env = TestEnv::start_with(Backend::Memory, |app| {
        app.with_uploads(std::sync::Arc::new(bucket))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    for i in 0..1_001 {
        let xml = format!(
            r#"<testsuite name="T{i}" tests="1"><testcase classname="T{i}" name="t"/></testsuite>"#
        );
        std::fs::write(dir.path().join(format!("TEST-{i:04}.xml")), xml).unwrap();
    }
    let pattern = format!("{}/TEST-*.xml", dir.path().display());
    let mq = Mq::new(&env.gateway.base_url(), ACME).var("MQ_REPO", "acme/rocket");
    let args = [
        "upload",
        "--sha",
        "a1a1a1a",
        "--branch",
        "main",
        "--upload-id",
        "many",
        &pattern,
    ];
    let sent = mq.run(&args).await.expect(0);
    assert!(
        sent.stderr
            .contains("more reports, test cases or XML than one request may carry"),
        "{}",
        sent.stderr
    );
    assert!(
        sent.stdout.contains("uploaded (upload id many-1001)"),
        "{}",
        sent.stdout
    );
}

/// A report of more test cases than one request ingests in its time goes through upload URLs,
/// however small its gzip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_of_many_test_cases_go_through_upload_urls() {
    let endpoint = mq_tables::moto::endpoint();
    let name = format!("mq-cli-many-{}", std::process::id());
    let bucket = UploadBucket::local(&mq_tables::local_config(&endpoint).await, &name);
    bucket.create().await.expect("bucket created on moto");
    let env = TestEnv::start_with(Backend::Memory, |app| {
        app.with_uploads(std::sync::Arc::new(bucket))
    })
    .await;
    let mq = Mq::new(&env.gateway.base_url(), ACME).var("MQ_REPO", "acme/rocket");
    let scratch = tempfile::tempdir().unwrap();
    let report = scratch.path().join("junit.xml");
    std::fs::write(&report, e2e::health::generated_mix(50_001)).unwrap();
    let args = [
        "upload",
        "--sha",
        "a1a1a1a",
        "--branch",
        "main",
        "--upload-id",
        "many",
        report.to_str().unwrap(),
    ];
    let sent = mq.run(&args).await.expect(0);
    assert!(
        sent.stderr.contains(
            "50001 test cases, more than 50000 to ingest in one request: through upload URLs"
        ),
        "{}",
        sent.stderr
    );
    assert!(
        sent.stdout.contains("uploaded (upload id many"),
        "{}",
        sent.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_above_the_direct_limit_go_through_upload_urls() {
    let endpoint = mq_tables::moto::endpoint();
    let name = format!("mq-cli-uploads-{}", std::process::id());
    let bucket = UploadBucket::local(&mq_tables::local_config(&endpoint).await, &name);
    bucket.create().await.expect("bucket created on moto");
    let env = TestEnv::start_with(Backend::Memory, |app| {
        app.with_uploads(std::sync::Arc::new(bucket))
    })
    .await;
    let mq = Mq::new(&env.gateway.base_url(), ACME).var("MQ_REPO", "acme/rocket");
    let reports = [
        fixture("nextest-noretry-run1.xml"),
        fixture("nextest-noretry-run2.xml"),
    ];
    let args = [
        "upload",
        "--direct-limit",
        "1KiB",
        "--sha",
        "a1a1a1a",
        "--branch",
        "main",
        "--upload-id",
        "big",
        &reports[0],
        &reports[1],
    ];
    let sent = mq.run(&args).await.expect(0);
    assert!(
        sent.stderr
            .contains("above the direct limit of 1.0 KiB: through upload URLs"),
        "{}",
        sent.stderr
    );
    for id in ["big-1", "big-2"] {
        assert!(
            sent.stdout.contains(&format!("uploaded (upload id {id})")),
            "{}",
            sent.stdout
        );
    }

    // S3 tells the ingest function of each object; here the test does.
    let listing = UploadBucket::local(&mq_tables::local_config(&endpoint).await, &name);
    let objects = listing
        .client
        .list_objects_v2()
        .bucket(&name)
        .send()
        .await
        .unwrap();
    let keys: Vec<String> = objects
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    for key in &keys {
        let outcome = ingest_object(&env.app(), key).await.unwrap();
        assert!(
            format!("{outcome:?}").starts_with("Ingested"),
            "{outcome:?}"
        );
    }
    let flaky = mq
        .run(&["tests", "unhealthy", "--status", "flaky"])
        .await
        .expect(0);
    assert!(
        flaky.stdout.contains("flaky_demo::tests::sometimes_fails"),
        "{}",
        flaky.stdout
    );

    let again = mq.run(&args).await.expect(0);
    assert_eq!(
        again
            .stdout
            .matches("received before, not sent again")
            .count(),
        2,
        "{}",
        again.stdout
    );

    // A deployment without upload URLs takes the upload in one request.
    let plain = LiveEnv::start(Backend::Memory).await;
    let direct = Mq::new(&plain.gateway.base_url(), ACME).var("MQ_REPO", "acme/rocket");
    let ran = direct.run(&args).await.expect(0);
    assert!(
        ran.stderr
            .contains("this deployment has no upload URLs; sending in one request"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stdout.starts_with("uploaded 2 reports (upload id big)"),
        "{}",
        ran.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_watch_prints_the_table_again_when_it_changes() {
    let env = LiveEnv::start(Backend::Memory).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[e2e::live::CI]);
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({})).await;
    let mq = mq_for(&env, &repo);
    let mut watching = mq
        .command(&["queue", "--watch", "--interval", "100ms"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("mq starts");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    env.submit(&repo, 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    watching.kill().expect("mq stops");
    let out = tokio::task::spawn_blocking(move || watching.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let headers: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("github.com/acme/rocket main"))
        .collect();
    assert!(headers.len() >= 2, "{stdout}");
    assert!(headers[0].ends_with("0 pull requests"), "{stdout}");
    assert!(
        headers.last().unwrap().ends_with("1 pull request"),
        "{stdout}"
    );
    assert!(stdout.contains("#1 Change 1"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}'),
        "no terminal codes without a terminal: {stdout}"
    );
}
