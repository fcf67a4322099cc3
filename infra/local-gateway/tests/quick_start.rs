//! The README's quick start, as a user runs it: the `local-gateway` binary with `--example`,
//! then the curl session's first steps over plain HTTP. #1 and #2 merge, #3 (which adds a file
//! named `FAIL`) fails, and `main` of the example repository holds exactly the two.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Gateway, free_port, start};

const TOKEN: &str = "dev-token";
const Q: &str =
    r#""repo":{"host":"github.com","owner":"acme","name":"rocket"},"targetBranch":"main""#;

/// `curl -s -H 'x-api-token: dev-token' -H 'content-type: application/json' $API/<path> -d body`:
/// the status and the body.
fn post(port: u16, path: &str, body: &str) -> (u16, String) {
    post_as(TOKEN, port, path, body)
}

/// [`post`] with another token.
fn post_as(token: &str, port: u16, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "POST /v1/{path} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-token: {token}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

fn state_of(port: u16, pr: u32) -> String {
    let (status, body) = post(
        port,
        "getSubmittedPullRequest",
        &format!(r#"{{{Q}, "pr": {{"number": {pr}}}}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["state"].as_str().unwrap().to_owned()
}

#[test]
fn the_readme_quick_start_merges_two_and_fails_the_third() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let args = ["--example", "--api-token", TOKEN, "--tick-interval", "0.2"];
    let _gateway = start(dir.path(), port, &args);

    for pr in 1..=3 {
        let (status, body) = post(
            port,
            "submitPullRequest",
            &format!(r#"{{{Q}, "pr": {{"number": {pr}}}}}"#),
        );
        assert_eq!(status, 200, "submit #{pr}: {body}");
    }
    let expected = [(1, "merged"), (2, "merged"), (3, "failed")];
    let started = Instant::now();
    loop {
        let states: Vec<(u32, String)> = (1..=3).map(|pr| (pr, state_of(port, pr))).collect();
        if states.iter().zip(&expected).all(|((_, s), (_, e))| s == e) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "gave up waiting for #1 and #2 merged, #3 failed: {states:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let log = Command::new("git")
        .args(["-C", ".local/repos/github.com/acme/rocket.git"])
        .args(["log", "--format=%s", "main"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let subjects = String::from_utf8(log.stdout).unwrap();
    assert_eq!(
        subjects.lines().collect::<Vec<_>>(),
        ["Change 2 (#2)", "Change 1 (#1)", "Initial commit"],
        "main holds #1 and #2"
    );

    let (status, body) = post(
        port,
        "updateQueue",
        &format!(r#"{{{Q}, "concurrency": 0}}"#),
    );
    assert_eq!(status, 400);
    assert_eq!(
        body,
        r#"{"error":{"code":"INVALID_FIELD","message":"concurrency must be an integer from 1 to 4294967295, got 0"}}"#,
        "the README's example error"
    );
}

/// The quick start runs again after the gateway is stopped: the embedded store starts empty,
/// and so does the example repository, its pull requests open again.
#[test]
fn the_quick_start_runs_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--example", "--api-token", TOKEN, "--tick-interval", "0.2"];
    let submit_and_merge_one = || {
        let port = free_port();
        let _gateway = start(dir.path(), port, &args);
        let (status, body) = post(
            port,
            "submitPullRequest",
            &format!(r#"{{{Q}, "pr": {{"number": 1}}}}"#),
        );
        assert_eq!(status, 200, "submit #1: {body}");
        let started = Instant::now();
        while state_of(port, 1) != "merged" {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "#1 did not merge"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    submit_and_merge_one();
    submit_and_merge_one();
}

/// The gateway keeps serving when its stdout goes away (a closed terminal or pipe): its
/// start-up lines are written to a pipe nobody reads any more.
#[test]
fn a_closed_stdout_does_not_stop_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-gateway"))
        .args(["--example", "--api-token", TOKEN])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the gateway starts");
    drop(child.stdout.take());
    let mut gateway = Gateway::of(child);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the gateway never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The start-up lines after "listening" are written by now; the gateway still answers.
    std::thread::sleep(Duration::from_millis(300));
    let (status, body) = post(port, "getQueue", &format!("{{{Q}}}"));
    assert_eq!(status, 200, "{body}");
    assert!(
        gateway.child.try_wait().unwrap().is_none(),
        "the gateway is running"
    );
}

/// Several organisations: without `MQ_REPO_OWNERS` the gateway refuses to start and says what
/// to set; with it, the example's owner belongs to the organisation it names, and the other
/// organisation gets 404 on the example's repository.
#[test]
fn several_organisations_need_repository_owners() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let gateway = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_local-gateway"));
        command
            .args(["--example", "--api-token", TOKEN])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("MQ_API_TOKENS", "acme:acme-token")
            .env_remove("MQ_REPO_OWNERS")
            .current_dir(dir.path());
        command
    };
    let refused = gateway().output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("2 organisations (acme, local)"),
        "{message}"
    );
    assert!(message.contains("MQ_REPO_OWNERS=\""), "{message}");

    let child = gateway()
        .env("MQ_REPO_OWNERS", "acme=github.com/acme")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _gateway = Gateway::of(child);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let queue = format!("{{{Q}}}");
    let (status, body) = post_as("acme-token", port, "getQueue", &queue);
    assert_eq!(status, 200, "the example's queue is acme's: {body}");
    let (status, body) = post(port, "getQueue", &queue);
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("REPOSITORY_NOT_FOUND"), "{body}");
}
