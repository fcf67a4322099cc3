//! Test health (docs/queue-semantics.md §9): ingesting reports, the lists, quarantine and its
//! settings, and the time-based recovery the tick applies.
//!
//! Test data belongs to the uploading token's organisation; `org_url_slug` must name the
//! caller's organisation, else 404 (never revealing whether another one exists).

pub mod ingest;
pub mod lists;
pub mod objects;
pub mod pages;
pub mod quarantine;
pub mod recovery;

pub use ingest::{IncomingUpload, ReportFile, ingest};
pub use recovery::recover;

use crate::error::ServiceError;
use mq_core::ErrorCode;
use mq_core::health::{RepoHealthSettings, TestCase};
use mq_core::ids::{OrgId, RepoRef};
use mq_core::time::Timestamp;
use mq_store::{HealthScope, StoreError};
use mq_wire::RepoBody;
use uuid::Uuid;

/// The repository's test-health data of the caller: 404 `ORGANIZATION_NOT_FOUND` unless
/// `org_url_slug` is the caller's organisation, 404 `REPOSITORY_NOT_FOUND` unless the caller
/// owns the repository.
pub async fn caller_scope(
    app: &crate::App,
    caller: &OrgId,
    org_url_slug: &str,
    repo: &RepoBody,
) -> Result<(HealthScope, RepoRef), ServiceError> {
    check_slug(caller, org_url_slug)?;
    let repo = repo.to_ref()?;
    crate::owners::check_repo(app, caller, &repo).await?;
    Ok((scope_of(caller, &repo), repo))
}

/// 404 `ORGANIZATION_NOT_FOUND` unless `org_url_slug` is the caller's organisation.
pub fn check_slug(caller: &OrgId, org_url_slug: &str) -> Result<(), ServiceError> {
    if org_url_slug == caller.as_str() {
        Ok(())
    } else {
        Err(ServiceError::not_found(
            ErrorCode::OrganizationNotFound,
            "no organisation with this org_url_slug",
        ))
    }
}

pub fn scope_of(org: &OrgId, repo: &RepoRef) -> HealthScope {
    HealthScope {
        org: org.clone(),
        repo_key: repo.key(),
    }
}

/// The repository's settings, or the defaults when never set.
pub async fn settings(
    app: &crate::App,
    scope: &HealthScope,
) -> Result<RepoHealthSettings, ServiceError> {
    Ok(app.store.health_settings(scope).await?.unwrap_or_default())
}

/// Parses a test case id field.
pub fn parse_test_case_id(field: &str, value: &str) -> Result<Uuid, ServiceError> {
    Uuid::parse_str(value)
        .map_err(|_| ServiceError::invalid(format!("{field} must be a test case id (a UUID)")))
}

pub fn test_case_not_found(id: Uuid) -> ServiceError {
    ServiceError::not_found(
        ErrorCode::TestCaseNotFound,
        format!("no test case {id} in this repository"),
    )
}

/// Applies `change` to stored test cases and writes them, reading again and retrying those
/// that another writer changed first. `change` returns false to leave a case alone.
pub async fn update_cases<F>(
    app: &crate::App,
    scope: &HealthScope,
    ids: &[Uuid],
    change: F,
) -> Result<Vec<TestCase>, ServiceError>
where
    F: FnMut(&mut TestCase, Timestamp) -> bool,
{
    let read = app.store.get_test_cases(scope, ids).await?;
    update_read_cases(app, scope, read, change).await
}

/// [`update_cases`] of test cases read already (`read`): the first write starts from them.
pub async fn update_read_cases<F>(
    app: &crate::App,
    scope: &HealthScope,
    mut read: Vec<TestCase>,
    mut change: F,
) -> Result<Vec<TestCase>, ServiceError>
where
    F: FnMut(&mut TestCase, Timestamp) -> bool,
{
    let mut written = Vec::new();
    for attempt in 0..super::shell::MAX_COMMIT_ATTEMPTS {
        let now = app.now();
        read.retain_mut(|c| change(c, now));
        for c in &mut read {
            c.version += 1;
        }
        let lost = app.store.put_test_cases(&read).await?;
        written.extend(read.into_iter().filter(|c| !lost.contains(&c.id)));
        if lost.is_empty() {
            return Ok(written);
        }
        super::shell::backoff(attempt).await;
        read = app.store.get_test_cases(scope, &lost).await?;
    }
    Err(StoreError::Conflict.into())
}
