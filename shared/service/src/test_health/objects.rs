//! Large reports through S3: the API hands out a presigned PUT URL for an upload, and when the
//! object lands an S3-triggered function ingests it with the same code as the multipart path.

use super::ingest::{IncomingUpload, ReportFile, ingest, metadata_from_fields};
use crate::app::App;
use crate::error::ServiceError;
use crate::uploads::{Fetched, URL_LIFETIME, object_key, parse_object_key};
use mq_core::ErrorCode;
use mq_core::health::upload_key;
use mq_core::ids::OrgId;
use mq_junit::Limits;
use mq_store::{UploadRecord, UploadState};
use mq_wire::test_health::{UploadFields, UploadUrlResponse};
use std::time::Duration;

/// Largest object ingested (gzip or plain), and largest XML it may inflate to.
pub const MAX_OBJECT_BYTES: usize = 100 * 1024 * 1024;
pub const MAX_OBJECT_XML_BYTES: usize = 256 * 1024 * 1024;
/// How long the merge of an uploaded object may run, from the start of its ingestion: within
/// the ingesting function's 300 seconds. One that runs out is an error, and Lambda's retry of
/// the invocation merges the rest.
pub const MERGE_FOR_AN_OBJECT: Duration = Duration::from_secs(240);

/// Registers an upload and returns where to PUT its report. Asking again for an upload not yet
/// ingested gives a fresh URL: its object has not arrived, or its ingestion stopped half way
/// (the function ran out of time or retries) and the next object finishes it. Once ingested or
/// refused, 409, naming which.
pub async fn start(
    app: &App,
    org: &OrgId,
    fields: &UploadFields,
) -> Result<UploadUrlResponse, ServiceError> {
    if let Some(slug) = &fields.org_url_slug {
        super::check_slug(org, slug)?;
    }
    let (metadata, codeowners) = metadata_from_fields(fields)?;
    crate::owners::check_repo(app, org, &metadata.repo).await?;
    if let Some(text) = &codeowners {
        super::ingest::check_codeowners(text).await?;
    }
    let bucket = app.uploads.as_ref().ok_or_else(|| {
        ServiceError::not_found(
            ErrorCode::UploadsNotConfigured,
            "uploads through a URL are not configured on this deployment; use flaky-tests/upload",
        )
    })?;
    let now = app.now();
    let record = UploadRecord {
        org: org.clone(),
        key: upload_key(org, &metadata),
        state: UploadState::AwaitingObject,
        metadata: metadata.clone(),
        created_at: now,
        summary: None,
        error: None,
    };
    if let Some(existing) = app.store.claim_upload(&record).await?
        && existing.state == UploadState::Done
    {
        return Err(already_received(&existing));
    }
    if let Some(text) = codeowners {
        let scope = super::scope_of(org, &metadata.repo);
        app.store.put_codeowners(&scope, &text).await?;
    }
    let url = bucket
        .presigned_put(&object_key(org, record.key))
        .await
        .map_err(ServiceError::internal)?;
    Ok(UploadUrlResponse {
        upload_id: metadata.upload_id,
        upload_url: url,
        method: "PUT".to_owned(),
        expires_at: now
            .plus_millis(URL_LIFETIME.as_millis() as i64)
            .to_rfc3339(),
    })
}

/// 409 for an upload that was ingested, or refused (and why).
fn already_received(upload: &UploadRecord) -> ServiceError {
    let id = &upload.metadata.upload_id;
    let message = match &upload.error {
        Some(why) => format!("upload_id {id} was already received and refused: {why}"),
        None => format!("upload_id {id} was already received and ingested"),
    };
    ServiceError::conflict(ErrorCode::UploadAlreadyReceived, message)
}

/// What became of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectOutcome {
    Ingested {
        test_cases: u32,
    },
    /// Not an upload of ours, or already ingested.
    Ignored(String),
    /// The report was refused; the reason is kept on the upload.
    Refused(String),
}

/// Ingests the object `key` of the uploads bucket. Store and S3 failures are errors (the
/// invocation is retried); a bad report is recorded on the upload and not retried.
pub async fn ingest_object(app: &App, key: &str) -> Result<ObjectOutcome, ServiceError> {
    let Some((org, upload)) = parse_object_key(key) else {
        return Ok(ObjectOutcome::Ignored(format!(
            "{key} is not an upload object"
        )));
    };
    let Some(record) = app.store.get_upload(&org, upload).await? else {
        return Ok(ObjectOutcome::Ignored(format!(
            "no upload registered for {key}"
        )));
    };
    if record.state == UploadState::Done {
        return Ok(ObjectOutcome::Ignored(format!(
            "{key} was already ingested"
        )));
    }
    let bucket = app
        .uploads
        .as_ref()
        .ok_or_else(|| ServiceError::internal("the uploads bucket is not configured"))?;
    let bytes = match bucket
        .get(key, MAX_OBJECT_BYTES)
        .await
        .map_err(ServiceError::internal)?
    {
        Fetched::Bytes(bytes) => bytes,
        Fetched::TooLarge { bytes } => {
            let why = format!(
                "the report is {bytes} bytes, over the {MAX_OBJECT_BYTES} an upload URL takes"
            );
            return refused(app, record, why).await;
        }
    };
    let incoming = IncomingUpload {
        metadata: record.metadata.clone(),
        codeowners: None,
        files: vec![ReportFile {
            name: key.rsplit('/').next().unwrap_or(key).to_owned(),
            bytes,
        }],
    };
    let limits = Limits {
        max_xml_bytes: MAX_OBJECT_XML_BYTES,
        ..Limits::default()
    };
    match ingest(app, &org, incoming, &limits, MERGE_FOR_AN_OBJECT).await {
        Ok(r) => Ok(ObjectOutcome::Ingested {
            test_cases: r.summary.test_cases,
        }),
        Err(e) if e.is_invalid_input() => {
            let why = e.refusal().unwrap_or_default().to_owned();
            refused(app, record, why).await
        }
        Err(e) => Err(e),
    }
}

/// Records on the upload that its report was refused, and why: it is not tried again.
async fn refused(
    app: &App,
    mut record: UploadRecord,
    why: String,
) -> Result<ObjectOutcome, ServiceError> {
    record.state = UploadState::Done;
    record.error = Some(why.clone());
    app.store.put_upload(&record).await?;
    Ok(ObjectOutcome::Refused(why))
}
