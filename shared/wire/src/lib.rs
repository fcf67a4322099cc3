//! The wire format: request bodies and response shapes, with the spec's exact field names.

pub mod advice;
pub mod common;
pub mod dashboard;
pub mod metrics;
pub mod pull_request;
pub mod queue;
pub mod test_health;
pub mod testing;

pub use common::{Int, QueueRequest, QueueTarget, RepoBody};
pub use pull_request::{
    ImpactedTargetsRequest, PrRequest, Submission, SubmitRequest, SubmittedPullRequest,
    TargetsUpload,
};
pub use queue::{EnqueuedPullRequest, QueueSettingsRequest, QueueView, QueueWithEntries};
pub use testing::{TestingDetails, TestingDetailsRequest};
