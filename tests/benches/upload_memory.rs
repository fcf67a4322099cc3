//! The peak memory of the largest upload `flaky-tests/upload` accepts, through its handler
//! with the in-memory store: a multipart body just under 20 MiB of gzip reports that inflate
//! to just under the upload's 64 MiB of XML, holding the most test cases (200,000) and XML
//! elements (1,000,000) an upload may have, with a CODEOWNERS. The process's peak resident
//! size while the request is handled (the store's copy of the results included) is read from
//! `/proc/self/status` (`VmHWM`, reset before the request), above its resident size before
//! (which holds the request and its body).
//!
//! `cargo bench -p e2e-tests --bench upload_memory`

use e2e::health::{form, sha};
use e2e::{ACME, Backend, new_store};
use lambda_http::Body;
use mq_api::{App, SystemClock};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

/// A line of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`: kB there).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().unwrap();
    kb * 1024
}

/// Starts a new peak: `VmHWM` becomes the resident size now (Linux 4.0+).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("writable /proc/self/clear_refs");
}

const CASES: usize = 200_000;
const FILES: usize = 20;
/// XML of all reports, just under the 64 MiB limit.
const XML_BYTES: usize = 64 * 1024 * 1024 - 64 * 1024;

/// One report of `cases` test cases, each with a failure, its output and a property (five
/// elements per case), padded with output to `bytes`.
fn report(file: usize, cases: usize, bytes: usize) -> Vec<u8> {
    let mut xml = format!("<testsuite name=\"suite-{file}\">").into_bytes();
    let case_bytes = bytes / cases;
    for i in 0..cases {
        let head = format!(
            "<testcase classname=\"com.example.module{file}.Class{}\" name=\"test_{i:06}\" \
             file=\"src/module{file}/dir{}/test_{i}.rs\"><failure message=\"boom\"/>\
             <system-out>",
            i % 100,
            i % 50
        );
        let tail = "</system-out><properties><property name=\"k\" value=\"v\"/></properties>\
                    </testcase>";
        let pad = case_bytes.saturating_sub(head.len() + tail.len());
        xml.extend_from_slice(head.as_bytes());
        xml.extend(std::iter::repeat_n(b'x', pad));
        xml.extend_from_slice(tail.as_bytes());
    }
    xml.extend_from_slice(b"</testsuite>");
    xml
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn codeowners() -> String {
    (0..5_000)
        .map(|i| {
            format!(
                "/src/module{}/dir{}/ @acme/team-{}\n",
                i % FILES,
                i % 50,
                i % 30
            )
        })
        .chain((0..100).map(|i| format!("*.gen{i}.rs @acme/generated\n")))
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let files: Vec<(String, Vec<u8>)> = (0..FILES)
        .map(|f| {
            (
                format!("r{f}.xml.gz"),
                gzip(&report(f, CASES / FILES, XML_BYTES / FILES)),
            )
        })
        .collect();
    let commit = sha("largest");
    let owners = codeowners();
    let fields = [
        ("repo", "github.com/acme/rocket"),
        ("commit_sha", commit.as_str()),
        ("branch", "main"),
        ("upload_id", "largest"),
        ("codeowners", owners.as_str()),
    ];
    let named: Vec<(&str, Vec<u8>)> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    let (content_type, body) = form(&fields, &named);
    drop(named);
    drop(files);
    println!(
        "upload: {:.1} MiB of multipart body, {:.1} MiB of XML, {CASES} test cases, {} elements",
        body.len() as f64 / 1048576.0,
        XML_BYTES as f64 / 1048576.0,
        CASES * 5 + FILES
    );
    assert!(body.len() <= 20 * 1024 * 1024, "the body fits the limit");
    let store = new_store(Backend::Memory).await;
    let app = App::new(store, Arc::new(SystemClock));
    let request = lambda_http::http::Request::builder()
        .method("POST")
        .uri("/v1/flaky-tests/upload")
        .header("content-type", content_type)
        .header("x-api-token", ACME)
        .body(Body::Binary(body))
        .unwrap();
    let before = status_bytes("VmRSS");
    reset_peak();
    let started = Instant::now();
    let response = upload_test_results::handle(&app, request).await;
    let took = started.elapsed();
    let peak = status_bytes("VmHWM").saturating_sub(before);
    let status = response.status();
    let answer = String::from_utf8_lossy(response.body().as_ref()).into_owned();
    assert_eq!(status.as_u16(), 200, "{answer}");
    println!("answer: {answer}");
    println!(
        "resident before the request (with its body): {:.1} MiB; peak while handling it: {:.1} \
         MiB more; handled in {:.2} s",
        before as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        took.as_secs_f64()
    );
}
