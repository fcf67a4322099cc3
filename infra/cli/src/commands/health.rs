//! Test health: uploading reports, the CI quarantine check, the lists, and the metrics.

use crate::ci::{self, Found};
use crate::cli::{CheckArgs, MetricsArgs, TestsCommand, UploadArgs};
use crate::config::{Context, check_branch};
use crate::error::{Error, Result};
use crate::exit::Outcome;
use crate::output::{self, line, note, table, text};
use crate::reports::{self, FailedTest, ReportFile};
use crate::size::human;
use bytes::Bytes;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use sha2::Digest;
use std::io::IsTerminal;

/// The API's own limit on a request's body.
const API_BODY_LIMIT: u64 = 20 * 1024 * 1024;
/// Uploads of more test cases than this go through upload URLs whatever their size: the
/// ingesting function has 300 seconds for them, the API's request 29 (its merge stops at 20
/// and asks for the upload again).
const DIRECT_MAX_CASES: usize = 50_000;
/// Uploads at least this large show a progress bar (on a terminal).
const PROGRESS_FROM: u64 = 1024 * 1024;
/// Most failed tests one quarantine check takes.
const CHECK_CHUNK: usize = 10_000;
/// The largest page the lists give.
const PAGE_SIZE: u32 = 100;

/// The metadata of an upload, as form fields (name, value).
type Fields = Vec<(&'static str, String)>;

pub fn upload(ctx: &Context, args: &UploadArgs) -> Result<Outcome> {
    let files = reports::load(&args.reports.patterns)?;
    let gzipped: Vec<Vec<u8>> = files
        .iter()
        .map(ReportFile::gzipped)
        .collect::<Result<_>>()?;
    let fields = metadata(ctx, args, &files)?;
    let (content_type, body) = multipart(&fields, &files, &gzipped);
    let size = body.len() as u64;
    let fits = reports::fit_one_upload(&files);
    let cases: usize = files.iter().map(|f| f.report.cases.len()).sum();
    if size > args.direct_limit || !fits || cases > DIRECT_MAX_CASES {
        note(if !fits {
            "more reports, test cases or XML than one request may carry: through upload URLs"
                .to_owned()
        } else if cases > DIRECT_MAX_CASES {
            format!(
                "{cases} test cases, more than {DIRECT_MAX_CASES} to ingest in one request: \
                 through upload URLs"
            )
        } else {
            format!(
                "{} to send, above the direct limit of {}: through upload URLs",
                human(size),
                human(args.direct_limit)
            )
        });
        match via_urls(ctx, &fields, &files, gzipped) {
            Err(e)
                if e.code() == Some("UPLOADS_NOT_CONFIGURED") && size <= API_BODY_LIMIT && fits =>
            {
                note("this deployment has no upload URLs; sending in one request");
            }
            other => return other,
        }
    }
    direct(ctx, &content_type, Bytes::from(body), files.len())
}

/// Everything but the reports: the run they came from.
fn metadata(ctx: &Context, args: &UploadArgs, files: &[ReportFile]) -> Result<Fields> {
    let repo = ctx.repo()?.to_string();
    let sha = ctx.tested_sha()?.ok_or_else(|| {
        Error::input("the commit the tests ran on is unknown: pass --sha SHA (or set MQ_SHA)")
    })?;
    let mut fields: Fields = vec![
        ("repo", repo),
        ("commit_sha", sha),
        ("branch", branch(ctx, args)?),
    ];
    if let Some(pr) = optional_pr(ctx)? {
        fields.push(("pr_number", pr.to_string()));
    }
    let variant = &args.reports.variant;
    if !variant.is_empty() {
        fields.push(("variant", variant.clone()));
    }
    if let Some(url) = job_url(ctx, args) {
        fields.push(("job_url", url));
    }
    fields.push(("upload_id", upload_id(ctx, args, files)));
    if let Some(text) = codeowners(ctx, args)? {
        fields.push(("codeowners", text));
    }
    if let Some(org) = &ctx.args.org {
        fields.push(("org_url_slug", org.clone()));
    }
    Ok(fields)
}

fn branch(ctx: &Context, args: &UploadArgs) -> Result<String> {
    let found = match &args.branch {
        Some(b) => Found::new(b.clone(), "--branch"),
        None => ci::current_branch(&ctx.env).ok_or_else(|| {
            Error::input(
                "the branch the tests ran on is unknown (a detached checkout outside CI): pass \
                 --branch BRANCH",
            )
        })?,
    };
    check_branch("branch", &found.value)?;
    ctx.show("branch", &found);
    Ok(found.value)
}

/// The pull request, when one is given or this is a pull request's CI job.
fn optional_pr(ctx: &Context) -> Result<Option<u32>> {
    if ctx.args.pr.is_none() && ci::pull_request(&ctx.env).is_none() {
        return Ok(None);
    }
    ctx.pr().map(Some)
}

fn job_url(ctx: &Context, args: &UploadArgs) -> Option<String> {
    let found = match &args.job_url {
        Some(url) => Found::new(url.clone(), "--job-url"),
        None => ci::job_url(&ctx.env)?,
    };
    ctx.show("job URL", &found);
    Some(found.value)
}

/// `--upload-id`, else the CI job's for these reports, else a hash of the reports (the same
/// reports sent again are the same upload).
fn upload_id(ctx: &Context, args: &UploadArgs, files: &[ReportFile]) -> String {
    let variant = &args.reports.variant;
    let digest = reports_digest(variant, files);
    let found = match &args.upload_id {
        Some(id) => Found::new(ci::printable_id(id), "--upload-id"),
        None => ci::ci_upload_id(&ctx.env, variant, &digest[..12])
            .unwrap_or_else(|| Found::new(format!("reports-{digest}"), "a hash of the reports")),
    };
    ctx.show("upload id", &found);
    found.value
}

/// A digest of the reports (their names and bytes) under `variant`: 32 hex digits.
fn reports_digest(variant: &str, files: &[ReportFile]) -> String {
    let mut hash = sha2::Sha256::new();
    hash.update(variant.as_bytes());
    for f in files {
        hash.update(f.name().as_bytes());
        hash.update(&f.bytes);
    }
    hex::encode(&hash.finalize()[..16])
}

/// The CODEOWNERS file: `--codeowners`, else the first of the usual places in the checkout.
fn codeowners(ctx: &Context, args: &UploadArgs) -> Result<Option<String>> {
    let path = match &args.codeowners {
        Some(path) => path.clone(),
        None => {
            let Some(root) = ctx.env.checkout_root() else {
                return Ok(None);
            };
            let usual = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];
            match usual.iter().map(|p| root.join(p)).find(|p| p.is_file()) {
                Some(path) => path,
                None => return Ok(None),
            }
        }
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    ctx.show("CODEOWNERS", &Found::new(path.display(), "the checkout"));
    Ok(Some(text))
}

/// A `multipart/form-data` body: the fields, then each report as a `file` part.
fn multipart(fields: &Fields, files: &[ReportFile], gzipped: &[Vec<u8>]) -> (String, Vec<u8>) {
    let boundary = format!("mq-{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (file, bytes) in files.iter().zip(gzipped) {
        let name = file.name().replace(['"', '\r', '\n'], "_");
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}.gz\"\r\nContent-Type: application/gzip\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// One `flaky-tests/upload` request.
fn direct(ctx: &Context, content_type: &str, body: Bytes, files: usize) -> Result<Outcome> {
    let progress = progress_bar(body.len() as u64);
    let answer = ctx
        .api()?
        .upload("flaky-tests/upload", content_type, body, &progress);
    progress.finish_and_clear();
    let answer = answer?;
    if ctx.args.json {
        output::json(&answer);
        return Ok(Outcome::Done);
    }
    let n = |f: &str| answer[f].as_u64().unwrap_or(0);
    line(format!(
        "uploaded {files} report{} (upload id {}): {} test cases, {} passed, {} failed, {} skipped, {} retries, {} passed on a retry",
        if files == 1 { "" } else { "s" },
        text(&answer, "upload_id"),
        n("test_cases"),
        n("passed"),
        n("failed"),
        n("skipped"),
        n("retries"),
        n("passed_on_retry")
    ));
    if answer["duplicate"] == true {
        line("this upload id was received before: nothing changed");
    }
    if answer["infrastructure_failure"] == true {
        line("judged an infrastructure failure: these results are not counted against the tests");
    }
    Ok(Outcome::Done)
}

/// Each report through its own upload URL, with the upload id and its position.
fn via_urls(
    ctx: &Context,
    fields: &Fields,
    files: &[ReportFile],
    gzipped: Vec<Vec<u8>>,
) -> Result<Outcome> {
    let base = url_request(ctx, fields)?;
    let id = base["upload_id"].as_str().unwrap_or_default().to_owned();
    for (i, (file, bytes)) in files.iter().zip(gzipped).enumerate() {
        let mut request = base.clone();
        request["upload_id"] = json!(ci::printable_id(&format!("{id}-{}", i + 1)));
        let mut granted = match ctx.api()?.read("flaky-tests/upload-url", &request) {
            Err(e) if e.code() == Some("UPLOAD_ALREADY_RECEIVED") => {
                let summary = format!("{}: received before, not sent again", file.path.display());
                ctx.print(&received_before(&request), summary);
                continue;
            }
            other => other?,
        };
        let url = take_upload_url(&mut granted);
        let progress = progress_bar(bytes.len() as u64);
        let sent = ctx
            .api()?
            .put_presigned(&url, Bytes::from(bytes), &progress);
        progress.finish_and_clear();
        sent?;
        let summary = format!(
            "{}: uploaded (upload id {}); it is ingested when it lands",
            file.path.display(),
            text(&granted, "upload_id")
        );
        ctx.print(&granted, summary);
    }
    Ok(Outcome::Done)
}

/// A report's upload that was received before: its id and `duplicate: true`, the two fields
/// by which `flaky-tests/upload` says so (its answer also carries the counts).
fn received_before(request: &Value) -> Value {
    json!({"upload_id": request["upload_id"], "duplicate": true})
}

/// Takes the presigned URL out of an upload URL's answer, which is then printed without it:
/// its signature lets anyone upload until it expires.
fn take_upload_url(granted: &mut Value) -> String {
    let url = granted.as_object_mut().and_then(|g| g.remove("upload_url"));
    url.and_then(|u| u.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The JSON body of `flaky-tests/upload-url`, from the form fields.
fn url_request(ctx: &Context, fields: &Fields) -> Result<Value> {
    let mut body = ctx.repo_body()?;
    for (name, value) in fields {
        body[*name] = match *name {
            "repo" => continue,
            "pr_number" => json!(value.parse::<u32>().unwrap_or_default()),
            _ => json!(value),
        };
    }
    Ok(body)
}

fn progress_bar(len: u64) -> ProgressBar {
    if len < PROGRESS_FROM || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}")
    {
        bar.set_style(style);
    }
    bar
}

pub fn check_quarantined(ctx: &Context, args: &CheckArgs) -> Result<Outcome> {
    let files = reports::load(&args.reports.patterns)?;
    let failed = reports::failed_tests(&files);
    if failed.is_empty() {
        let mut summary = format!("no failed test in {} report(s)", files.len());
        if args.step_failed {
            summary.push_str(
                ", though the test step failed: no quarantine explains a failure the reports \
                 do not record",
            );
            ctx.print(&nothing_checked(), summary);
            return Ok(Outcome::Negative);
        }
        ctx.print(&nothing_checked(), summary);
        return Ok(Outcome::Done);
    }
    let mut checked = Vec::new();
    for chunk in failed.chunks(CHECK_CHUNK) {
        let answer = check_chunk(ctx, &args.reports.variant, chunk)?;
        if ctx.args.json {
            output::json(&answer);
        }
        checked.extend(answer["tests"].as_array().cloned().unwrap_or_default());
    }
    let open: Vec<&Value> = checked
        .iter()
        .filter(|t| t["quarantined"] != true)
        .collect();
    if !ctx.args.json {
        print_check(&checked, &open);
    }
    Ok(if open.is_empty() && !checked.is_empty() {
        Outcome::Done
    } else {
        Outcome::Negative
    })
}

/// What `flaky-tests/check-quarantined` answers for no failed test, printed with `--json`
/// when the reports have none (the API is not asked).
fn nothing_checked() -> Value {
    json!({"all_quarantined": false, "quarantined_count": 0, "unquarantined_count": 0, "tests": []})
}

fn check_chunk(ctx: &Context, variant: &str, chunk: &[FailedTest]) -> Result<Value> {
    let mut body = ctx.health_body()?;
    body["variant"] = json!(variant);
    body["failed_tests"] = chunk
        .iter()
        .map(|t| json!({"name": t.name, "classname": t.classname, "file": t.file, "parent": t.parent}))
        .collect();
    ctx.api()?.read("flaky-tests/check-quarantined", &body)
}

fn print_check(checked: &[Value], open: &[&Value]) {
    let total = checked.len();
    if open.is_empty() {
        line(format!(
            "all {total} failed test{} quarantined: the job may pass",
            if total == 1 { " is" } else { "s are" }
        ));
        for t in checked {
            line(format!("  quarantined: {}", describe(t)));
        }
        return;
    }
    line(format!(
        "{} of {total} failed test{} not quarantined:",
        open.len(),
        if total == 1 { " is" } else { "s are" }
    ));
    for t in open {
        // The API's note says why a test was not found (one known only under variants).
        let known = match (t["known"] == true, t["note"].as_str()) {
            (true, _) => String::new(),
            (false, Some(note)) => format!(" ({note})"),
            (false, None) => " (never uploaded)".to_owned(),
        };
        line(format!("  {}{known}", describe(t)));
    }
}

/// A test as a person finds it: `classname::name (file)`.
fn describe(test: &Value) -> String {
    let name = text(test, "name");
    let class = test["classname"].as_str().filter(|c| !c.is_empty());
    let file = test["file"].as_str().filter(|f| !f.is_empty());
    let mut out = match class {
        Some(c) => format!("{c}::{name}"),
        None => name,
    };
    if let Some(f) = file {
        out.push_str(&format!(" ({f})"));
    }
    out
}

pub fn tests(ctx: &Context, command: &TestsCommand) -> Result<Outcome> {
    match command {
        TestsCommand::Unhealthy(args) => {
            let statuses = match &args.status {
                Some(s) => vec![s.to_ascii_uppercase()],
                None => vec!["FLAKY".to_owned(), "BROKEN".to_owned()],
            };
            let mut rows = Vec::new();
            for status in statuses {
                let mut body = ctx.health_body()?;
                body["status"] = json!(status);
                for page in pages(ctx, "flaky-tests/list-unhealthy-tests", body)? {
                    rows.extend(unhealthy_rows(&status, &page));
                }
            }
            print_rows(
                ctx,
                &["STATUS", "TEST", "VARIANT", "PRS 7D", "QUARANTINED", "ID"],
                &rows,
            );
        }
        TestsCommand::Quarantined => {
            let mut rows = Vec::new();
            for page in pages(
                ctx,
                "flaky-tests/list-quarantined-tests",
                ctx.health_body()?,
            )? {
                rows.extend(quarantined_rows(&page));
            }
            print_rows(ctx, &["TEST", "VARIANT", "QUARANTINED AT", "ID"], &rows);
        }
    }
    Ok(Outcome::Done)
}

/// Every page of a list (printed as they come with `--json`).
fn pages(ctx: &Context, operation: &str, body: Value) -> Result<Vec<Value>> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let mut request = body.clone();
        request["page_query"] = json!({"page_size": PAGE_SIZE, "page_token": token});
        let page = ctx.api()?.read(operation, &request)?;
        if ctx.args.json {
            output::json(&page);
        }
        token = page["page"]["next_page_token"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        pages.push(page);
        if token.is_empty() {
            return Ok(pages);
        }
    }
}

fn unhealthy_rows(status: &str, page: &Value) -> Vec<Vec<String>> {
    page["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            vec![
                status.to_owned(),
                describe(&json!({"name": t["name"], "classname": t["classname"], "file": t["file_path"]})),
                text(t, "variant"),
                text(t, "pull_requests_impacted_last_7d"),
                if t["quarantined"] == true { "yes" } else { "no" }.to_owned(),
                text(t, "id"),
            ]
        })
        .collect()
}

fn quarantined_rows(page: &Value) -> Vec<Vec<String>> {
    page["quarantined_tests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            vec![
                describe(t),
                text(t, "variant"),
                text(t, "quarantined_at"),
                text(t, "test_case_id"),
            ]
        })
        .collect()
}

fn print_rows(ctx: &Context, header: &[&str], rows: &[Vec<String>]) {
    if ctx.args.json {
        return;
    }
    if rows.is_empty() {
        line("no tests");
    } else {
        line(table(header, rows).trim_end());
    }
}

pub fn metrics(ctx: &Context, args: &MetricsArgs) -> Result<Outcome> {
    let text = if args.all_repos {
        ctx.api()?.get_text("getMergeQueueMetrics", &[])?
    } else {
        let repo = ctx.repo()?;
        let name = format!("{}/{}", repo.owner, repo.name);
        ctx.api()?.get_text(
            "getMergeQueueMetrics",
            &[("repo", &name), ("repoHost", &repo.host)],
        )?
    };
    line(text.trim_end());
    Ok(Outcome::Done)
}
