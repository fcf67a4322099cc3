//! The peak memory of the largest upload `flaky-tests/upload` accepts, through its handler
//! with the in-memory store: a multipart body just under 20 MiB of gzip reports that inflate
//! to just under the upload's 64 MiB of XML, holding the most test cases (200,000) and XML
//! elements (1,000,000) an upload may have, with a CODEOWNERS. The process's peak resident
//! size while the request is handled (the store's copy of the results included) is read from
//! `/proc/self/status` (`VmHWM`, reset before the request), above its resident size before
//! (which holds the request and its body).
//!
//! ```text
//! cargo bench -p e2e-tests --bench upload_memory
//! cargo bench -p e2e-tests --bench upload_memory -- --files 20
//! ```

use e2e::health::{form, sha};
use e2e::{ACME, Backend, new_store};
use lambda_http::Body;
use mq_service::{App, SystemClock};
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
/// XML of all reports, just under the 64 MiB limit.
const XML_BYTES: usize = 64 * 1024 * 1024 - 64 * 1024;

/// One report of `cases` passing test cases, each with its output, its error output and a
/// property (five elements per case, three for the first), padded with output to `bytes`:
/// three fifths random hexadecimal digits, so that the reports compress about as much as
/// the 20 MiB body allows.
fn report(file: usize, cases: usize, bytes: usize) -> Vec<u8> {
    let mut random = fastrand::Rng::with_seed(file as u64);
    let mut xml = format!("<testsuite name=\"suite-{file}\">").into_bytes();
    let case_bytes = bytes / cases;
    for i in 0..cases {
        let head = format!(
            "<testcase classname=\"com.example.module{file}.Class{}\" name=\"test_{i:06}\" \
             file=\"src/module{file}/dir{}/test_{i}.rs\"><system-err>warning</system-err>\
             <system-out>",
            i % 100,
            i % 50
        );
        // The first case of a report has no property: the elements stay within the limit.
        let tail = match i {
            0 => "</system-out></testcase>",
            _ => {
                "</system-out><properties><property name=\"k\" value=\"v\"/></properties>\
                  </testcase>"
            }
        };
        let pad = case_bytes.saturating_sub(head.len() + tail.len());
        xml.extend_from_slice(head.as_bytes());
        let hex = pad * 3 / 5;
        xml.extend((0..hex).map(|_| b"0123456789abcdef"[random.usize(..16)]));
        xml.extend(std::iter::repeat_n(b'x', pad - hex));
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
                i % 20,
                i % 50,
                i % 30
            )
        })
        .chain((0..100).map(|i| format!("*.gen{i}.rs @acme/generated\n")))
        .collect()
}

/// `--files N` splits the reports into N files (1 unless given: the parser then holds the
/// tree of the whole upload at once, the most memory).
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files_arg = args.iter().position(|a| a == "--files");
    let files = files_arg.and_then(|i| args.get(i + 1)?.parse().ok());
    measure(files.unwrap_or(1)).await;
}

async fn measure(file_count: usize) {
    let files: Vec<(String, Vec<u8>)> = (0..file_count)
        .map(|f| {
            (
                format!("r{f}.xml.gz"),
                gzip(&report(f, CASES / file_count, XML_BYTES / file_count)),
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
    let named: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let (content_type, body) = form(&fields, &named);
    drop(named);
    drop(files);
    println!(
        "upload: {file_count} file(s), {:.1} MiB of multipart body, {:.1} MiB of XML, {CASES} \
         test cases, {} elements",
        body.len() as f64 / 1048576.0,
        XML_BYTES as f64 / 1048576.0,
        CASES * 5 - file_count
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
    let response = mq_http::routes::route("flaky-tests/upload")
        .expect("route")
        .serve(&app, request)
        .await;
    let took = started.elapsed();
    let peak = status_bytes("VmHWM").saturating_sub(before);
    let after = status_bytes("VmRSS").saturating_sub(before);
    let status = response.status();
    let answer = String::from_utf8_lossy(response.body().as_ref()).into_owned();
    assert_eq!(status.as_u16(), 200, "{answer}");
    println!("answer: {answer}");
    println!(
        "resident before the request (with its body): {:.1} MiB; peak while handling it: {:.1} \
         MiB more; after it (the in-memory store keeps the 200,000 test cases): {:.1} MiB more; \
         handled in {:.2} s",
        before as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        after as f64 / 1048576.0,
        took.as_secs_f64()
    );
}
