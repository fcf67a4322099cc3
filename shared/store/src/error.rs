//! Storage errors, in terms the application service can act on.

use std::time::Duration;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The item was changed by someone else since it was read (version check failed).
    #[error("version conflict")]
    Conflict,
    /// A create found the item already there.
    #[error("already exists")]
    AlreadyExists,
    /// A queue delete found active entries.
    #[error("queue has active entries")]
    NotEmpty,
    /// The item to change does not exist.
    #[error("not found")]
    NotFound,
    /// The store is throttling or unreachable; retry after the hint.
    #[error("store unavailable: {message}")]
    Unavailable {
        message: String,
        retry_after: Option<Duration>,
    },
    /// Anything else: a bug, a malformed item, a rejected request.
    #[error("store failure: {0}")]
    Internal(String),
}

impl StoreError {
    pub fn internal(e: impl std::fmt::Display) -> Self {
        Self::Internal(e.to_string())
    }

    /// Whether retrying the same request later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Conflict | StoreError::Unavailable { .. })
    }
}
