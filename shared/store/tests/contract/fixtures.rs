//! Values the contract scenarios store.

use mq_core::engine::{Effect, PendingEffect, Transition};
use mq_core::entry::{Entry, EntryState};
use mq_core::git::PrFacts;
use mq_core::ids::{OrgId, RepoRef, Sha};
use mq_core::run::{RunStatus, TestRun, TestedPr};
use mq_core::settings::{QueueConfig, QueueState};
use mq_core::snapshot::{Commit, Queue, QueueSnapshot};
use mq_core::time::Timestamp;

pub const T0: Timestamp = Timestamp(1_795_000_000_000);

pub fn org(name: &str) -> OrgId {
    OrgId::parse(name).unwrap()
}

pub fn queue(org_name: &str, repo: &str, branch: &str) -> Queue {
    let repo = RepoRef::new("github.com", "acme", repo).unwrap();
    Queue::new(
        org(org_name),
        repo,
        branch.to_owned(),
        QueueConfig::default(),
        QueueState::Running,
        T0,
    )
}

pub fn entry(pr: u32, state: EntryState, at: Timestamp) -> Entry {
    let facts = PrFacts::sample(pr);
    let id = format!("entry-{pr}-{}", at.millis());
    Entry {
        state,
        ..Entry::submitted(id, u64::from(pr), facts, at)
    }
}

pub fn concluded(mut e: Entry, state: EntryState, at: Timestamp) -> Entry {
    e.state = state;
    e.state_changed_at = at;
    e.concluded_at = Some(at);
    e
}

pub fn run(id: &str, prs: &[u32], sha: Option<&str>, at: Timestamp) -> TestRun {
    TestRun {
        branch: format!("merge-queue/main/{id}"),
        created_at: at,
        tested: prs
            .iter()
            .map(|&pr| TestedPr {
                entry_id: format!("entry-{pr}"),
                pr,
                title: format!("Change {pr}"),
                head_sha: Sha::new(format!("{pr:040x}")),
            })
            .collect(),
        sha: sha.map(Sha::new),
        ..TestRun::sample(id)
    }
}

pub fn finished(mut r: TestRun, status: RunStatus, at: Timestamp) -> TestRun {
    r.status = status;
    r.finished_at = Some(at);
    r
}

pub fn effect(id: &str, at: Timestamp) -> PendingEffect {
    PendingEffect {
        id: id.to_owned(),
        effect: Effect::DeleteBranch {
            branch: format!("merge-queue/main/{id}"),
        },
        created_at: at,
        attempts: 0,
        next_attempt_at: at,
        last_error: None,
        held: false,
    }
}

/// A commit from `before` to `after`, with history.
pub fn commit(
    before: &QueueSnapshot,
    after: QueueSnapshot,
    concluded: Vec<Entry>,
    finished_runs: Vec<TestRun>,
    now: Timestamp,
) -> Commit {
    let transition = Transition {
        snapshot: after,
        effects: vec![],
        concluded,
        finished_runs,
    };
    Commit::between(before, &transition, now)
}
