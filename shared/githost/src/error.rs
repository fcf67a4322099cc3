//! Errors of the Git host, typed by what the caller can do about them.

use std::time::Duration;

pub type HostResult<T> = Result<T, HostError>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The repository, pull request, branch or commit does not exist (or is not visible).
    #[error("not found: {0}")]
    NotFound(String),
    /// The host refuses: missing permission, protected branch.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The request itself is wrong (an invalid branch name, a malformed configuration file,
    /// a value the host rejects as invalid): repeating it cannot succeed.
    #[error("invalid: {0}")]
    Invalid(String),
    /// A state conflict the call cannot resolve by retrying (e.g. a ref moved).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Rate limits, timeouts, 5xx, the service's own credentials refused: retrying later may
    /// succeed.
    #[error("transient: {message}")]
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// Anything else: a malformed answer, a failed local command.
    #[error("git host failure: {0}")]
    Other(String),
}

impl HostError {
    /// Whether executing the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, HostError::Transient { .. })
    }
}
