//! Hostile input against the local gateway, with two organisations: acme attacks (on its own
//! repositories, where it may act, and on umbrella's), and after each attack (and while the
//! heavy ones are still running) umbrella's request for its own queue must be answered
//! promptly. Each attack is refused with a clear error, or does bounded work; none changes
//! what it must not.
//!
//! The cases: cross-organisation writes, hosts that walk out of the repositories' directory,
//! CODEOWNERS patterns that are exponential for a backtracking matcher, a gzip report of
//! millions of identical test cases, a test case retried without end, data after the JSON
//! body, non-integers for integer fields, control characters in test names, slow headers and
//! slow bodies; and the ones that already held: XML entity bombs, external entities, gzip
//! bombs, deep nesting, oversize bodies, malformed multipart bodies, too many files, and
//! option injection through names.

use e2e::health::{form, sha};
use e2e::live::{LiveEnv, body};
use e2e::{ACME, Backend, Reply, UMBRELLA};
use flate2::Compression;
use flate2::write::GzEncoder;
use local_gateway::server::Timeouts;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long umbrella may wait for its answer while acme attacks.
const PROMPT: Duration = Duration::from_secs(5);

/// The gateway gives clients this long to send headers, and a body.
const TIMEOUTS: Timeouts = Timeouts {
    headers: Duration::from_millis(500),
    body: Duration::from_secs(1),
};

/// The gateway over the in-memory store and a local Git host, with umbrella's queue on its
/// own repository.
async fn gateway() -> LiveEnv {
    let env = LiveEnv::options()
        .timeouts(TIMEOUTS)
        .without_tick()
        .start(Backend::Memory)
        .await;
    let theirs = env.repo_of("umbrella", "rocket");
    let created = env
        .post("createQueue", Some(UMBRELLA), &body(&theirs, json!({})))
        .await;
    assert_eq!(created.status, 200, "{:?}", created.body);
    env
}

/// umbrella reads its queue, and must have its answer within [`PROMPT`].
async fn umbrella_is_answered(env: &LiveEnv, after: &str) {
    let started = Instant::now();
    let mut queue = e2e::queue_body("rocket", json!({}));
    queue["repo"]["owner"] = json!("umbrella");
    // On a connection of its own: the gateway closes a connection left idle for longer than
    // the header timeout, and a pooled one reused just as it closes would fail the request.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client");
    let request = client
        .post(env.url("getQueue"))
        .header("x-api-token", UMBRELLA)
        .json(&queue)
        .send();
    let answer = tokio::time::timeout(PROMPT, request).await;
    let reply = answer
        .unwrap_or_else(|_| panic!("umbrella waited over {PROMPT:?} {after}"))
        .expect("request sent");
    let status = reply.status().as_u16();
    assert_eq!(status, 200, "{after}: {:?}", reply.text().await);
    assert!(started.elapsed() < PROMPT);
}

fn acme_queue(extra: Value) -> Value {
    e2e::queue_body("rocket", extra)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// Uploads `files` to `owner/rocket` as acme, with more form fields.
async fn upload(
    env: &LiveEnv,
    upload_id: &str,
    fields: &[(&str, &str)],
    files: &[(&str, Vec<u8>)],
) -> Reply {
    let commit = sha("hostile");
    let mut all = vec![
        ("repo", "github.com/acme/rocket"),
        ("commit_sha", commit.as_str()),
        ("branch", "main"),
        ("upload_id", upload_id),
    ];
    all.extend_from_slice(fields);
    let (content_type, bytes) = form(&all, files);
    env.post_raw("flaky-tests/upload", ACME, &content_type, bytes)
        .await
}

fn assert_refused(reply: &Reply, status: u16, says: &str) {
    assert_eq!(reply.status, status, "{:?}", reply.body);
    assert!(
        reply.message().contains(says),
        "expected {says:?} in {:?}",
        reply.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_organisation_cannot_act_on_anothers_repository() {
    let env = gateway().await;
    let mine = env.repo("rocket");
    mine.add_prs(1, &[]);
    let theirs = e2e::queue_body("rocket", json!({}));
    let mut on_umbrella = theirs.clone();
    on_umbrella["repo"]["owner"] = json!("umbrella");
    for path in ["createQueue", "getQueue", "deleteQueue", "updateQueue"] {
        let r = env.post(path, Some(ACME), &on_umbrella).await;
        assert_eq!(
            (r.status, r.code()),
            (404, "REPOSITORY_NOT_FOUND"),
            "{path}"
        );
    }
    let mut release = acme_queue(json!({"targetBranch": "release"}));
    let taken = env.post("createQueue", Some(UMBRELLA), &release).await;
    assert_eq!((taken.status, taken.code()), (404, "REPOSITORY_NOT_FOUND"));
    release["pr"] = json!({"number": 1});
    let merged = env
        .post("submitPullRequest", Some(UMBRELLA), &release)
        .await;
    assert_eq!(merged.status, 404);
    release.as_object_mut().unwrap().remove("pr");
    let ours = env.post("createQueue", Some(ACME), &release).await;
    assert_eq!(
        ours.status, 200,
        "acme's branch is still free: {:?}",
        ours.body
    );
    let again = env.post("createQueue", Some(UMBRELLA), &release).await;
    assert_eq!(
        (again.status, again.code()),
        (404, "REPOSITORY_NOT_FOUND"),
        "nothing says the queue exists"
    );
    umbrella_is_answered(&env, "after the cross-organisation writes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_that_are_not_dns_names_are_refused() {
    let env = gateway().await;
    for host in ["..", ".", "...", "a..b", "-x.com", "github.com.", "x:0"] {
        let mut queue = acme_queue(json!({}));
        queue["repo"]["host"] = json!(host);
        let r = env.post("createQueue", Some(ACME), &queue).await;
        assert_refused(&r, 400, "repo.host must be a DNS host name");
        queue["pr"] = json!({"number": 1});
        let r = env.post("submitPullRequest", Some(ACME), &queue).await;
        assert_refused(&r, 400, "repo.host");
        let path = format!("getMergeQueueMetrics?repo=acme/rocket&repoHost={host}");
        let r = env.get(&path, e2e::Auth::ApiToken(ACME)).await;
        assert_eq!(r.status, 400, "{host}: {}", r.text);
    }
    let upload = upload(&env, "dots", &[], &[("r.xml", b"<testsuite/>".to_vec())]).await;
    assert_eq!(upload.status, 200);
    let (content_type, bytes) = form(
        &[
            ("repo", "../acme/rocket"),
            ("commit_sha", &sha("x")),
            ("branch", "main"),
            ("upload_id", "dots-2"),
        ],
        &[("r.xml", b"<testsuite/>".to_vec())],
    );
    let r = env
        .post_raw("flaky-tests/upload", ACME, &content_type, bytes)
        .await;
    assert_refused(&r, 400, "repo.host");
    let outside = env.repos_dir().join("..");
    let left: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !left.iter().any(|name| name == "acme"),
        "nothing was made outside the repositories: {left:?}"
    );
    umbrella_is_answered(&env, "after hosts of dots").await;
}

/// The issue's upload: a pattern of many `*a` and a long file path. Two at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codeowners_patterns_do_not_stall_anyone() {
    let env = std::sync::Arc::new(gateway().await);
    let pattern = format!("{}b @acme/slow", "*a".repeat(12));
    let file = "a".repeat(4000);
    let report = format!(
        "<testsuite name=\"s\"><testcase classname=\"c\" name=\"t\" file=\"{file}\"/></testsuite>"
    );
    let attacks: Vec<_> = (0..2)
        .map(|i| {
            let (env, pattern, report) = (env.clone(), pattern.clone(), report.clone());
            tokio::spawn(async move {
                let id = format!("codeowners-{i}");
                let fields = [("codeowners", pattern.as_str())];
                upload(&env, &id, &fields, &[("r.xml", report.into_bytes())]).await
            })
        })
        .collect();
    umbrella_is_answered(&env, "while CODEOWNERS uploads run").await;
    for attack in attacks {
        let reply = attack.await.unwrap();
        assert_eq!(reply.status, 200, "{:?}", reply.body);
    }
    let listed = env
        .post(
            "flaky-tests/check-quarantined",
            Some(ACME),
            &json!({"repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
                    "org_url_slug": "acme",
                    "failed_tests": [{"name": "t", "classname": "c", "file": file, "parent": "s"}]}),
        )
        .await;
    assert_eq!(listed.body["tests"][0]["known"], true, "{:?}", listed.body);

    // More matching than an upload may take: many wildcard rules, many distinct long paths.
    let rules: String = (0..2_000).map(|i| format!("*.x{i} @acme/t\n")).collect();
    let cases: String = (0..600)
        .map(|i| {
            format!(
                "<testcase name=\"t{i}\" file=\"{}/{i}\"/>",
                "d".repeat(4000)
            )
        })
        .collect();
    let report = format!("<testsuite name=\"s\">{cases}</testsuite>");
    let fields = [("codeowners", rules.as_str())];
    let r = upload(
        &env,
        "codeowners-work",
        &fields,
        &[("r.xml", report.into_bytes())],
    )
    .await;
    assert_refused(&r, 400, "codeowners has 2000 patterned rules");
    umbrella_is_answered(&env, "after a refused CODEOWNERS").await;
}

/// ~3 million identical test cases in 160 KB of gzip: counted with their repetitions, they
/// are far over the limit. Two at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn millions_of_identical_test_cases_are_counted_and_refused() {
    let env = std::sync::Arc::new(gateway().await);
    let case = b"<testcase classname=\"c\" name=\"same\"/>";
    // Gzip members one after another, as `gzip` concatenates files: 1,700,000 cases.
    let mut bomb = gzip(b"<testsuite name=\"s\">");
    let member = gzip(&case.repeat(10_000));
    for _ in 0..170 {
        bomb.extend_from_slice(&member);
    }
    bomb.extend_from_slice(&gzip(b"</testsuite>"));
    assert!(bomb.len() < 400 * 1024, "{} bytes", bomb.len());
    let attacks: Vec<_> = (0..2)
        .map(|i| {
            let (env, bomb) = (env.clone(), bomb.clone());
            tokio::spawn(async move {
                upload(&env, &format!("same-{i}"), &[], &[("r.xml.gz", bomb)]).await
            })
        })
        .collect();
    umbrella_is_answered(&env, "while identical test cases are uploaded").await;
    for attack in attacks {
        let reply = attack.await.unwrap();
        assert_refused(&reply, 400, "more than 200000 test cases");
    }
    let mut retried = b"<testsuite name=\"s\">".to_vec();
    for _ in 0..1_001 {
        retried.extend_from_slice(case);
    }
    retried.extend_from_slice(b"</testsuite>");
    let r = upload(&env, "retried", &[], &[("r.xml", retried)]).await;
    assert_refused(&r, 400, "more than 1000 attempts");
    let reruns = format!(
        "<testsuite name=\"s\"><testcase name=\"t\">{}<failure/></testcase></testsuite>",
        "<rerunFailure/>".repeat(1_000)
    );
    let r = upload(&env, "reruns", &[], &[("r.xml", reruns.into_bytes())]).await;
    assert_refused(&r, 400, "more than 1000 attempts");
    let listed = env
        .post(
            "flaky-tests/list-unhealthy-tests",
            Some(ACME),
            &json!({"repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
                    "org_url_slug": "acme", "status": "BROKEN", "page_query": {"page_size": 5}}),
        )
        .await;
    assert_eq!(listed.body["page"]["total_rows"], 0, "nothing was stored");
    umbrella_is_answered(&env, "after the retried test case").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_bodies_are_read_exactly() {
    let env = gateway().await;
    let queue = acme_queue(json!({}));
    let trailing = format!("{queue}<script>alert(1)</script>");
    let r = env
        .post_raw(
            "createQueue",
            ACME,
            "application/json",
            trailing.into_bytes(),
        )
        .await;
    assert_refused(&r, 400, "data after the JSON value");
    let r = env.post("getQueue", Some(ACME), &queue).await;
    assert_eq!(r.status, 404, "the queue was not created");
    for (number, shown) in [
        ("2.0", "got 2.0"),
        ("1e3", "got 1e3"),
        ("18446744073709551616", "got 18446744073709551616"),
    ] {
        let text = format!(
            r#"{{"repo":{{"host":"github.com","owner":"acme","name":"rocket"}},"targetBranch":"main","concurrency":{number}}}"#
        );
        let r = env
            .post_raw("createQueue", ACME, "application/json", text.into_bytes())
            .await;
        assert_eq!(r.status, 400, "{number}: {:?}", r.body);
        assert!(r.message().starts_with("concurrency"), "{}", r.message());
        assert!(r.message().contains(shown), "{number}: {}", r.message());
        assert!(
            !r.message()
                .contains("170141183460469231731687303715884105727")
        );
    }
    umbrella_is_answered(&env, "after malformed JSON").await;
}

/// A NUL and other control characters in a test's name are escaped the same way in an
/// upload and in the quarantine check, so both name the same test, and no raw NUL is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_test_names_are_escaped_alike() {
    let env = gateway().await;
    let report = b"<testsuite name=\"s\"><testcase classname=\"c\" name=\"nul\0tab&#9;end\"><failure/></testcase></testsuite>";
    let r = upload(&env, "controls", &[], &[("r.xml", report.to_vec())]).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let checked = env
        .post(
            "flaky-tests/check-quarantined",
            Some(ACME),
            &json!({"repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
                    "org_url_slug": "acme",
                    "failed_tests": [{"name": "nul\u{0}tab\tend", "classname": "c", "parent": "s"}]}),
        )
        .await;
    assert_eq!(checked.status, 200, "{:?}", checked.body);
    let test = &checked.body["tests"][0];
    assert_eq!(test["known"], true, "the same test: {test}");
    assert_eq!(test["name"], "nul\\u{0}tab\\u{9}end");
    umbrella_is_answered(&env, "after control characters").await;
}

/// Headers that never end: the connection is closed at the header timeout. A body that
/// stalls: 408 at the body timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_do_not_hold_connections() {
    let env = gateway().await;
    let mut slow = TcpStream::connect(env.gateway.addr).await.unwrap();
    slow.write_all(b"POST /v1/getQueue HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    umbrella_is_answered(&env, "while headers never end").await;
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(TIMEOUTS.headers * 6, slow.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the gateway closed the connection");

    let mut stalled = TcpStream::connect(env.gateway.addr).await.unwrap();
    let head = format!(
        "POST /v1/getQueue HTTP/1.1\r\nHost: x\r\nx-api-token: {ACME}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"repo\""
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    umbrella_is_answered(&env, "while a body stalls").await;
    let mut answer = Vec::new();
    tokio::time::timeout(TIMEOUTS.body * 4, stalled.read_to_end(&mut answer))
        .await
        .expect("answered at the body timeout")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
}

/// What held before this suite: each still refused with its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_bodies_and_names_that_were_already_refused_still_are() {
    let env = gateway().await;
    let reports: [(&str, Vec<u8>, &str); 5] = [
        (
            "entity bomb",
            br#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><testsuite name="&b;"/>"#.to_vec(),
            "<!DOCTYPE>",
        ),
        (
            "external entity",
            br#"<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite name="&x;"/>"#.to_vec(),
            "<!DOCTYPE>",
        ),
        (
            "entity",
            b"<testsuite><testcase name=\"&x;\"/></testsuite>".to_vec(),
            "entity",
        ),
        (
            "gzip bomb",
            gzip(&vec![b' '; 65 * 1024 * 1024]),
            "decompresses past the upload's limit",
        ),
        (
            "deep nesting",
            format!("{}{}", "<testsuite>".repeat(40), "</testsuite>".repeat(40)).into_bytes(),
            "deeper than 32",
        ),
    ];
    for (what, report, says) in reports {
        let r = upload(&env, &what.replace(' ', "-"), &[], &[("r.xml", report)]).await;
        assert_refused(&r, 400, says);
        umbrella_is_answered(&env, &format!("after the {what}")).await;
    }
    let oversize = vec![b' '; 20 * 1024 * 1024 + 1];
    let r = env
        .post_raw("createQueue", ACME, "application/json", oversize)
        .await;
    assert_eq!((r.status, r.code()), (413, "PAYLOAD_TOO_LARGE"));
    let many: Vec<(&str, Vec<u8>)> = (0..1_001)
        .map(|_| ("r.xml", b"<testsuite/>".to_vec()))
        .collect();
    let r = upload(&env, "many", &[], &many).await;
    assert_refused(&r, 400, "at most 1000 reports");
    let unterminated =
        b"--b\r\nContent-Disposition: form-data; name=\"repo\"\r\n\r\ngithub.com/acme/rocket"
            .to_vec();
    let r = env
        .post_raw(
            "flaky-tests/upload",
            ACME,
            "multipart/form-data; boundary=b",
            unterminated,
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = env
        .post_raw(
            "flaky-tests/upload",
            ACME,
            "multipart/form-data",
            b"x".to_vec(),
        )
        .await;
    assert_eq!(r.status, 400, "no boundary: {:?}", r.body);
    umbrella_is_answered(&env, "after the multipart bodies").await;
    for branch in ["--upload-pack=touch /tmp/pwned", "-x", "a\u{0}b", "main\n"] {
        let r = env
            .post(
                "createQueue",
                Some(ACME),
                &acme_queue(json!({"targetBranch": branch})),
            )
            .await;
        assert_refused(&r, 400, "targetBranch");
    }
    for name in ["--exec=x", "a\u{0}b", "..", "a/../../b"] {
        let mut queue = acme_queue(json!({}));
        queue["repo"]["name"] = json!(name);
        let r = env.post("createQueue", Some(ACME), &queue).await;
        assert_refused(&r, 400, "repo.name");
    }
    let r = upload(&env, "branch", &[], &[("r.xml", b"<testsuite/>".to_vec())]).await;
    assert_eq!(r.status, 200);
    let (content_type, bytes) = form(
        &[
            ("repo", "github.com/acme/rocket"),
            ("commit_sha", &sha("x")),
            ("branch", "--exec=x"),
            ("upload_id", "inject"),
        ],
        &[("r.xml", b"<testsuite/>".to_vec())],
    );
    let r = env
        .post_raw("flaky-tests/upload", ACME, &content_type, bytes)
        .await;
    assert_refused(&r, 400, "branch");
    assert!(!std::path::Path::new("/tmp/pwned").exists());
    umbrella_is_answered(&env, "after names").await;
}
