//! The queue engine: a pure state machine `(snapshot, event, context) -> transition`.
//!
//! [`step`] is the only entry point ([`step_owned`] is the same on a snapshot the caller
//! gives up, without copying it). It never reads a clock, draws random numbers or does
//! I/O: time and the seed for new ids come in [`Ctx`], so the same snapshot, event and
//! context always give the same transition.
//!
//! # How the shell drives it
//!
//! Load the snapshot, call [`step`], commit `transition.snapshot` with the version check,
//! then execute `transition.effects` on the Git host and feed each result back as
//! [`Event::EffectSucceeded`] or [`Event::EffectFailed`] (another step and commit). Effects
//! stay in `snapshot.outbox` until their result is fed back; [`Event::Tick`] emits again
//! those whose lease or backoff ran out. CI results arrive as [`Event::StatusReported`] and
//! [`Event::CheckRunReported`] keyed by the test branch's sha. A refusal ([`DomainError`]:
//! 409 for a pull request not active, not testing or being merged, a queue draining or
//! switching modes, impacted targets for another sha) changes nothing.
//!
//! # The line
//!
//! Active entries are `not_ready` (readiness not met), `pending` (waiting for a test),
//! or in a *group* of the line: a main test run in `snapshot.runs` holding one pull request,
//! or a batch. A group's test branch (`mq-test/<branch>/<run id>`) holds the target head,
//! the groups it depends on (every group ahead in single mode; the groups ahead with
//! intersecting impacted targets, transitively, in parallel mode) and then the group, so a
//! pass proves the target's future state. The rules, module by module:
//!
//! - `testing`: what starts next (priority, then submission; urgent preemption; batching)
//!   and at most `concurrency` main runs in flight;
//! - `results`: required statuses and their sources, statuses and check runs folded into
//!   pass/fail, `testingTimeoutMinutes`;
//! - `failure`: pending failure, `pendingFailureDepth`, optimistic merge;
//! - `bisect`: bisection of failed batches, `bisectionConcurrency`, skipping redundant tests;
//! - `merging`: merges in line order, one in flight, direct merge outcomes;
//! - `line`: order, dependencies, and restarts when a branch no longer predicts the target;
//! - `intake`: submit, cancel, restart, impacted targets, pull request facts, outside pushes;
//! - `config`: `updateQueue`, paused / draining / switching_modes;
//! - `outbox`: effect results, retries and the tick;
//! - [`view`]: what the API shows (queue order, an entry with its readiness, a test run).
//!
//! After every event the engine *settles*: readiness, the end of a mode switch, the
//! concurrency limit, held restarts, new groups, pending failures, bisections and the next
//! merge are re-evaluated until nothing changes.
//!
//! # Decisions in the details (the rules are in docs/queue-semantics.md)
//!
//! - Submissions: a closed pull request is refused (409 `PULL_REQUEST_NOT_OPEN`); one for
//!   another base branch is accepted as `not_ready`. Resubmitting with a new head cancels the
//!   old entry (`new_commits`) and creates a new one. Drafts are not ready. A `pending` entry
//!   whose readiness is lost (not mergeable any more, or a switch to parallel mode without
//!   targets) goes back to `not_ready`.
//! - Refusals: no active entry is 409 `PULL_REQUEST_NOT_ACTIVE` (the shell, which reads
//!   history, answers 404 first for a pull request never submitted); restarting an entry that
//!   is not `testing` or `pending_failure` is 409 `PULL_REQUEST_NOT_TESTING`; cancelling an
//!   entry whose merge is under way is 409 `PULL_REQUEST_MERGING`.
//! - Restart: the group re-runs in its place with the same pull requests ahead (those merged
//!   since are in the target). A restart of a `pending_failure` group while every slot is
//!   busy is *held*: its entries are `testing` and its branch is created when a slot frees,
//!   before any new group. A paused queue holds restarts until resumed; draining and
//!   switching modes do not (the group is in line, not new).
//! - Mode switches end when the line is empty (every group tested in the old mode merged,
//!   failed or dropped back to `pending`), not merely when nothing is testing: groups of
//!   the new mode are never built on groups of the old one. A paused queue that switches
//!   modes stays paused: it starts and merges nothing until resumed (see `config`).
//! - Urgent entries are never batched. Every group behind an urgent entry that would contain
//!   it (all in single mode; intersecting targets in parallel mode) restarts on top of it —
//!   passed and pending-failure groups too, as their tested state no longer predicts the
//!   target — except groups whose merge is under way.
//! - A lower `concurrency` sends the groups testing furthest back to `pending`; a resubmission
//!   changes priority and `noBatch` in place: an entry in a group keeps its place there, the
//!   new values count from when it waits again.
//! - Batching takes the consecutive batchable entries at the head of the waiting order; a
//!   batch still forming does not hold back `noBatch` (or urgent) entries behind it.
//!   Entries coming back from a restart or a bisection do not wait again (their wait counts
//!   from when they first became ready).
//! - A group whose branch conflicted keeps its testing slot while its failure waits for the
//!   groups ahead: every group started on top of it would conflict at once and free its slot
//!   again, pulling the whole waiting line into groups that cannot pass.
//! - Pending failure: the window is the first `pendingFailureDepth` groups behind that contain
//!   the failed group; it also closes when all of it finished and no group can start behind
//!   it now (otherwise the line would stall).
//! - Adaptive pending failure (`adaptivePendingFailure`): with no flake observed for seven
//!   days, the window is skipped (a failed group whose groups ahead all passed fails at
//!   once). A flake is what the engine can see for itself: a failed group cleared by a pass
//!   behind it, or a head that failed its tests passing a main run once submitted again. The
//!   queue item keeps the time of the last one and the last few failed heads.
//! - Bisection splits are tested on what was ahead of the failed batch; they are diagnostic
//!   (a passing split is tested again in line). A split waits while a group it was tested on
//!   is tested again, also after a push outside the queue restarted that group.
//! - Merges: one at a time; everything up to the furthest passed group whose branch contains
//!   the front passed group merges in one effect. In parallel mode, once the target received
//!   merges a run does not contain, its merge carries no tested sha (`diverged`).
//! - A pull request closed, pushed to or retargeted while its merge is under way is
//!   cancelled only if that merge does not happen (refused or given up): the Git host may
//!   already have merged it, and the entry must say what the target holds. A resubmission
//!   with a new head during the merge is 409 `PULL_REQUEST_MERGING`, as a cancel is.
//! - A `TargetMoved` event while a merge is in flight is ignored (it may be that merge); a
//!   foreign push then shows as the merge's `TargetMoved` refusal, or as the tip a landed
//!   merge's outcome carries, which restarts everything.
//! - Direct merge is decided at submission. In parallel mode an entry has no targets yet at
//!   submission, so "nothing it depends on" means nothing active at all.
//! - `dependentPrs` of a run lists the pull requests ahead merged into its branch in both
//!   modes (in single mode, every group ahead).
//! - New impacted targets for the same head of an entry already in a group apply to groups
//!   formed later; branches in flight are not rebuilt.
//! - Statuses and check runs for unknown shas are ignored; after a branch is created the
//!   engine asks for the checks already reported on it ([`Effect::FetchChecks`]).
//! - Effects are retried after 1, 2, 4, ... minutes (at most an hour); after
//!   [`MAX_ATTEMPTS`] failures, or a permanent one, the intent fails.

mod bisect;
mod config;
mod events;
mod failure;
mod intake;
pub mod invariants;
mod line;
mod merging;
mod notify;
mod outbox;
pub mod reason;
mod results;
mod testing;
pub mod view;
mod work;

pub use crate::effects::{BranchPr, Effect, PendingEffect};
pub use crate::snapshot::Transition;
pub use events::{CancelReason, Ctx, EffectOutcome, Event, MergeRefusal};
pub use merging::most_prs_per_merge;
pub use outbox::{MAX_ATTEMPTS, backoff_ms};
pub use results::{MAX_OTHER_REPORTS, checks_verdict, required_verdict, run_verdict};
pub use work::{EFFECT_LEASE_MS, TEST_BRANCH_PREFIX};

use crate::error::DomainError;
use crate::snapshot::QueueSnapshot;
use work::Work;

/// Applies one event to a queue. A refusal changes nothing.
pub fn step(snapshot: &QueueSnapshot, event: &Event, ctx: Ctx) -> Result<Transition, DomainError> {
    step_owned(snapshot.clone(), event, ctx).map_err(|(_, e)| e)
}

/// [`step`] on a snapshot the caller gives up, which saves copying it (the simulator steps
/// millions of times). A refusal hands the snapshot back unchanged: every refusal is decided
/// before anything changes.
pub fn step_owned(
    snapshot: QueueSnapshot,
    event: &Event,
    ctx: Ctx,
) -> Result<Transition, (Box<QueueSnapshot>, DomainError)> {
    let mut work = Work::new(snapshot, ctx);
    if let Err(e) = work.apply(event) {
        return Err((Box::new(work.s), e));
    }
    work.settle();
    Ok(work.finish())
}

/// Rounds of settling after which the engine stops: each round makes progress, so this
/// only bounds a step if a rule were to oscillate (debug builds then panic).
const MAX_SETTLE_ROUNDS: usize = 1024;

impl Work {
    fn apply(&mut self, event: &Event) -> Result<(), DomainError> {
        match event {
            Event::Submit {
                pr,
                priority,
                no_batch,
                force,
                head_checks_passed,
            } => self.submit(&intake::Submission {
                pr,
                priority: *priority,
                no_batch: *no_batch,
                force: *force,
                head_checks_passed: *head_checks_passed,
            }),
            Event::Cancel { pr, reason } => self.cancel(*pr, *reason),
            Event::Restart { pr } => self.restart(*pr),
            Event::SetImpactedTargets {
                pr,
                head_sha,
                targets,
            } => self.set_impacted_targets(*pr, head_sha, targets),
            Event::UpdateSettings { patch } => self.update_queue(patch),
            Event::AutoTune { advised } => self.auto_tune(advised.as_ref()),
            Event::PrUpdated { pr } => {
                self.pr_updated(pr);
                Ok(())
            }
            Event::TargetMoved { sha } => {
                self.target_moved(sha);
                Ok(())
            }
            Event::StatusReported { sha, status } => {
                self.status_reported(sha, status);
                Ok(())
            }
            Event::CheckRunReported { sha, check } => {
                self.check_reported(sha, check);
                Ok(())
            }
            Event::EffectSucceeded { effect_id, outcome } => {
                self.effect_succeeded(effect_id, outcome);
                Ok(())
            }
            Event::EffectFailed {
                effect_id,
                error,
                permanent,
                retry_after_ms,
            } => {
                self.effect_failed(effect_id, error, *permanent, *retry_after_ms);
                Ok(())
            }
            Event::MergeWithdrawn { effect_id } => {
                self.merge_withdrawn(effect_id);
                Ok(())
            }
            Event::MergeNotLanded { effect_id, read_at } => {
                self.merge_not_landed(effect_id, *read_at);
                Ok(())
            }
            Event::BranchObserved { run_id, sha } => {
                self.branch_observed(run_id, sha.as_ref());
                Ok(())
            }
            Event::Tick => {
                self.tick();
                Ok(())
            }
        }
    }

    /// Re-evaluates every rule until nothing changes.
    fn settle(&mut self) {
        for _ in 0..MAX_SETTLE_ROUNDS {
            let mut changed = self.cancel_deferred();
            changed |= self.finish_switch();
            if std::mem::take(&mut self.readiness_stale) {
                changed |= self.refresh_readiness();
            }
            changed |= self.enforce_concurrency();
            changed |= self.enforce_bisection_concurrency();
            changed |= self.start_held();
            changed |= self.fail_without_window();
            changed |= self.fill();
            changed |= self.resolve_failures();
            changed |= self.run_bisections();
            changed |= self.merge_next();
            if !changed {
                return;
            }
        }
        debug_assert!(false, "the engine did not settle");
    }
}
