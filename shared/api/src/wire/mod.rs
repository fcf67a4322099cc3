//! The wire format: request bodies and response shapes, with the spec's exact field names.

pub mod common;
pub mod metrics;
pub mod queue;
pub mod test_health;

pub use common::{Int, QueueRequest, QueueTarget, RepoBody};
pub use queue::{EnqueuedPullRequest, QueueSettingsRequest, QueueView, QueueWithEntries};
