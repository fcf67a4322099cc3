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

use super::line::line_positions;
use super::work::Work;
use crate::entry::EntryState;
use crate::git::Verdict;
use crate::ids::PrNumber;
use crate::run::{RunStatus, TestRun};
use std::collections::BTreeSet;

/// What the pending-failure rules decide for a failed group.
enum Decision {
    Wait,
    Clear,
    Fail,
}

impl Work {
    /// Applies the pending-failure rules to failed groups, front first; stops at the first
    /// change (settling calls it again).
    pub fn resolve_failures(&mut self) -> bool {
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
                if self.lost_clearance(&line, at, &prs) {
                    for &pr in &prs {
                        self.set_state(pr, EntryState::PendingFailure);
                    }
                    return true;
                }
                continue;
            }
            match self.decide(&line, at) {
                Decision::Wait => {}
                Decision::Clear => {
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

    fn decide(&self, line: &[usize], at: usize) -> Decision {
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
            return Decision::Clear;
        }
        // New groups start before this rule runs, so a window shorter than the depth and
        // entirely finished will not grow now: it closes.
        let all_finished = window.iter().all(|r| r.status != RunStatus::InProgress);
        if all_finished {
            Decision::Fail
        } else {
            Decision::Wait
        }
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
            .unwrap_or_else(|| super::results::reason::TESTS_FAILED.to_owned());
        self.close_run(&run.id, &why);
        if prs.len() > 1 {
            self.start_bisection(run, &prs, &why);
        } else {
            let detail = run_failure_detail(run, &why);
            for &pr in &prs {
                self.conclude(pr, EntryState::Failed, &why, &detail);
            }
        }
        let removed: BTreeSet<PrNumber> = prs.into_iter().collect();
        self.reshuffle(Vec::new(), removed, "restart");
    }
}

/// The sentence for a failed run: when its tests failed, it names the required statuses
/// that failed.
pub fn run_failure_detail(run: &TestRun, reason: &str) -> String {
    if reason != super::results::reason::TESTS_FAILED {
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
        "test_branch_error" => "the test branch could not be created".to_owned(),
        "merge_failed" => "the Git host refused to merge the pull request".to_owned(),
        _ => "a required status failed on the test branch".to_owned(),
    }
}
