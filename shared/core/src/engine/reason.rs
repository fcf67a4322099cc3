//! Failure reasons of runs, given to the entries that fail because of them.

pub const TESTS_FAILED: &str = "tests_failed";
pub const TIMEOUT: &str = "timeout";
pub const NO_REQUIRED_STATUSES: &str = "no_required_statuses";
pub const MERGE_CONFLICT: &str = "merge_conflict";
pub const BRANCH_ERROR: &str = "test_branch_error";
pub const BRANCH_PUSHED: &str = "test_branch_pushed";
