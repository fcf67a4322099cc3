//! The one error type of the API: a status, a stable code and a message fit for clients.
//!
//! Renders as `{"error": {"code": "...", "message": "..."}}`. Internal details are logged,
//! never sent.

use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Response};
use mq_core::{DomainError, ErrorKind};
use mq_service::ServiceError;
use mq_store::StoreError;
use serde_json::json;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Sent as `Retry-After` (seconds) with 503.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message)
    }

    /// No token was sent.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "no API token: send it in the x-api-token header (or Authorization: Bearer)",
        )
    }

    /// A token was sent that is not (or no longer) valid: unknown, or revoked.
    pub fn token_not_valid() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "the API token sent is not valid (unknown or revoked); ask an operator for a new one",
        )
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("request body exceeds the limit of {limit} bytes"),
        )
    }

    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
            "request body must be JSON (Content-Type: application/json)",
        )
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn method_not_allowed(allowed: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "METHOD_NOT_ALLOWED",
            format!("this endpoint accepts {allowed} only"),
        )
    }

    /// An unexpected failure: the detail goes to the log, not to the client.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "internal error",
        )
    }

    /// The store is unavailable or too contended: the client should retry.
    pub fn unavailable(retry_after: Duration) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                "the service is temporarily unavailable; retry later",
            )
        }
    }

    pub fn to_response(&self) -> Response<Body> {
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        let mut response = crate::http::json(self.status, &body);
        if let Some(after) = self.retry_after {
            let secs = after.as_secs().max(1).to_string();
            if let Ok(v) = HeaderValue::from_str(&secs) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl From<ServiceError> for ApiError {
    /// The one place a service error becomes a status: a domain refusal by its kind (400, 404,
    /// 409), malformed input 400, unavailable 503 with `Retry-After`, a Git host's refusal 502,
    /// anything else 500 (its details were logged where it happened).
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Refused(e) => {
                let status = match e.kind {
                    ErrorKind::Invalid => StatusCode::BAD_REQUEST,
                    ErrorKind::NotFound => StatusCode::NOT_FOUND,
                    ErrorKind::Conflict => StatusCode::CONFLICT,
                };
                Self::new(status, e.code.as_str(), e.message)
            }
            ServiceError::Invalid(message) => Self::bad_request(message),
            ServiceError::Unavailable { retry_after } => Self::unavailable(retry_after),
            ServiceError::HostRefused => Self::new(
                StatusCode::BAD_GATEWAY,
                "GIT_HOST_ERROR",
                "the Git host refused or failed the request",
            ),
            ServiceError::Internal => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "internal error",
            ),
        }
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        ServiceError::from(e).into()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ServiceError::from(e).into()
    }
}

impl std::error::Error for ApiError {}
