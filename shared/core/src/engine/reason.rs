//! Reasons entries leave the queue: failure reasons of runs, given to the entries that fail
//! because of them, and a cancellation the comment names apart.

pub const TESTS_FAILED: &str = "tests_failed";
pub const TIMEOUT: &str = "timeout";
pub const NO_REQUIRED_STATUSES: &str = "no_required_statuses";
pub const MERGE_CONFLICT: &str = "merge_conflict";
pub const BRANCH_ERROR: &str = "test_branch_error";
pub const BRANCH_PUSHED: &str = "test_branch_pushed";

/// A merge the Git host refused, or gave up on.
pub const MERGE_FAILED: &str = "merge_failed";

/// An entry cancelled because the Git host says its pull request is merged, and this queue
/// did not merge it.
pub const PR_MERGED: &str = "pr_merged";
