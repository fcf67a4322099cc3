//! The working copy of a queue during one step: lookups, ids, effect emission, and the
//! bookkeeping every rule shares (state changes, concluding entries, closing runs).

use super::{Ctx, Effect, PendingEffect, Transition};
use crate::entry::{Conclusion, Entry, EntryState};
use crate::ids::PrNumber;
use crate::run::{RunKind, RunStatus, TestRun};
use crate::settings::{QueueConfig, QueueMode, QueueState};
use crate::snapshot::{ConcludedEntry, MAX_RECENTLY_CONCLUDED, QueueSnapshot};
use crate::time::Timestamp;
use std::cell::RefCell;
use std::sync::Arc;

/// Test branches are named `<prefix>/<target branch>/<run id>`.
pub const TEST_BRANCH_PREFIX: &str = "mq-test";

/// The longest target branch a test branch names in full: with the prefix, two slashes and
/// the longest run id (20 digits, a dash, 8 hex digits and `-bisection`, 39 bytes), the name
/// stays within 255 bytes.
pub const MAX_TARGET_IN_BRANCH: usize = 200;

/// How long an emitted effect is left to the shell before the tick emits it again. A request
/// that executes effects lives at most 29 s (the API functions' timeout), and a tick works a
/// queue under its own lease, so an effect still unanswered after this long was given up by
/// whoever executed it (its outcome could not be recorded): executing it again is due.
pub const EFFECT_LEASE_MS: i64 = 30_000;

/// The mutable copy of a snapshot, and what the step produced so far.
pub(super) struct Work {
    pub s: QueueSnapshot,
    pub now: Timestamp,
    salt: u64,
    pub effects: Vec<PendingEffect>,
    pub concluded: Vec<Entry>,
    pub finished_runs: Vec<TestRun>,
    /// Each PR's entry position in `s.entries`, sorted by PR; rebuilt after entries come or go.
    index: RefCell<Option<Vec<(PrNumber, usize)>>>,
    /// Something that decides readiness changed (facts, targets, mode): re-check it.
    pub readiness_stale: bool,
}

impl Work {
    pub fn new(snapshot: QueueSnapshot, ctx: Ctx) -> Self {
        Self {
            s: snapshot,
            now: ctx.now,
            salt: mix(ctx.seed),
            effects: Vec::new(),
            concluded: Vec::new(),
            finished_runs: Vec::new(),
            index: RefCell::new(None),
            readiness_stale: false,
        }
    }

    pub fn finish(self) -> Transition {
        Transition {
            snapshot: self.s,
            effects: self.effects,
            concluded: self.concluded,
            finished_runs: self.finished_runs,
        }
    }

    pub fn cfg(&self) -> &QueueConfig {
        &self.s.queue.config
    }

    pub fn parallel(&self) -> bool {
        self.s.queue.config.mode == QueueMode::Parallel
    }

    /// New tests start only while the queue is `running`.
    pub fn can_start(&self) -> bool {
        self.s.queue.state == QueueState::Running
    }

    /// The queue drains: nothing new starts, and what is in line finishes, pull requests that
    /// went back to wait after being tested included ([`Self::may_start`]). (A mode switch ends
    /// once the line is empty, and the queue then runs: what waits in `pending` starts then,
    /// in the new mode.)
    pub fn draining(&self) -> bool {
        self.s.queue.state == QueueState::Draining
    }

    /// Merges happen in every state but `paused` (also while a paused queue switches
    /// modes: it merges only once resumed).
    pub fn can_merge(&self) -> bool {
        !self.s.queue.mode_and_state().is_paused()
    }

    /// A restart asked for by `restartTestsOnPullRequest` re-runs a group already in line:
    /// it starts in every state but `paused` (draining and switching modes let the groups
    /// in line finish), when a testing slot is free.
    pub fn can_rerun(&self) -> bool {
        !self.s.queue.mode_and_state().is_paused()
    }

    fn position(&self, pr: PrNumber) -> Option<usize> {
        let mut index = self.index.borrow_mut();
        let sorted = index.get_or_insert_with(|| {
            let mut v: Vec<(PrNumber, usize)> = self
                .s
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| (e.pr, i))
                .collect();
            v.sort_unstable();
            v
        });
        sorted
            .binary_search_by_key(&pr, |&(p, _)| p)
            .ok()
            .map(|i| sorted[i].1)
    }

    /// Entries were added or removed: positions must be computed again.
    pub fn entries_changed(&self) {
        *self.index.borrow_mut() = None;
    }

    pub fn entry(&self, pr: PrNumber) -> Option<&Entry> {
        self.position(pr).map(|i| &*self.s.entries[i])
    }

    pub fn entry_mut(&mut self, pr: PrNumber) -> Option<&mut Entry> {
        self.position(pr)
            .map(|i| Arc::make_mut(&mut self.s.entries[i]))
    }

    pub fn state_of(&self, pr: PrNumber) -> Option<EntryState> {
        self.entry(pr).map(|e| e.state)
    }

    pub fn run(&self, id: &str) -> Option<&TestRun> {
        self.s.runs.iter().find(|r| r.id == id)
    }

    pub fn run_mut(&mut self, id: &str) -> Option<&mut TestRun> {
        self.s.runs.iter_mut().find(|r| r.id == id)
    }

    /// Main runs in progress that hold a testing slot.
    pub fn main_in_flight(&self) -> usize {
        self.s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Main && r.status == RunStatus::InProgress && !r.held)
            .count()
    }

    /// Bisection runs in progress.
    pub fn bisection_in_flight(&self) -> usize {
        self.s
            .runs
            .iter()
            .filter(|r| r.kind == RunKind::Bisection && r.status == RunStatus::InProgress)
            .count()
    }

    /// Puts an effect in the outbox and in this step's effects.
    pub fn emit(&mut self, effect: Effect) {
        self.push_effect(effect, false);
    }

    /// Emits a pull request notification, one at a time per pull request and kind: while an
    /// earlier one is outstanding (another request may be executing it), the new one is
    /// held, replacing one held before, and released when the earlier one's outcome comes
    /// back ([`Work::release_held`]). The host is thus left with the last comment and status
    /// the engine decided, whatever order requests run in.
    pub fn notify(&mut self, effect: Effect) {
        let key = effect.notice_key();
        let same = |x: &PendingEffect| key.is_some() && x.effect.notice_key() == key;
        self.s.outbox.retain(|x| !(x.held && same(x)));
        let outstanding = self.s.outbox.iter().any(same);
        self.push_effect(effect, outstanding);
    }

    /// Puts an effect in the outbox; one not `held` also goes in this step's effects.
    fn push_effect(&mut self, effect: Effect, held: bool) {
        let n = self.s.queue.engine.next_effect;
        self.s.queue.engine.next_effect += 1;
        let pending = PendingEffect {
            id: format!("fx{n}-{}", self.tag(n)),
            effect,
            created_at: self.now,
            attempts: 0,
            next_attempt_at: self.now.plus_millis(EFFECT_LEASE_MS),
            last_error: None,
            held,
        };
        self.s.outbox.push(pending.clone());
        if !held {
            self.effects.push(pending);
        }
    }

    /// An outstanding notification ended (done or given up): the one held behind it, if any,
    /// is executed now.
    pub fn release_held(&mut self, done: &Effect) {
        let Some(key) = done.notice_key() else { return };
        let lease = self.now.plus_millis(EFFECT_LEASE_MS);
        let held = self
            .s
            .outbox
            .iter_mut()
            .find(|x| x.held && x.effect.notice_key() == Some(key));
        if let Some(x) = held {
            x.held = false;
            x.next_attempt_at = lease;
            let released = x.clone();
            self.effects.push(released);
        }
    }

    /// A new run id; bisection runs carry `-bisection`.
    pub fn next_run_id(&mut self, kind: RunKind) -> String {
        let n = self.s.queue.engine.next_run;
        self.s.queue.engine.next_run += 1;
        match kind {
            RunKind::Main => format!("{n}-{}", self.tag(n)),
            RunKind::Bisection => format!("{n}-{}-bisection", self.tag(n)),
        }
    }

    /// A new entry id, unique per submission.
    pub fn next_entry_id(&self, seq: u64) -> String {
        let hi = mix(self.salt ^ seq);
        let lo = mix(hi ^ seq.rotate_left(32));
        uuid::Uuid::from_u64_pair(hi, lo).to_string()
    }

    /// The branch of a run: `<prefix>/<target branch>/<run id>`, or
    /// `<prefix>/<digest of the target branch>/<run id>` for a target longer than
    /// [`MAX_TARGET_IN_BRANCH`] bytes, whose name would not leave room for the rest within a
    /// branch name's 255 bytes.
    pub fn branch_for(&self, run_id: &str) -> String {
        let target = &self.s.queue.branch;
        if target.len() <= MAX_TARGET_IN_BRANCH {
            return format!("{TEST_BRANCH_PREFIX}/{target}/{run_id}");
        }
        let digest = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, target.as_bytes());
        format!("{TEST_BRANCH_PREFIX}/{}/{run_id}", digest.simple())
    }

    /// Eight hex digits that make ids of different queue incarnations differ.
    fn tag(&self, n: u64) -> String {
        format!("{:08x}", mix(self.salt ^ n) as u32)
    }

    /// Moves an entry to `state`, stamping the change.
    pub fn set_state(&mut self, pr: PrNumber, state: EntryState) {
        let now = self.now;
        if let Some(e) = self.entry_mut(pr)
            && e.state != state
        {
            e.state = state;
            e.state_changed_at = now;
        }
    }

    /// Ends an entry's life in the queue: it leaves the snapshot for history.
    pub fn conclude(&mut self, pr: PrNumber, state: EntryState, reason: &str, detail: &str) {
        let Some(i) = self.position(pr) else {
            return;
        };
        let mut entry = Arc::unwrap_or_clone(self.s.entries.remove(i));
        self.entries_changed();
        entry.state = state;
        entry.state_changed_at = self.now;
        entry.concluded_at = Some(self.now);
        entry.current_run = None;
        if state != EntryState::Merged {
            entry.conclusion = Some(Conclusion {
                reason: reason.to_owned(),
                detail: detail.to_owned(),
            });
            self.bisection_base_changed(Some(pr));
        }
        self.notify_concluded(&entry);
        entry.status_pending = false;
        self.remember_concluded(&entry);
        self.concluded.push(entry);
    }

    /// Keeps `entry` among the queue's [`recently_concluded`](crate::snapshot::EngineState::recently_concluded).
    fn remember_concluded(&mut self, entry: &Entry) {
        let recent = &mut self.s.queue.engine.recently_concluded;
        recent.push(ConcludedEntry {
            seq: entry.seq,
            pr: entry.pr,
        });
        let excess = recent.len().saturating_sub(MAX_RECENTLY_CONCLUDED);
        recent.drain(..excess);
    }

    /// Takes a run out of the snapshot into history; a run still in progress is cancelled
    /// (its branch deleted, CI on it abandoned), a finished one has its branch deleted.
    pub fn close_run(&mut self, id: &str, reason: &str) -> Option<TestRun> {
        self.close_test_pull_request(id);
        let i = self.s.runs.iter().position(|r| r.id == id)?;
        let mut run = self.s.runs.remove(i);
        if run.status == RunStatus::InProgress {
            run.status = RunStatus::Cancelled;
            run.reason = Some(reason.to_owned());
            if !run.held {
                self.emit(Effect::CancelRun {
                    run_id: run.id.clone(),
                    branch: run.branch.clone(),
                });
            }
        } else {
            self.emit(Effect::DeleteBranch {
                branch: run.branch.clone(),
            });
        }
        run.finished_at.get_or_insert(self.now);
        for pr in run.tested.iter().map(|t| t.pr) {
            if let Some(e) = self.entry_mut(pr)
                && e.current_run.as_deref() == Some(id)
            {
                e.current_run = None;
            }
        }
        self.finished_runs.push(run.clone());
        Some(run)
    }

    /// PRs of a run's tested entries that are still active.
    pub fn active_prs(&self, run: &TestRun) -> Vec<PrNumber> {
        run.tested
            .iter()
            .map(|t| t.pr)
            .filter(|&pr| self.entry(pr).is_some())
            .collect()
    }
}

/// SplitMix64's finaliser: spreads a seed over 64 bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
