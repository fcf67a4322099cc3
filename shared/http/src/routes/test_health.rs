//! The test-health endpoints (`flaky-tests/...`): uploads of JUnit reports, the lists of
//! unhealthy and quarantined tests, the quarantine check, settings and tickets.

use super::Answered;
use crate::auth::Caller;
use crate::body::parse_json;
use crate::multipart::upload_from_form;
use crate::{http, multipart};
use lambda_http::Request;
use mq_service::App;
use mq_service::owners::check_repo;
use mq_service::test_health::ingest::Limits;
use mq_service::test_health::{check_slug, ingest, lists, objects, quarantine};
use mq_wire::test_health::{
    CheckQuarantinedRequest, LinkTicketRequest, ListQuarantinedRequest, ListUnhealthyRequest,
    UpdateSettingsRequest, UploadFields,
};

/// `flaky-tests/list-unhealthy-tests`: a page of the repository's FLAKY or BROKEN tests.
pub async fn list_unhealthy(app: &App, caller: Caller, req: Request) -> Answered {
    let body: ListUnhealthyRequest = parse_json(&req)?;
    Ok(http::ok(&lists::unhealthy(app, &caller.org, &body).await?))
}

/// `flaky-tests/list-quarantined-tests`: a page of the repository's quarantined tests.
pub async fn list_quarantined(app: &App, caller: Caller, req: Request) -> Answered {
    let body: ListQuarantinedRequest = parse_json(&req)?;
    Ok(http::ok(
        &lists::quarantined(app, &caller.org, &body).await?,
    ))
}

/// `flaky-tests/upload`: JUnit reports (plain or gzip) with the metadata of their run, as
/// `multipart/form-data`.
pub async fn upload(app: &App, caller: Caller, req: Request) -> Answered {
    let parts = multipart::parse(&req).await?;
    if let Some(slug) = parts.iter().find(|p| p.name == "org_url_slug") {
        check_slug(&caller.org, &slug.text()?)?;
    }
    let upload = upload_from_form(parts)?;
    check_repo(app, &caller.org, &upload.metadata.repo).await?;
    let merge_for = ingest::MERGE_FOR_A_REQUEST;
    let outcome = ingest(app, &caller.org, upload, &Limits::default(), merge_for).await?;
    Ok(http::ok(&outcome))
}

/// `flaky-tests/upload-url`: registers an upload and returns a presigned S3 URL to PUT a large
/// report to; the `ingest-test-results-object` function ingests it when it lands.
pub async fn upload_url(app: &App, caller: Caller, req: Request) -> Answered {
    let body: UploadFields = parse_json(&req)?;
    Ok(http::ok(&objects::start(app, &caller.org, &body).await?))
}

/// `flaky-tests/update-settings`: quarantine switches, classification thresholds and
/// per-test quarantine overrides of a repository.
pub async fn update_settings(app: &App, caller: Caller, req: Request) -> Answered {
    let body: UpdateSettingsRequest = parse_json(&req)?;
    let settings = quarantine::update_settings(app, &caller.org, &body).await?;
    Ok(http::ok(&settings))
}

/// `flaky-tests/check-quarantined`: CI sends its failed tests and learns which are
/// quarantined (when all are, it may pass).
pub async fn check_quarantined(app: &App, caller: Caller, req: Request) -> Answered {
    let body: CheckQuarantinedRequest = parse_json(&req)?;
    Ok(http::ok(&quarantine::check(app, &caller.org, &body).await?))
}

/// `flaky-tests/link-ticket`: links a ticket URL to a test case (empty: unlinks).
pub async fn link_ticket(app: &App, caller: Caller, req: Request) -> Answered {
    let body: LinkTicketRequest = parse_json(&req)?;
    Ok(http::ok(
        &quarantine::link_ticket(app, &caller.org, &body).await?,
    ))
}
