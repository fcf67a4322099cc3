//! The line: the groups in front of the waiting entries, their order, what each group's test
//! branch contains, and restarts when that content is no longer the target's future.
//!
//! A group is a main run in `snapshot.runs`; its entries are `testing`, `tests_passed` or
//! `pending_failure`. Groups are ordered by their [`LinePlace`] (urgent groups first, then by
//! when they joined), except that groups being merged come first. In single mode a group
//! depends on every group ahead of it; in parallel mode on the groups ahead whose impacted
//! targets intersect its own, transitively (docs/queue-semantics.md §5, §7).

use super::Effect;
use super::work::Work;
use crate::entry::{EntryState, ImpactedTargets};
use crate::ids::PrNumber;
use crate::run::{LinePlace, RunKind, RunStatus, TestRun};
use crate::snapshot::QueueSnapshot;
use std::collections::{BTreeMap, BTreeSet};

/// What a pull request without uploaded targets impacts.
static ALL: ImpactedTargets = ImpactedTargets::All;

/// A group's position: groups being merged first (0), then the others (1), by place.
pub(super) type LineKey = (u8, LinePlace);

/// The key of a group that is not being merged.
pub(super) fn key_of(place: LinePlace) -> LineKey {
    (1, place)
}

/// PRs in the merge the shell is executing, if any. A merge with no tested commit lands its
/// run's pull requests one at a time (`emit_merge`): those of the run's branch still in the
/// queue are being merged too.
pub fn merging_prs_of(s: &QueueSnapshot) -> BTreeSet<PrNumber> {
    let mut merging = BTreeSet::new();
    for x in &s.outbox {
        let Effect::Merge {
            prs,
            run_id,
            tested_sha,
            ..
        } = &x.effect
        else {
            continue;
        };
        merging.extend(prs.iter().map(|p| p.pr));
        let one_by_one = run_id
            .as_ref()
            .filter(|_| tested_sha.is_none())
            .and_then(|id| s.runs.iter().find(|r| &r.id == id));
        if let Some(run) = one_by_one {
            let queued = run.chain.iter().map(|l| l.pr);
            merging.extend(queued.filter(|&pr| s.entry_for_pr(pr).is_some()));
        }
    }
    merging
}

/// Positions in `s.runs` of the groups of a snapshot's line, front first.
pub fn line_positions(s: &QueueSnapshot) -> Vec<usize> {
    let has_merge = s
        .outbox
        .iter()
        .any(|x| matches!(x.effect, Effect::Merge { .. }));
    let merging = if has_merge {
        merging_prs_of(s)
    } else {
        BTreeSet::new()
    };
    let mut keyed: Vec<(LineKey, usize)> = s
        .runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == RunKind::Main)
        .map(|(i, r)| {
            let is_merging = has_merge && r.tested.iter().any(|t| merging.contains(&t.pr));
            ((u8::from(!is_merging), r.place), i)
        })
        .collect();
    keyed.sort_by(|a, b| (a.0, &s.runs[a.1].id).cmp(&(b.0, &s.runs[b.1].id)));
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The groups of a snapshot's line, front first.
pub fn line_of(s: &QueueSnapshot) -> Vec<&TestRun> {
    line_positions(s).into_iter().map(|i| &s.runs[i]).collect()
}

impl Work {
    pub fn merging_prs(&self) -> BTreeSet<PrNumber> {
        merging_prs_of(&self.s)
    }

    pub fn merge_in_flight(&self) -> bool {
        self.s
            .outbox
            .iter()
            .any(|x| matches!(x.effect, Effect::Merge { .. }))
    }

    /// The line: ids of main runs, front first.
    pub fn line(&self) -> Vec<String> {
        line_positions(&self.s)
            .into_iter()
            .map(|i| self.s.runs[i].id.clone())
            .collect()
    }

    /// The union of the impacted targets of `prs`; `ALL` when one has none for its head.
    pub fn targets_of(&self, prs: &[PrNumber]) -> ImpactedTargets {
        let mut union = ImpactedTargets::List(BTreeSet::new());
        for &pr in prs {
            match self.entry(pr) {
                Some(e) if e.has_impacted_targets() => {
                    if let Some(t) = &e.impacted {
                        union.absorb(&t.targets);
                    }
                }
                _ => return ImpactedTargets::All,
            }
        }
        union
    }

    /// The groups a new group with `prs` at `key` depends on, front first: in single mode
    /// every group ahead, in parallel mode those whose targets intersect, transitively.
    pub fn deps_ahead(&self, key: LineKey, prs: &[PrNumber]) -> Vec<String> {
        let merging = self.merging_prs();
        let mut ahead: Vec<(LineKey, &TestRun)> = self
            .s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Main && !prs.contains(&first_pr(r)))
            .map(|r| {
                let is_merging = r.tested.iter().any(|t| merging.contains(&t.pr));
                ((u8::from(!is_merging), r.place), r)
            })
            .filter(|(k, _)| *k < key)
            .collect();
        ahead.sort_by_key(|(k, _)| *k);
        if !self.parallel() {
            return ahead.into_iter().map(|(_, r)| r.id.clone()).collect();
        }
        // The targets the new group reaches: its own, then those of every group it depends
        // on (borrowed, not merged into one set: this runs for every new group).
        let mut reach: Vec<&ImpactedTargets> = Vec::new();
        for &pr in prs {
            self.push_targets(pr, &mut reach);
        }
        let mut deps = Vec::new();
        for (_, run) in ahead.into_iter().rev() {
            let mut targets = Vec::new();
            for t in &run.tested {
                self.push_targets(t.pr, &mut targets);
            }
            let hits = targets
                .iter()
                .any(|a| reach.iter().any(|b| a.intersects(b)));
            if hits {
                reach.extend(targets);
                deps.push(run.id.clone());
            }
        }
        deps.reverse();
        deps
    }

    /// Adds a pull request's targets to `out` (`ALL` when it has none for its head).
    fn push_targets<'a>(&'a self, pr: PrNumber, out: &mut Vec<&'a ImpactedTargets>) {
        match self.entry(pr) {
            Some(e) if e.has_impacted_targets() => {
                if let Some(t) = &e.impacted {
                    out.push(&t.targets);
                }
            }
            Some(_) => out.push(&ALL),
            None => {}
        }
    }

    /// Positions (in `s.runs`) of the groups in `line` that the run at `at` contains.
    pub fn deps_in(&self, line: &[usize], at: usize) -> Vec<usize> {
        // Sorted once: a long line asks this of every group, each holding many pull requests.
        let deps = sorted(&self.s.runs[at].dependent_prs);
        self.others_in(line, at, |run| {
            run.tested.iter().any(|t| deps.binary_search(&t.pr).is_ok())
        })
    }

    /// Positions of the groups in `line` whose branches contain the run at `at`.
    pub fn dependents_in(&self, line: &[usize], at: usize) -> Vec<usize> {
        let tested: Vec<PrNumber> = self.s.runs[at].tested.iter().map(|t| t.pr).collect();
        let tested = sorted(&tested);
        self.others_in(line, at, |run| {
            run.dependent_prs
                .iter()
                .any(|p| tested.binary_search(p).is_ok())
        })
    }

    /// Positions of the groups in `line`, other than `at`, whose runs satisfy `keep`.
    fn others_in(&self, line: &[usize], at: usize, keep: impl Fn(&TestRun) -> bool) -> Vec<usize> {
        line.iter()
            .copied()
            .filter(|&j| j != at && keep(&self.s.runs[j]))
            .collect()
    }

    /// Whether every entry of a group has passed (its own run, or cleared by a pass behind).
    /// A group with no tested commit merges one pull request at a time (`emit_merge`): those
    /// merged already have left the queue, and the rest still count.
    pub fn group_passed(&self, run: &TestRun) -> bool {
        let states: Vec<Option<EntryState>> = run
            .tested
            .iter()
            .map(|t| self.state_of(t.pr))
            .filter(|state| !(run.diverged && state.is_none()))
            .collect();
        !states.is_empty() && states.iter().all(|&s| s == Some(EntryState::TestsPassed))
    }

    /// Restarts groups whose branch no longer predicts the target: the groups `restart`,
    /// and every group containing a pull request of `removed`. Each restarts in its place
    /// when the queue is not paused (a group in line also restarts while the queue drains or
    /// switches modes) and a testing slot is free, else drops back to `pending` (and then the
    /// groups containing it restart too). Front groups get slots first. A group holding a pull
    /// request no longer ready (made a draft while it had passed) drops back too, and that
    /// pull request waits, not ready, until it is. A bisection split tested on a group that
    /// restarts, in place or not (also on a move of the target), waits for it to be tested
    /// again (docs/queue-semantics.md §6): a split that failed meanwhile could not tell its own
    /// failure from that group's.
    pub fn reshuffle(&mut self, restart: Vec<String>, removed: BTreeSet<PrNumber>, reason: &str) {
        let mut removed = removed;
        let mut restarted = BTreeSet::new();
        let mut to_close: Vec<String> = restart;
        let mut queue: BTreeMap<LineKey, Vec<PrNumber>> = BTreeMap::new();
        loop {
            for r in &self.s.runs {
                let contains_removed =
                    r.kind == RunKind::Main && r.dependent_prs.iter().any(|p| removed.contains(p));
                if contains_removed && !to_close.contains(&r.id) {
                    to_close.push(r.id.clone());
                }
            }
            for id in std::mem::take(&mut to_close) {
                if let Some(run) = self.close_run(&id, reason) {
                    let prs = self.active_prs(&run);
                    queue.insert(key_of(run.place), prs);
                }
            }
            let Some((key, prs)) = queue.pop_first() else {
                break;
            };
            if prs.is_empty() {
                continue;
            }
            for &pr in &prs {
                if let Some(e) = self.entry_mut(pr) {
                    e.restarts += 1;
                }
            }
            restarted.extend(prs.iter().copied());
            let slot = self.main_in_flight() < self.cfg().concurrency as usize;
            if self.can_rerun() && slot && prs.iter().all(|&pr| self.still_ready(pr)) {
                self.start_group(prs, key.1);
            } else {
                for &pr in &prs {
                    if self.still_ready(pr) {
                        self.back_in_line(pr);
                    } else {
                        self.set_state(pr, EntryState::NotReady);
                    }
                }
                removed.extend(prs);
            }
        }
        restarted.extend(removed);
        self.rerun_splits_built_on(&restarted);
    }

    /// Whether `pr`, in line, is still ready to be tested as far as its own state goes (not a
    /// draft, its reviews approving it): a mergeability GitHub is computing again after the
    /// target moved is no reason to leave the line.
    fn still_ready(&self, pr: PrNumber) -> bool {
        self.entry(pr).is_some_and(|e| e.pr_facts.ready_to_merge())
    }

    /// Groups whose branch would now contain the group `new`: every group behind it in
    /// single mode, those reached through intersecting targets in parallel mode.
    pub fn groups_behind_needing(&self, new: &str) -> Vec<String> {
        let Some(run) = self.run(new) else {
            return Vec::new();
        };
        let new_key = key_of(run.place);
        let merging = self.merging_prs();
        let mut reach = self.targets_of(&self.active_prs(run));
        let mut out = Vec::new();
        for id in self.line() {
            let Some(r) = self.run(&id) else { continue };
            let is_merging = r.tested.iter().any(|t| merging.contains(&t.pr));
            if id == new || is_merging || key_of(r.place) <= new_key {
                continue;
            }
            if r.dependent_prs
                .iter()
                .any(|p| run.tested.iter().any(|t| t.pr == *p))
            {
                continue;
            }
            let targets = self.targets_of(&self.active_prs(r));
            if !self.parallel() || targets.intersects(&reach) {
                reach.absorb(&targets);
                out.push(id);
            }
        }
        out
    }

    /// Keeps at most `concurrency` main runs in flight: the groups testing furthest back
    /// drop back to `pending` (after a lower `concurrency`, or an urgent group's arrival).
    pub fn enforce_concurrency(&mut self) -> bool {
        let limit = self.cfg().concurrency as usize;
        if self.main_in_flight() <= limit {
            return false;
        }
        let testing: Vec<String> = self
            .line()
            .into_iter()
            .filter(|id| {
                self.run(id)
                    .is_some_and(|r| r.status == RunStatus::InProgress && !r.held)
            })
            .collect();
        let excess: Vec<String> = testing.into_iter().skip(limit).collect();
        let removed: BTreeSet<PrNumber> = excess
            .iter()
            .filter_map(|id| self.run(id))
            .flat_map(|r| r.tested.iter().map(|t| t.pr))
            .collect();
        for id in &excess {
            self.close_run(id, "concurrency");
        }
        for &pr in &removed {
            if let Some(e) = self.entry_mut(pr) {
                e.restarts += 1;
            }
            self.back_in_line(pr);
        }
        self.reshuffle(Vec::new(), removed, "restart");
        true
    }
}

fn sorted(prs: &[PrNumber]) -> Vec<PrNumber> {
    let mut v = prs.to_vec();
    v.sort_unstable();
    v
}

fn first_pr(run: &TestRun) -> PrNumber {
    run.tested.first().map_or(u32::MAX, |t| t.pr)
}
