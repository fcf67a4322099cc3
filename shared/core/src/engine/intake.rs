//! Commands and facts about pull requests: submit, cancel, restart, impacted targets, what
//! the Git host says about a pull request, and the target branch moving outside the queue
//! (docs/queue-semantics.md §3, §4, §7, §8).

use super::CancelReason;
use super::work::Work;
use super::{BranchPr, Effect};
use crate::entry::{Entry, EntryState, ImpactedTargets, UploadedTargets};
use crate::error::{DomainError, ErrorCode};
use crate::git::{Mergeability, PrFacts, PrState};
use crate::ids::{PrNumber, Sha};
use crate::priority::Priority;
use crate::run::{RunKind, RunStatus};
use crate::settings::{DirectMergeMode, accepts_submissions};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Why an entry whose pull request conflicts with the target fails.
const CONFLICTS_WITH_TARGET: &str = "conflicts_with_target";

/// A submission, as the engine receives it.
pub(super) struct Submission<'a> {
    pub pr: &'a PrFacts,
    pub priority: Priority,
    pub no_batch: Option<bool>,
    pub force: bool,
    pub head_checks_passed: bool,
}

impl Work {
    /// Submits a pull request, or updates an active entry's priority and `noBatch`, and what
    /// the Git host says of it now (a draft marked ready, a review given: see
    /// [`Work::pr_updated`]). A submission that gives no priority (or no `noBatch`) keeps
    /// what an active entry has (also when a new head replaces the entry).
    pub fn submit(&mut self, sub: &Submission<'_>) -> Result<(), DomainError> {
        accepts_submissions(self.s.queue.state)?;
        if sub.pr.state != PrState::Open {
            return Err(DomainError::conflict(
                ErrorCode::PullRequestNotOpen,
                format!("pull request {} is not open", sub.pr.number),
            ));
        }
        if self.landed_closing(sub.pr.number, &sub.pr.head_sha) {
            return Err(DomainError::conflict(
                ErrorCode::PullRequestNotOpen,
                format!(
                    "pull request {} was merged by the queue at this head; the Git host has not \
                     closed it yet",
                    sub.pr.number
                ),
            ));
        }
        let mut priority = sub.priority;
        let mut no_batch = sub.no_batch.unwrap_or(false);
        if let Some(e) = self.entry(sub.pr.number) {
            if sub.priority.defaulted {
                priority = e.priority;
            }
            no_batch = sub.no_batch.unwrap_or(e.no_batch);
            if e.pr_facts.head_sha == sub.pr.head_sha {
                let e = self.entry_mut(sub.pr.number).expect("entry exists");
                e.priority = priority;
                e.no_batch = no_batch;
                self.pr_updated(sub.pr);
                if self.entry(sub.pr.number).is_some() {
                    return Ok(());
                }
            } else {
                self.refuse_while_merging(sub.pr.number)?;
                self.remove_entries(&[sub.pr.number], EntryState::Cancelled, "new_commits");
            }
        }
        let seq = self.s.queue.engine.next_seq;
        self.s.queue.engine.next_seq += 1;
        let entry = Entry {
            priority,
            no_batch,
            force_enqueued: sub.force,
            ..Entry::submitted(self.next_entry_id(seq), seq, sub.pr.clone(), self.now)
        };
        self.s.entries.push(Arc::new(entry));
        self.entries_changed();
        self.refresh_readiness();
        self.notify_queued(sub.pr.number);
        if sub.head_checks_passed && self.direct_merge_applies(sub.pr.number) {
            self.direct_merge(sub.pr.number);
        }
        Ok(())
    }

    /// docs/queue-semantics.md §8: with `directMergeMode: always`, a ready pull request based on
    /// the target head, whose own required statuses passed, merges at once when nothing is ahead
    /// of it (in parallel mode, when nothing it depends on is in line or waiting; without uploaded
    /// targets that means nothing at all).
    fn direct_merge_applies(&self, pr: PrNumber) -> bool {
        let Some(e) = self.entry(pr) else {
            return false;
        };
        let readiness = e.readiness(&self.s.queue.branch, false);
        let ready =
            readiness.does_base_branch_match && readiness.mergeable && e.pr_facts.ready_to_merge();
        let ahead = self.s.entries.iter().filter(|o| o.pr != pr).any(|o| {
            o.state != EntryState::NotReady
                && (!self.parallel()
                    || self.targets_of(&[o.pr]).intersects(&self.targets_of(&[pr])))
        });
        self.cfg().direct_merge_mode == DirectMergeMode::Always
            && self.can_start()
            && ready
            && e.pr_facts.based_on_target_head
            && !ahead
            && !self.merge_in_flight()
    }

    fn direct_merge(&mut self, pr: PrNumber) {
        self.set_state(pr, EntryState::TestsPassed);
        let prs: Vec<BranchPr> = self.branch_pr(pr).into_iter().collect();
        let effect = Effect::Merge {
            run_id: None,
            prs,
            method: self.cfg().merge_method,
            expected_target_sha: self.s.queue.engine.target_head.clone(),
            tested_sha: None,
        };
        self.emit(effect);
    }

    /// `cancelPullRequest` and the cancel comment command.
    pub fn cancel(&mut self, pr: PrNumber, why: CancelReason) -> Result<(), DomainError> {
        self.active_entry(pr)?;
        self.refuse_while_merging(pr)?;
        self.remove_entries(&[pr], EntryState::Cancelled, cancel_reason(why));
        Ok(())
    }

    /// Whether the queue merged `pr` at `head` as commits of its own (`squash`, `rebase`) and
    /// its close on the Git host is still to be done: the pull request shows open until then,
    /// and a submission of it would merge its changes again.
    fn landed_closing(&self, pr: PrNumber, head: &Sha) -> bool {
        self.s.outbox.iter().any(|x| {
            matches!(&x.effect, Effect::CloseLandedPullRequest { pr: p }
                if p.pr == pr && p.head_sha == *head)
        })
    }

    /// A pull request whose merge is under way can no longer be taken out of the queue.
    fn refuse_while_merging(&self, pr: PrNumber) -> Result<(), DomainError> {
        if self.merging_prs().contains(&pr) {
            return Err(DomainError::conflict(
                ErrorCode::PullRequestMerging,
                format!("pull request {pr} is being merged and can no longer be cancelled"),
            ));
        }
        Ok(())
    }

    /// `restartTestsOnPullRequest`: re-runs the entry's group in place, with the same
    /// pull requests ahead of it (those merged since are in the target); no other group
    /// restarts. Valid in `testing` and `pending_failure`.
    pub fn restart(&mut self, pr: PrNumber) -> Result<(), DomainError> {
        let state = self.active_entry(pr)?.state;
        if !matches!(state, EntryState::Testing | EntryState::PendingFailure) {
            return Err(DomainError::conflict(
                ErrorCode::PullRequestNotTesting,
                format!(
                    "pull request {pr} is {state}; only a testing or pending_failure pull request can be restarted"
                ),
            ));
        }
        if self.in_bisection(pr) {
            return self.restart_split(pr);
        }
        let run_id = self.entry(pr).and_then(|e| e.current_run.clone());
        if let Some(id) = run_id {
            self.rerun_in_place(&id);
        }
        Ok(())
    }

    /// A new run of the same group, place and dependencies. When no testing slot is free
    /// (or the queue is paused) it is held and starts when one frees.
    fn rerun_in_place(&mut self, id: &str) {
        let Some(old) = self.run(id).cloned() else {
            return;
        };
        let slot_after = self.main_in_flight()
            - usize::from(old.status == RunStatus::InProgress && !old.held)
            < self.cfg().concurrency as usize;
        self.close_run(id, "restart");
        let new_id = self.next_run_id(RunKind::Main);
        let mut run = old.clone();
        run.id = new_id.clone();
        run.branch = self.branch_for(&new_id);
        run.status = RunStatus::InProgress;
        run.created_at = self.now;
        run.sha = None;
        run.chain.clear();
        run.test_pull_request = false;
        run.required = None;
        run.statuses.clear();
        run.check_runs.clear();
        run.started_at = None;
        run.finished_at = None;
        run.reason = None;
        run.host_error = None;
        run.stamped_at = None;
        run.pushes_discarded = 0;
        run.held = !(slot_after && self.can_rerun());
        let prs = self.active_prs(&old);
        for &pr in &prs {
            if let Some(e) = self.entry_mut(pr) {
                e.current_run = Some(new_id.clone());
                e.last_run = Some(new_id.clone());
                e.restarts += 1;
            }
            self.set_state(pr, EntryState::Testing);
        }
        let held = run.held;
        self.s.runs.push(run);
        if !held {
            self.request_branch(&new_id);
        }
        for &pr in &prs {
            self.notify_testing(pr);
        }
    }

    /// `setImpactedTargets` for the entry's current head.
    pub fn set_impacted_targets(
        &mut self,
        pr: PrNumber,
        head_sha: &Sha,
        targets: &ImpactedTargets,
    ) -> Result<(), DomainError> {
        let entry = self.active_entry(pr)?;
        if &entry.pr_facts.head_sha != head_sha {
            return Err(DomainError::conflict(
                ErrorCode::ShaMismatch,
                format!(
                    "impacted targets were uploaded for {head_sha}, but pull request {pr} is at {}",
                    entry.pr_facts.head_sha.short()
                ),
            ));
        }
        let now = self.now;
        let e = self.entry_mut(pr).expect("entry exists");
        e.impacted = Some(UploadedTargets {
            head_sha: head_sha.clone(),
            targets: targets.clone(),
            uploaded_at: now,
        });
        self.readiness_stale = true;
        Ok(())
    }

    /// The Git host describes a pull request anew: closed, new commits and a changed base
    /// cancel its entry; other changes (title, mergeability) update it.
    pub fn pr_updated(&mut self, facts: &PrFacts) {
        let Some(entry) = self.entry(facts.number) else {
            return;
        };
        let old = entry.pr_facts.clone();
        let why = if facts.state == PrState::Merged {
            Some(super::reason::PR_MERGED)
        } else if facts.state != PrState::Open {
            Some("pr_closed")
        } else if facts.head_sha != old.head_sha {
            Some("new_commits")
        } else if facts.base_branch != old.base_branch && old.base_branch == self.s.queue.branch {
            Some("base_changed")
        } else {
            None
        };
        if let Some(why) = why {
            self.cancel_as(facts.number, why);
            return;
        }
        if let Some(e) = self.entry_mut(facts.number) {
            e.pr_facts = facts.clone();
        }
        self.readiness_stale = true;
    }

    /// Cancels `pr`'s entry for `why` (the Git host closed, merged or changed it); during its
    /// merge, once the merge is over: the merge may already have happened, and its answer
    /// decides.
    pub fn cancel_as(&mut self, pr: PrNumber, why: &str) {
        if self.merging_prs().contains(&pr) {
            if let Some(e) = self.entry_mut(pr) {
                e.cancel_after_merge = Some(why.to_owned());
            }
            return;
        }
        self.remove_entries(&[pr], EntryState::Cancelled, why);
    }

    /// Cancels the entries the Git host closed or changed during their merge, once no merge
    /// holds them any more (it was refused or given up).
    pub fn cancel_deferred(&mut self) -> bool {
        if self
            .s
            .entries
            .iter()
            .all(|e| e.cancel_after_merge.is_none())
        {
            return false;
        }
        let merging = self.merging_prs();
        let due: Vec<(PrNumber, String)> = self
            .s
            .entries
            .iter()
            .filter(|e| !merging.contains(&e.pr))
            .filter_map(|e| e.cancel_after_merge.clone().map(|why| (e.pr, why)))
            .collect();
        for (pr, why) in &due {
            self.remove_entries(&[*pr], EntryState::Cancelled, why);
        }
        !due.is_empty()
    }

    /// A push the queue did not make moved the target: every group restarts on the new head.
    /// A head the queue's own merges moved the target past is a late report, not a move.
    pub fn target_moved(&mut self, sha: &Sha) {
        if self.merge_in_flight() {
            // The push may be the merge itself; a foreign push makes the merge fail with
            // `TargetMoved`, which restarts everything then.
            return;
        }
        if self.s.queue.engine.heads_merged_past.contains(sha) {
            // Were the target really reset there, the next merge would find it so, and
            // `TargetMoved` from the merge restarts everything then.
            return;
        }
        self.target_moved_to(sha);
    }

    pub fn target_moved_to(&mut self, sha: &Sha) {
        if self.s.queue.engine.target_head.as_ref() == Some(sha) {
            return;
        }
        self.s.queue.engine.target_head = Some(sha.clone());
        self.bisection_base_changed(None);
        let everything = self.line();
        self.reshuffle(everything, BTreeSet::new(), "target_moved");
    }

    /// Ends the entries of `prs` (cancelled or failed): they leave their group, which
    /// restarts without them, and every group containing them restarts.
    pub fn remove_entries(&mut self, prs: &[PrNumber], state: EntryState, why: &str) {
        self.remove_entries_saying(prs, state, why, &cancel_detail(why));
    }

    /// As [`Self::remove_entries`], with the sentence the pull requests are told.
    pub fn remove_entries_saying(
        &mut self,
        prs: &[PrNumber],
        state: EntryState,
        why: &str,
        detail: &str,
    ) {
        let mut groups = Vec::new();
        for &pr in prs {
            let Some(e) = self.entry(pr) else { continue };
            if let Some(run) = e.current_run.clone()
                && self.run(&run).is_some_and(|r| r.kind == RunKind::Main)
                && !groups.contains(&run)
            {
                groups.push(run);
            }
            self.leave_bisection(pr);
            self.conclude(pr, state, why, detail);
        }
        let removed: BTreeSet<PrNumber> = prs.iter().copied().collect();
        self.reshuffle(groups, removed, "restart");
    }

    /// Moves entries between `not_ready` and `pending` as their readiness changes
    /// (docs/queue-semantics.md §4, `SubmittedPullRequest` in `openapi/openapi.json`); drafts, and
    /// pull requests the review rules do not approve yet, are not ready. An entry waiting for a
    /// test whose pull request the Git host says conflicts with the target fails: it could only
    /// become ready through new commits, which take it out of the queue anyway.
    pub fn refresh_readiness(&mut self) -> bool {
        let conflicting = self.conflicting_with_target();
        let mut changed = !conflicting.is_empty();
        self.remove_entries(&conflicting, EntryState::Failed, CONFLICTS_WITH_TARGET);
        let branch = self.s.queue.branch.clone();
        let parallel = self.parallel();
        let now = self.now;
        for shared in &mut self.s.entries {
            let e = &**shared;
            let ready = e.readiness(&branch, parallel).is_ready() && e.pr_facts.ready_to_merge();
            let next = match (e.state, ready) {
                (EntryState::NotReady, true) => EntryState::Pending,
                (EntryState::Pending, false) if e.current_run.is_none() => EntryState::NotReady,
                _ => continue,
            };
            let e = Arc::make_mut(shared);
            e.state = next;
            e.state_changed_at = now;
            if next == EntryState::Pending {
                e.ready_at.get_or_insert(now);
            }
            changed = true;
        }
        changed
    }

    /// Entries not in a group whose pull request conflicts with the target branch.
    fn conflicting_with_target(&self) -> Vec<PrNumber> {
        let target = &self.s.queue.branch;
        self.s
            .entries
            .iter()
            .filter(|e| matches!(e.state, EntryState::NotReady | EntryState::Pending))
            .filter(|e| e.current_run.is_none() && &e.pr_facts.base_branch == target)
            .filter(|e| e.pr_facts.mergeability == Mergeability::NotMergeable)
            .map(|e| e.pr)
            .collect()
    }

    /// The active entry of a pull request, or 409 when there is none (the shell, which
    /// reads history, answers 404 first for a pull request never submitted).
    fn active_entry(&self, pr: PrNumber) -> Result<&Entry, DomainError> {
        self.entry(pr).ok_or_else(|| {
            DomainError::conflict(
                ErrorCode::PullRequestNotActive,
                format!("pull request {pr} is not active in the queue"),
            )
        })
    }
}

fn cancel_reason(why: CancelReason) -> &'static str {
    match why {
        CancelReason::Api => "cancelled_by_api",
        CancelReason::Comment => "cancelled_by_comment",
        CancelReason::PrClosed => "pr_closed",
        CancelReason::NewCommits => "new_commits",
        CancelReason::BaseChanged => "base_changed",
    }
}

fn cancel_detail(why: &str) -> String {
    match why {
        "cancelled_by_api" => "cancelled through the API".to_owned(),
        "cancelled_by_comment" => "cancelled by a comment command".to_owned(),
        "pr_closed" => "the pull request was closed".to_owned(),
        super::reason::PR_MERGED => "the pull request was merged outside this queue".to_owned(),
        "new_commits" => "new commits were pushed to the pull request".to_owned(),
        "base_changed" => "the pull request's base branch changed".to_owned(),
        other => super::failure::failure_detail(other),
    }
}
