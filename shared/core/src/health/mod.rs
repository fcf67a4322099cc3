//! Test health (docs/queue-semantics.md §9): which tests are flaky or broken, judged from their
//! results, and which are quarantined. Pure functions over values; the shell stores and loads them.
//!
//! - [`identity`]: a test case's stable id (UUID v5 of repository, file, classname, parent
//!   suite, name, variant).
//! - [`settings`]: per-repository quarantine switches and classification thresholds.
//! - [`history`]: the compact record of a test's recent results.
//! - [`classify`](mod@classify): the status rules (BROKEN, FLAKY, HEALTHY) and their recovery.
//! - [`test_case`](mod@test_case): a test case's summary, updated by each result.
//! - [`quarantine`]: overrides and the quarantine decision.
//! - [`codeowners`]: owners of a file from CODEOWNERS text.
//! - [`upload`]: uploads that are infrastructure failures rather than evidence.

pub mod classify;
pub mod codeowners;
pub mod history;
pub mod identity;
pub mod quarantine;
pub mod settings;
pub mod test_case;
pub mod upload;

#[cfg(test)]
mod scenarios;

pub use classify::{HealthStatus, StatusKind, Verdict, classify};
pub use history::{Outcome, PrFailure, ResultRecord};
pub use identity::{TestIdentity, test_case_id};
pub use quarantine::QuarantineOverride;
pub use settings::{RepoHealthSettings, Thresholds};
pub use test_case::{NewResult, TestCase};
pub use upload::{UploadMetadata, UploadSummary, upload_key};
