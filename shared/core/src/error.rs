//! Domain errors: what a request asked for that the domain refuses, with a stable code.
//!
//! The API layer maps each kind to a status: `Invalid` 400, `NotFound` 404, `Conflict` 409.

use std::fmt;

/// Stable error codes, sent to clients in `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidField,
    /// The repository's owner is not linked to the caller's organisation.
    RepositoryNotFound,
    QueueNotFound,
    PullRequestNotFound,
    TestRunNotFound,
    QueueAlreadyExists,
    QueueNotEmpty,
    PullRequestNotActive,
    /// Restart asked for an entry that is neither testing nor pending failure.
    PullRequestNotTesting,
    /// The pull request is being merged; it can no longer be cancelled.
    PullRequestMerging,
    QueueDraining,
    QueueSwitchingModes,
    ShaMismatch,
    PullRequestNotOpen,
    WrongBaseBranch,
    /// A report upload through a URL, on a deployment without an uploads bucket.
    UploadsNotConfigured,
    /// A report upload whose id was already received.
    UploadAlreadyReceived,
    /// A test-health request's `org_url_slug` names no organisation the caller belongs to.
    OrganizationNotFound,
    TestCaseNotFound,
}

impl ErrorCode {
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidField => "INVALID_FIELD",
            ErrorCode::RepositoryNotFound => "REPOSITORY_NOT_FOUND",
            ErrorCode::QueueNotFound => "QUEUE_NOT_FOUND",
            ErrorCode::PullRequestNotFound => "PULL_REQUEST_NOT_FOUND",
            ErrorCode::TestRunNotFound => "TEST_RUN_NOT_FOUND",
            ErrorCode::QueueAlreadyExists => "QUEUE_ALREADY_EXISTS",
            ErrorCode::QueueNotEmpty => "QUEUE_NOT_EMPTY",
            ErrorCode::PullRequestNotActive => "PULL_REQUEST_NOT_ACTIVE",
            ErrorCode::PullRequestNotTesting => "PULL_REQUEST_NOT_TESTING",
            ErrorCode::PullRequestMerging => "PULL_REQUEST_MERGING",
            ErrorCode::QueueDraining => "QUEUE_DRAINING",
            ErrorCode::QueueSwitchingModes => "QUEUE_SWITCHING_MODES",
            ErrorCode::ShaMismatch => "SHA_MISMATCH",
            ErrorCode::PullRequestNotOpen => "PULL_REQUEST_NOT_OPEN",
            ErrorCode::WrongBaseBranch => "WRONG_BASE_BRANCH",
            ErrorCode::UploadsNotConfigured => "UPLOADS_NOT_CONFIGURED",
            ErrorCode::UploadAlreadyReceived => "UPLOAD_ALREADY_RECEIVED",
            ErrorCode::OrganizationNotFound => "ORGANIZATION_NOT_FOUND",
            ErrorCode::TestCaseNotFound => "TEST_CASE_NOT_FOUND",
        }
    }
}

/// The class of a domain error, which decides the HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request names a field wrongly (400).
    Invalid,
    /// The thing does not exist, or belongs to someone else (404).
    NotFound,
    /// The thing exists but its state forbids the request (409).
    Conflict,
}

/// A refusal by the domain, with a message fit for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainError {
    pub kind: ErrorKind,
    pub code: ErrorCode,
    pub message: String,
}

impl DomainError {
    /// A field is wrong; the message starts with the field's name.
    pub fn invalid(field: &str, problem: &str) -> Self {
        Self {
            kind: ErrorKind::Invalid,
            code: ErrorCode::InvalidField,
            message: format!("{field} {problem}"),
        }
    }

    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::NotFound,
            code,
            message: message.into(),
        }
    }

    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Conflict,
            code,
            message: message.into(),
        }
    }

    pub fn queue_not_found() -> Self {
        Self::not_found(ErrorCode::QueueNotFound, "queue not found")
    }

    /// The same answer whether another organisation owns the repository or none does.
    pub fn repository_not_found() -> Self {
        Self::not_found(
            ErrorCode::RepositoryNotFound,
            "repository not found: its owner is not linked to this organisation",
        )
    }
}

impl fmt::Display for DomainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DomainError {}
