//! `mq` run as a CI job runs it, against a fake API on loopback: empty variables count as
//! unset, `--json` prints one JSON value per line and no presigned URL, and `queue --watch`
//! stops once its reader is gone.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request the fake API got.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    /// The path after `/v1/` (`getQueue`), or the whole path of anything else.
    path: String,
    body: Vec<u8>,
}

impl Request {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

type Answer = (u16, String);

/// An API on loopback answering each request with `answer(request)`, keeping what it got.
struct FakeApi {
    url: String,
    got: Arc<Mutex<Vec<Request>>>,
}

impl FakeApi {
    fn start(answer: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let Some(request) = read_request(&mut reader) else {
                    continue;
                };
                let (status, body) = answer(&request);
                seen.lock().unwrap().push(request);
                let _ = write!(
                    reader.get_mut(),
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { url, got }
    }

    /// The API's base URL.
    fn v1(&self) -> String {
        format!("{}/v1", self.url)
    }

    fn got(&self, path: &str) -> Vec<Request> {
        let got = self.got.lock().unwrap();
        got.iter().filter(|r| r.path == path).cloned().collect()
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?;
    let path = target.split('?').next()?;
    let path = path.strip_prefix("/v1/").unwrap_or(path).to_owned();
    let mut length = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, body })
}

fn ok(body: Value) -> Answer {
    (200, body.to_string())
}

fn error(status: u16, code: &str) -> Answer {
    let body = json!({"error": {"code": code, "message": "as the fake API says"}});
    (status, body.to_string())
}

/// A queue with `waiting` pull requests waiting, as `getQueueActivity` answers.
fn activity(waiting: u64) -> Value {
    let prs: Vec<Value> = (1..=waiting)
        .map(|n| json!({"prNumber": n, "prTitle": "Change", "state": "pending", "waitingSeconds": 5}))
        .collect();
    json!({"queue": {"state": "running", "concurrency": 1, "batch": false, "mode": "single"},
           "line": [], "waiting": prs})
}

/// `mq args...` with only `vars` (and `PATH`, `HOME`) in its environment, in `dir`.
fn mq(dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mq"));
    command.args(args).current_dir(dir).env_clear();
    for name in ["PATH", "HOME"] {
        if let Ok(value) = std::env::var(name) {
            command.env(name, value);
        }
    }
    command.envs(vars.iter().copied()).stdin(Stdio::null());
    command
}

fn run(dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    mq(dir, vars, args).output().expect("mq runs")
}

fn expect(out: &Output, code: i32) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A directory of its own, no checkout, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("mq-cli-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// A JUnit report of one test, passed or failed.
    fn report(&self, name: &str, failed: bool) -> String {
        let failure = if failed {
            "<failure message=\"boom\"/>"
        } else {
            ""
        };
        let xml = format!(
            "<testsuites><testsuite name=\"s\" tests=\"1\"><testcase name=\"{name}\" \
             classname=\"c\" time=\"0.1\">{failure}</testcase></testsuite></testsuites>"
        );
        let path = self.0.join(format!("{name}.xml"));
        std::fs::write(&path, xml).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A CI job on a push: GitHub Actions sets `MQ_PR: ${{ github.event.pull_request.number }}`
/// and the like to nothing. An empty variable counts as unset, as MQ_API_TOKEN does, and what
/// it names comes from the CI conventions.
#[test]
fn an_empty_variable_counts_as_unset() {
    let api = FakeApi::start(|r| match r.path.as_str() {
        "getQueueActivity" => ok(activity(0)),
        "getSubmittedPullRequest" => ok(json!({"prNumber": 7, "state": "pending"})),
        _ => error(404, "NOT_FOUND"),
    });
    let dir = TempDir::new();
    let url = api.v1();
    let vars = [
        ("MQ_API_URL", url.as_str()),
        ("MQ_API_TOKEN", "token"),
        ("MQ_REPO", ""),
        ("MQ_TARGET_BRANCH", ""),
        ("MQ_PR", ""),
        ("MQ_SHA", " "),
        ("MQ_ORG", ""),
        ("MQ_UPLOAD_ID", ""),
        ("GITHUB_REPOSITORY", "acme/rocket"),
        ("GITHUB_BASE_REF", "release"),
        ("GITHUB_REF", "refs/pull/7/merge"),
    ];
    expect(&run(&dir.0, &vars, &["queue"]), 0);
    let asked = api.got("getQueueActivity")[0].json();
    assert_eq!(
        (&asked["repo"]["name"], &asked["targetBranch"]),
        (&json!("rocket"), &json!("release"))
    );
    expect(&run(&dir.0, &vars, &["status"]), 0);
    let asked = api.got("getSubmittedPullRequest")[0].json();
    assert_eq!(asked["pr"]["number"], 7, "from GITHUB_REF");

    let mut without_url = vars;
    without_url[0] = ("MQ_API_URL", "");
    let out = run(&dir.0, &without_url, &["queue"]);
    expect(&out, 4);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the API's URL is unknown: set MQ_API_URL"),
        "{stderr}"
    );
}

/// `MQ_SHA=""` and `MQ_UPLOAD_ID=""` on `mq upload`: the tested commit and the upload id are
/// inferred as without them (`GITHUB_SHA` outside a checkout; a hash of the reports outside
/// CI).
#[test]
fn an_empty_mq_sha_lets_upload_infer_the_tested_commit() {
    let api = FakeApi::start(|r| match r.path.as_str() {
        "flaky-tests/upload" => ok(json!({"upload_id": "u", "files": 1, "test_cases": 1,
            "passed": 1, "failed": 0, "skipped": 0, "retries": 0, "passed_on_retry": 0,
            "infrastructure_failure": false, "duplicate": false})),
        _ => error(404, "NOT_FOUND"),
    });
    let dir = TempDir::new();
    let report = dir.report("a", false);
    let url = api.v1();
    let sha = "d00dd00dd00dd00dd00dd00dd00dd00dd00dd00d";
    let vars = [
        ("MQ_API_URL", url.as_str()),
        ("MQ_API_TOKEN", "token"),
        ("MQ_REPO", "acme/rocket"),
        ("MQ_SHA", ""),
        ("MQ_UPLOAD_ID", ""),
        ("GITHUB_SHA", sha),
        ("GITHUB_REF_NAME", "main"),
    ];
    expect(&run(&dir.0, &vars, &["upload", &report]), 0);
    let sent = String::from_utf8_lossy(&api.got("flaky-tests/upload")[0].body).into_owned();
    assert!(
        sent.contains(&format!("name=\"commit_sha\"\r\n\r\n{sha}\r\n")),
        "{sent}"
    );
    assert!(
        sent.contains("name=\"upload_id\"\r\n\r\nreports-"),
        "{sent}"
    );
}

/// Every line `--json` prints is a JSON value: an upload through upload URLs prints one per
/// report, a report received before included, and never the presigned URL (its signature lets
/// anyone upload); `check-quarantined` prints the API's answer for no failed test when the
/// reports have none.
#[test]
fn json_output_is_one_json_value_per_line_without_upload_urls() {
    let api = Arc::new(Mutex::new(String::new()));
    let base = Arc::clone(&api);
    let fake = FakeApi::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", "flaky-tests/upload-url") if r.json()["upload_id"] == "up-1" => {
            error(409, "UPLOAD_ALREADY_RECEIVED")
        }
        ("POST", "flaky-tests/upload-url") => ok(json!({
            "upload_id": r.json()["upload_id"],
            "upload_url": format!("{}/bucket/b.xml.gz?X-Amz-Signature=SECRETSIG", base.lock().unwrap()),
            "method": "PUT",
            "expires_at": "2030-01-01T00:00:00Z"})),
        ("PUT", "/bucket/b.xml.gz") => (200, String::new()),
        _ => error(404, "NOT_FOUND"),
    });
    *api.lock().unwrap() = fake.url.clone();
    let dir = TempDir::new();
    let reports = [dir.report("a", false), dir.report("b", false)];
    let url = fake.v1();
    let vars = [
        ("MQ_API_URL", url.as_str()),
        ("MQ_API_TOKEN", "token"),
        ("MQ_REPO", "acme/rocket"),
        ("MQ_SHA", "d00dd00d"),
    ];
    let args = [
        "upload",
        "--json",
        "--branch",
        "main",
        "--upload-id",
        "up",
        "--direct-limit",
        "1",
        &reports[0],
        &reports[1],
    ];
    let stdout = expect(&run(&dir.0, &vars, &args), 0);
    assert_eq!(fake.got("/bucket/b.xml.gz").len(), 1, "b is sent");
    assert!(!stdout.contains("SECRETSIG"), "{stdout}");
    assert_eq!(
        json_lines(&stdout),
        [
            json!({"upload_id": "up-1", "duplicate": true}),
            json!({"upload_id": "up-2", "method": "PUT", "expires_at": "2030-01-01T00:00:00Z"}),
        ]
    );

    let passed = dir.report("c", false);
    let stdout = expect(
        &run(&dir.0, &[], &["check-quarantined", "--json", &passed]),
        0,
    );
    assert_eq!(
        json_lines(&stdout),
        [json!({"all_quarantined": false, "quarantined_count": 0,
                "unquarantined_count": 0, "tests": []})]
    );
}

/// Each line of `stdout` as JSON; a line that is not fails the test.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect()
}

/// `mq queue --watch | head -2`: once its reader is gone, `mq` stops at its next redraw
/// (here the fake API's queue changes at every read), with exit 0, instead of asking the API
/// forever. With `--json`, each line it printed is a JSON document.
#[test]
fn queue_watch_stops_when_its_reader_is_gone() {
    let polls = Mutex::new(0);
    let api = FakeApi::start(move |r| {
        let mut polls = polls.lock().unwrap();
        *polls += 1;
        match r.path.as_str() {
            "getQueueActivity" => ok(activity(*polls)),
            _ => ok(json!({"state": "running", "polls": *polls})),
        }
    });
    let dir = TempDir::new();
    let url = api.v1();
    let vars = [
        ("MQ_API_URL", url.as_str()),
        ("MQ_API_TOKEN", "token"),
        ("MQ_REPO", "acme/rocket"),
    ];
    for json in [false, true] {
        let mut args = vec!["queue", "--watch", "--interval", "100ms"];
        if json {
            args.push("--json");
        }
        let mut watching = mq(&dir.0, &vars, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mq starts");
        let mut reader = BufReader::new(watching.stdout.take().unwrap());
        let mut lines = [String::new(), String::new()];
        for line in &mut lines {
            reader.read_line(line).unwrap();
        }
        drop(reader);
        if json {
            for line in &lines {
                let value: Value = serde_json::from_str(line).expect("a JSON line");
                assert_eq!(value["state"], "running", "{line}");
            }
        } else {
            let first = &lines[0];
            assert!(
                first.starts_with("github.com/acme/rocket main: running"),
                "{first}"
            );
        }
        let started = Instant::now();
        let status = loop {
            if let Some(status) = watching.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(5) {
                let _ = watching.kill();
                panic!("mq queue --watch still runs 5 s after its reader went away");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0));
    }
}
