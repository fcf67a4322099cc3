//! Starting tests: which waiting entries form the next group (priorities, urgent preemption,
//! batching), and the run that tests a group on its predicted base (docs/queue-semantics.md §3,
//! §5, §6).

use super::line::key_of;
use super::work::Work;
use super::{BranchPr, Effect};
use crate::entry::{Entry, EntryState, ImpactedTargets};
use crate::ids::PrNumber;
use crate::run::{
    LinePlace, MAX_RUN_TARGETS_BYTES, MergeStamp, RunKind, RunStatus, TestRun, TestedPr,
};

impl Work {
    /// Ready entries waiting for a test that may start now ([`Self::may_start`]), in the
    /// order they will be taken: by priority value, then submission.
    pub fn waiting(&self) -> Vec<PrNumber> {
        let mut waiting: Vec<_> = self
            .s
            .entries
            .iter()
            .filter(|e| self.may_start(e))
            .map(|e| (e.priority.value, e.seq, e.pr))
            .collect();
        waiting.sort_unstable();
        waiting.into_iter().map(|(_, _, pr)| pr).collect()
    }

    /// The entry that waits longest at the highest priority, found without sorting.
    fn first_waiting(&self) -> Option<PrNumber> {
        self.s
            .entries
            .iter()
            .filter(|e| self.may_start(e))
            .min_by_key(|e| (e.priority.value, e.seq))
            .map(|e| e.pr)
    }

    /// Whether `e` waits for a test and may start one: any such entry while the queue runs;
    /// while it drains, one tested before (nothing new starts, but a pull request that was
    /// in line and went back to wait, its group restarted without a free slot or back from
    /// a bisection split that passed, is tested again: the drain finishes the line).
    pub fn may_start(&self, e: &Entry) -> bool {
        let waits = e.state == EntryState::Pending && e.current_run.is_none();
        waits && (self.can_start() || (self.draining() && e.first_tested_at.is_some()))
    }

    /// Starts groups of the entries that may start ([`Self::may_start`]) while slots are
    /// free (a group whose branch conflicted keeps its slot until its failure is decided).
    /// While the queue runs, an urgent entry at the front starts even when every slot is
    /// busy: groups behind it restart on top of it, and those beyond the concurrency limit
    /// drop back to `pending`.
    pub fn fill(&mut self) -> bool {
        let mut started = false;
        while let Some(head) = self.first_waiting() {
            let urgent = self.entry(head).is_some_and(|e| e.priority.is_urgent());
            let busy = self.main_in_flight() + self.conflicted_waiting();
            let slot = busy < self.cfg().concurrency as usize;
            let preempts = urgent && self.can_start() && self.can_preempt();
            if !slot && !preempts {
                break;
            }
            let waiting = self.waiting();
            let Some(group) = self.next_group(&waiting, urgent) else {
                break;
            };
            let class = if urgent {
                LinePlace::URGENT
            } else {
                LinePlace::NORMAL
            };
            let place = self.next_place(class);
            let id = self.start_group(group, place);
            if urgent {
                let behind = self.groups_behind_needing(&id);
                self.reshuffle(behind, Default::default(), "urgent");
                self.enforce_concurrency();
            }
            started = true;
        }
        started
    }

    /// An urgent entry may take a slot from a non-urgent group that is testing.
    fn can_preempt(&self) -> bool {
        self.s.runs.iter().any(|r| {
            r.kind == RunKind::Main
                && r.status == RunStatus::InProgress
                && !r.held
                && r.place.class != LinePlace::URGENT
        })
    }

    fn next_place(&mut self, class: u8) -> LinePlace {
        let seq = self.s.queue.engine.next_place;
        self.s.queue.engine.next_place += 1;
        LinePlace { class, seq }
    }

    /// The next group to test. Without batching: the head. With batching: `noBatch` and
    /// urgent entries alone; entries back from a bisection split that passed with only the
    /// entries that passed with them, at once; otherwise the batchable entries at the head,
    /// once `batchingMinSize` of them wait or the oldest has waited
    /// `batchingMaxWaitTimeMinutes` (at most `batchingMinSize` per batch). While a batch is
    /// still forming, an entry behind it that is not batchable does not wait.
    fn next_group(&self, waiting: &[PrNumber], head_urgent: bool) -> Option<Vec<PrNumber>> {
        let head = waiting[0];
        if !self.cfg().batch || head_urgent || !self.batchable(head) {
            return Some(self.alone_or_with_its_split(waiting, head));
        }
        let size = self.cfg().group_size() as usize;
        let batch: Vec<PrNumber> = waiting
            .iter()
            .copied()
            .take_while(|&pr| self.batchable(pr))
            .take(size)
            .collect();
        // A draining queue takes no new pull request: a batch would wait for nothing.
        if batch.len() >= size || self.batch_wait_over(&batch) || self.draining() {
            return Some(batch);
        }
        waiting
            .iter()
            .copied()
            .find(|&pr| !self.batchable(pr))
            .map(|pr| self.alone_or_with_its_split(waiting, pr))
    }

    /// A batch takes entries that are neither `noBatch` nor urgent, and not back from a
    /// bisection split that passed (those go with their split).
    fn batchable(&self, pr: PrNumber) -> bool {
        self.entry(pr)
            .is_some_and(|e| !tested_alone(e) && e.passed_split.is_none())
    }

    /// `pr` with the waiting entries that passed the same bisection split, in waiting order
    /// and at most `batchingMinSize` of them, when batching is on and it is back from one and
    /// neither `noBatch` nor urgent; else `pr` alone. Each such group is smaller than the
    /// batch it was split from, so entries that fail only together end up tested apart. They
    /// stay with their split until tested to a result (a group restarted before that, its
    /// entries back in line, keeps them together).
    fn alone_or_with_its_split(&self, waiting: &[PrNumber], pr: PrNumber) -> Vec<PrNumber> {
        let split = self.entry(pr).and_then(split_tested_with);
        let Some(split) = split.filter(|_| self.cfg().batch) else {
            return vec![pr];
        };
        waiting
            .iter()
            .copied()
            .filter(|&other| self.entry(other).and_then(split_tested_with) == Some(split))
            .take(self.cfg().group_size() as usize)
            .collect()
    }

    fn batch_wait_over(&self, batch: &[PrNumber]) -> bool {
        let oldest = batch
            .iter()
            .filter_map(|&pr| self.entry(pr))
            .map(|e| e.ready_at.unwrap_or(e.submitted_at))
            .min();
        let wait = self.cfg().batching_max_wait_time_minutes;
        oldest.is_some_and(|t| self.now >= t.plus_minutes(wait))
    }

    /// Starts a main run for `prs` at `place`, on the target head plus the groups it depends
    /// on. Returns the run id.
    pub fn start_group(&mut self, prs: Vec<PrNumber>, place: LinePlace) -> String {
        let dependent_prs = self.dependent_prs(place, &prs);
        self.create_run(RunKind::Main, place, prs, dependent_prs, None)
    }

    /// The active pull requests of the groups a new group with `prs` at `place` depends on
    /// ([`Self::deps_ahead`]), front first: what its branch holds before `prs`.
    pub fn dependent_prs(&self, place: LinePlace, prs: &[PrNumber]) -> Vec<PrNumber> {
        self.deps_ahead(key_of(place), prs)
            .iter()
            .filter_map(|id| self.run(id))
            .flat_map(|r| self.active_prs(r))
            .collect()
    }

    /// Creates a run and asks the Git host for its branch: the target head, then
    /// `dependent_prs`, then `prs`, one merge per pull request.
    pub fn create_run(
        &mut self,
        kind: RunKind,
        place: LinePlace,
        prs: Vec<PrNumber>,
        dependent_prs: Vec<PrNumber>,
        bisection_of: Option<String>,
    ) -> String {
        let id = self.next_run_id(kind);
        let run = TestRun {
            id: id.clone(),
            kind,
            branch: self.branch_for(&id),
            status: RunStatus::InProgress,
            created_at: self.now,
            tested: prs.iter().filter_map(|&pr| self.tested_pr(pr)).collect(),
            dependent_prs: dependent_prs.clone(),
            chain: Vec::new(),
            test_pull_request: false,
            base_sha: self.s.queue.engine.target_head.clone(),
            sha: None,
            required: None,
            statuses: Vec::new(),
            check_runs: Vec::new(),
            impacted_targets: self.targets_list(&[&dependent_prs[..], &prs[..]].concat()),
            impacted_targets_for_tested_prs: self.targets_list(&prs),
            started_at: None,
            finished_at: None,
            reason: None,
            place,
            held: false,
            diverged: false,
            pushes_discarded: 0,
            bisection_of,
            host_error: None,
            stamped_at: None,
        };
        let now = self.now;
        for &pr in &prs {
            if let Some(e) = self.entry_mut(pr) {
                e.current_run = Some(id.clone());
                e.last_run = Some(id.clone());
                e.first_tested_at.get_or_insert(now);
                if kind == RunKind::Main {
                    e.dependent_prs = dependent_prs.clone();
                }
            }
            if kind == RunKind::Main {
                self.set_state(pr, EntryState::Testing);
            }
        }
        self.s.runs.push(run);
        self.request_branch(&id);
        if kind == RunKind::Main {
            for &pr in &prs {
                self.notify_testing(pr);
            }
        }
        id
    }

    /// Emits the effect that creates a run's branch: the current target head, the run's
    /// dependencies still in the queue (those merged since are in the target), its PRs. Each
    /// dependency's merge commit is stamped as its own group's branch stamps it, and the run's
    /// own pull requests with this build's stamp (see [`MergeStamp`]).
    pub fn request_branch(&mut self, id: &str) {
        let head = self.s.queue.engine.target_head.clone();
        let Some(run) = self.run(id) else { return };
        let deps: Vec<PrNumber> = run
            .dependent_prs
            .iter()
            .copied()
            .filter(|&pr| self.entry(pr).is_some())
            .collect();
        let own = stamp_of(run);
        let mut chain: Vec<BranchPr> = deps
            .iter()
            .filter_map(|&pr| self.dep_link(id, pr))
            .collect();
        chain.extend(
            run.tested
                .iter()
                .filter_map(|t| self.branch_pr(t.pr))
                .map(|pr| pr.stamped(own.clone())),
        );
        let effect = Effect::CreateTestBranch {
            run_id: run.id.clone(),
            branch: run.branch.clone(),
            base: head.clone(),
            prs: chain.clone(),
            dependent_prs: deps.clone(),
        };
        if let Some(run) = self.run_mut(id) {
            run.base_sha = head;
            run.dependent_prs = deps;
            run.chain = chain;
            run.diverged = false;
        }
        self.emit(effect);
    }

    /// A dependency of run `id` as its own group's branch holds it: the link of that group's
    /// chain, or (a group whose branch is not requested yet) the pull request stamped with
    /// that group's run.
    fn dep_link(&self, id: &str, pr: PrNumber) -> Option<BranchPr> {
        let group =
            self.s.runs.iter().find(|r| {
                r.kind == RunKind::Main && r.id != id && r.tested.iter().any(|t| t.pr == pr)
            });
        let Some(group) = group else {
            return self.branch_pr(pr);
        };
        let built = group.chain.iter().find(|link| link.pr == pr);
        match built {
            Some(link) => Some(link.clone()),
            None => self.branch_pr(pr).map(|b| b.stamped(stamp_of(group))),
        }
    }

    /// Held restarts start first when slots free (unless the queue is paused).
    pub fn start_held(&mut self) -> bool {
        if !self.s.runs.iter().any(|r| r.held) {
            return false;
        }
        let mut started = false;
        for id in self.line() {
            let held = self.run(&id).is_some_and(|r| r.held);
            let slot = self.main_in_flight() < self.cfg().concurrency as usize;
            if held && self.can_rerun() && slot {
                let now = self.now;
                if let Some(r) = self.run_mut(&id) {
                    r.held = false;
                    r.stamped_at.get_or_insert(r.created_at);
                    r.created_at = now;
                }
                self.request_branch(&id);
                started = true;
            }
        }
        started
    }

    pub fn branch_pr(&self, pr: PrNumber) -> Option<BranchPr> {
        self.entry(pr).map(|e| BranchPr {
            pr,
            head_sha: e.pr_facts.head_sha.clone(),
            title: e.pr_facts.title.clone(),
            stamp: None,
        })
    }

    fn tested_pr(&self, pr: PrNumber) -> Option<TestedPr> {
        self.entry(pr).map(|e| TestedPr {
            entry_id: e.id.clone(),
            pr,
            title: e.pr_facts.title.clone(),
            head_sha: e.pr_facts.head_sha.clone(),
        })
    }

    /// `impactedTargets` of a set of PRs: present only when one of them has targets; `["ALL"]`
    /// when their names would be over [`MAX_RUN_TARGETS_BYTES`].
    fn targets_list(&self, prs: &[PrNumber]) -> Option<Vec<String>> {
        let any = prs
            .iter()
            .any(|&pr| self.entry(pr).is_some_and(|e| e.has_impacted_targets()));
        let list = any.then(|| self.targets_of(prs).to_list())?;
        if list.iter().map(String::len).sum::<usize>() > MAX_RUN_TARGETS_BYTES {
            return Some(ImpactedTargets::All.to_list());
        }
        Some(list)
    }
}

/// The stamp a run's build gives the merge commits of its own pull requests: the same from its
/// creation on, held and released or not, so every branch holding them holds the same commits.
fn stamp_of(run: &TestRun) -> MergeStamp {
    MergeStamp {
        run_id: run.id.clone(),
        at: run.stamped_at.unwrap_or(run.created_at),
    }
}

/// Tested alone, whatever batching says: `noBatch`, or urgent.
fn tested_alone(e: &Entry) -> bool {
    e.no_batch || e.priority.is_urgent()
}

/// The bisection split that passed which `e` is tested with, unless it is tested alone.
fn split_tested_with(e: &Entry) -> Option<&str> {
    e.passed_split.as_deref().filter(|_| !tested_alone(e))
}
