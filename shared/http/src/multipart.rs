//! `multipart/form-data` request bodies (what `curl -F` sends): fields and files.

use crate::body::{MAX_BODY_BYTES, bytes};
use crate::error::ApiError;
use lambda_http::Request;
use lambda_http::http::{StatusCode, header};
use mq_service::test_health::ingest::{IncomingUpload, ReportFile, metadata_from_fields};
use mq_wire::test_health::UploadFields;
use std::convert::Infallible;

/// One part of a form: a field (`-F name=value`) or a file (`-F file=@report.xml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    pub bytes: Vec<u8>,
}

impl Part {
    /// The part as text, for fields; the error names the field.
    pub fn text(&self) -> Result<String, ApiError> {
        String::from_utf8(self.bytes.clone())
            .map_err(|_| ApiError::bad_request(format!("{} must be UTF-8 text", self.name)))
    }
}

/// Checks the size (413) and content type (415) and splits the body into its parts (400 when
/// malformed).
pub async fn parse(req: &Request) -> Result<Vec<Part>, ApiError> {
    let body = bytes(req);
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::payload_too_large(MAX_BODY_BYTES));
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = boundary(content_type)?;
    let chunk = bytes::Bytes::copy_from_slice(body);
    let stream = futures_util::stream::once(async move { Ok::<_, Infallible>(chunk) });
    let mut form = multer::Multipart::new(stream, boundary);
    let mut parts = Vec::new();
    while let Some(field) = form.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let bytes = field.bytes().await.map_err(malformed)?.to_vec();
        parts.push(Part {
            name,
            file_name,
            bytes,
        });
    }
    Ok(parts)
}

fn boundary(content_type: &str) -> Result<String, ApiError> {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("multipart/form-data") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
            "request body must be multipart/form-data (curl -F), with the reports as files",
        ));
    }
    multer::parse_boundary(content_type)
        .map_err(|_| ApiError::bad_request("the multipart/form-data content type has no boundary"))
}

fn malformed(e: multer::Error) -> ApiError {
    ApiError::bad_request(format!("the multipart/form-data body is malformed: {e}"))
}

/// An upload from a `multipart/form-data` body: metadata fields (`repo` as
/// `host/owner/name`, `commit_sha`, `branch`, `pr_number`, `variant`, `job_url`, `upload_id`,
/// `codeowners` as text or file) and one or more report files (`file`).
pub fn upload_from_form(parts: Vec<Part>) -> Result<IncomingUpload, ApiError> {
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
fn repo_field(text: &str) -> Result<mq_wire::RepoBody, ApiError> {
    let parts: Vec<&str> = text.trim().split('/').collect();
    match parts.as_slice() {
        [host, owner, name] => Ok(mq_wire::RepoBody {
            host: (*host).to_owned(),
            owner: (*owner).to_owned(),
            name: (*name).to_owned(),
        }),
        _ => Err(ApiError::bad_request(
            "repo must be host/owner/name (github.com/acme/rocket)",
        )),
    }
}

fn int_field(field: &str, text: &str) -> Result<mq_wire::Int, ApiError> {
    let text = text.trim();
    text.parse::<i128>().map(mq_wire::Int).map_err(|_| {
        let sent: String = text.chars().take(64).collect();
        ApiError::bad_request(format!("{field} must be an integer, got {sent:?}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::Body;

    fn request(content_type: &str, body: &str) -> Request {
        lambda_http::http::Request::builder()
            .method("POST")
            .header("content-type", content_type)
            .body(Body::Text(body.to_owned()))
            .unwrap()
    }

    #[tokio::test]
    async fn fields_and_files_come_apart() {
        let body = "--XX\r\nContent-Disposition: form-data; name=\"branch\"\r\n\r\nmain\r\n\
                    --XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"r.xml\"\r\n\
                    Content-Type: application/xml\r\n\r\n<testsuite/>\r\n--XX--\r\n";
        let parts = parse(&request("multipart/form-data; boundary=XX", body))
            .await
            .unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            (parts[0].name.as_str(), parts[0].text().unwrap()),
            ("branch", "main".into())
        );
        assert_eq!(parts[1].file_name.as_deref(), Some("r.xml"));
        assert_eq!(parts[1].bytes, b"<testsuite/>");
    }

    #[tokio::test]
    async fn other_content_types_get_415_and_broken_bodies_400() {
        let err = parse(&request("application/json", "{}")).await.unwrap_err();
        assert_eq!(err.status.as_u16(), 415);
        let err = parse(&request("multipart/form-data; boundary=XX", "--XX\r\nnope"))
            .await
            .unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
    }
}
