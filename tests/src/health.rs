//! What the test-health scenarios share: real JUnit files, generated reports, multipart bodies.

use crate::{ACME, Reply, TestEnv};
use serde_json::{Value, json};

/// A JUnit file written by a real test runner (the fixtures of `shared/junit`).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = mq_tables::moto::workspace_root()
        .join("shared/junit/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A Surefire-style report of `n` test cases named `<prefix>N`: `outcome` `pass`, `fail` or
/// `flaky` (failed, then passed on a rerun).
pub fn generated_report(prefix: &str, n: usize, outcome: &str) -> Vec<u8> {
    let mut xml = format!("<testsuite name=\"gen\" tests=\"{n}\">\n");
    for i in 0..n {
        let body = match outcome {
            "fail" => "<failure message=\"boom\" type=\"AssertionError\">boom</failure>",
            "flaky" => "<flakyFailure message=\"boom\" type=\"AssertionError\"/>",
            _ => "",
        };
        xml.push_str(&format!(
            "  <testcase classname=\"com.example.{prefix}\" name=\"{prefix}{i:05}\" time=\"0.01\">{body}</testcase>\n"
        ));
    }
    xml.push_str("</testsuite>\n");
    xml.into_bytes()
}

/// A `multipart/form-data` body: text fields, then files (`file`).
pub fn form(fields: &[(&str, &str)], files: &[(&str, Vec<u8>)]) -> (String, Vec<u8>) {
    let boundary = "----mq-test-boundary-7d1b3";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (file_name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\nContent-Type: application/xml\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The metadata of an upload to acme's `rocket`.
pub struct Run<'a> {
    pub commit: &'a str,
    pub branch: &'a str,
    pub upload_id: &'a str,
    pub pr: Option<u32>,
}

impl<'a> Run<'a> {
    pub fn main(commit: &'a str, upload_id: &'a str) -> Self {
        Self {
            commit,
            branch: "main",
            upload_id,
            pr: None,
        }
    }
}

/// A 40-character sha from a short name.
pub fn sha(name: &str) -> String {
    let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{hex:0<40}")
}

/// Uploads reports for a run, as acme; returns the reply.
pub async fn upload(
    env: &TestEnv,
    run: &Run<'_>,
    extra: &[(&str, &str)],
    files: &[(&str, Vec<u8>)],
) -> Reply {
    let commit = sha(run.commit);
    let pr = run.pr.map(|p| p.to_string());
    let mut fields = vec![
        ("repo", "github.com/acme/rocket"),
        ("commit_sha", commit.as_str()),
        ("branch", run.branch),
        ("upload_id", run.upload_id),
    ];
    if let Some(pr) = &pr {
        fields.push(("pr_number", pr.as_str()));
    }
    fields.extend_from_slice(extra);
    let (content_type, body) = form(&fields, files);
    env.post_raw("flaky-tests/upload", ACME, &content_type, body)
        .await
}

/// `{repo, org_url_slug}` of acme's `rocket`, merged with `extra`.
pub fn health_body(extra: Value) -> Value {
    let mut body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "org_url_slug": "acme",
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    body
}

/// One page of unhealthy tests with `status`, as acme.
pub async fn unhealthy(env: &TestEnv, status: &str, size: u64, token: &str) -> Value {
    let body = health_body(json!({
        "status": status,
        "page_query": {"page_size": size, "page_token": token},
    }));
    env.ok("flaky-tests/list-unhealthy-tests", &body).await
}

/// Every name in a page of `tests`.
pub fn names(page: &Value) -> Vec<String> {
    let items = page["tests"]
        .as_array()
        .or_else(|| page["quarantined_tests"].as_array())
        .cloned()
        .unwrap_or_default();
    let mut names: Vec<String> = items
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

/// A report of `n` test cases as a large suite writes them: mostly passing, some failing,
/// some passing on a rerun, each with a little output (about 250 bytes per case).
pub fn generated_mix(n: usize) -> Vec<u8> {
    let mut xml = String::with_capacity(n * 260);
    xml.push_str(&format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"bench\" tests=\"{n}\">\n"
    ));
    for suite in 0..n.div_ceil(100) {
        xml.push_str(&format!(
            "  <testsuite name=\"com.example.Suite{suite:04}\" tests=\"100\">\n"
        ));
        for i in suite * 100..((suite + 1) * 100).min(n) {
            let body = match i % 50 {
                0 => {
                    "<failure message=\"expected 4 but was 5\" type=\"AssertionError\">at Suite.java:42</failure>"
                }
                1 => "<flakyFailure message=\"timeout\" type=\"TimeoutException\"/>",
                _ => "<system-out>checked 12 cases in 3 ms; all assertions held</system-out>",
            };
            xml.push_str(&format!(
                "    <testcase classname=\"com.example.Suite{suite:04}\" name=\"test_case_number_{i:06}_does_something\" file=\"src/test/java/com/example/Suite{suite:04}.java\" time=\"0.012\">{body}</testcase>\n"
            ));
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml.into_bytes()
}
