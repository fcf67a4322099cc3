//! A queue and everything live in it: the unit the engine works on and the store commits.

mod entry_diff;

use crate::effects::PendingEffect;
use crate::entry::{Entry, UploadedTargets};
use crate::history::Restart;
use crate::ids::{OrgId, PrNumber, QueueId, RepoRef, Sha};
use crate::run::{Bisection, RunStatus, TestRun};
use crate::settings::{ModeAndState, QueueConfig, QueueMode, QueueState};
use crate::time::Timestamp;
use crate::tuning::Tuning;
use entry_diff::entry_diff;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

/// The engine's own bookkeeping, kept on the queue item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct EngineState {
    /// The target branch's head as last known (from merges, branch creation, pushes).
    pub target_head: Option<Sha>,
    /// Next submission sequence number.
    pub next_seq: u64,
    /// Next run number, for run ids.
    pub next_run: u64,
    /// Next effect number, for effect ids.
    pub next_effect: u64,
    /// Next place in the line, for groups that join it.
    pub next_place: u64,
    /// Failed batches being bisected.
    pub bisections: Vec<Bisection>,
    /// When the queue last observed a flake (docs/queue-semantics.md §5): a failed group
    /// cleared by a pass behind it (optimistic merge), or a pull request whose tests failed
    /// passing when submitted again with the same head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_flake_at: Option<Timestamp>,
    /// The heads of pull requests whose tests failed lately, oldest first: at most
    /// [`MAX_FAILED_HEADS`], none older than [`FLAKE_MEMORY_MS`](crate::settings::FLAKE_MEMORY_MS). A later pass of the same head
    /// is a flake.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_heads: Vec<FailedHead>,
    /// The entries that left the queue last, oldest first: at most
    /// [`MAX_RECENTLY_CONCLUDED`]. A request that built its events on an older snapshot
    /// learns from them whether an entry it must know about concluded meanwhile (a
    /// submission: whether its own pull request was merged or failed since).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recently_concluded: Vec<ConcludedEntry>,
    /// Where the target was before the queue's own merges moved it on, oldest first: at most
    /// [`MAX_HEADS_MERGED_PAST`]. A push reported with one of them as the target's head was
    /// read before the queue's next merge landed (a delivery handled late): the target has
    /// not moved back, and nothing restarts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub heads_merged_past: Vec<Sha>,
}

/// Heads a queue remembers merging past ([`EngineState::heads_merged_past`]).
pub const MAX_HEADS_MERGED_PAST: usize = 16;

/// Concluded entries a queue remembers ([`EngineState::recently_concluded`]).
pub const MAX_RECENTLY_CONCLUDED: usize = 32;

/// An entry that left the queue: its submission's sequence number and its pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConcludedEntry {
    pub seq: u64,
    pub pr: PrNumber,
}

/// Failed heads a queue remembers to recognise a flake.
pub const MAX_FAILED_HEADS: usize = 32;

/// A pull request's head whose tests failed in the queue (it left the queue `failed`, for
/// `tests_failed` or `timeout`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedHead {
    pub pr: PrNumber,
    pub head_sha: Sha,
    pub at: Timestamp,
}

/// A queue: one target branch of one repository, owned by one organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    pub id: QueueId,
    pub org: OrgId,
    pub repo: RepoRef,
    pub branch: String,
    pub config: QueueConfig,
    pub state: QueueState,
    /// While `switching_modes`: the mode being switched to, and the state to return to.
    pub pending_mode: Option<QueueMode>,
    pub resume_state: Option<QueueState>,
    /// Incremented by every commit; commits are conditional on it.
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default)]
    pub engine: EngineState,
    /// Auto-tuning's checks and changes (docs/queue-semantics.md §13).
    #[serde(default, skip_serializing_if = "Tuning::is_empty")]
    pub tuning: Tuning,
    /// Ids of the last [`RECENT_COMMITS`] commits, newest last: a writer whose commit got no
    /// answer (a timeout) reads the queue again and finds out whether it landed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_commits: Vec<String>,
}

/// Commit ids a queue item remembers.
pub const RECENT_COMMITS: usize = 16;

impl Queue {
    /// A new queue, as `createQueue` makes it.
    pub fn new(
        org: OrgId,
        repo: RepoRef,
        branch: String,
        config: QueueConfig,
        state: QueueState,
        now: Timestamp,
    ) -> Self {
        Self {
            id: QueueId::new(&repo, &branch),
            org,
            repo,
            branch,
            config,
            state,
            pending_mode: None,
            resume_state: None,
            version: 0,
            created_at: now,
            updated_at: now,
            engine: EngineState::default(),
            tuning: Tuning::default(),
            recent_commits: Vec::new(),
        }
    }

    /// Records `id` as this queue item's commit, forgetting the oldest beyond
    /// [`RECENT_COMMITS`].
    pub fn record_commit(&mut self, id: String) {
        self.recent_commits.push(id);
        let excess = self.recent_commits.len().saturating_sub(RECENT_COMMITS);
        self.recent_commits.drain(..excess);
    }

    /// Whether the commit `id` is one of the last [`RECENT_COMMITS`] of this queue.
    pub fn has_commit(&self, id: &str) -> bool {
        self.recent_commits.iter().any(|c| c == id)
    }

    pub fn mode_and_state(&self) -> ModeAndState {
        ModeAndState {
            state: self.state,
            mode: self.config.mode,
            pending_mode: self.pending_mode,
            resume_state: self.resume_state,
        }
    }

    pub fn set_mode_and_state(&mut self, m: ModeAndState) {
        self.state = m.state;
        self.config.mode = m.mode;
        self.pending_mode = m.pending_mode;
        self.resume_state = m.resume_state;
    }
}

/// A queue with its active entries, active runs and outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSnapshot {
    pub queue: Queue,
    /// Every non-terminal entry, at most one per pull request. Entries are shared between
    /// a snapshot and its copies (a step's working copy, a store's cache) and copied only
    /// when changed ([`Arc::make_mut`]), so copying a snapshot of a long queue is cheap and a
    /// commit finds the changed entries by pointer.
    pub entries: Vec<Arc<Entry>>,
    /// Every run in progress, and every finished run whose group is still in line (passed
    /// and waiting to merge, or failed and waiting for the pending-failure rules).
    pub runs: Vec<TestRun>,
    /// Effects emitted and not yet executed.
    pub outbox: Vec<PendingEffect>,
}

impl QueueSnapshot {
    pub fn new(queue: Queue) -> Self {
        Self {
            queue,
            entries: Vec::new(),
            runs: Vec::new(),
            outbox: Vec::new(),
        }
    }

    pub fn entry_for_pr(&self, pr: PrNumber) -> Option<&Entry> {
        self.entries.iter().find(|e| e.pr == pr).map(|e| &**e)
    }

    pub fn run(&self, id: &str) -> Option<&TestRun> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// Whether run `id` is here and still in progress: the work of one that is gone or over
    /// (failed, waiting on the groups behind it) is not done
    /// ([`Effect::work_of_run`](crate::effects::Effect::work_of_run)).
    pub fn run_in_progress(&self, id: &str) -> bool {
        self.run(id)
            .is_some_and(|r| r.status == RunStatus::InProgress)
    }

    /// True while anything needs the tick: entries, runs or effects.
    pub fn has_work(&self) -> bool {
        !self.entries.is_empty() || !self.runs.is_empty() || !self.outbox.is_empty()
    }

    /// Puts entries in submission order and runs and effects in order of creation (then
    /// id): the order in which a store hands a snapshot back.
    pub fn sort(&mut self) {
        self.entries.sort_by_key(|e| e.seq);
        self.runs
            .sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        self.outbox
            .sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    }

    /// Makes this snapshot what a store holds once it is committed with `queue` (the queue
    /// item of the commit, with its new version): what reading it back would give.
    pub fn mark_committed(&mut self, queue: Queue) {
        self.queue = queue;
        self.sort();
    }

    /// True while groups are in the line: a run in flight (held ones too), a group tested
    /// and not yet merged or failed, or a failed batch still bisected.
    pub fn has_groups(&self) -> bool {
        !self.runs.is_empty() || !self.queue.engine.bisections.is_empty()
    }
}

/// What one event did to a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The queue afterwards; its outbox holds every effect not yet executed.
    pub snapshot: QueueSnapshot,
    /// The effects this event emitted (also in `snapshot.outbox`), to execute now.
    pub effects: Vec<PendingEffect>,
    /// Entries that reached a terminal state in this event (they left `snapshot.entries`).
    pub concluded: Vec<Entry>,
    /// Runs that left `snapshot.runs` in this event (finished or cancelled, and no longer
    /// needed by the line): kept as history.
    pub finished_runs: Vec<TestRun>,
}

impl Transition {
    /// A transition that changes nothing.
    pub fn unchanged(snapshot: &QueueSnapshot) -> Self {
        Self {
            snapshot: snapshot.clone(),
            effects: Vec::new(),
            concluded: Vec::new(),
            finished_runs: Vec::new(),
        }
    }
}

/// A commit's changes to a queue's live items: its active entries, runs and outbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveChanges {
    /// Active entries that are new or changed.
    pub put_entries: Vec<Entry>,
    /// Pull requests whose active entry is gone.
    pub delete_entries: Vec<PrNumber>,
    pub put_runs: Vec<TestRun>,
    pub delete_runs: Vec<String>,
    pub put_effects: Vec<PendingEffect>,
    pub delete_effects: Vec<String>,
}

impl LiveChanges {
    /// The number of item writes.
    pub fn writes(&self) -> usize {
        self.put_entries.len()
            + self.delete_entries.len()
            + self.put_runs.len()
            + self.delete_runs.len()
            + self.put_effects.len()
            + self.delete_effects.len()
    }

    /// Applies the changes to a snapshot that does not hold them yet: each put replaces the
    /// item with its key or adds it, each delete removes the item with its key.
    pub fn apply_to(&self, snapshot: &mut QueueSnapshot) {
        let put_entries: Vec<Arc<Entry>> = self.put_entries.iter().cloned().map(Arc::new).collect();
        replace(
            &mut snapshot.entries,
            &put_entries,
            &self.delete_entries,
            |e| e.pr,
        );
        replace(&mut snapshot.runs, &self.put_runs, &self.delete_runs, |r| {
            r.id.clone()
        });
        replace(
            &mut snapshot.outbox,
            &self.put_effects,
            &self.delete_effects,
            |x| x.id.clone(),
        );
    }
}

/// Removes `deleted` and every item `put` replaces, then adds `put`.
fn replace<T: Clone, K: PartialEq>(
    items: &mut Vec<T>,
    put: &[T],
    deleted: &[K],
    key: impl Fn(&T) -> K,
) {
    let put_keys: Vec<K> = put.iter().map(&key).collect();
    items.retain(|i| {
        let k = key(i);
        !deleted.contains(&k) && !put_keys.contains(&k)
    });
    items.extend(put.iter().cloned());
}

/// The item-level changes of one transition, for the store to write atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The queue item afterwards (its `version` is `expected_version + 1`).
    pub queue: Queue,
    pub expected_version: u64,
    /// The changes to the queue's live items.
    pub live: LiveChanges,
    /// Entries that reached a terminal state: kept as history.
    pub concluded: Vec<Entry>,
    /// Runs that finished: kept as history.
    pub finished_runs: Vec<TestRun>,
    /// Restarts of entries (increases of their `restarts` counters): kept as history.
    pub restarts: Vec<Restart>,
    /// Active entries afterwards (guards `deleteQueue`).
    pub active_entries: u32,
    /// Whether the queue still needs the tick afterwards.
    pub has_work: bool,
    /// Impacted targets uploaded for pull requests, recorded with the commit (latest wins),
    /// so an upload that changed an entry is never recorded without it, nor the reverse.
    pub uploaded_targets: Vec<(PrNumber, UploadedTargets)>,
}

impl Commit {
    /// The changes that turn `before` into `transition.snapshot`, stamped at `now`.
    pub fn between(before: &QueueSnapshot, transition: &Transition, now: Timestamp) -> Self {
        let after = &transition.snapshot;
        let entries = entry_diff(&before.entries, &after.entries, &transition.concluded, now);
        let mut queue = after.queue.clone();
        queue.version = before.queue.version + 1;
        queue.updated_at = now;
        Self {
            queue,
            expected_version: before.queue.version,
            live: LiveChanges {
                put_entries: entries.put,
                delete_entries: entries.delete,
                put_runs: changed(&before.runs, &after.runs, |r| r.id.clone()),
                delete_runs: removed(&before.runs, &after.runs, |r| r.id.clone()),
                put_effects: changed(&before.outbox, &after.outbox, |x| x.id.clone()),
                delete_effects: removed(&before.outbox, &after.outbox, |x| x.id.clone()),
            },
            concluded: transition.concluded.clone(),
            finished_runs: transition.finished_runs.clone(),
            restarts: entries.restarts,
            active_entries: u32::try_from(after.entries.len()).unwrap_or(u32::MAX),
            has_work: after.has_work(),
            uploaded_targets: Vec::new(),
        }
    }

    /// A commit that changes only the queue item (settings, state).
    pub fn queue_only(before: &QueueSnapshot, queue: Queue, now: Timestamp) -> Self {
        let mut after = before.clone();
        after.queue = queue;
        Self::between(before, &Transition::unchanged(&after), now)
    }

    /// Whether the commit changes no item besides the queue item's version and time: the
    /// step left the queue as it was, and nothing needs writing.
    pub fn changes_nothing(&self, before: &Queue) -> bool {
        let mut queue = self.queue.clone();
        queue.version = before.version;
        queue.updated_at = before.updated_at;
        queue.recent_commits.clone_from(&before.recent_commits);
        queue == *before && self.item_writes() == 1
    }

    /// Number of item writes this commit needs, history included.
    pub fn item_writes(&self) -> usize {
        1 + self.live.writes()
            + self.concluded.len()
            + self.finished_runs.len()
            + self.restarts.len()
            + self.uploaded_targets.len()
    }
}

/// Items of `after` that are new or differ from the item with the same key in `before`.
fn changed<T: Clone + PartialEq, K: Eq + Hash>(
    before: &[T],
    after: &[T],
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    let before: HashMap<K, &T> = before.iter().map(|b| (key(b), b)).collect();
    after
        .iter()
        .filter(|a| before.get(&key(a)) != Some(a))
        .cloned()
        .collect()
}

/// Keys of `before` that no item of `after` has.
fn removed<T, K: Eq + Hash>(before: &[T], after: &[T], key: impl Fn(&T) -> K) -> Vec<K> {
    let after: HashSet<K> = after.iter().map(&key).collect();
    before
        .iter()
        .map(&key)
        .filter(|k| !after.contains(k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::QueueConfig;

    #[test]
    fn applied_changes_put_replace_and_delete() {
        let mut outbox = vec!["a", "b"];
        replace(&mut outbox, &["b", "c"], &["a"], |x| *x);
        assert_eq!(outbox, ["b", "c"]);
        let mut items = vec![(1, "old"), (2, "kept")];
        replace(&mut items, &[(1, "new")], &[], |x| x.0);
        assert_eq!(items, [(2, "kept"), (1, "new")]);
    }

    #[test]
    fn a_queue_remembers_its_last_commits() {
        let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
        let org = OrgId::parse("acme").unwrap();
        let config = QueueConfig::default();
        let mut queue = Queue::new(
            org,
            repo,
            "main".into(),
            config,
            QueueState::Running,
            Timestamp(0),
        );
        for n in 0..RECENT_COMMITS + 3 {
            queue.record_commit(format!("c{n}"));
        }
        assert_eq!(queue.recent_commits.len(), RECENT_COMMITS);
        assert!(!queue.has_commit("c2"), "the oldest are forgotten");
        assert!(queue.has_commit("c3") && queue.has_commit(&format!("c{}", RECENT_COMMITS + 2)));
    }
}
