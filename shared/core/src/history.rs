//! Facts about a queue's past that the live snapshot forgets: when entries restarted, and
//! what the advisor reads of the entries and runs a store keeps as history.
//!
//! An entry counts its restarts (`Entry::restarts`), but not when they happened. A commit
//! compares the counters before and after (`snapshot::entry_diff`) and records each
//! increase as a [`Restart`], which the store keeps as history so that "restarts in the last
//! hour" can be read back.
//!
//! [`PastEntry`] and [`PastRun`] are projections of a stored [`Entry`] and [`TestRun`]: they
//! deserialize from the stored items, so a store can read only their `FIELDS`.

use crate::entry::{Conclusion, Entry, EntryState};
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

/// What the advisor reads of an entry, concluded or still active: a projection of a stored
/// [`Entry`] (it deserializes from one, so a store can read only [`PastEntry::FIELDS`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "StoredEntry")]
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
    /// The attributes of a stored entry this is read from.
    pub const FIELDS: [&str; 12] = [
        "pr",
        "seq",
        "state",
        "pr_facts",
        "submitted_at",
        "ready_at",
        "first_tested_at",
        "concluded_at",
        "ci_runs",
        "restarts",
        "conclusion",
        "last_run",
    ];

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

/// The stored shape of the attributes [`PastEntry`] reads.
#[derive(Deserialize)]
struct StoredEntry {
    pr: PrNumber,
    seq: u64,
    state: EntryState,
    pr_facts: StoredFacts,
    submitted_at: Timestamp,
    ready_at: Option<Timestamp>,
    first_tested_at: Option<Timestamp>,
    concluded_at: Option<Timestamp>,
    #[serde(default)]
    ci_runs: u32,
    #[serde(default)]
    restarts: u32,
    conclusion: Option<Conclusion>,
    last_run: Option<String>,
}

#[derive(Deserialize)]
struct StoredFacts {
    head_sha: Sha,
}

impl From<StoredEntry> for PastEntry {
    fn from(e: StoredEntry) -> Self {
        Self {
            pr: e.pr,
            seq: e.seq,
            state: e.state,
            head_sha: e.pr_facts.head_sha,
            submitted_at: e.submitted_at,
            ready_at: e.ready_at,
            first_tested_at: e.first_tested_at,
            concluded_at: e.concluded_at,
            ci_runs: e.ci_runs,
            restarts: e.restarts,
            reason: e.conclusion.map(|c| c.reason),
            last_run: e.last_run,
        }
    }
}

/// What the advisor reads of a finished test run: a projection of a stored [`TestRun`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
    #[serde(default)]
    pub dependent_prs: Vec<PrNumber>,
}

impl PastRun {
    /// The attributes of a stored run this is read from.
    pub const FIELDS: [&str; 9] = [
        "id",
        "kind",
        "status",
        "reason",
        "created_at",
        "started_at",
        "finished_at",
        "tested",
        "dependent_prs",
    ];

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::PrFacts;
    use crate::run::{LinePlace, RunKind};

    #[test]
    fn a_stored_entry_reads_back_as_its_projection() {
        let mut entry = Entry::submitted("e1".into(), 4, PrFacts::sample(7), Timestamp(10));
        entry.state = EntryState::Failed;
        entry.ready_at = Some(Timestamp(11));
        entry.concluded_at = Some(Timestamp(99));
        entry.ci_runs = 2;
        entry.restarts = 1;
        entry.last_run = Some("3-abc".into());
        entry.conclusion = Some(Conclusion {
            reason: "tests_failed".into(),
            detail: "a required status failed".into(),
        });
        let stored = serde_json::to_value(&entry).unwrap();
        let read: PastEntry = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(read, PastEntry::of(&entry));
        assert_eq!(read.reason.as_deref(), Some("tests_failed"));
        let keys: Vec<&str> = stored
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        for field in PastEntry::FIELDS {
            assert!(keys.contains(&field), "{field} is stored");
        }
    }

    #[test]
    fn a_stored_run_reads_back_as_its_projection() {
        let run = TestRun {
            id: "5-abc".into(),
            kind: RunKind::Main,
            branch: "mq-test/main/5-abc".into(),
            status: RunStatus::Failed,
            created_at: Timestamp(1),
            tested: vec![TestedPr {
                entry_id: "e1".into(),
                pr: 7,
                title: "Change".into(),
                head_sha: Sha::new("abc"),
            }],
            dependent_prs: vec![3],
            chain: Vec::new(),
            base_sha: None,
            sha: None,
            required: None,
            statuses: Vec::new(),
            check_runs: Vec::new(),
            impacted_targets: None,
            impacted_targets_for_tested_prs: None,
            started_at: Some(Timestamp(2)),
            finished_at: Some(Timestamp(3)),
            reason: Some("tests_failed".into()),
            place: LinePlace::default(),
            held: false,
            diverged: false,
            test_pull_request: false,
            bisection_of: None,
        };
        let stored = serde_json::to_value(&run).unwrap();
        let read: PastRun = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(read, PastRun::of(&run));
        let keys: Vec<&str> = stored
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        for field in PastRun::FIELDS {
            assert!(keys.contains(&field), "{field} is stored");
        }
    }
}
