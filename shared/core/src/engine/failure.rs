//! Pending failure and optimistic merge (docs/queue-semantics.md §5).
//!
//! A failed group waits in `pending_failure` until every group it depends on has finished.
//! If one of those failed, it was removed and this group already restarted without it. If
//! all passed, the group waits until `pendingFailureDepth` groups behind it (that contain
//! it) have finished; with `canOptimisticallyMerge` a pass among them clears it (the failure
//! was a flake). Otherwise it fails — a batch is bisected first — and every group that
//! contained it restarts without it. The window also closes when every group in it finished
//! and no further group could start behind it now (no slot, nothing ready, a batch still
//! forming, or the queue not running): waiting would stall the line.
//!
//! With `adaptivePendingFailure`, the window is only kept while the queue has reason to
//! expect flakes: when no flake was observed within [`FLAKE_MEMORY_MS`], a failed group whose
//! groups ahead all passed fails at once (a pass behind could only have cleared a flake). The
//! queue observes a flake when a failed group is cleared by a pass behind it, and when a pull
//! request whose tests failed (it left the queue `failed`, for `tests_failed` or `timeout`)
//! passes a main run with the same head after it was submitted again; it remembers the last
//! [`MAX_FAILED_HEADS`] such heads for as long as [`FLAKE_MEMORY_MS`]. A batch whose splits all
//! pass is not counted: an interaction between its halves looks the same.

use super::line::line_positions;
use super::work::Work;
use crate::entry::EntryState;
use crate::git::Verdict;
use crate::ids::{PrNumber, Sha};
use crate::run::{RunStatus, TestRun};
use crate::settings::FLAKE_MEMORY_MS;
use crate::snapshot::{FailedHead, MAX_FAILED_HEADS};
use std::collections::BTreeSet;

/// What the pending-failure rules decide for a failed group.
enum Decision {
    Wait,
    Clear,
    Fail,
}

/// When the rules run in a round of settling.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before new groups start: only a failure decided without a window (adaptive pending
    /// failure) applies, so that no new group is built on a group about to fail.
    BeforeFill,
    /// After new groups started: every rule.
    AfterFill,
}

impl Work {
    /// Fails the failed groups that adaptive pending failure fails at once, front first;
    /// stops at the first change. Settling runs it before new groups start.
    pub fn fail_without_window(&mut self) -> bool {
        if !self.cfg().adaptive_pending_failure || self.flake_seen_lately() {
            return false;
        }
        self.resolve(Phase::BeforeFill)
    }

    /// Applies the pending-failure rules to failed groups, front first; stops at the first
    /// change (settling calls it again).
    pub fn resolve_failures(&mut self) -> bool {
        self.resolve(Phase::AfterFill)
    }

    fn resolve(&mut self, phase: Phase) -> bool {
        let line = line_positions(&self.s);
        for &at in &line {
            if self.s.runs[at].status != RunStatus::Failed {
                continue;
            }
            let prs: Vec<PrNumber> = self.active_prs(&self.s.runs[at]);
            let cleared = prs
                .iter()
                .all(|&pr| self.state_of(pr) == Some(EntryState::TestsPassed));
            if cleared {
                if phase == Phase::BeforeFill {
                    continue;
                }
                if self.lost_clearance(&line, at, &prs) {
                    for &pr in &prs {
                        self.set_state(pr, EntryState::PendingFailure);
                    }
                    return true;
                }
                continue;
            }
            match self.decide(&line, at, phase) {
                Decision::Wait => {}
                Decision::Clear => {
                    self.flake_observed();
                    for &pr in &prs {
                        self.set_state(pr, EntryState::TestsPassed);
                    }
                    return true;
                }
                Decision::Fail => {
                    let run = self.s.runs[at].clone();
                    self.fail_group(&run);
                    return true;
                }
            }
        }
        false
    }

    fn decide(&self, line: &[usize], at: usize, phase: Phase) -> Decision {
        let ahead_passed = self
            .deps_in(line, at)
            .iter()
            .all(|&d| self.group_passed(&self.s.runs[d]));
        if !ahead_passed {
            return Decision::Wait;
        }
        let depth = self.cfg().pending_failure_depth.max(1) as usize;
        let window: Vec<&TestRun> = self
            .dependents_in(line, at)
            .into_iter()
            .take(depth)
            .map(|j| &self.s.runs[j])
            .collect();
        let passed_behind = window.iter().any(|r| r.status == RunStatus::Succeeded);
        if self.cfg().can_optimistically_merge && passed_behind {
            // A pass that already came in behind clears it, adaptive or not: that is a flake.
            return Decision::Clear;
        }
        if self.cfg().adaptive_pending_failure && !self.flake_seen_lately() {
            return Decision::Fail;
        }
        if phase == Phase::BeforeFill {
            return Decision::Wait;
        }
        // New groups start before this rule runs, so a window shorter than the depth and
        // entirely finished will not grow now: it closes. A paused queue starts nothing now
        // but will once resumed (and merges nothing meanwhile): with optimistic merge and a
        // pull request waiting to start, its window stays open, so a pause does not fail a
        // group that a pass behind would clear.
        //
        // In parallel mode the slots may all be held by other lanes while a pull request of
        // this group's lane waits: with optimistic merge, the window grows once a slot frees,
        // so it stays open.
        let all_finished = window.iter().all(|r| r.status != RunStatus::InProgress);
        let grows_when_resumed = self.cfg().can_optimistically_merge
            && window.len() < depth
            && !self.can_merge()
            && self
                .s
                .entries
                .iter()
                .any(|e| e.state == EntryState::Pending);
        let grows_when_a_slot_frees = self.cfg().can_optimistically_merge
            && window.len() < depth
            && self.lane_waits_for_a_slot(at);
        if all_finished && !grows_when_resumed && !grows_when_a_slot_frees {
            Decision::Fail
        } else {
            Decision::Wait
        }
    }

    /// In parallel mode, whether every testing slot is held while a pull request waits whose
    /// targets meet those of the group at `at` (it would be tested on that group).
    fn lane_waits_for_a_slot(&self, at: usize) -> bool {
        if !self.parallel() || self.main_in_flight() < self.cfg().concurrency as usize {
            return false;
        }
        let lane = self.targets_of(&self.active_prs(&self.s.runs[at]));
        self.s
            .entries
            .iter()
            .filter(|e| e.state == EntryState::Pending)
            .any(|e| self.targets_of(&[e.pr]).intersects(&lane))
    }

    /// A group cleared by a pass behind it keeps that clearance while the passing group is
    /// still in line (or the merge is under way); otherwise the rules apply again.
    fn lost_clearance(&self, line: &[usize], at: usize, prs: &[PrNumber]) -> bool {
        let proven = self
            .dependents_in(line, at)
            .iter()
            .any(|&j| self.s.runs[j].status == RunStatus::Succeeded);
        let merging = self.merge_in_flight() && {
            let merging = self.merging_prs();
            prs.iter().any(|pr| merging.contains(pr))
        };
        !prs.is_empty() && !proven && !merging
    }

    /// A failed group leaves the line: a batch goes to bisection, a single pull request
    /// fails. Groups that contained it restart without it.
    fn fail_group(&mut self, run: &TestRun) {
        let prs = self.active_prs(run);
        let why = run
            .reason
            .clone()
            .unwrap_or_else(|| super::reason::TESTS_FAILED.to_owned());
        self.close_run(&run.id, &why);
        if prs.len() > 1 {
            self.start_bisection(run, &prs, &why);
        } else {
            let detail = run_failure_detail(run, &why);
            self.remember_failed_heads(&prs, &why);
            for &pr in &prs {
                self.conclude(pr, EntryState::Failed, &why, &detail);
            }
        }
        let removed: BTreeSet<PrNumber> = prs.into_iter().collect();
        self.reshuffle(Vec::new(), removed, "restart");
    }
}

impl Work {
    /// Whether a flake was observed within [`FLAKE_MEMORY_MS`].
    fn flake_seen_lately(&self) -> bool {
        let last = self.s.queue.engine.last_flake_at;
        last.is_some_and(|t| self.now.millis_since(t) < FLAKE_MEMORY_MS)
    }

    fn flake_observed(&mut self) {
        self.s.queue.engine.last_flake_at = Some(self.now);
    }

    /// Remembers the heads of pull requests about to fail for `why`, when it is their tests
    /// (`tests_failed`, `timeout`): a pass of the same head later shows a flake. Call it while
    /// their entries are still active.
    pub fn remember_failed_heads(&mut self, prs: &[PrNumber], why: &str) {
        use super::reason::{TESTS_FAILED, TIMEOUT};
        if why != TESTS_FAILED && why != TIMEOUT {
            return;
        }
        let now = self.now;
        let failed: Vec<FailedHead> = prs
            .iter()
            .filter_map(|&pr| self.entry(pr))
            .map(|e| FailedHead {
                pr: e.pr,
                head_sha: e.pr_facts.head_sha.clone(),
                at: now,
            })
            .collect();
        let heads = &mut self.s.queue.engine.failed_heads;
        heads.retain(|h| now.millis_since(h.at) < FLAKE_MEMORY_MS);
        heads.retain(|h| !failed.iter().any(|f| f.pr == h.pr));
        heads.extend(failed);
        let excess = heads.len().saturating_sub(MAX_FAILED_HEADS);
        heads.drain(..excess);
    }

    /// A main run passed: a pull request in it whose same head failed its tests before was
    /// failed by a flake.
    pub fn note_passed_heads(&mut self, run_id: &str) {
        if self.s.queue.engine.failed_heads.is_empty() {
            return;
        }
        let Some(run) = self.run(run_id) else { return };
        let tested: Vec<(PrNumber, Sha)> = run
            .tested
            .iter()
            .map(|t| (t.pr, t.head_sha.clone()))
            .collect();
        let heads = &mut self.s.queue.engine.failed_heads;
        let before = heads.len();
        heads.retain(|h| {
            !tested
                .iter()
                .any(|(pr, sha)| h.pr == *pr && h.head_sha == *sha)
        });
        if heads.len() < before {
            self.flake_observed();
        }
    }
}

/// `text` trimmed and cut to `max` characters, with an ellipsis when cut: a Git host's answer
/// as a pull request's comment shows it.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let text = text.trim();
    let cut: String = text.chars().take(max).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{cut}{more}")
}

/// The sentence for a failed run: when its tests failed, it names the required statuses
/// that failed.
pub fn run_failure_detail(run: &TestRun, reason: &str) -> String {
    if let (super::reason::BRANCH_ERROR, Some(answer)) = (reason, &run.host_error) {
        return format!("{}: {answer}", failure_detail(reason));
    }
    if reason != super::reason::TESTS_FAILED {
        return failure_detail(reason);
    }
    let failed: Vec<String> = run
        .required
        .iter()
        .flat_map(|r| &r.contexts)
        .filter(|name| super::results::required_verdict(run, name) == Verdict::Failed)
        .map(|name| format!("`{name}`"))
        .collect();
    match failed.as_slice() {
        [] => failure_detail(reason),
        [one] => format!("required status {one} failed on the test branch"),
        many => format!(
            "required statuses {} failed on the test branch",
            many.join(", ")
        ),
    }
}

/// A sentence for the pull request's comment.
pub fn failure_detail(reason: &str) -> String {
    match reason {
        "timeout" => "the test run did not finish within the testing timeout".to_owned(),
        "no_required_statuses" => {
            "no required statuses are configured for the queue, the repository or the branch"
                .to_owned()
        }
        "merge_conflict" => "the pull request conflicts with the changes ahead of it".to_owned(),
        "conflicts_with_target" => {
            "the pull request conflicts with the target branch: resolve the conflict, push, and submit it again"
                .to_owned()
        }
        "test_branch_error" => "the test branch could not be made ready for CI".to_owned(),
        "test_branch_pushed" => {
            "someone else kept pushing to the test branch, or deleting it (the queue builds \
             its test branches itself; keep tools that push to or delete branches from them)"
                .to_owned()
        }
        "merge_failed" => "the Git host refused to merge the pull request".to_owned(),
        _ => "a required status failed on the test branch".to_owned(),
    }
}
