//! What happens to a queue: commands from the API, facts from the Git host, effect outcomes,
//! and the tick.

use crate::entry::ImpactedTargets;
use crate::git::{CheckRunReport, PrFacts, RequiredStatuses, StatusReport};
use crate::ids::{PrNumber, Sha};
use crate::priority::Priority;
use crate::settings::SettingsPatch;
use crate::time::Timestamp;
use crate::tuning::Advised;
use serde::{Deserialize, Serialize};

/// What the engine may not find out by itself: the time, and a seed for new ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    pub now: Timestamp,
    /// Ids the event creates (entries, runs, effects) derive from this seed and the queue's
    /// counters, so the same inputs give the same ids.
    pub seed: u64,
}

/// Why an entry is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// `cancelPullRequest`.
    Api,
    /// The `/service cancel` comment command.
    Comment,
    PrClosed,
    NewCommits,
    BaseChanged,
}

/// One input to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `submitPullRequest` or the `/service merge` comment command; `pr` is what the Git host
    /// said about the pull request at submission. Resubmitting an active entry updates its
    /// priority and `no_batch` in place; a `priority` that was defaulted (none given) and a
    /// `no_batch` of `None` keep the entry's (a new entry takes the default, and `false`).
    ///
    /// `head_checks_passed` says whether every required status of the pull request's own head
    /// passed (the shell reads them from the Git host); only direct merge
    /// (`directMergeMode: always`) uses it, together with `pr.based_on_target_head`.
    Submit {
        pr: PrFacts,
        priority: Priority,
        no_batch: Option<bool>,
        force: bool,
        head_checks_passed: bool,
    },
    Cancel {
        pr: PrNumber,
        reason: CancelReason,
    },
    /// `restartTestsOnPullRequest`: re-run the entry's group in place.
    Restart {
        pr: PrNumber,
    },
    /// `setImpactedTargets`: `head_sha` must be the entry's current head.
    SetImpactedTargets {
        pr: PrNumber,
        head_sha: Sha,
        targets: ImpactedTargets,
    },
    /// `updateQueue`: settings, requested state, mode.
    UpdateSettings {
        patch: SettingsPatch,
    },
    /// The Git host describes a pull request anew: title, mergeability, a new head sha, closed,
    /// base changed, draft. The engine compares with what it knew.
    PrUpdated {
        pr: PrFacts,
    },
    /// The target branch moved by a push the queue did not make.
    TargetMoved {
        sha: Sha,
    },
    /// A commit status arrived for a commit (a test branch's tip, usually).
    StatusReported {
        sha: Sha,
        status: StatusReport,
    },
    /// A check run arrived for a commit.
    CheckRunReported {
        sha: Sha,
        check: CheckRunReport,
    },
    /// An effect was executed; `outcome` is what the Git host answered.
    EffectSucceeded {
        effect_id: String,
        outcome: EffectOutcome,
    },
    /// An effect could not be executed; `permanent` failures are not retried. `retry_after_ms`
    /// is how long the Git host asked to wait (a rate limit until its reset): the effect is
    /// not tried again before.
    EffectFailed {
        effect_id: String,
        error: String,
        permanent: bool,
        retry_after_ms: Option<i64>,
    },
    /// A merge was not sent: its queue was found paused just before (a pause answered after
    /// the merge's step committed). A merge in its first lease is withdrawn until the queue
    /// runs (see `Work::merge_withdrawn`).
    MergeWithdrawn {
        effect_id: String,
    },
    /// The tick asked the Git host whether a merge in the outbox landed, at `read_at`, and
    /// it had not. On a paused queue, a merge that nothing could have been sending then (its
    /// lease, or its wait before a retry, was over) is withdrawn as if found paused before
    /// it was sent: the tick does not send merges while the queue is paused, so it would
    /// otherwise stay in flight for the whole pause (see `Work::merge_not_landed`). A merge
    /// given up after `MAX_ATTEMPTS` failures fails its pull requests, with the Git host's last
    /// answer.
    MergeNotLanded {
        effect_id: String,
        read_at: Timestamp,
    },
    /// What the test branch of run `run_id` points at on the Git host now (`None`: it does
    /// not exist), as the tick reads it for runs in progress. A branch gone, or at another
    /// commit than the one the run recorded, is built again.
    BranchObserved {
        run_id: String,
        sha: Option<Sha>,
    },
    /// The tick's auto-tuning check (docs/queue-semantics.md §13): `advised` is what the
    /// advisor found worth changing to, if anything. The engine records the check, and makes
    /// the change when the check before advised the same.
    AutoTune {
        advised: Option<Advised>,
    },
    /// The schedule: timeouts, batching waits, effect retries, readiness refreshes.
    Tick,
}

/// The Git host's answer to an effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum EffectOutcome {
    /// Done, nothing to report (comments, status checks, deleted branches, cancelled runs).
    Done,
    /// The test branch exists at `sha`, built on `base_sha`; `required` is what the
    /// repository's sources require (the queue's own list, when set, wins in the engine).
    BranchCreated {
        sha: Sha,
        base_sha: Sha,
        required: RequiredStatuses,
    },
    /// Merging `pr` into the test branch conflicted.
    BranchConflict { pr: PrNumber },
    /// `pr`'s head is already on the target the test branch was to be built on: it was merged
    /// outside the queue (by hand, or by another tool). No branch was built.
    MergedOutside { pr: PrNumber },
    /// The merge put the target at `target_sha`; `tip` when others pushed on top of it since
    /// (the target is at `tip` now).
    Merged {
        target_sha: Sha,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tip: Option<Sha>,
    },
    /// The Git host refused the merge; `tip` when the target is no longer where the merge
    /// expected it (someone pushed while the merge was under way: a push the queue did not
    /// act on then).
    MergeRefused {
        refusal: MergeRefusal,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tip: Option<Sha>,
    },
    /// The pull request as it is now (answer to a refresh).
    PullRequest { pr: PrFacts },
    /// What CI had reported on a test branch's tip (answer to a fetch of checks).
    Checks {
        statuses: Vec<StatusReport>,
        check_runs: Vec<CheckRunReport>,
    },
}

/// Why the Git host refused a merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MergeRefusal {
    /// The target is no longer at the expected sha.
    TargetMoved { actual: Sha },
    /// A pull request's head changed since it was tested.
    PrChanged { pr: PrNumber },
    /// A pull request was closed since it was tested.
    PrClosed { pr: PrNumber },
    /// A pull request was merged outside the queue since it was tested.
    PrMerged { pr: PrNumber },
    /// The host could not merge (conflict, protection, permissions); `detail` says why.
    Rejected {
        pr: Option<PrNumber>,
        detail: String,
    },
}
