//! Merging passed groups into the target, and what the Git host answers (docs/queue-semantics.md
//! §4, §5, §8).
//!
//! One merge is in flight at a time. The merge takes the front-most group whose own run
//! passed and whose dependencies all passed, extended to the furthest such group whose
//! branch contains it, within [`most_prs_per_merge`]: everything up to that group merges at
//! once, each pull request as its own commit (by `mergeMethod`), and the target is expected to
//! end at the tested tree of the last group; in parallel mode, a last group whose branch no
//! longer predicts the target has no tested commit, and its pull requests merge one at a
//! time. A group cleared by
//! optimistic merge only ever merges as part of the group whose pass cleared it. Nothing
//! merges while the queue is paused (also while a paused queue switches modes).

use super::failure::excerpt;
use super::line::line_positions;
use super::reason;
use super::work::Work;
use super::{BranchPr, Effect, MergeRefusal};
use crate::entry::{EntryState, ImpactedTargets};
use crate::ids::{PrNumber, Sha};
use crate::run::{RunKind, RunStatus, TestRun};
use crate::settings::{MergeMethod, QueueMode};
use crate::snapshot::MAX_HEADS_MERGED_PAST;
use std::collections::BTreeSet;

/// Most pull requests one merge lands when it takes several passed groups at once (one group
/// lands whole, whatever its size): the Git host's work for a merge grows with its pull
/// requests, and a merge has the tick's 45 seconds (docs/queue-semantics.md §11). On GitHub a
/// squash or a rebase takes about eight calls per pull request (each checked, its message
/// and author read, its commit written), a fast-forward about two (each checked).
pub fn most_prs_per_merge(method: MergeMethod) -> usize {
    match method {
        MergeMethod::MergeCommit => 40,
        MergeMethod::Squash | MergeMethod::Rebase => 10,
    }
}

impl Work {
    /// Emits the next merge, if one can happen.
    pub fn merge_next(&mut self) -> bool {
        if !self.can_merge() || self.merge_in_flight() {
            return false;
        }
        let line = line_positions(&self.s);
        let candidates: Vec<(usize, Vec<usize>)> = line
            .iter()
            .copied()
            .filter(|&at| {
                let r = &self.s.runs[at];
                r.status == RunStatus::Succeeded && self.group_passed(r)
            })
            .filter_map(|at| {
                let deps = self.deps_in(&line, at);
                let ok = deps.iter().all(|&d| self.group_passed(&self.s.runs[d]));
                ok.then_some((at, deps))
            })
            .collect();
        let Some((first, first_deps)) = candidates.first().cloned() else {
            return false;
        };
        let holding_first = candidates.iter().rev().filter(|(_, deps)| {
            deps.contains(&first) && first_deps.iter().all(|d| deps.contains(d))
        });
        let furthest = holding_first
            .clone()
            .next()
            .cloned()
            .unwrap_or((first, first_deps.clone()));
        let most = most_prs_per_merge(self.cfg().merge_method);
        let (last, mut set) = if self.prs_of(&furthest.1, furthest.0) <= most {
            furthest
        } else {
            // A nearer stop, if the groups the furthest merge would take beyond it still predict
            // the target once it lands (not so behind a group restarted in place, a new
            // commit; a group cleared by a pass behind it merges with that group): the furthest
            // within the cap, else the first group, whatever its size.
            let first = (first, first_deps.clone());
            let stops: Vec<&(usize, Vec<usize>)> = holding_first
                .chain([&first])
                .filter(|stop| self.keeps_predicting(stop, &furthest))
                .collect();
            let within = stops
                .iter()
                .find(|(at, deps)| self.prs_of(deps, *at) <= most);
            within
                .or(stops.last())
                .map(|&stop| stop.clone())
                .unwrap_or(furthest)
        };
        set.push(last);
        let ids: Vec<String> = set.iter().map(|&i| self.s.runs[i].id.clone()).collect();
        let last_id = self.s.runs[last].id.clone();
        self.emit_merge(&last_id, &ids);
        true
    }

    /// Whether the groups of `furthest` (its dependencies and itself) beyond `stop` would still
    /// predict the target once `stop`'s merge lands ([`Self::still_predicts`], with the
    /// merge's pull requests taken as landed).
    fn keeps_predicting(&self, stop: &(usize, Vec<usize>), furthest: &(usize, Vec<usize>)) -> bool {
        let same_commit = self.cfg().merge_method == MergeMethod::MergeCommit;
        let landing_groups: Vec<usize> = stop.1.iter().copied().chain([stop.0]).collect();
        let landing: BTreeSet<PrNumber> = landing_groups
            .iter()
            .flat_map(|&i| self.active_prs(&self.s.runs[i]))
            .collect();
        // The merge `emit_merge` would send: the pull requests as the stop's branch holds them,
        // a fast-forward unless the stop has no tested commit.
        let stop_run = &self.s.runs[stop.0];
        let merged: Vec<BranchPr> = stop_run
            .chain
            .iter()
            .filter(|link| landing.contains(&link.pr))
            .cloned()
            .collect();
        let fast_forward = !stop_run.diverged;
        // A group of another lane (parallel mode), built on none of the landing pull
        // requests, stops predicting the exact target whatever the stop, and lands with the
        // furthest group's merge: it is not judged.
        let beyond = furthest.1.iter().chain([&furthest.0]);
        beyond
            .filter(|i| !landing_groups.contains(i))
            .map(|&i| &self.s.runs[i])
            .filter(|r| r.dependent_prs.iter().any(|pr| landing.contains(pr)))
            .all(|r| self.still_predicts(r, &merged, same_commit, fast_forward, &landing))
    }

    /// The pull requests still in the queue of the groups at `deps` and `at` in the line.
    fn prs_of(&self, deps: &[usize], at: usize) -> usize {
        let runs = deps.iter().chain([&at]).map(|&i| &self.s.runs[i]);
        runs.map(|r| self.active_prs(r).len()).sum()
    }

    /// Emits the merge of `groups`, the last of which is `last`: each pull request as
    /// `last`'s branch holds it (the commits the target is fast-forwarded to under
    /// `merge_commit`), in the order it holds them (a group built on a merge that was then
    /// withdrawn holds that group first, ahead of its place in line). A merge with no tested
    /// commit (`last`'s lanes merged out of its order) lands one pull request, the first: the
    /// Git host merges it onto the target as it is then, and a merge of several could stop
    /// halfway, some of them landed; the next merge takes the next.
    fn emit_merge(&mut self, last: &str, groups: &[String]) {
        let Some(run) = self.run(last) else { return };
        let mut prs: Vec<BranchPr> = groups
            .iter()
            .filter_map(|id| self.run(id))
            .flat_map(|r| self.active_prs(r))
            .filter_map(|pr| {
                let built = run.chain.iter().find(|link| link.pr == pr);
                built.cloned().or_else(|| self.branch_pr(pr))
            })
            .collect();
        prs.sort_by_key(|p| {
            let held_at = run.chain.iter().position(|link| link.pr == p.pr);
            held_at.unwrap_or(usize::MAX)
        });
        let tested_sha = if run.diverged { None } else { run.sha.clone() };
        if tested_sha.is_none() {
            prs.truncate(1);
        }
        let effect = Effect::Merge {
            run_id: Some(last.to_owned()),
            prs,
            method: self.cfg().merge_method,
            expected_target_sha: self.s.queue.engine.target_head.clone(),
            tested_sha,
        };
        self.emit(effect);
    }

    /// The queue's own merge moved the target to `sha`; where it was is remembered
    /// ([`heads_merged_past`](crate::snapshot::EngineState::heads_merged_past)).
    fn target_merged_to(&mut self, sha: &Sha) {
        let engine = &mut self.s.queue.engine;
        let Some(before) = engine.target_head.replace(sha.clone()) else {
            return;
        };
        if &before != sha {
            engine.heads_merged_past.push(before);
            let excess = engine
                .heads_merged_past
                .len()
                .saturating_sub(MAX_HEADS_MERGED_PAST);
            engine.heads_merged_past.drain(..excess);
        }
    }

    /// The target now holds `prs`: their entries are merged and their groups leave the line.
    pub fn merged(&mut self, prs: &[BranchPr], target_sha: &Sha) {
        let fast_forward = self
            .s
            .runs
            .iter()
            .any(|r| r.kind == RunKind::Main && r.sha.as_ref() == Some(target_sha));
        self.target_merged_to(target_sha);
        let merged: BTreeSet<PrNumber> = prs.iter().map(|p| p.pr).collect();
        self.bisection_target_grew(&merged);
        for &pr in &merged {
            self.conclude(pr, EntryState::Merged, "merged", "merged");
        }
        let done: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Main && self.active_prs(r).is_empty())
            .map(|r| r.id.clone())
            .collect();
        for id in &done {
            self.close_run(id, "merged");
        }
        self.after_foreign_merge(prs, fast_forward);
    }

    /// Groups whose branch does not hold `merged` as the target now does (`fast_forward`: the
    /// target was moved to a tested commit, not given new commits): in parallel mode they no
    /// longer predict the exact target (their merge carries no tested sha); in single mode
    /// they restart.
    fn after_foreign_merge(&mut self, merged: &[BranchPr], fast_forward: bool) {
        let same_commit = self.cfg().merge_method == MergeMethod::MergeCommit;
        let lacking: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Main)
            .filter(|r| {
                !self.still_predicts(r, merged, same_commit, fast_forward, &BTreeSet::new())
            })
            .map(|r| r.id.clone())
            .collect();
        self.stop_predicting(lacking, "target_moved");
    }

    /// A change to `merge_commit`: a group is merged by fast-forward from now on, so one whose
    /// branch may not hold the target's tip (a pull request of its chain landed, as a squash or
    /// a rebase, or the target moved since it was built) no longer predicts the target.
    pub fn merge_method_changed(&mut self) {
        if self.cfg().merge_method != MergeMethod::MergeCommit {
            return;
        }
        let target = self.s.queue.engine.target_head.clone();
        // A group whose merge is under way merges as it was sent (`merged` then judges the
        // groups behind it).
        let merging = self.merging_prs();
        let lacking: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Main)
            .filter(|r| !r.tested.iter().any(|t| merging.contains(&t.pr)))
            .filter(|r| {
                let landed_ahead = r.chain.first().is_some_and(|l| self.entry(l.pr).is_none());
                let moved = r.base_sha.is_some() && r.base_sha != target;
                landed_ahead || moved
            })
            .map(|r| r.id.clone())
            .collect();
        self.stop_predicting(lacking, "merge_method_changed");
    }

    /// Groups that no longer predict the target: marked diverged in parallel mode, restarted
    /// in single mode.
    fn stop_predicting(&mut self, lacking: Vec<String>, reason: &str) {
        if self.cfg().mode == QueueMode::Parallel {
            for id in &lacking {
                if let Some(r) = self.run_mut(id) {
                    r.diverged = true;
                }
            }
        } else if !lacking.is_empty() {
            self.reshuffle(lacking, BTreeSet::new(), reason);
        }
    }

    /// Whether a run's branch still predicts the target once `merged` landed: the branch's
    /// first merge commits are those of pull requests that left the queue, ending with the
    /// merged ones in the same order (the hosts land a tested commit only when it is the
    /// target with the merged pull requests on top). Under `merge_commit` (`same_commit`) the
    /// target's new tip must also be in its history: the merge was a fast-forward, and the
    /// merge commits are the same (same stamps). A run built before chains were recorded is
    /// judged by its pull requests alone. Pull requests of `landing`, still in the queue, are
    /// taken as landed (a merge judged before it is made).
    fn still_predicts(
        &self,
        run: &TestRun,
        merged: &[BranchPr],
        same_commit: bool,
        fast_forward: bool,
        landing: &BTreeSet<PrNumber>,
    ) -> bool {
        if !merged.iter().all(|m| run.dependent_prs.contains(&m.pr)) {
            return false;
        }
        if run.chain.is_empty() {
            return true;
        }
        if same_commit && !fast_forward {
            return false;
        }
        let gone = |pr: PrNumber| self.entry(pr).is_none() || landing.contains(&pr);
        let landed = run.chain.iter().take_while(|link| gone(link.pr)).count();
        let rest_in_queue = run.chain[landed..].iter().all(|link| !gone(link.pr));
        let same = |(link, m): (&BranchPr, &BranchPr)| {
            if same_commit {
                link == m
            } else {
                (link.pr, &link.head_sha) == (m.pr, &m.head_sha)
            }
        };
        rest_in_queue
            && landed >= merged.len()
            && run.chain[landed - merged.len()..landed]
                .iter()
                .zip(merged)
                .all(same)
    }

    /// A direct merge landed.
    pub fn direct_merged(&mut self, pr: &BranchPr, target_sha: &Sha) {
        let in_its_lane = self.groups_in_the_lane_of(pr.pr);
        self.target_merged_to(target_sha);
        self.bisection_target_grew(&BTreeSet::from([pr.pr]));
        self.conclude(pr.pr, EntryState::Merged, "merged", "merged");
        self.after_foreign_merge(std::slice::from_ref(pr), false);
        if !in_its_lane.is_empty() {
            self.reshuffle(in_its_lane, BTreeSet::new(), "target_moved");
        }
    }

    /// In parallel mode, the groups without `pr` (merged directly) whose targets meet its
    /// targets: no group depends on a direct merge, so one started while it was under way was
    /// built without it, and was tested on a target that lacks a change of its own lane. It
    /// tests again (a group of another lane only diverges, as after any merge of another lane).
    /// A group whose merge is under way merges as it was sent.
    fn groups_in_the_lane_of(&self, pr: PrNumber) -> Vec<String> {
        if !self.parallel() {
            return Vec::new();
        }
        let reach = self.targets_of(&[pr]);
        let merging = self.merging_prs();
        self.s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Main)
            .filter(|r| !r.dependent_prs.contains(&pr) && !r.tested.iter().any(|t| t.pr == pr))
            .filter(|r| !r.tested.iter().any(|t| merging.contains(&t.pr)))
            .filter(|r| run_targets(r).intersects(&reach))
            .map(|r| r.id.clone())
            .collect()
    }

    /// The Git host refused a merge: `prs` were in it, `run_id` its last group (`None` for a
    /// direct merge).
    pub fn merge_refused(
        &mut self,
        run_id: Option<&str>,
        prs: &[BranchPr],
        refusal: &MergeRefusal,
    ) {
        let in_merge: Vec<PrNumber> = prs.iter().map(|p| p.pr).collect();
        if run_id.is_none() {
            self.direct_merge_refused(in_merge[0], refusal);
            return;
        }
        match refusal {
            MergeRefusal::TargetMoved { actual } => self.target_moved_to(actual),
            MergeRefusal::PrChanged { pr } => {
                self.remove_entries(&[*pr], EntryState::Cancelled, "new_commits");
                self.restart_merge_groups(&in_merge);
            }
            MergeRefusal::PrClosed { pr } => {
                self.remove_entries(&[*pr], EntryState::Cancelled, "pr_closed");
                self.restart_merge_groups(&in_merge);
            }
            MergeRefusal::PrMerged { pr } => {
                self.remove_entries(&[*pr], EntryState::Cancelled, reason::PR_MERGED);
                self.restart_merge_groups(&in_merge);
            }
            MergeRefusal::Rejected {
                pr: Some(pr),
                detail,
            } if in_merge.contains(pr) => {
                self.refused(&[*pr], detail);
                self.restart_merge_groups(&in_merge);
            }
            MergeRefusal::Rejected { detail, .. } => self.refused(&in_merge, detail),
        }
    }

    /// `prs` fail: the Git host refused to merge them, saying `detail`.
    fn refused(&mut self, prs: &[PrNumber], detail: &str) {
        let detail = refusal_detail(detail);
        self.remove_entries_saying(prs, EntryState::Failed, reason::MERGE_FAILED, &detail);
    }

    /// The merge failed for good (the effect could not be executed, the Git host answering
    /// `answer`): its pull requests fail, told what the host answered.
    pub fn merge_failed(&mut self, prs: &[BranchPr], answer: &str) {
        let in_merge: Vec<PrNumber> = prs.iter().map(|p| p.pr).collect();
        let detail = format!("the merge could not be carried out, the Git host answered: {answer}");
        self.remove_entries_saying(&in_merge, EntryState::Failed, reason::MERGE_FAILED, &detail);
    }

    /// Groups of a refused merge that still wait to merge restart on the current target.
    fn restart_merge_groups(&mut self, in_merge: &[PrNumber]) {
        let groups: Vec<String> = self
            .line()
            .into_iter()
            .filter(|id| {
                self.run(id).is_some_and(|r| {
                    r.tested.iter().any(|t| in_merge.contains(&t.pr)) && self.group_passed(r)
                })
            })
            .collect();
        if !groups.is_empty() {
            self.reshuffle(groups, BTreeSet::new(), "merge_refused");
        }
    }

    fn direct_merge_refused(&mut self, pr: PrNumber, refusal: &MergeRefusal) {
        match refusal {
            MergeRefusal::TargetMoved { actual } => {
                self.set_state(pr, EntryState::Pending);
                self.target_moved_to(actual);
            }
            MergeRefusal::PrChanged { .. } => {
                self.remove_entries(&[pr], EntryState::Cancelled, "new_commits");
            }
            MergeRefusal::PrClosed { .. } => {
                self.remove_entries(&[pr], EntryState::Cancelled, "pr_closed");
            }
            MergeRefusal::PrMerged { .. } => {
                self.remove_entries(&[pr], EntryState::Cancelled, reason::PR_MERGED);
            }
            MergeRefusal::Rejected { detail, .. } => self.refused(&[pr], detail),
        }
    }
}

/// The sentence for a pull request the Git host refused to merge, with the host's reason (cut
/// to [`MAX_REFUSAL_CHARS`]: it is shown in a comment).
/// The targets a run's branch reaches, as recorded when it was built (`ALL` when nothing was,
/// as for a branch whose pull requests have no targets).
fn run_targets(run: &TestRun) -> ImpactedTargets {
    run.impacted_targets
        .as_deref()
        .map_or(ImpactedTargets::All, ImpactedTargets::from_list)
}

fn refusal_detail(detail: &str) -> String {
    let general = super::failure::failure_detail(reason::MERGE_FAILED);
    if detail.trim().is_empty() {
        return general;
    }
    format!("{general}: {}", excerpt(detail, MAX_REFUSAL_CHARS))
}

/// How much of a Git host's reason for refusing a merge a pull request is told (GitHub's
/// message after the advice on signed commits fits).
const MAX_REFUSAL_CHARS: usize = 1_000;
