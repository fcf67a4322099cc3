//! Ingesting an upload: one or more JUnit reports with the metadata of their run. The
//! multipart endpoint and the S3-triggered function both end here.
//!
//! Every report is parsed before anything is stored, so a bad file changes nothing. An upload
//! id is ingested once: a finished upload sent again is answered from its record, and an
//! upload interrupted half way is finished by the next attempt without counting any result
//! twice (each test case remembers the uploads in its history). So an upload whose merge
//! runs out of its time ([`ingest`]'s `merge_for`) answers 503 with what it merged kept, and
//! the same upload sent again goes on from there.

use super::scope_of;
use crate::app::App;
use crate::error::ServiceError;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use mq_core::health::codeowners::{CodeOwners, MAX_CODEOWNERS_BYTES, MAX_MATCHING_WORK};
use mq_core::health::upload::is_infrastructure_failure;
use mq_core::health::{
    NewResult, Outcome, RepoHealthSettings, ResultRecord, TestCase, TestIdentity, Thresholds,
    UploadMetadata, UploadSummary, test_case_id, upload_key,
};
use mq_core::ids::{OrgId, RepoRef, check_branch};
use mq_core::time::Timestamp;
pub use mq_junit::Limits;
use mq_junit::{Attempt, CaseRun, Used};
use mq_store::{HealthScope, RawResult, StoreError, UploadRecord, UploadState};
use mq_wire::test_health::{UploadFields, UploadResponse};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// One report file of an upload.
#[derive(Debug, Clone)]
pub struct ReportFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// An upload as received, before anything is parsed.
#[derive(Debug, Clone)]
pub struct IncomingUpload {
    pub metadata: UploadMetadata,
    pub codeowners: Option<String>,
    pub files: Vec<ReportFile>,
}

/// Most report files in one upload.
pub const MAX_FILES: usize = 1000;

/// Longest accepted upload id, variant and job URL.
const MAX_UPLOAD_ID: usize = 128;
const MAX_VARIANT: usize = 255;
const MAX_URL: usize = 2048;

/// Checks the metadata fields; each error names its field.
pub fn metadata_from_fields(
    fields: &UploadFields,
) -> Result<(UploadMetadata, Option<String>), ServiceError> {
    let missing = |f: &str| ServiceError::invalid(format!("{f} is required"));
    let repo = fields
        .repo
        .as_ref()
        .ok_or_else(|| missing("repo"))?
        .to_ref()?;
    let commit_sha = fields
        .commit_sha
        .clone()
        .ok_or_else(|| missing("commit_sha"))?;
    let hex = commit_sha.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex || !(7..=64).contains(&commit_sha.len()) {
        return Err(ServiceError::invalid(
            "commit_sha must be 7 to 64 hexadecimal characters",
        ));
    }
    let branch = fields.branch.clone().ok_or_else(|| missing("branch"))?;
    check_branch("branch", &branch)?;
    let pr_number = match fields.pr_number {
        None => None,
        Some(n) => Some(u32::try_from(n.0).map_err(|_| {
            ServiceError::invalid(format!(
                "pr_number must be an integer from 0 to 4294967295, got {}",
                n.0
            ))
        })?),
    };
    let variant = fields.variant.clone().unwrap_or_default();
    if variant.len() > MAX_VARIANT {
        return Err(ServiceError::invalid("variant must be at most 255 bytes"));
    }
    let job_url = fields.job_url.clone().filter(|u| !u.is_empty());
    if let Some(url) = &job_url {
        check_url("job_url", url)?;
    }
    let upload_id = fields
        .upload_id
        .clone()
        .ok_or_else(|| missing("upload_id"))?;
    let printable = upload_id.chars().all(|c| c.is_ascii_graphic());
    if upload_id.is_empty() || upload_id.len() > MAX_UPLOAD_ID || !printable {
        return Err(ServiceError::invalid(
            "upload_id must be 1 to 128 printable ASCII characters without spaces",
        ));
    }
    let codeowners = fields.codeowners.clone().filter(|c| !c.is_empty());
    if codeowners
        .as_ref()
        .is_some_and(|c| c.len() > MAX_CODEOWNERS_BYTES)
    {
        return Err(ServiceError::invalid("codeowners must be at most 3 MiB"));
    }
    if codeowners
        .as_ref()
        .is_some_and(|c| !mq_store::codeowners::fits(c))
    {
        return Err(ServiceError::invalid(format!(
            "codeowners must compress (gzip) to at most {} KiB to be stored",
            mq_store::codeowners::MAX_STORED_BYTES / 1024
        )));
    }
    let metadata = UploadMetadata {
        repo,
        commit_sha: commit_sha.to_ascii_lowercase(),
        branch,
        pr_number,
        variant,
        job_url,
        upload_id,
    };
    Ok((metadata, codeowners))
}

/// An `http(s)://` URL of reasonable length; the error names the field.
pub fn check_url(field: &str, url: &str) -> Result<(), ServiceError> {
    let scheme = url.starts_with("https://") || url.starts_with("http://");
    if !scheme || url.len() > MAX_URL || url.chars().any(char::is_whitespace) {
        return Err(ServiceError::invalid(format!(
            "{field} must be an http(s) URL of at most 2048 characters"
        )));
    }
    Ok(())
}

/// One test case's runs in this upload (its reports' attempts, in order).
struct Collected {
    identity: TestIdentity,
    attempts: Vec<Attempt>,
}

/// Runs CPU-bound work (parsing, matching, judging) on a thread of its own, so that one large
/// upload never holds up the requests the async runtime is serving.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ServiceError::internal)?
}

/// Parses every report and merges cases that appear in several files (their attempts, in the
/// order of the files: a retry wrapper writes a report per attempt); within `limits`, which
/// apply to the upload as a whole. Within one report, cases of one identity are combined by
/// [`worse`].
fn collect(
    files: &[ReportFile],
    metadata: &UploadMetadata,
    limits: &Limits,
) -> Result<Vec<(Uuid, Collected)>, ServiceError> {
    if files.is_empty() {
        return Err(ServiceError::invalid(
            "file is required: send one or more JUnit XML reports",
        ));
    }
    if files.len() > MAX_FILES {
        return Err(ServiceError::invalid(format!(
            "file: at most {MAX_FILES} reports per upload, got {}",
            files.len()
        )));
    }
    let mut used = Used::default();
    let mut order: Vec<Uuid> = Vec::new();
    let mut cases: HashMap<Uuid, Collected> = HashMap::new();
    for (i, file) in files.iter().enumerate() {
        let refused = |e: &dyn std::fmt::Display| {
            ServiceError::invalid(format!("file {} ({}) {e}", i + 1, file.name))
        };
        let report =
            mq_junit::read_next_report(&file.bytes, limits, &mut used).map_err(|e| refused(&e))?;
        let in_report = cases_of_report(report.cases, metadata, limits).map_err(|e| refused(&e))?;
        for (id, one) in in_report {
            let entry = cases.entry(id).or_insert_with(|| {
                order.push(id);
                Collected {
                    identity: one.identity,
                    attempts: Vec::new(),
                }
            });
            entry.attempts.extend(one.attempts);
            if entry.attempts.len() > limits.max_attempts {
                return Err(refused(&format_args!(
                    "brings test case {} to more than {} attempts in the upload",
                    echo(&entry.identity.name),
                    limits.max_attempts
                )));
            }
        }
    }
    Ok(order
        .into_iter()
        .filter_map(|id| cases.remove(&id).map(|c| (id, c)))
        .collect())
}

/// The cases of one report by identity, in the order each first appears: two cases under one
/// identity are combined by [`worse`]. Refused when a case's identity is too long.
fn cases_of_report(
    runs: Vec<CaseRun>,
    metadata: &UploadMetadata,
    limits: &Limits,
) -> Result<Vec<(Uuid, Collected)>, String> {
    let mut order: Vec<(Uuid, Collected)> = Vec::new();
    let mut index: HashMap<Uuid, usize> = HashMap::new();
    for run in runs {
        let identity = identity_of(&run, &metadata.variant);
        if identity.longest_part() > limits.max_field_bytes {
            return Err(format!(
                "has a test case ({}) whose name, classname, file or suite name is longer than \
                 {} bytes once its control characters are escaped",
                echo(&identity.name),
                limits.max_field_bytes
            ));
        }
        let id = test_case_id(&metadata.repo, &identity);
        match index.get(&id) {
            Some(&i) => {
                let earlier = std::mem::take(&mut order[i].1.attempts);
                order[i].1.attempts = worse(earlier, run.attempts);
            }
            None => {
                index.insert(id, order.len());
                let attempts = run.attempts;
                order.push((id, Collected { identity, attempts }));
            }
        }
    }
    Ok(order)
}

/// Two cases of one report under one identity (the parser keeps them apart: two `<testsuite>`
/// elements named alike, as jest-junit names two files without a `describe`) are two tests
/// the identity cannot tell apart, not a retry of one: the one that did worse stands for both,
/// so that a failure is neither hidden by the other's pass nor taken with it for a flaky
/// test's pass and fail on one commit.
fn worse(earlier: Vec<Attempt>, later: Vec<Attempt>) -> Vec<Attempt> {
    let rank = |attempts: &[Attempt]| match outcome(attempts) {
        None => 0,
        Some(Outcome::Passed) => 1,
        Some(Outcome::PassedOnRetry) => 2,
        Some(Outcome::Failed | Outcome::FailedAfterPass) => 3,
    };
    if rank(&later) > rank(&earlier) {
        later
    } else {
        earlier
    }
}

/// The start of a test name, for messages.
fn echo(name: &str) -> String {
    name.chars().take(80).collect()
}

fn identity_of(run: &CaseRun, variant: &str) -> TestIdentity {
    TestIdentity {
        file: run.file.clone().unwrap_or_default(),
        classname: run.classname.clone(),
        parent: run.parent.clone(),
        name: run.name.clone(),
        variant: variant.to_owned(),
    }
    .escaped()
}

/// The outcome of a test case's attempts; `None` when it only skipped.
fn outcome(attempts: &[Attempt]) -> Option<Outcome> {
    let ran: Vec<Attempt> = attempts
        .iter()
        .copied()
        .filter(|a| *a != Attempt::Skipped)
        .collect();
    let passed = ran.iter().filter(|a| **a == Attempt::Passed).count();
    let last_passed = ran.last() == Some(&Attempt::Passed);
    Outcome::from_attempts(passed, ran.len() - passed, last_passed)
}

fn summarise(
    files: usize,
    cases: &[(Uuid, Collected)],
    t: &mq_core::health::Thresholds,
) -> UploadSummary {
    let mut s = UploadSummary {
        files: files as u32,
        test_cases: cases.len() as u32,
        ..UploadSummary::default()
    };
    let mut failed_once = 0;
    for (_, c) in cases {
        s.retries += c.attempts.len().saturating_sub(1) as u32;
        failed_once += usize::from(c.attempts.contains(&Attempt::Failed));
        // By the last attempt, as `check-quarantined` and the dashboard count: a test that
        // passed and then failed (the runner died on the second report) failed.
        match outcome(&c.attempts) {
            None => s.skipped += 1,
            Some(o) if o.failed() => s.failed += 1,
            Some(o) => {
                s.passed += 1;
                s.passed_on_retry += u32::from(o == Outcome::PassedOnRetry);
            }
        }
    }
    // Judged on the tests that failed at all, whatever their last attempt: a runner that died
    // and a whole-suite retry that passed are an infrastructure failure in either order.
    let ran = (s.passed + s.failed) as usize;
    s.infrastructure_failure = is_infrastructure_failure(ran, failed_once, t);
    s
}

/// Ingests an upload for `org`: parse, record raw results, merge each result into its test
/// case and re-judge it. Parsing, CODEOWNERS matching and judging run off the async runtime
/// (`off_runtime`); every report and the CODEOWNERS are checked before anything is stored.
pub async fn ingest(
    app: &App,
    org: &OrgId,
    upload: IncomingUpload,
    limits: &Limits,
    merge_for: Duration,
) -> Result<UploadResponse, ServiceError> {
    let merge_until = Instant::now() + merge_for;
    let IncomingUpload {
        metadata,
        codeowners: sent,
        files,
    } = upload;
    let file_count = files.len();
    let (parsing, limits) = (metadata.clone(), *limits);
    let cases = off_runtime(move || collect(&files, &parsing, &limits)).await?;
    let scope = scope_of(org, &metadata.repo);
    let (settings, text) = match &sent {
        Some(text) => (app.store.health_settings(&scope).await?, Some(text.clone())),
        None => app.store.settings_and_codeowners(&scope).await?,
    };
    let settings = settings.unwrap_or_default();
    let (cases, owners) = owners_of_files(cases, text, sent.is_some()).await?;
    let now = app.now();
    let mut record = UploadRecord {
        org: org.clone(),
        key: upload_key(org, &metadata),
        state: UploadState::Ingesting,
        metadata: metadata.clone(),
        created_at: now,
        summary: None,
        error: None,
    };
    if let Some(existing) = app.store.claim_upload(&record).await? {
        if let (UploadState::Done, Some(summary)) = (existing.state, &existing.summary) {
            return Ok(response(&metadata.upload_id, summary, true));
        }
        record.created_at = existing.created_at;
        record.error = None;
        app.store.put_upload(&record).await?;
    }
    if let Some(text) = &sent {
        app.store.put_codeowners(&scope, text).await?;
    }
    let summary = summarise(file_count, &cases, &settings.thresholds);
    app.store
        .put_raw_results(&record, &raw_results(&cases))
        .await?;
    if !summary.infrastructure_failure {
        let results = new_results(&record, &cases, &settings, now, owners);
        drop(cases);
        let context = MergeContext {
            results,
            new_case: (org.clone(), metadata.repo.clone()),
            thresholds: settings.thresholds.clone(),
        };
        merge(app, &scope, context, merge_until).await?;
        remember_variant(app, &scope, settings, &metadata.variant, now).await?;
    }
    record.state = UploadState::Done;
    record.summary = Some(summary.clone());
    app.store.put_upload(&record).await?;
    Ok(response(&metadata.upload_id, &summary, false))
}

/// Remembers the upload's variant as named at `now` (one conditional write, at most once a day
/// per variant; [`RepoHealthSettings::with_variant`]), so that `check-quarantined` without a
/// variant can match it.
async fn remember_variant(
    app: &App,
    scope: &HealthScope,
    mut settings: RepoHealthSettings,
    variant: &str,
    now: Timestamp,
) -> Result<(), ServiceError> {
    let variant = escaped_variant(variant);
    for attempt in 0..crate::shell::MAX_COMMIT_ATTEMPTS {
        let Some(next) = settings.with_variant(&variant, now) else {
            return Ok(());
        };
        match app.store.put_health_settings(scope, &next).await {
            Err(StoreError::Conflict) => crate::shell::backoff(attempt).await,
            other => return Ok(other?),
        }
        settings = app.store.health_settings(scope).await?.unwrap_or_default();
    }
    Err(StoreError::Conflict.into())
}

/// A variant as test identities hold it (control characters escaped).
pub fn escaped_variant(variant: &str) -> String {
    let identity = TestIdentity {
        variant: variant.to_owned(),
        ..TestIdentity::default()
    };
    identity.escaped().variant
}

fn response(upload_id: &str, s: &UploadSummary, duplicate: bool) -> UploadResponse {
    UploadResponse {
        upload_id: upload_id.to_owned(),
        summary: s.clone(),
        duplicate,
    }
}

/// The owners of each file of an upload's test cases.
type FileOwners = HashMap<String, Vec<String>>;

/// The owners of each distinct file of the cases by the CODEOWNERS `text` (`None`: no
/// CODEOWNERS, so no owners to set), matched off the async runtime, each file once. 400 when
/// the text is refused or the matching would exceed its bound (`sent`: the text came with this
/// upload, else it is the repository's stored one).
async fn owners_of_files(
    cases: Vec<(Uuid, Collected)>,
    text: Option<String>,
    sent: bool,
) -> Result<(Vec<(Uuid, Collected)>, Option<FileOwners>), ServiceError> {
    let Some(text) = text else {
        return Ok((cases, None));
    };
    off_runtime(move || {
        let owners = CodeOwners::parse(&text).map_err(|e| codeowners_refused(&e, sent))?;
        let mut files = FileOwners::new();
        for (_, c) in &cases {
            if !c.identity.file.is_empty() {
                files.entry(c.identity.file.clone()).or_default();
            }
        }
        let path_bytes: u64 = files.keys().map(|f| f.len() as u64).sum();
        if !owners.can_match(path_bytes) {
            let reason = format!(
                "has {} patterned rules to match against {path_bytes} bytes of distinct file \
                 paths, more than an upload may take ({MAX_MATCHING_WORK} rule-bytes); upload \
                 fewer reports at once or use fewer wildcard rules",
                owners.patterned_rules()
            );
            return Err(codeowners_refused(&reason, sent));
        }
        for (file, found) in &mut files {
            *found = owners.owners_of(file);
        }
        Ok((cases, Some(files)))
    })
    .await
}

fn codeowners_refused(reason: &dyn std::fmt::Display, sent: bool) -> ServiceError {
    ServiceError::invalid(match sent {
        true => format!("codeowners {reason}"),
        false => format!(
            "the repository's stored codeowners {reason}; send codeowners with the upload to \
             replace it"
        ),
    })
}

/// Checks a CODEOWNERS text as an upload would use it (off the async runtime).
pub async fn check_codeowners(text: &str) -> Result<(), ServiceError> {
    let text = text.to_owned();
    off_runtime(move || {
        CodeOwners::parse(&text)
            .map(|_| ())
            .map_err(|e| codeowners_refused(&e, true))
    })
    .await
}

fn raw_results(cases: &[(Uuid, Collected)]) -> Vec<RawResult> {
    cases
        .iter()
        .filter_map(|(id, c)| {
            Some(RawResult {
                id: *id,
                outcome: outcome(&c.attempts)?,
                attempts: c.attempts.len().min(u16::MAX as usize) as u16,
            })
        })
        .collect()
}

/// A test case's new result (skipped-only cases have none), and its owners when the upload
/// has a CODEOWNERS.
struct Pending {
    identity: TestIdentity,
    result: NewResult,
    owners: Option<Vec<String>>,
}

fn new_results(
    record: &UploadRecord,
    cases: &[(Uuid, Collected)],
    settings: &RepoHealthSettings,
    now: Timestamp,
    owners: Option<FileOwners>,
) -> HashMap<Uuid, Pending> {
    let meta = &record.metadata;
    let stable = settings.thresholds.is_stable(&meta.branch);
    let upload = record.key.simple().to_string()[..12].to_owned();
    cases
        .iter()
        .filter_map(|(id, c)| {
            let record = ResultRecord {
                commit: ResultRecord::short_commit(&meta.commit_sha),
                stable,
                outcome: outcome(&c.attempts)?,
                at: now,
                upload: upload.clone(),
            };
            let result = NewResult {
                record,
                pr: meta.pr_number,
            };
            let owners = owners
                .as_ref()
                .and_then(|o| o.get(&c.identity.file))
                .cloned();
            let pending = Pending {
                identity: c.identity.clone(),
                result,
                owners,
            };
            Some((*id, pending))
        })
        .collect()
}

/// Test cases in one batch of a merge: with [`MERGES_AT_ONCE`], what a merge holds in memory
/// besides the upload's results.
const MERGE_BATCH: usize = 1000;

/// Batches merged at once: each waits on DynamoDB most of its time (10 reads and 10
/// transactions of 100 test cases), so the batches of a large upload go about this many
/// times faster together.
const MERGES_AT_ONCE: usize = 4;

/// How long the upload endpoint's merge may run, from the start of its ingestion: within the
/// function's 29 seconds, with the time the request took to arrive and the parse.
pub const MERGE_FOR_A_REQUEST: Duration = Duration::from_secs(20);

/// Merges results into their test cases, [`MERGE_BATCH`] at a time and [`MERGES_AT_ONCE`]
/// batches at once, with version checks; cases another writer changed first are read again
/// and merged again. Judging runs off the async runtime. No batch starts after `until`: then
/// the merge is unavailable for now, what was merged kept (the same upload sent again merges
/// the rest).
async fn merge(
    app: &App,
    scope: &HealthScope,
    context: MergeContext,
    until: Instant,
) -> Result<(), ServiceError> {
    let mut ids: Vec<Uuid> = context.results.keys().copied().collect();
    ids.sort();
    let context = Arc::new(context);
    let mut batches = ids.chunks(MERGE_BATCH).peekable();
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < MERGES_AT_ONCE && Instant::now() < until {
            let Some(batch) = batches.next() else { break };
            running.push(merge_batch(app, scope, batch.to_vec(), &context));
        }
        match running.next().await {
            Some(merged) => merged?,
            None => break,
        }
    }
    match batches.peek() {
        None => Ok(()),
        Some(_) => Err(ServiceError::unavailable(
            "upload merged in part",
            "the upload's merge ran out of time; the same upload sent again merges the rest",
            Some(Duration::from_secs(1)),
            1,
        )),
    }
}

/// What every batch of a merge judges with.
struct MergeContext {
    results: HashMap<Uuid, Pending>,
    /// The organisation and repository of test cases not stored yet.
    new_case: (OrgId, RepoRef),
    thresholds: Thresholds,
}

async fn merge_batch(
    app: &App,
    scope: &HealthScope,
    mut pending: Vec<Uuid>,
    context: &Arc<MergeContext>,
) -> Result<(), ServiceError> {
    for attempt in 0..crate::shell::MAX_COMMIT_ATTEMPTS {
        let now = app.now();
        let stored = app.store.get_test_cases(scope, &pending).await?;
        let context = context.clone();
        let changed = off_runtime(move || Ok(judged(&pending, stored, &context, now))).await?;
        pending = app.store.put_test_cases(&changed).await?;
        if pending.is_empty() {
            return Ok(());
        }
        crate::shell::backoff(attempt).await;
    }
    Err(StoreError::Conflict.into())
}

/// The test cases `pending` with their new results recorded and judged: those that changed,
/// their versions moved on. `stored` are those already known.
fn judged(
    pending: &[Uuid],
    stored: Vec<TestCase>,
    context: &MergeContext,
    now: Timestamp,
) -> Vec<TestCase> {
    let mut by_id: HashMap<Uuid, TestCase> = stored.into_iter().map(|c| (c.id, c)).collect();
    let mut changed = Vec::with_capacity(pending.len());
    for id in pending {
        let p = &context.results[id];
        let mut case = by_id.remove(id).unwrap_or_else(|| {
            let (org, repo) = &context.new_case;
            TestCase::new(*id, org.clone(), repo.clone(), p.identity.clone(), now)
        });
        if let Some(owners) = &p.owners {
            case.codeowners = owners.clone();
        }
        if case.record(p.result.clone(), &context.thresholds, now) {
            case.version += 1;
            changed.push(case);
        }
    }
    changed
}
