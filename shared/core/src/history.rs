//! Facts about a queue's past that the live snapshot forgets: when entries restarted, and
//! what the advisor reads of the entries and runs a store keeps as history.
//!
//! An entry counts its restarts (`Entry::restarts`), but not when they happened. A commit
//! compares the counters before and after (`snapshot::entry_diff`) and records each
//! increase as a [`Restart`], which the store keeps as history so that "restarts in the last
//! hour" can be read back.
//!
//! [`PastEntry`] and [`PastRun`] are what the advisor reads of an [`Entry`] and a [`TestRun`]:
//! the simulator and the evaluation build them directly, a store's history gives them `of`
//! its items.

use crate::entry::{Entry, EntryState};
use crate::ids::{PrNumber, Sha};
use crate::run::{RunKind, RunStatus, TestRun, TestedPr};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One or more restarts of an entry's testing, recorded by one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restart {
    pub entry_id: String,
    pub pr: PrNumber,
    /// When the commit that recorded the restart happened.
    pub at: Timestamp,
    /// How many restarts this commit added (usually 1).
    pub count: u32,
    /// The entry's restart counter afterwards: unique per entry, so it keys the record.
    pub total: u32,
}

/// What the advisor reads of an entry, concluded or still active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastEntry {
    pub pr: PrNumber,
    /// The entry's submission order in its queue.
    pub seq: u64,
    pub state: EntryState,
    /// The head it was submitted with.
    pub head_sha: Sha,
    pub submitted_at: Timestamp,
    pub ready_at: Option<Timestamp>,
    pub first_tested_at: Option<Timestamp>,
    pub concluded_at: Option<Timestamp>,
    /// Test runs that included it.
    pub ci_runs: u32,
    pub restarts: u32,
    /// Why it ended `failed` or `cancelled` (`tests_failed`, `merge_conflict`, ...).
    pub reason: Option<String>,
    /// The run that tested it last.
    pub last_run: Option<String>,
}

impl PastEntry {
    pub fn of(entry: &Entry) -> Self {
        Self {
            pr: entry.pr,
            seq: entry.seq,
            state: entry.state,
            head_sha: entry.pr_facts.head_sha.clone(),
            submitted_at: entry.submitted_at,
            ready_at: entry.ready_at,
            first_tested_at: entry.first_tested_at,
            concluded_at: entry.concluded_at,
            ci_runs: entry.ci_runs,
            restarts: entry.restarts,
            reason: entry.conclusion.as_ref().map(|c| c.reason.clone()),
            last_run: entry.last_run.clone(),
        }
    }
}

/// What the advisor reads of a finished test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastRun {
    pub id: String,
    pub kind: RunKind,
    pub status: RunStatus,
    /// Why it failed or was cancelled (`tests_failed`, `timeout`, `merge_conflict`,
    /// `restart`, ...).
    pub reason: Option<String>,
    pub created_at: Timestamp,
    /// When its branch was built (testing started), and when it finished.
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    /// The pull requests it tested, with their heads.
    pub tested: Vec<TestedPr>,
    /// The pull requests ahead its branch held.
    pub dependent_prs: Vec<PrNumber>,
}

impl PastRun {
    pub fn of(run: &TestRun) -> Self {
        Self {
            id: run.id.clone(),
            kind: run.kind,
            status: run.status,
            reason: run.reason.clone(),
            created_at: run.created_at,
            started_at: run.started_at,
            finished_at: run.finished_at,
            tested: run.tested.clone(),
            dependent_prs: run.dependent_prs.clone(),
        }
    }
}
