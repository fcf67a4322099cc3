//! The service's one error type: why a use of the service did not happen, in terms of the
//! queue, the store and the Git host. The HTTP edge (`mq-http`) maps it to a status and a
//! JSON body, once; the tick only logs it.

use mq_core::{DomainError, ErrorCode, ErrorKind};
use mq_githost::HostError;
use mq_store::StoreError;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceError {
    /// The queue's rules refuse the request: a field, a thing that is not there (or belongs to
    /// another organisation), or a state that forbids it. The code is stable for clients.
    Refused(DomainError),
    /// The request is malformed in a way no domain rule names (a field of an upload form, a
    /// page token): the message says what to fix.
    Invalid(String),
    /// The store or the Git host is unavailable or too contended right now: retry after.
    Unavailable { retry_after: Duration },
    /// The Git host refused or failed the request (its details are logged).
    HostRefused,
    /// Something failed that the caller cannot fix (its details are logged).
    Internal,
}

/// What a use of the service returns.
pub type ServiceResult<T> = Result<T, ServiceError>;

impl ServiceError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// An unexpected failure: `detail` goes to the log, not to the caller.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Self::Internal
    }

    /// Unavailable for now: logged as `what` with `message`; the caller retries after
    /// `retry_after`, or `default_secs` when the cause did not say.
    pub(crate) fn unavailable(
        what: &str,
        message: &str,
        retry_after: Option<Duration>,
        default_secs: u64,
    ) -> Self {
        tracing::warn!(%message, "{what}");
        let retry_after = retry_after.unwrap_or(Duration::from_secs(default_secs));
        Self::Unavailable { retry_after }
    }

    /// Refused because `code` does not exist (or is not the caller's).
    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Refused(DomainError::not_found(code, message))
    }

    /// Refused because the state of `code`'s subject forbids the request.
    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Refused(DomainError::conflict(code, message))
    }

    /// Whether this is the domain's refusal with `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        matches!(self, Self::Refused(e) if e.code == code)
    }

    /// What the caller is told when the request is refused (a domain rule or malformed
    /// input): something the caller can act on. `None` for failures on this side.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Refused(e) => Some(&e.message),
            Self::Invalid(message) => Some(message),
            _ => None,
        }
    }

    /// Whether the caller sent something wrong (as opposed to a missing thing, a conflicting
    /// state, or a failure on this side).
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Self::Invalid(_) => true,
            Self::Refused(e) => e.kind == ErrorKind::Invalid,
            _ => false,
        }
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(e) => write!(f, "{}: {}", e.code.as_str(), e.message),
            Self::Invalid(message) => f.write_str(message),
            Self::Unavailable { retry_after } => {
                write!(f, "unavailable; retry after {}s", retry_after.as_secs())
            }
            Self::HostRefused => f.write_str("the Git host refused or failed the request"),
            Self::Internal => f.write_str("internal error"),
        }
    }
}

impl std::error::Error for ServiceError {}

impl From<DomainError> for ServiceError {
    fn from(e: DomainError) -> Self {
        Self::Refused(e)
    }
}

impl From<StoreError> for ServiceError {
    /// Unavailable and contended stores are transient; anything else is internal.
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable {
                retry_after,
                message,
            } => Self::unavailable("store unavailable", &message, retry_after, 1),
            StoreError::Conflict => {
                let message = "version conflicts did not settle";
                Self::unavailable("store contention", message, None, 1)
            }
            other => Self::internal(other),
        }
    }
}

impl From<HostError> for ServiceError {
    /// A transient failure of the Git host is retried later; any other is a refusal whose
    /// details go to the log.
    fn from(e: HostError) -> Self {
        match e {
            HostError::Transient {
                retry_after,
                message,
            } => Self::unavailable("Git host unavailable", &message, retry_after, 5),
            other => {
                tracing::error!(error = %other, "Git host refused");
                Self::HostRefused
            }
        }
    }
}
