//! The storage port and its two adapters.
//!
//! [`port`] declares what the application needs; [`memory::MemoryStore`] keeps it in process
//! (the local gateway's default, fast tests), `dynamo::DynamoStore` (feature `dynamodb`) in DynamoDB. Both pass the
//! same contract suite (`tests/contract`). `faults::FaultyStore` (feature `faults`, for tests
//! only) wraps either and injects the errors DynamoDB gives under load, for tests of how the
//! service copes.

pub mod codeowners;
#[cfg(feature = "dynamodb")]
pub mod dynamo;
pub mod error;
#[cfg(any(test, feature = "faults"))]
pub mod faults;
pub mod history;
pub mod memory;
mod order;
pub mod port;
pub mod tables;

#[cfg(feature = "dynamodb")]
pub use dynamo::DynamoStore;
pub use error::StoreError;
#[cfg(any(test, feature = "faults"))]
pub use faults::{FaultCounts, FaultKind, FaultyStore};
pub use history::HistoryStore;
pub use memory::MemoryStore;
pub use port::{Claim, IdempotencyRecord, IdempotencyStore, MetricsFacts, StoredResponse};
pub use port::{
    HealthScope, PageCursor, RawResult, TestHealthStore, TestList, UploadRecord, UploadState,
};
pub use port::{OwnerLink, OwnerStore};
pub use port::{QueueStore, RunLocation, Store, StoreResult, TokenRecord, TokenStore};
pub use tables::TableNames;
