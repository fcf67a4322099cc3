//! The Git host: what the queue reads from and does to the repositories it serves.
//!
//! [`port::GitHost`] is the contract, in the domain's words (facts in, effects out). Adapters
//! implement it: [`local::LocalGitHost`] on real git repositories, and GitHub (`github`,
//! feature `github`: the REST client, which only the deployed functions need). [`webhook`]
//! turns the host's deliveries into facts for the queues. `faults::FaultyGitHost` (feature
//! `faults`, for tests only) wraps a host and fails some of its calls.

pub mod comment;
pub mod error;
#[cfg(feature = "faults")]
pub mod faults;
#[cfg(feature = "github")]
pub mod github;
pub mod local;
pub mod pins;
pub mod port;
pub mod repo_config;
pub mod secret;
pub mod webhook;

mod clock;
mod github_wire;
mod landed;
#[cfg(feature = "github")]
mod squash;
mod sync;
mod tested_chain;
mod validate;

pub use error::{HostError, HostResult};
pub use port::{
    CommandComment, CommitChecks, GitHost, MergeOutcome, MergeRequest, StatusUpdate,
    TestBranchOutcome, TestBranchRequest, TestPullRequest,
};
pub use secret::SecretSource;
