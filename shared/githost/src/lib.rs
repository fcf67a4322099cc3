//! The Git host: what the queue reads from and does to the repositories it serves.
//!
//! [`port::GitHost`] is the contract, in the domain's words (facts in, effects out). Adapters
//! implement it: a local one on real git repositories, and GitHub.

pub mod error;
pub mod port;

pub use error::{HostError, HostResult};
pub use port::{
    CommitChecks, GitHost, MergeOutcome, MergeRequest, StatusUpdate, TestBranchOutcome,
    TestBranchRequest,
};
