//! A queue entry: one submission of a pull request to a queue.

use crate::git::{Mergeability, PrFacts};
use crate::ids::{PrNumber, Sha};
use crate::priority::Priority;
use crate::time::Timestamp;
use crate::wire_enum;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

wire_enum! {
    /// A queue entry's state (the entry states in `openapi/openapi.json`transitions in
    /// docs/queue-semantics.md §4).
    pub enum EntryState {
        NotReady => "not_ready",
        Pending => "pending",
        Testing => "testing",
        TestsPassed => "tests_passed",
        Merged => "merged",
        Failed => "failed",
        Cancelled => "cancelled",
        PendingFailure => "pending_failure",
    }
}

impl EntryState {
    /// `merged`, `failed` and `cancelled` end an entry's life in the queue.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            EntryState::Merged | EntryState::Failed | EntryState::Cancelled
        )
    }

    pub const fn is_active(self) -> bool {
        !self.is_terminal()
    }
}

/// Most impacted targets one `setImpactedTargets` may name.
pub const MAX_IMPACTED_TARGETS: usize = 4_096;
/// Longest impacted target name, in characters.
pub const MAX_TARGET_LEN: usize = 1024;
/// Most bytes of target names one request may send, all together: a pull request's targets
/// are kept with its entry, in one DynamoDB item (400 KB at most). A longer list is sent as
/// `"ALL"`.
pub const MAX_TARGETS_BYTES: usize = 64 * 1024;

/// The impacted targets of a pull request at one head sha (docs/queue-semantics.md §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImpactedTargets {
    /// Impacts every target (`"ALL"`, alias `"IMPACTS_ALL"`).
    All,
    List(BTreeSet<String>),
}

impl ImpactedTargets {
    /// `ALL` intersects everything; two lists intersect when they share a target.
    pub fn intersects(&self, other: &ImpactedTargets) -> bool {
        match (self, other) {
            (ImpactedTargets::All, _) | (_, ImpactedTargets::All) => true,
            (ImpactedTargets::List(a), ImpactedTargets::List(b)) => !a.is_disjoint(b),
        }
    }

    /// Adds `other`'s targets to these (`ALL` absorbs everything).
    pub fn absorb(&mut self, other: &ImpactedTargets) {
        match (&mut *self, other) {
            (ImpactedTargets::All, _) => {}
            (_, ImpactedTargets::All) => *self = ImpactedTargets::All,
            (ImpactedTargets::List(a), ImpactedTargets::List(b)) => a.extend(b.iter().cloned()),
        }
    }

    /// The targets as `impactedTargets` lists them: `["ALL"]` for everything.
    pub fn to_list(&self) -> Vec<String> {
        match self {
            ImpactedTargets::All => vec!["ALL".to_owned()],
            ImpactedTargets::List(set) => set.iter().cloned().collect(),
        }
    }

    /// The targets a list of [`Self::to_list`] names.
    pub fn from_list(list: &[String]) -> Self {
        match list {
            [all] if all == "ALL" => ImpactedTargets::All,
            _ => ImpactedTargets::List(list.iter().cloned().collect()),
        }
    }
}

/// Impacted targets as uploaded, with the head sha they were uploaded for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadedTargets {
    pub head_sha: Sha,
    pub targets: ImpactedTargets,
    pub uploaded_at: Timestamp,
}

/// Why an entry ended `failed` or `cancelled`, for users and metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conclusion {
    /// A short machine word: `tests_failed`, `timeout`, `merge_conflict`, `cancelled_by_api`,
    /// `pr_closed`, `new_commits`, `base_changed`, `no_required_statuses`, ...
    pub reason: String,
    /// A sentence for the pull request's comment and status check.
    pub detail: String,
}

/// One submission of a pull request to a queue, active or concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Unique per submission; a resubmission after a terminal state gets a new id.
    pub id: String,
    pub pr: PrNumber,
    /// Submission order within the queue: ties between equal priorities go to the lower seq.
    pub seq: u64,
    pub state: EntryState,
    pub state_changed_at: Timestamp,
    pub priority: Priority,
    pub no_batch: bool,
    pub force_enqueued: bool,
    pub submitted_at: Timestamp,
    /// The pull request as the Git host last described it.
    pub pr_facts: PrFacts,
    /// Impacted targets for the current head sha (parallel mode); cleared by a new head.
    pub impacted: Option<UploadedTargets>,
    /// The test run currently testing this entry, if any.
    pub current_run: Option<String>,
    /// The test run that tested this entry last: the current one, or the last one that did
    /// (kept once the entry concludes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    /// Entries ahead this entry's test branch contains (parallel mode), as PR numbers.
    #[serde(default)]
    pub dependent_prs: Vec<PrNumber>,
    /// When the entry first became ready (left `not_ready`).
    pub ready_at: Option<Timestamp>,
    /// When the entry's first test run started.
    pub first_tested_at: Option<Timestamp>,
    /// When the entry reached `merged`, `failed` or `cancelled`.
    pub concluded_at: Option<Timestamp>,
    /// Test runs that included this entry and got their test branch (so set off CI).
    #[serde(default)]
    pub ci_runs: u32,
    /// Times this entry's testing restarted.
    #[serde(default)]
    pub restarts: u32,
    pub conclusion: Option<Conclusion>,
    /// Why the entry is to be cancelled (`pr_closed`, `new_commits`, `base_changed`) when the
    /// Git host said so while its merge was under way: the merge decides, and only if it
    /// does not happen is the entry cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_after_merge: Option<String>,
    /// The queue's comment on the pull request speaks of this entry: its end is said there
    /// even once `commentsEnabled` is off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub commented: bool,
    /// The queue's status on the pull request's head is pending: its end sets it even once
    /// `statusCheckEnabled` is off, so that no status the queue set stays pending (a branch
    /// that requires it could not merge by hand).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub status_pending: bool,
    /// The bisection run this entry passed in, until a main run tests it to a result: until
    /// then it is tested with only the entries that passed with it, so that entries which
    /// fail only together are not batched together again (docs/queue-semantics.md §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_split: Option<String>,
}

/// The readiness object of `getSubmittedPullRequest` (`SubmittedPullRequest` in
/// `openapi/openapi.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    pub requires_impacted_targets: bool,
    pub does_base_branch_match: bool,
    pub has_impacted_targets: bool,
    pub mergeable: bool,
}

impl Entry {
    /// A new submission of the pull request `pr_facts` describes: `not_ready` since `at`, at
    /// the default priority, nothing tested, restarted or concluded yet.
    pub fn submitted(id: String, seq: u64, pr_facts: PrFacts, at: Timestamp) -> Self {
        Entry {
            id,
            pr: pr_facts.number,
            seq,
            state: EntryState::NotReady,
            state_changed_at: at,
            priority: Priority::default_priority(),
            no_batch: false,
            force_enqueued: false,
            submitted_at: at,
            pr_facts,
            impacted: None,
            current_run: None,
            last_run: None,
            dependent_prs: Vec::new(),
            ready_at: None,
            first_tested_at: None,
            concluded_at: None,
            ci_runs: 0,
            restarts: 0,
            conclusion: None,
            cancel_after_merge: None,
            commented: false,
            status_pending: false,
            passed_split: None,
        }
    }

    /// The entry without its impacted targets, most of its size: what a read of many entries
    /// at once (the advisor's window) keeps of each.
    pub fn summary(mut self) -> Self {
        self.impacted = None;
        self
    }

    /// Why the entry ended `failed` or `cancelled` (`tests_failed`, `merge_conflict`, ...).
    pub fn reason(&self) -> Option<&str> {
        self.conclusion.as_ref().map(|c| c.reason.as_str())
    }

    /// Whether the entry's impacted targets are uploaded for its current head.
    pub fn has_impacted_targets(&self) -> bool {
        self.impacted
            .as_ref()
            .is_some_and(|t| t.head_sha == self.pr_facts.head_sha)
    }

    /// Readiness against a queue's branch; `parallel` says whether targets are required.
    pub fn readiness(&self, target_branch: &str, parallel: bool) -> Readiness {
        Readiness {
            requires_impacted_targets: parallel,
            does_base_branch_match: self.pr_facts.base_branch == target_branch,
            has_impacted_targets: self.has_impacted_targets(),
            mergeable: self.pr_facts.mergeability == Mergeability::Mergeable,
        }
    }
}

impl Readiness {
    /// A PR can start testing when its base matches, the host says mergeable, and (when
    /// required) impacted targets are uploaded (`SubmittedPullRequest` in `openapi/openapi.json`).
    pub const fn is_ready(self) -> bool {
        self.does_base_branch_match
            && self.mergeable
            && (!self.requires_impacted_targets || self.has_impacted_targets)
    }
}

#[cfg(test)]
impl Entry {
    /// A pending entry of pull request `pr` (id `e<pr>`, submitted `pr`-th, at time 0), open
    /// and mergeable into `main`, for unit tests to adjust.
    pub(crate) fn sample(pr: PrNumber) -> Self {
        let facts = PrFacts::sample(pr);
        Entry {
            state: EntryState::Pending,
            ..Entry::submitted(format!("e{pr}"), u64::from(pr), facts, Timestamp(0))
        }
    }
}
