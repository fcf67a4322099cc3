//! Item keys and attribute names of the DynamoDB layout.
//!
//! - Queues: one partition per queue (`pk` = queue id) holding its live items: `QUEUE`,
//!   `ENTRY#<pr>`, `RUN#<run id>`, `EFFECT#<effect id>`, `LEASE` and `#VERSION` (the
//!   queue's version again, sorted first). One `Query` reads a snapshot. Beside it, the
//!   partition `REDO#<queue id>` holds the parts of large commits' changes,
//!   `REDO#<version>#<token>#<part>` (they expire: see [`super::large_commit`]). Sparse
//!   indexes: `org-index` (`org_key`), `repo-index` (`repo_key`), `work-index` (`work_shard`, only while the queue has work), `sha-index` (`test_sha`, on
//!   runs whose branch exists).
//! - PullRequests: per queue, `PR#<pr>` (latest concluded entry of each PR),
//!   `DONE#<concluded ms>#<entry id>` (conclusion log, expires),
//!   `RESTART#<ms>#<entry id>#<restarts so far>` (restart log, expires) and `TARGETS#<pr>`
//!   (impacted targets last uploaded for the PR, expires).
//! - TestRuns: per queue, finished runs by id; `finished-index` (local) on `finished_ms`.
//! - ApiTokens: tokens by `token_hash` (the SHA-256 of the secret, kind `token`), and the
//!   organisation of each repository owner by `token_hash` = `owner#<host/owner>` (kind
//!   `owner`); `created-index` on (`kind`, `created_at`) lists either.
//! - IdempotencyKeys: by `pk` = `<org>#<endpoint>#<key>`; expires by TTL.

use mq_core::ids::PrNumber;
use mq_core::metrics::Window;
use mq_core::time::Timestamp;

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const VERSION: &str = "version";
pub const ACTIVE_ENTRIES: &str = "active_entries";
pub const ORG_KEY: &str = "org_key";
pub const REPO_KEY: &str = "repo_key";
pub const WORK_SHARD: &str = "work_shard";
pub const TEST_SHA: &str = "test_sha";
pub const FINISHED_MS: &str = "finished_ms";
pub const EXPIRES_AT: &str = "expires_at";
pub const LEASE_OWNER: &str = "lease_owner";
pub const LEASE_UNTIL: &str = "lease_until";
pub const TOKEN_HASH: &str = "token_hash";
pub const KIND: &str = "kind";
pub const CREATED_AT: &str = "created_at";

pub const ORG_INDEX: &str = "org-index";
pub const REPO_INDEX: &str = "repo-index";
pub const WORK_INDEX: &str = "work-index";
pub const SHA_INDEX: &str = "sha-index";
pub const FINISHED_INDEX: &str = "finished-index";
pub const CREATED_INDEX: &str = "created-index";

/// The one partition of `work-index`: the number of queues with work is small.
pub const WORK_SHARD_VALUE: &str = "1";
pub const TOKEN_KIND: &str = "token";
pub const OWNER_KIND: &str = "owner";
/// Owner links share the tokens' key attribute; a token's key is 64 hex digits, never this.
pub const OWNER_KEY_PREFIX: &str = "owner#";

/// History (conclusion log, finished runs) is kept this long.
pub const HISTORY_RETENTION_DAYS: i64 = 30;

pub const QUEUE_SK: &str = "QUEUE";
/// The version of the queue again, in the item read first by a query of its partition: see
/// `read_at_one_version` in `queues.rs`.
pub const VERSION_SK: &str = "#VERSION";
pub const LEASE_SK: &str = "LEASE";
pub const ENTRY_PREFIX: &str = "ENTRY#";
pub const RUN_PREFIX: &str = "RUN#";
pub const EFFECT_PREFIX: &str = "EFFECT#";

/// The partition of the Queues table holding the parts of queue `queue_id`'s large commits:
/// apart from its live items, which a snapshot reads whole. Queue ids start with a host in
/// lowercase, never with `REDO#`.
pub fn redo_pk(queue_id: &str) -> String {
    format!("REDO#{queue_id}")
}

pub fn entry_sk(pr: PrNumber) -> String {
    format!("{ENTRY_PREFIX}{pr:010}")
}

pub fn run_sk(run_id: &str) -> String {
    format!("{RUN_PREFIX}{run_id}")
}

pub fn effect_sk(effect_id: &str) -> String {
    format!("{EFFECT_PREFIX}{effect_id}")
}

pub fn latest_pr_sk(pr: PrNumber) -> String {
    format!("PR#{pr:010}")
}

pub fn targets_sk(pr: PrNumber) -> String {
    format!("TARGETS#{pr:010}")
}

pub fn done_sk(at: Timestamp, entry_id: &str) -> String {
    format!("DONE#{:013}#{entry_id}", at.millis().max(0))
}

/// Inclusive bounds of `DONE#` keys for conclusions in `[from, to)`.
pub fn done_range(window: Window) -> (String, String) {
    time_range("DONE", window)
}

pub fn restart_sk(at: Timestamp, entry_id: &str, total: u32) -> String {
    format!("RESTART#{:013}#{entry_id}#{total:010}", at.millis().max(0))
}

/// Inclusive bounds of `RESTART#` keys for restarts in `[from, to)`.
pub fn restart_range(window: Window) -> (String, String) {
    time_range("RESTART", window)
}

/// The first and last sort keys `<prefix>#<13-digit millis>#…` of the items timed in `window`.
fn time_range(prefix: &str, window: Window) -> (String, String) {
    let last = window.to.millis().saturating_sub(1).max(0);
    (
        format!("{prefix}#{:013}#", window.from.millis().max(0)),
        format!("{prefix}#{last:013}#~"),
    )
}

/// Epoch seconds after which a history item expires.
pub fn expires_at(at: Timestamp) -> i64 {
    at.millis() / 1000 + HISTORY_RETENTION_DAYS * 86_400
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_number_and_time() {
        assert!(entry_sk(9) < entry_sk(10));
        assert!(done_sk(Timestamp(999), "b") < done_sk(Timestamp(1000), "a"));
        let (lo, hi) = done_range(Window::between(Timestamp(1000), Timestamp(2000)));
        assert!(lo <= done_sk(Timestamp(1000), "0000") && done_sk(Timestamp(1999), "ffff") <= hi);
        assert!(done_sk(Timestamp(2000), "0") > hi);
        assert!(done_sk(Timestamp(999), "f") < lo);
    }

    #[test]
    fn restart_keys_sort_by_time_within_their_own_range() {
        let (lo, hi) = restart_range(Window::between(Timestamp(1000), Timestamp(2000)));
        let first = restart_sk(Timestamp(1000), "e-1", 1);
        let last = restart_sk(Timestamp(1999), "zz", 4_000_000_000);
        assert!(lo <= first && first < last && last <= hi);
        assert!(restart_sk(Timestamp(2000), "a", 1) > hi);
        assert!(restart_sk(Timestamp(999), "z", 9) < lo);
        assert!(restart_sk(Timestamp(5), "e", 9) < restart_sk(Timestamp(5), "e", 10));
        let (done_lo, done_hi) = done_range(Window::between(Timestamp(0), Timestamp(i64::MAX)));
        assert!(
            !(done_lo <= first && first <= done_hi),
            "no overlap with the conclusion log"
        );
    }
}
