//! A queue's history played into a store, event by event, at chosen times: submissions,
//! readiness, runs starting and finishing, restarts, conclusions. Each moment is one commit,
//! made the way the service makes them (`Commit::between`), so the store keeps what it would
//! keep for the live queue: active items, concluded entries, finished runs, restarts.

use mq_core::engine::{Effect, PendingEffect, Transition};
use mq_core::entry::{Entry, EntryState};
use mq_core::git::{Mergeability, PrFacts};
use mq_core::ids::QueueId;
use mq_core::run::{RunKind, RunStatus, TestRun, TestedPr};
use mq_core::snapshot::{Commit, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_store::Store;
use std::sync::Arc;

/// Something that happens to a queue.
#[derive(Debug, Clone)]
pub enum Event {
    /// A pull request is submitted, ready to test.
    Submit(u32),
    /// A pull request is submitted but not ready (`not_ready`).
    SubmitNotReady(u32),
    /// A `not_ready` entry becomes ready (`pending`).
    Ready(u32),
    /// A run starts testing these pull requests; ids with `-bisection` are bisection runs.
    Start(&'static str, Vec<u32>),
    /// A run finishes. A main run that passed moves its entries to `tests_passed`, one that
    /// failed to `pending_failure`; otherwise entries are untouched (a `Restart` or
    /// `Conclude` says what happens to them).
    Finish(&'static str, RunStatus),
    /// An entry's testing restarts: back to `pending`, its restart counter up by one.
    Restart(u32),
    /// An entry reaches a terminal state and leaves the queue.
    Conclude(u32, EntryState),
    /// A Git host action is queued.
    Effect(&'static str),
}

/// A queue's history, played relative to a fixed "now".
pub struct Timeline<'a> {
    store: &'a dyn Store,
    queue: QueueId,
    now: Timestamp,
}

impl<'a> Timeline<'a> {
    pub fn new(store: &'a dyn Store, queue: QueueId, now: Timestamp) -> Self {
        Self { store, queue, now }
    }

    /// The moment `minutes` before now.
    pub fn ago(&self, minutes: i64) -> Timestamp {
        self.now.plus_millis(-minutes * 60_000)
    }

    /// Applies `events` at `minutes` before now, in one commit.
    pub async fn at(&self, minutes: i64, events: Vec<Event>) {
        let at = self.ago(minutes);
        let before = self
            .store
            .load(&self.queue)
            .await
            .expect("store answers")
            .expect("queue exists");
        let mut step = Step {
            after: before.clone(),
            concluded: Vec::new(),
            finished: Vec::new(),
            at,
        };
        for event in events {
            step.apply(event);
        }
        let transition = Transition {
            snapshot: step.after,
            effects: Vec::new(),
            concluded: step.concluded,
            finished_runs: step.finished,
        };
        let commit = Commit::between(&before, &transition, at);
        self.store.commit(&commit).await.expect("commit applies");
    }
}

struct Step {
    after: QueueSnapshot,
    concluded: Vec<Entry>,
    finished: Vec<TestRun>,
    at: Timestamp,
}

impl Step {
    fn apply(&mut self, event: Event) {
        match event {
            Event::Submit(pr) => self.submit(pr, true),
            Event::SubmitNotReady(pr) => self.submit(pr, false),
            Event::Ready(pr) => {
                let at = self.at;
                let e = self.entry(pr);
                e.ready_at = Some(at);
                e.pr_facts.mergeability = Mergeability::Mergeable;
                set_state(e, EntryState::Pending, at);
            }
            Event::Start(id, prs) => self.start(id, &prs),
            Event::Finish(id, status) => self.finish(id, status),
            Event::Restart(pr) => {
                let at = self.at;
                let e = self.entry(pr);
                e.restarts += 1;
                e.current_run = None;
                set_state(e, EntryState::Pending, at);
            }
            Event::Conclude(pr, state) => self.conclude(pr, state),
            Event::Effect(id) => self.after.outbox.push(PendingEffect {
                id: id.to_owned(),
                effect: Effect::RefreshPullRequest { pr: 0 },
                created_at: self.at,
                attempts: 0,
                next_attempt_at: self.at,
                last_error: None,
                held: false,
            }),
        }
    }

    fn entry(&mut self, pr: u32) -> &mut Entry {
        self.after
            .entries
            .iter_mut()
            .find(|e| e.pr == pr)
            .map(Arc::make_mut)
            .unwrap_or_else(|| panic!("no active entry for #{pr}"))
    }

    fn submit(&mut self, pr: u32, ready: bool) {
        let at = self.at;
        let seq = self.after.queue.engine.next_seq;
        self.after.queue.engine.next_seq += 1;
        let facts = PrFacts {
            // Not ready: the host is still computing whether it merges.
            mergeability: if ready {
                Mergeability::Mergeable
            } else {
                Mergeability::InProgress
            },
            ..PrFacts::sample(pr)
        };
        let id = format!("entry-{pr}-{}", at.millis());
        self.after.entries.push(Arc::new(Entry {
            state: if ready {
                EntryState::Pending
            } else {
                EntryState::NotReady
            },
            ready_at: ready.then_some(at),
            ..Entry::submitted(id, seq, facts, at)
        }));
    }

    fn start(&mut self, id: &str, prs: &[u32]) {
        let at = self.at;
        let kind = run_kind(id);
        let mut tested = Vec::new();
        for &pr in prs {
            let e = self.entry(pr);
            e.first_tested_at.get_or_insert(at);
            e.ci_runs += 1;
            e.current_run = Some(id.to_owned());
            // A bisection split tests entries that stay `pending_failure` until it decides.
            if kind == RunKind::Main {
                set_state(e, EntryState::Testing, at);
            }
            tested.push(TestedPr {
                entry_id: e.id.clone(),
                pr,
                title: e.pr_facts.title.clone(),
                head_sha: e.pr_facts.head_sha.clone(),
            });
        }
        self.after.runs.push(run(id, kind, tested, at));
    }

    fn finish(&mut self, id: &str, status: RunStatus) {
        let at = self.at;
        let position = self
            .after
            .runs
            .iter()
            .position(|r| r.id == id)
            .unwrap_or_else(|| panic!("no run {id} in flight"));
        let mut run = self.after.runs.remove(position);
        run.status = status;
        run.finished_at = Some(at);
        let next = match (run.kind, status) {
            (RunKind::Main, RunStatus::Succeeded) => Some(EntryState::TestsPassed),
            (RunKind::Main, RunStatus::Failed) => Some(EntryState::PendingFailure),
            _ => None,
        };
        for tested in &run.tested {
            if let (Some(state), Some(e)) = (
                next,
                self.after
                    .entries
                    .iter_mut()
                    .find(|e| e.pr == tested.pr)
                    .map(Arc::make_mut),
            ) {
                e.current_run = None;
                set_state(e, state, at);
            }
        }
        self.finished.push(run);
    }

    fn conclude(&mut self, pr: u32, state: EntryState) {
        let at = self.at;
        let position = self
            .after
            .entries
            .iter()
            .position(|e| e.pr == pr)
            .unwrap_or_else(|| panic!("no active entry for #{pr}"));
        let mut entry = Arc::unwrap_or_clone(self.after.entries.remove(position));
        set_state(&mut entry, state, at);
        entry.concluded_at = Some(at);
        entry.current_run = None;
        self.concluded.push(entry);
    }
}

fn run_kind(run_id: &str) -> RunKind {
    if run_id.contains("-bisection") {
        RunKind::Bisection
    } else {
        RunKind::Main
    }
}

fn set_state(entry: &mut Entry, state: EntryState, at: Timestamp) {
    entry.state = state;
    entry.state_changed_at = at;
}

fn run(id: &str, kind: RunKind, tested: Vec<TestedPr>, at: Timestamp) -> TestRun {
    TestRun {
        kind,
        branch: format!("merge-queue/main/{id}"),
        created_at: at,
        tested,
        started_at: Some(at),
        ..TestRun::sample(id)
    }
}
