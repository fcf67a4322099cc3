//! Ingesting an upload: one or more JUnit reports with the metadata of their run. The
//! multipart endpoint and the S3-triggered function both end here.
//!
//! Every report is parsed before anything is stored, so a bad file changes nothing. An upload
//! id is ingested once: a finished upload sent again is answered from its record, and an
//! upload interrupted half way is finished by the next attempt without counting any result
//! twice (each test case remembers the uploads in its history).

use super::scope_of;
use crate::app::App;
use crate::error::ApiError;
use crate::wire::test_health::{UploadFields, UploadResponse};
use mq_core::health::codeowners::{CodeOwners, MAX_CODEOWNERS_BYTES};
use mq_core::health::upload::is_infrastructure_failure;
use mq_core::health::{
    NewResult, Outcome, RepoHealthSettings, ResultRecord, TestCase, TestIdentity, UploadMetadata,
    UploadSummary, test_case_id, upload_key,
};
use mq_core::ids::{OrgId, check_branch};
use mq_core::time::Timestamp;
pub use mq_junit::Limits;
use mq_junit::{Attempt, CaseRun};
use mq_store::{HealthScope, RawResult, StoreError, UploadRecord, UploadState};
use std::collections::HashMap;
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
) -> Result<(UploadMetadata, Option<String>), ApiError> {
    let missing = |f: &str| ApiError::bad_request(format!("{f} is required"));
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
        return Err(ApiError::bad_request(
            "commit_sha must be 7 to 64 hexadecimal characters",
        ));
    }
    let branch = fields.branch.clone().ok_or_else(|| missing("branch"))?;
    check_branch("branch", &branch)?;
    let pr_number = match fields.pr_number {
        None => None,
        Some(n) => Some(u32::try_from(n.0).map_err(|_| {
            ApiError::bad_request(format!(
                "pr_number must be an integer from 0 to 4294967295, got {}",
                n.0
            ))
        })?),
    };
    let variant = fields.variant.clone().unwrap_or_default();
    if variant.len() > MAX_VARIANT {
        return Err(ApiError::bad_request("variant must be at most 255 bytes"));
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
        return Err(ApiError::bad_request(
            "upload_id must be 1 to 128 printable ASCII characters without spaces",
        ));
    }
    let codeowners = fields.codeowners.clone().filter(|c| !c.is_empty());
    if codeowners
        .as_ref()
        .is_some_and(|c| c.len() > MAX_CODEOWNERS_BYTES)
    {
        return Err(ApiError::bad_request("codeowners must be at most 3 MiB"));
    }
    if codeowners
        .as_ref()
        .is_some_and(|c| !mq_store::codeowners::fits(c))
    {
        return Err(ApiError::bad_request(format!(
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
pub fn check_url(field: &str, url: &str) -> Result<(), ApiError> {
    let scheme = url.starts_with("https://") || url.starts_with("http://");
    if !scheme || url.len() > MAX_URL || url.chars().any(char::is_whitespace) {
        return Err(ApiError::bad_request(format!(
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

/// Parses every report and merges cases that appear in several files.
fn collect(upload: &IncomingUpload, limits: &Limits) -> Result<Vec<(Uuid, Collected)>, ApiError> {
    if upload.files.is_empty() {
        return Err(ApiError::bad_request(
            "file is required: send one or more JUnit XML reports",
        ));
    }
    if upload.files.len() > MAX_FILES {
        return Err(ApiError::bad_request(format!(
            "file: at most {MAX_FILES} reports per upload, got {}",
            upload.files.len()
        )));
    }
    let repo = &upload.metadata.repo;
    let mut order: Vec<Uuid> = Vec::new();
    let mut cases: HashMap<Uuid, Collected> = HashMap::new();
    for (i, file) in upload.files.iter().enumerate() {
        let report = mq_junit::read_report(&file.bytes, limits)
            .map_err(|e| ApiError::bad_request(format!("file {} ({}) {e}", i + 1, file.name)))?;
        for run in report.cases {
            let identity = identity_of(&run, &upload.metadata.variant);
            let id = test_case_id(repo, &identity);
            let entry = cases.entry(id).or_insert_with(|| {
                order.push(id);
                Collected {
                    identity,
                    attempts: Vec::new(),
                }
            });
            entry.attempts.extend(run.attempts);
        }
    }
    Ok(order
        .into_iter()
        .filter_map(|id| cases.remove(&id).map(|c| (id, c)))
        .collect())
}

fn identity_of(run: &CaseRun, variant: &str) -> TestIdentity {
    TestIdentity {
        file: run.file.clone().unwrap_or_default(),
        classname: run.classname.clone(),
        parent: run.parent.clone(),
        name: run.name.clone(),
        variant: variant.to_owned(),
    }
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
    for (_, c) in cases {
        s.retries += c.attempts.len().saturating_sub(1) as u32;
        match outcome(&c.attempts) {
            None => s.skipped += 1,
            Some(Outcome::Failed) => s.failed += 1,
            Some(o) => {
                s.passed += 1;
                s.passed_on_retry += u32::from(o == Outcome::PassedOnRetry);
            }
        }
    }
    let ran = (s.passed + s.failed) as usize;
    s.infrastructure_failure = is_infrastructure_failure(ran, s.failed as usize, t);
    s
}

/// Ingests an upload for `org`: parse, record raw results, merge each result into its test
/// case and re-judge it.
pub async fn ingest(
    app: &App,
    org: &OrgId,
    upload: IncomingUpload,
    limits: &Limits,
) -> Result<UploadResponse, ApiError> {
    let cases = collect(&upload, limits)?;
    let now = app.now();
    let key = upload_key(org, &upload.metadata);
    let mut record = UploadRecord {
        org: org.clone(),
        key,
        state: UploadState::Ingesting,
        metadata: upload.metadata.clone(),
        created_at: now,
        summary: None,
        error: None,
    };
    if let Some(existing) = app.store.claim_upload(&record).await? {
        if let (UploadState::Done, Some(summary)) = (existing.state, &existing.summary) {
            return Ok(response(&upload.metadata.upload_id, summary, true));
        }
        record.created_at = existing.created_at;
        record.error = None;
        app.store.put_upload(&record).await?;
    }
    let scope = scope_of(org, &upload.metadata.repo);
    let (settings, owners) =
        settings_and_codeowners(app, &scope, upload.codeowners.as_deref()).await?;
    let summary = summarise(upload.files.len(), &cases, &settings.thresholds);
    app.store
        .put_raw_results(&record, &raw_results(&cases))
        .await?;
    if !summary.infrastructure_failure {
        let results = new_results(&record, &cases, &settings, now);
        merge(
            app,
            &scope,
            org,
            &upload.metadata,
            results,
            &settings,
            owners.as_ref(),
        )
        .await?;
    }
    record.state = UploadState::Done;
    record.summary = Some(summary.clone());
    app.store.put_upload(&record).await?;
    Ok(response(&upload.metadata.upload_id, &summary, false))
}

fn response(upload_id: &str, s: &UploadSummary, duplicate: bool) -> UploadResponse {
    UploadResponse {
        upload_id: upload_id.to_owned(),
        files: s.files,
        test_cases: s.test_cases,
        passed: s.passed,
        failed: s.failed,
        skipped: s.skipped,
        retries: s.retries,
        passed_on_retry: s.passed_on_retry,
        infrastructure_failure: s.infrastructure_failure,
        duplicate,
    }
}

/// The repository's settings (the defaults when never set), and the CODEOWNERS of the upload
/// (stored as the repository's latest) or else the stored one: one read when the upload has
/// none.
async fn settings_and_codeowners(
    app: &App,
    scope: &HealthScope,
    sent: Option<&str>,
) -> Result<(RepoHealthSettings, Option<CodeOwners>), ApiError> {
    let (settings, text) = match sent {
        Some(text) => {
            app.store.put_codeowners(scope, text).await?;
            let settings = app.store.health_settings(scope).await?;
            (settings, Some(text.to_owned()))
        }
        None => app.store.settings_and_codeowners(scope).await?,
    };
    let owners = text.map(|t| CodeOwners::parse(&t));
    Ok((settings.unwrap_or_default(), owners))
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

/// A test case's new result (skipped-only cases have none).
struct Pending {
    identity: TestIdentity,
    result: NewResult,
}

fn new_results(
    record: &UploadRecord,
    cases: &[(Uuid, Collected)],
    settings: &RepoHealthSettings,
    now: Timestamp,
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
            let pending = Pending {
                identity: c.identity.clone(),
                result,
            };
            Some((*id, pending))
        })
        .collect()
}

/// Merges results into their test cases, with version checks; cases another writer changed
/// first are read again and merged again.
async fn merge(
    app: &App,
    scope: &HealthScope,
    org: &OrgId,
    meta: &UploadMetadata,
    results: HashMap<Uuid, Pending>,
    settings: &RepoHealthSettings,
    owners: Option<&CodeOwners>,
) -> Result<(), ApiError> {
    let mut pending: Vec<Uuid> = results.keys().copied().collect();
    pending.sort();
    for attempt in 0..super::super::shell::MAX_COMMIT_ATTEMPTS {
        let now = app.now();
        let stored = app.store.get_test_cases(scope, &pending).await?;
        let mut by_id: HashMap<Uuid, TestCase> = stored.into_iter().map(|c| (c.id, c)).collect();
        let mut changed = Vec::with_capacity(pending.len());
        for id in &pending {
            let p = &results[id];
            let mut case = by_id.remove(id).unwrap_or_else(|| {
                TestCase::new(*id, org.clone(), meta.repo.clone(), p.identity.clone(), now)
            });
            if let Some(owners) = owners.filter(|_| !case.identity.file.is_empty()) {
                case.codeowners = owners.owners_of(&case.identity.file);
            }
            if case.record(p.result.clone(), &settings.thresholds, now) {
                case.version += 1;
                changed.push(case);
            }
        }
        pending = app.store.put_test_cases(&changed).await?;
        if pending.is_empty() {
            return Ok(());
        }
        super::super::shell::backoff(attempt).await;
    }
    Err(StoreError::Conflict.into())
}

/// An upload from a `multipart/form-data` body: metadata fields (`repo` as
/// `host/owner/name`, `commit_sha`, `branch`, `pr_number`, `variant`, `job_url`, `upload_id`,
/// `codeowners` as text or file) and one or more report files (`file`).
pub fn from_form(parts: Vec<crate::multipart::Part>) -> Result<IncomingUpload, ApiError> {
    let mut fields = UploadFields::default();
    let mut files = Vec::new();
    for part in parts {
        match part.name.as_str() {
            "file" | "files" | "file[]" | "files[]" => files.push(ReportFile {
                name: part
                    .file_name
                    .clone()
                    .unwrap_or_else(|| format!("report {}", files.len() + 1)),
                bytes: part.bytes,
            }),
            "repo" => fields.repo = Some(repo_field(&part.text()?)?),
            "org_url_slug" => fields.org_url_slug = Some(part.text()?),
            "commit_sha" => fields.commit_sha = Some(part.text()?.trim().to_owned()),
            "branch" => fields.branch = Some(part.text()?.trim().to_owned()),
            "pr_number" => fields.pr_number = Some(int_field("pr_number", &part.text()?)?),
            "variant" => fields.variant = Some(part.text()?),
            "job_url" => fields.job_url = Some(part.text()?.trim().to_owned()),
            "upload_id" => fields.upload_id = Some(part.text()?.trim().to_owned()),
            "codeowners" => fields.codeowners = Some(part.text()?),
            _ => {}
        }
    }
    let (metadata, codeowners) = metadata_from_fields(&fields)?;
    Ok(IncomingUpload {
        metadata,
        codeowners,
        files,
    })
}

/// `host/owner/name`.
fn repo_field(text: &str) -> Result<crate::wire::RepoBody, ApiError> {
    let parts: Vec<&str> = text.trim().split('/').collect();
    match parts.as_slice() {
        [host, owner, name] => Ok(crate::wire::RepoBody {
            host: (*host).to_owned(),
            owner: (*owner).to_owned(),
            name: (*name).to_owned(),
        }),
        _ => Err(ApiError::bad_request(
            "repo must be host/owner/name (github.com/acme/rocket)",
        )),
    }
}

fn int_field(field: &str, text: &str) -> Result<crate::wire::Int, ApiError> {
    let text = text.trim();
    text.parse::<i128>().map(crate::wire::Int).map_err(|_| {
        let sent: String = text.chars().take(64).collect();
        ApiError::bad_request(format!("{field} must be an integer, got {sent:?}"))
    })
}
