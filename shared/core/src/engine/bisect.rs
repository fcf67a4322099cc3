//! Bisection of a failed batch (docs/queue-semantics.md §6).
//!
//! The batch's pull requests stay in `pending_failure` while their batch is split in halves,
//! recursively; each split is a bisection run (its id ends in `-bisection`) on what was ahead
//! of the batch, at most `bisectionConcurrency` at once. A split that passes goes back to the
//! queue (its entries `pending`, ordered by priority and submission as before); a single pull
//! request that fails alone is a culprit and fails.
//!
//! With `optimizationMode: bisection_skip_redundant_tests`, a split whose result is implied
//! is not run: the halves of a set are tested one after the other, and the sibling of a
//! passing half is implied to fail (their parent failed), so a single pull request there is
//! the culprit at once and a larger one is split again without a test; any set known to fail
//! on this base (the batch itself, a failed split) is split at once instead of being tested.
//! Only failures are reused, never passes, and a change of the base forgets them and the
//! implications between halves: a move of the target outside the queue, a pull request the
//! splits are tested on that leaves the queue without merging or is left behind
//! (`drop_left_behind`), or a merge of one they were not tested on. Only a set whose tests
//! failed or that conflicted holds a culprit: one that failed otherwise (a timeout, a test
//! branch not made ready) implies nothing of its halves. Without the option both halves
//! test at once (faster, more CI).

use super::reason::{MERGE_CONFLICT, TESTS_FAILED};
use super::work::Work;
use crate::entry::EntryState;
use crate::error::{DomainError, ErrorCode};
use crate::ids::PrNumber;
use crate::run::{Bisection, RunKind, RunStatus, Split, TestRun};
use crate::settings::OptimizationMode;
use std::collections::BTreeSet;

impl Work {
    fn skip_redundant(&self) -> bool {
        self.cfg().optimization_mode == OptimizationMode::BisectionSkipRedundantTests
    }

    /// Starts the search for the culprits of a failed batch.
    pub fn start_bisection(&mut self, run: &TestRun, prs: &[PrNumber], why: &str) {
        let (left, right) = halves(prs);
        let bisection = Bisection {
            run_id: run.id.clone(),
            place: run.place,
            reason: why.to_owned(),
            splits: vec![
                Split {
                    prs: left.clone(),
                    sibling: right.clone(),
                    run: None,
                    parent_failed_for: None,
                    on_old_base: false,
                },
                Split {
                    prs: right,
                    sibling: left,
                    run: None,
                    parent_failed_for: None,
                    on_old_base: false,
                },
            ],
            failed_sets: if holds_a_culprit(why) {
                vec![sorted(prs)]
            } else {
                Vec::new()
            },
            dependent_prs: Some(run.dependent_prs.clone()),
        };
        for &pr in prs {
            self.set_state(pr, EntryState::PendingFailure);
        }
        self.s.queue.engine.bisections.push(bisection);
    }

    /// Starts waiting splits while bisection slots are free; settles known results.
    pub fn run_bisections(&mut self) -> bool {
        let mut changed = false;
        let mut b = 0;
        while b < self.s.queue.engine.bisections.len() {
            changed |= self.advance_bisection(b);
            if self.s.queue.engine.bisections[b].splits.is_empty() {
                self.s.queue.engine.bisections.remove(b);
                changed = true;
            } else {
                b += 1;
            }
        }
        changed
    }

    fn advance_bisection(&mut self, b: usize) -> bool {
        let mut changed = self.drop_left_behind(b);
        if changed {
            self.forget_implications(b);
        }
        let mut i = 0;
        while i < self.s.queue.engine.bisections[b].splits.len() {
            let bisection = &self.s.queue.engine.bisections[b];
            let split = &bisection.splits[i];
            if split.run.is_some() {
                i += 1;
                continue;
            }
            let known_failed = bisection.failed_sets.contains(&sorted(&split.prs));
            if self.skip_redundant() && known_failed {
                let split = self.s.queue.engine.bisections[b].splits.remove(i);
                self.split_settled_failed(b, split, None);
                changed = true;
                continue;
            }
            let first_half_pending = bisection.splits[..i].iter().any(|s| s.prs == split.sibling);
            if self.skip_redundant() && first_half_pending && parent_failed(bisection, split) {
                // Its result may be implied by its sibling's: wait for that first.
                i += 1;
                continue;
            }
            let budget = self.cfg().bisection_concurrency.max(1) as usize;
            // A bisection decides a failure already in line: it goes on while the queue
            // drains or switches modes, as restarts do.
            if !self.can_rerun() || self.bisection_in_flight() >= budget {
                break;
            }
            let place = bisection.place;
            let failed_run = bisection.run_id.clone();
            let prs = split.prs.clone();
            let Some(dependent_prs) = self.split_base(b, &prs) else {
                // A group it is tested on was restarted and has not passed again yet.
                i += 1;
                continue;
            };
            let id = self.create_run(
                RunKind::Bisection,
                place,
                prs,
                dependent_prs,
                Some(failed_run),
            );
            let split = &mut self.s.queue.engine.bisections[b].splits[i];
            split.run = Some(id);
            split.on_old_base = false;
            changed = true;
            i += 1;
        }
        changed
    }

    /// The pull requests a split of bisection `b` is tested on: those of the failed run's
    /// dependents still in the queue (less those [left behind](Self::drop_left_behind)), once
    /// every one of them has passed (`None` until then).
    fn split_base(&self, b: usize, prs: &[PrNumber]) -> Option<Vec<PrNumber>> {
        let bisection = &self.s.queue.engine.bisections[b];
        let Some(ahead) = &bisection.dependent_prs else {
            return Some(self.dependent_prs(bisection.place, prs));
        };
        let mut base = Vec::new();
        for &pr in ahead {
            match self.entry(pr).map(|e| e.state) {
                None => {} // merged, or out of the queue: the target holds what it merged
                Some(EntryState::TestsPassed) => base.push(pr),
                Some(_) => return None,
            }
        }
        Some(base)
    }

    /// Bisection runs tested on a pull request in `removed` (it failed, or left the line to
    /// wait again) are stopped and their splits wait to be tested again on what is left.
    pub fn rerun_splits_built_on(&mut self, removed: &BTreeSet<PrNumber>) {
        let built_on: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Bisection && !r.is_finished())
            .filter(|r| r.dependent_prs.iter().any(|p| removed.contains(p)))
            .map(|r| r.id.clone())
            .collect();
        for id in built_on {
            if let Some((b, i)) = self.split_of_run(&id) {
                self.s.queue.engine.bisections[b].splits[i].run = None;
            }
            self.close_run(&id, "restart");
        }
    }

    /// Keeps at most `bisectionConcurrency` bisection runs in flight (docs/queue-semantics.md
    /// §6): once it is lowered, the runs started last stop, and their splits wait to be tested
    /// again when a run frees its place.
    pub fn enforce_bisection_concurrency(&mut self) -> bool {
        let limit = self.cfg().bisection_concurrency.max(1) as usize;
        if self.bisection_in_flight() <= limit {
            return false;
        }
        let mut testing: Vec<&TestRun> = self
            .s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Bisection && r.status == RunStatus::InProgress)
            .collect();
        testing.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let excess: Vec<String> = testing.iter().skip(limit).map(|r| r.id.clone()).collect();
        for id in excess {
            if let Some((b, i)) = self.split_of_run(&id) {
                self.s.queue.engine.bisections[b].splits[i].run = None;
            }
            self.close_run(&id, "concurrency");
        }
        true
    }

    /// Where a bisection run's split is: (bisection index, split index).
    fn split_of_run(&self, run_id: &str) -> Option<(usize, usize)> {
        self.s
            .queue
            .engine
            .bisections
            .iter()
            .enumerate()
            .find_map(|(b, bis)| {
                bis.splits
                    .iter()
                    .position(|s| s.run.as_deref() == Some(run_id))
                    .map(|i| (b, i))
            })
    }

    /// A split passed: its pull requests go back to the queue.
    pub fn split_passed(&mut self, run_id: &str) {
        let Some((b, i)) = self.split_of_run(run_id) else {
            self.close_run(run_id, "bisection");
            return;
        };
        let split = self.s.queue.engine.bisections[b].splits.remove(i);
        self.close_run(run_id, "bisection");
        for &pr in &split.prs {
            if let Some(e) = self.entry_mut(pr) {
                e.passed_split = Some(run_id.to_owned());
            }
            self.back_in_line(pr);
        }
        if self.skip_redundant() && parent_failed(&self.s.queue.engine.bisections[b], &split) {
            self.imply_sibling_failed(b, &split.sibling);
        }
    }

    /// The parent set failed and this half passed: the other half is implied to fail. A
    /// single pull request is the culprit at once; a larger half still waiting is split
    /// without being tested (one already testing finishes).
    fn imply_sibling_failed(&mut self, b: usize, sibling: &[PrNumber]) {
        let Some(j) = self.s.queue.engine.bisections[b]
            .splits
            .iter()
            .position(|s| s.prs == sibling)
        else {
            return;
        };
        let split = &self.s.queue.engine.bisections[b].splits[j];
        if split.prs.len() == 1 {
            let culprit = self.s.queue.engine.bisections[b].splits.remove(j);
            if let Some(run) = &culprit.run {
                self.close_run(run, "bisection");
            }
            let failure = self.implied(b, culprit.parent_failed_for.as_deref());
            self.fail_culprits(&culprit.prs, failure);
        } else if split.run.is_none() {
            let known = sorted(sibling);
            let bisection = &mut self.s.queue.engine.bisections[b];
            if !bisection.failed_sets.contains(&known) {
                bisection.failed_sets.push(known);
            }
        }
    }

    /// A split failed: a single pull request is a culprit, a larger split is halved.
    pub fn split_failed(&mut self, run_id: &str) {
        let Some((b, i)) = self.split_of_run(run_id) else {
            self.close_run(run_id, "bisection");
            return;
        };
        let failure = self.run(run_id).and_then(|r| {
            let reason = r.reason.clone()?;
            let detail = super::failure::run_failure_detail(r, &reason);
            Some(Failure { reason, detail })
        });
        let split = self.s.queue.engine.bisections[b].splits.remove(i);
        self.close_run(run_id, "bisection");
        self.split_settled_failed(b, split, failure);
    }

    /// A split failed (`failure`: how its own run failed, when it ran; `None` when implied).
    /// One that failed on the base before it changed is halved, its halves implying nothing
    /// of each other.
    fn split_settled_failed(&mut self, b: usize, split: Split, failure: Option<Failure>) {
        let known = sorted(&split.prs);
        let culprit_in_it = failure.as_ref().is_none_or(|f| holds_a_culprit(&f.reason));
        let bisection = &mut self.s.queue.engine.bisections[b];
        let implies = culprit_in_it && !split.on_old_base;
        if implies && !bisection.failed_sets.contains(&known) {
            bisection.failed_sets.push(known);
        }
        // Why this set failed: its own run's reason, or, implied, its parent's.
        let failed_for = match &failure {
            Some(f) => Some(f.reason.clone()),
            None => split.parent_failed_for.clone(),
        };
        if split.prs.len() <= 1 {
            let failure =
                failure.unwrap_or_else(|| self.implied(b, split.parent_failed_for.as_deref()));
            self.fail_culprits(&split.prs, failure);
            return;
        }
        let (left, right) = halves(&split.prs);
        let sibling = |half: &Vec<PrNumber>| if implies { half.clone() } else { Vec::new() };
        let bisection = &mut self.s.queue.engine.bisections[b];
        bisection.splits.push(Split {
            prs: left.clone(),
            sibling: sibling(&right),
            run: None,
            parent_failed_for: failed_for.clone(),
            on_old_base: false,
        });
        bisection.splits.push(Split {
            prs: right,
            sibling: sibling(&left),
            run: None,
            parent_failed_for: failed_for,
            on_old_base: false,
        });
    }

    /// The failure of a culprit implied without a run of its own: that of the set it was half
    /// of (`parent_failed_for`), or the batch's.
    fn implied(&self, b: usize, parent_failed_for: Option<&str>) -> Failure {
        let batch = &self.s.queue.engine.bisections[b].reason;
        let reason = parent_failed_for.unwrap_or(batch).to_owned();
        let detail = super::failure::failure_detail(&reason);
        Failure { reason, detail }
    }

    /// Culprits fail as their own split failed (naming the required statuses that failed),
    /// or as their failure was implied ([`Self::implied`]).
    fn fail_culprits(&mut self, prs: &[PrNumber], failure: Failure) {
        let Failure { reason, detail } = failure;
        let detail = format!("{detail} (found by bisecting its batch)");
        self.remember_failed_heads(prs, &reason);
        for &pr in prs {
            self.conclude(pr, EntryState::Failed, &reason, &detail);
        }
    }

    /// Takes a pull request out of the bisection it is in (cancelled, closed, ...); a split
    /// testing it is cancelled and waits again without it. The split and its sibling no
    /// longer make up a set that failed, so neither implies the other's result: both are
    /// tested.
    pub fn leave_bisection(&mut self, pr: PrNumber) {
        let Some((b, i)) = self.split_of(pr) else {
            return;
        };
        let splits = &mut self.s.queue.engine.bisections[b].splits;
        let before = splits[i].prs.clone();
        for other in splits.iter_mut().filter(|s| s.sibling == before) {
            other.sibling.clear();
        }
        let split = &mut splits[i];
        split.prs.retain(|&p| p != pr);
        split.sibling.clear();
        let run = split.run.take();
        if split.prs.is_empty() {
            splits.remove(i);
        }
        if let Some(run) = run {
            self.close_run(&run, "cancelled");
        }
    }

    /// Re-runs the split a pull request is in, when it is testing (each of its pull requests
    /// counts a restart, as in a group's restart). A split still waiting to test has no run to
    /// restart: refused (`PULL_REQUEST_NOT_TESTING`), rather than answered as if it re-ran.
    pub fn restart_split(&mut self, pr: PrNumber) -> Result<(), DomainError> {
        let Some((b, i)) = self.split_of(pr) else {
            return Ok(());
        };
        let split = &mut self.s.queue.engine.bisections[b].splits[i];
        let Some(run) = split.run.take() else {
            return Err(DomainError::conflict(
                ErrorCode::PullRequestNotTesting,
                format!(
                    "pull request {pr} waits in a bisection split that has not started testing: \
                     there is no test to restart yet"
                ),
            ));
        };
        let prs = split.prs.clone();
        self.close_run(&run, "restart");
        for pr in prs {
            if let Some(e) = self.entry_mut(pr) {
                e.restarts += 1;
            }
        }
        Ok(())
    }

    /// What the splits of a bisection are tested on changed: `left` (a pull request it was
    /// tested on) left the queue without merging, or the target moved (`None`). A set that
    /// failed on the old base may pass on the new one: no failure is reused, and no split
    /// implies its sibling's result. `left` is out of the base for good: submitted again, it
    /// is a new entry, which the splits do not wait for, and whose merge changes their base.
    pub fn bisection_base_changed(&mut self, left: Option<PrNumber>) {
        for b in 0..self.s.queue.engine.bisections.len() {
            let tested_on = |pr| self.dependents_of(b).contains(&pr);
            if left.is_none_or(tested_on) {
                self.forget_implications(b);
            }
            if let (Some(pr), Some(base)) =
                (left, &mut self.s.queue.engine.bisections[b].dependent_prs)
            {
                base.retain(|&p| p != pr);
            }
        }
    }

    /// `merged` landed on the target. A bisection whose splits were not tested on one of them
    /// (one left behind that came back, an urgent one, a pull request of the batch that
    /// passed its split) now tests on a base its failed sets were not tested on: no failure is
    /// reused, and no split implies its sibling's result. One stored without its base
    /// (`dependent_prs: None`) tests on whatever is ahead, as before.
    pub fn bisection_target_grew(&mut self, merged: &BTreeSet<PrNumber>) {
        for b in 0..self.s.queue.engine.bisections.len() {
            let Some(base) = &self.s.queue.engine.bisections[b].dependent_prs else {
                continue;
            };
            if merged.iter().any(|pr| !base.contains(pr)) {
                self.forget_implications(b);
            }
        }
    }

    /// What runs must pass changed (the queue's required statuses): a set that failed under
    /// the old list may pass under the new one, so no failure is reused, and no split implies
    /// its sibling's result.
    pub fn bisection_requirements_changed(&mut self) {
        for b in 0..self.s.queue.engine.bisections.len() {
            self.forget_implications(b);
        }
    }

    /// Takes out of the base of bisection `b` the pull requests it was tested on that went
    /// back to wait and cannot pass again soon ([`Self::left_waiting`]): its splits are tested
    /// without them from now on, even once they are ready again, so that no split's failure
    /// on one base implies a result on another. Returns whether any was taken out.
    fn drop_left_behind(&mut self, b: usize) -> bool {
        let left: Vec<PrNumber> = self
            .dependents_of(b)
            .iter()
            .copied()
            .filter(|&pr| self.left_waiting(pr))
            .collect();
        let Some(base) = &mut self.s.queue.engine.bisections[b].dependent_prs else {
            return false;
        };
        base.retain(|pr| !left.contains(pr));
        !left.is_empty()
    }

    /// Whether `pr` went back to wait and cannot pass again soon: `not_ready` for what only
    /// its author or reviewers change (a draft, a review not approving: it may stay so for
    /// good), or `pending` while the queue starts no new group and is not paused (draining,
    /// switching modes), unless it may start all the same (draining, one tested before:
    /// [`Work::may_start`]). One waiting for the Git host (mergeability being computed) or for
    /// its impacted targets is ready again soon, and a paused queue runs again.
    fn left_waiting(&self, pr: PrNumber) -> bool {
        let Some(entry) = self.entry(pr) else {
            return false;
        };
        match entry.state {
            EntryState::NotReady => !entry.pr_facts.ready_to_merge(),
            EntryState::Pending => self.can_rerun() && !self.may_start(entry),
            _ => false,
        }
    }

    /// The pull requests bisection `b` was tested on (none recorded by older versions).
    fn dependents_of(&self, b: usize) -> &[PrNumber] {
        let bisection = &self.s.queue.engine.bisections[b];
        bisection.dependent_prs.as_deref().unwrap_or_default()
    }

    /// No failure of bisection `b` is reused, and no split implies its sibling's result, nor
    /// will the failure of a split testing now, on the old base.
    fn forget_implications(&mut self, b: usize) {
        let bisection = &mut self.s.queue.engine.bisections[b];
        bisection.failed_sets.clear();
        for split in &mut bisection.splits {
            split.sibling.clear();
            split.on_old_base |= split.run.is_some();
        }
    }

    /// Whether a pull request is in a bisection.
    pub fn in_bisection(&self, pr: PrNumber) -> bool {
        self.split_of(pr).is_some()
    }

    /// The bisection and the split within it that hold `pr`, as indexes.
    fn split_of(&self, pr: PrNumber) -> Option<(usize, usize)> {
        let mut bisections = self.s.queue.engine.bisections.iter().enumerate();
        bisections.find_map(|(b, bisection)| {
            let i = bisection.splits.iter().position(|s| s.prs.contains(&pr))?;
            Some((b, i))
        })
    }
}

/// Whether a set that failed for `reason` holds a culprit, whatever it is tested with: its
/// tests failed, or it conflicted. A timeout or a test branch not made ready may come from
/// CI or the Git host alone: the halves of such a set are both tested.
fn holds_a_culprit(reason: &str) -> bool {
    matches!(reason, TESTS_FAILED | MERGE_CONFLICT)
}

/// Whether `split` and its sibling make up a set known to have failed in `bisection`: one
/// passing then implies the other fails.
fn parent_failed(bisection: &Bisection, split: &Split) -> bool {
    let parent = sorted(&[split.prs.as_slice(), split.sibling.as_slice()].concat());
    !split.sibling.is_empty() && bisection.failed_sets.contains(&parent)
}

/// Splits a set in two halves (the first the larger), keeping the order.
pub fn halves(prs: &[PrNumber]) -> (Vec<PrNumber>, Vec<PrNumber>) {
    let mid = prs.len().div_ceil(2);
    (prs[..mid].to_vec(), prs[mid..].to_vec())
}

fn sorted(prs: &[PrNumber]) -> Vec<PrNumber> {
    let mut v = prs.to_vec();
    v.sort_unstable();
    v
}

/// How a split's run failed: its reason and the sentence for its pull requests.
struct Failure {
    reason: String,
    detail: String,
}
