//! The tick: what the schedule does every minute (and the local gateway every few seconds).
//!
//! For every queue with work (a `Query` on the work index, never a `Scan`), [`QUEUES_AT_ONCE`]
//! at a time, under a lease so two ticks never work one queue at once: read what CI reported
//! on the test branches in flight, reconcile the queue with the Git host, advance timeouts and
//! batching waits
//! (`Event::Tick`), and execute the effects that are due, including those whose earlier
//! execution failed. After the queues, one queue due for it is checked for auto-tuning
//! (docs/queue-semantics.md §13). Beside both, flaky tests without new evidence for the
//! recovery period recover (test health).
//!
//! Reconciling heals what a lost or late answer left behind, without waiting for an
//! effect's lease to run out: a run whose branch is gone, or now points at a commit the run did
//! not record (pushed by someone else), has it built again, and a merge
//! already on the target is recorded as done. Entries that should have moved and did not
//! (`view::stuck_entries`) are logged as warnings.

use super::drive::{self, Actor, Start};
use super::effects;
use super::owners;
use crate::app::App;
use crate::error::ServiceError;
use futures_util::StreamExt;
use mq_core::effects::PendingEffect;
use mq_core::engine::{Event, MAX_ATTEMPTS, view};
use mq_core::ids::{QueueId, Sha};
use mq_core::run::{RunStatus, TestRun};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_githost::{GitHost, HostResult};
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// How long a tick may hold a queue before another tick may take it over.
pub const LEASE_MILLIS: i64 = 60_000;

/// How long a tick starts queues for. The schedule's function stops after 60 s: a tick slowed
/// down by the Git host leaves the rest of its minute to the queues it is on, test-health
/// recovery and auto-tuning. The queues it did not reach are others the next minute
/// (`in_order_of_the_minute`).
pub const START_QUEUES_FOR: Duration = Duration::from_secs(30);

/// How long, from its start, a tick's effects may run: an effect still under way then (a
/// merge of a long chain of pull requests on a slow Git host) is stopped and counts as a
/// failed attempt, retried later, so that it is never killed with the function, which stops
/// after 60 s: killed, it would be neither done nor counted, and handed out again every
/// minute, for ever. It leaves the outcomes' commit time within the minute, and ends before
/// the queue's lease ([`LEASE_MILLIS`], taken after the tick's start) does. Each effect is
/// also cut before its own lease ends (see `drive`).
pub const EFFECTS_FOR: Duration = Duration::from_secs(45);

/// Until when, from its start, a tick reads what the Git host says of its queues' runs (CI's
/// reports, test branches, merges landed): a read not answered by then (a slow or hanging
/// host; a call may take three attempts of 30 s) is left to the next tick, so that the queue
/// still commits what was read, its timeouts and batching waits advance, and its effects run
/// (until [`EFFECTS_FOR`]) before the function stops at 60 s.
pub const READS_FOR: Duration = Duration::from_secs(35);

/// How many of one queue's reads (one per run in flight, one per test branch, one per merge
/// waiting) are under way at once: a queue with many runs in flight is read in a few
/// round trips, not one after another.
pub const READS_AT_ONCE: usize = 4;

/// Until when, from its start, a tick starts a round of test-health recovery (a read and a
/// transaction per repository with due tests): the rest waits for the next tick. Recovery
/// runs beside the queues, so a slow queue does not leave it without time.
pub const RECOVER_FOR: Duration = Duration::from_secs(50);

/// Until when, from its start, a tick begins an auto-tuning check: a check reads up to
/// 20,000 runs and simulates for seconds (BENCHMARKS.md times it), and must end before the
/// function does, at 60 s, to be recorded. A check not begun in time is the next tick's.
pub const TUNE_BY: Duration = Duration::from_secs(40);

/// Until when, from its start, a tick's auto-tuning check may run: one still under way then
/// (a window of many runs read from a slow DynamoDB) is stopped, and the queue stays due for a
/// later tick unless its commit had gone through, so that the function is not killed with it
/// at 60 s (the tick's metrics unprinted, and the same check begun again every minute it is in
/// turn). It leaves the metrics their reads. An advisor already simulating finishes on its own
/// thread, for seconds, its answer unused.
pub const TUNE_UNTIL: Duration = Duration::from_secs(50);

/// How many queues a tick works at once. A queue's tick mostly waits on the Git host (a
/// listing of each run's checks, its branch) and the store; one queue at a time, a deployment
/// with hundreds of queues would reach each only every half hour or so, its batching waits and
/// timeouts that much later. The queues of a tick are independent (each under its own lease).
pub const QUEUES_AT_ONCE: usize = 8;

/// What one tick did, for its log line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Queues with work.
    pub queues: usize,
    /// Queues this tick worked on (the others were leased by another tick).
    pub worked: usize,
    /// The queues it worked on.
    pub worked_queues: Vec<QueueId>,
    /// Queues whose work failed (they are retried by the next tick).
    pub failed: usize,
    /// Queues not started because the tick's time to start queues ran out.
    pub not_reached: usize,
    /// Flaky tests that recovered (no new evidence for the recovery period).
    pub recovered_tests: usize,
    /// The queue checked for auto-tuning, if one was due.
    pub tuned: Option<QueueId>,
}

/// Runs one tick over every queue with work; `owner` names this tick in the leases.
pub async fn run(app: &App, owner: &str) -> Result<TickReport, ServiceError> {
    run_at_pace(app, owner, Pace::STANDARD).await
}

/// How a tick goes through the queues with work, and what time it leaves the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// How long queues are started for (the queue in turn is always started).
    pub start_for: Duration,
    /// How many queues are worked at once.
    pub at_once: usize,
    /// How long from the tick's start the queues' Git host reads may run.
    pub reads_for: Duration,
    /// How long from the tick's start the queues' effects may run.
    pub effects_for: Duration,
    /// How long from the tick's start rounds of test-health recovery may begin.
    pub recover_for: Duration,
    /// How long from the tick's start an auto-tuning check may begin.
    pub tune_by: Duration,
    /// How long from the tick's start an auto-tuning check may run.
    pub tune_until: Duration,
}

impl Pace {
    /// The deployed tick's.
    pub const STANDARD: Pace = Pace {
        start_for: START_QUEUES_FOR,
        at_once: QUEUES_AT_ONCE,
        reads_for: READS_FOR,
        effects_for: EFFECTS_FOR,
        recover_for: RECOVER_FOR,
        tune_by: TUNE_BY,
        tune_until: TUNE_UNTIL,
    };
}

/// [`run`] at `pace`: queues started for `pace.start_for` only, `pace.at_once` at a time (in
/// the order of the minute, the queue in turn first), then an auto-tuning check if it can
/// begin by `pace.tune_by`; beside them, test-health recovery while `pace.recover_for`
/// lasts (its backlog takes no time from the queues or the check).
pub async fn run_at_pace(app: &App, owner: &str, pace: Pace) -> Result<TickReport, ServiceError> {
    let started = Instant::now();
    let ids = in_order_of_the_minute(app.store.queues_with_work().await?, app.now());
    let queues = async {
        let (mut report, due_for_tuning) = work_queues(app, owner, ids, started, pace).await;
        if started.elapsed() < pace.tune_by {
            let until = tokio::time::Instant::from_std(started + pace.tune_until);
            report.tuned = tune_one(app, &due_for_tuning, until).await;
        } else if !due_for_tuning.is_empty() {
            tracing::info!("no time left for auto-tuning; the next tick checks");
        }
        report
    };
    let recovery = recover(app, started + pace.recover_for);
    let (mut report, recovered) = tokio::join!(queues, recovery);
    report.recovered_tests = recovered;
    Ok(report)
}

/// Works the queues `ids` at `pace` for a tick begun at `started`; returns the report and
/// the queues due for auto-tuning.
async fn work_queues(
    app: &App,
    owner: &str,
    ids: Vec<QueueId>,
    started: Instant,
    pace: Pace,
) -> (TickReport, Vec<QueueId>) {
    let until = Deadlines::after(started, pace);
    let mut report = TickReport {
        queues: ids.len(),
        ..TickReport::default()
    };
    let mut due_for_tuning = Vec::new();
    let mut outcomes = futures_util::stream::iter(ids.into_iter().enumerate())
        .map(|(n, id)| async move {
            // The queue in turn (the first) is always started, however long the listing took.
            let reached = n == 0 || started.elapsed() < pace.start_for;
            let outcome = if reached {
                Some(tick_queue(app, &id, owner, until).await)
            } else {
                None
            };
            (id, outcome)
        })
        .buffer_unordered(pace.at_once.max(1));
    while let Some((id, outcome)) = outcomes.next().await {
        let Some(outcome) = outcome else {
            report.not_reached += 1;
            continue;
        };
        match outcome {
            Ok(Some(ticked)) => {
                report.worked += 1;
                if ticked.due_for_tuning {
                    due_for_tuning.push(id.clone());
                }
                report.worked_queues.push(id);
            }
            Ok(None) => {}
            Err(e) => {
                report.failed += 1;
                tracing::warn!(queue = %id, error = %e, "tick failed for a queue");
            }
        }
    }
    (report, due_for_tuning)
}

/// Test-health recovery in rounds begun until `until`; how many tests recovered.
async fn recover(app: &App, until: Instant) -> usize {
    match super::test_health::recover(app, app.now(), until).await {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "test health recovery failed; the next tick retries");
            0
        }
    }
}

/// Until when a queue's tick reads the Git host, and until when its effects run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    pub reads: tokio::time::Instant,
    pub effects: tokio::time::Instant,
}

impl Deadlines {
    /// Those of a tick begun at `started`, at `pace`.
    pub fn after(started: Instant, pace: Pace) -> Self {
        let started = tokio::time::Instant::from_std(started);
        Deadlines {
            reads: started + pace.reads_for,
            effects: started + pace.effects_for,
        }
    }
}

/// Checks one of the queues due for auto-tuning (docs/queue-semantics.md §13): the advisor
/// spends its whole budget of simulated work, so one tick checks one queue ([`turn`]); a
/// check records its time, so the queue is no longer due. A check not done by `until` is
/// stopped, unrecorded.
async fn tune_one(app: &App, due: &[QueueId], until: tokio::time::Instant) -> Option<QueueId> {
    let id = turn(due, app.now())?;
    match tokio::time::timeout_at(until, super::advice::auto_tune(app, id)).await {
        Ok(Ok(true)) => Some(id.clone()),
        Ok(Ok(false)) => None,
        Ok(Err(e)) => {
            tracing::warn!(queue = %id, error = %e, "auto-tuning failed; the next tick retries");
            None
        }
        Err(_) => {
            tracing::warn!(queue = %id, "auto-tuning stopped at the end of the tick's time; a later tick checks again unless it was recorded");
            None
        }
    }
}

/// The queues with work in the order of the minute of `now` (the same within a minute): the
/// queue whose turn it is first (they take turns by the minute in the order of their ids, as
/// [`turn`] does, so each is reached at least once in as many minutes as there are queues,
/// whatever order the store lists them in), then the others in an order drawn afresh each
/// minute, so that a queue that takes long (a slow Git host, many runs in flight) is no more
/// often ahead of a given queue than behind it, whichever organisation's.
fn in_order_of_the_minute(mut ids: Vec<QueueId>, now: Timestamp) -> Vec<QueueId> {
    ids.sort();
    let first = turn(&ids, now).cloned();
    let minute = now.0.div_euclid(60_000);
    ids.sort_by_cached_key(|id| {
        let mut hasher = std::hash::DefaultHasher::new();
        (minute, id.as_str()).hash(&mut hasher);
        (Some(id) != first.as_ref(), hasher.finish())
    });
    ids
}

/// The queue due for auto-tuning whose turn it is at `now`: the due queues take turns by the
/// minute, so that one whose check keeps failing (and stays due) takes one minute in
/// `due.len()` and never keeps the others from being checked.
fn turn(due: &[QueueId], now: Timestamp) -> Option<&QueueId> {
    let minute = usize::try_from(now.0.div_euclid(60_000)).unwrap_or(0);
    due.get(minute.checked_rem(due.len())?)
}

/// What ticking one queue found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticked {
    /// The queue is due for an auto-tuning check.
    pub due_for_tuning: bool,
}

/// Ticks one queue if its lease is free, its reads and effects running until `until`; returns
/// what it found, or `None` if it did not.
pub async fn tick_queue(
    app: &App,
    id: &QueueId,
    owner: &str,
    until: Deadlines,
) -> Result<Option<Ticked>, ServiceError> {
    let now = app.now();
    let lease_until = now.plus_millis(LEASE_MILLIS);
    match app.store.acquire_lease(id, owner, now, lease_until).await {
        Ok(true) => {}
        Ok(false) | Err(mq_store::StoreError::NotFound) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let result = advance(app, id, until).await;
    if let Err(e) = app.store.release_lease(id, owner).await {
        tracing::warn!(queue = %id, error = %e, "lease not released; it expires");
    }
    result.map(Some)
}

async fn advance(app: &App, id: &QueueId, until: Deadlines) -> Result<Ticked, ServiceError> {
    let Some(snapshot) = app.store.load(id).await? else {
        return Ok(Ticked {
            due_for_tuning: false,
        });
    };
    if !owned_by_its_organisation(app, &snapshot.queue).await? {
        tracing::warn!(
            queue = %id,
            org = %snapshot.queue.org,
            "the queue's repository is no longer owned by its organisation; left alone"
        );
        return Ok(Ticked {
            due_for_tuning: false,
        });
    }
    warn_stuck(&snapshot, app.now());
    let mut events = match app.githost.as_deref() {
        Some(host) => host_reads(host, &snapshot, app.now(), until.reads).await,
        None => Vec::new(),
    };
    events.push(Event::Tick);
    // The tick has a minute: a long effect (a test branch merging a long chain of pull
    // requests) may run longer here than in a request, within the tick's time.
    let start = Start::from(snapshot).letting_effects_run_until(until.effects);
    let queue = drive::apply(app, Actor::Service, id, &events, start).await?;
    let due_for_tuning = queue.tuning.due(&queue.config, queue.state, app.now());
    Ok(Ticked { due_for_tuning })
}

/// Whether the organisation of `queue` still owns its repository (SECURITY.md): once the
/// repository's owner is unlinked from it, or linked to another organisation, the service no
/// longer acts on the repository for that queue (no CI read, test branch, merge or comment),
/// as its organisation's own requests are refused. Linked back, the queue goes on.
async fn owned_by_its_organisation(app: &App, queue: &Queue) -> Result<bool, ServiceError> {
    let owner = owners::organisation_of(app, &queue.repo.owner_ref().key()).await?;
    Ok(owner.as_ref() == Some(&queue.org))
}

/// Logs a warning for each entry that should have moved and did not.
fn warn_stuck(snapshot: &QueueSnapshot, now: Timestamp) {
    for pr in view::stuck_entries(snapshot, now) {
        let Some(entry) = snapshot.entry_for_pr(pr) else {
            continue;
        };
        tracing::warn!(
            queue = %snapshot.queue.id,
            pr,
            state = %entry.state,
            since = %entry.state_changed_at.to_rfc3339(),
            "pull request stuck: no change for longer than the testing timeout, nothing in flight"
        );
    }
}

/// What the Git host says that the queue may have missed, as events: what CI reported on the
/// test branches in flight (the engine ignores what it already knows), where those branches
/// and the target branch are, and the merges already on the target (on a paused queue, or for
/// a merge given up, also those not: see [`landed_of`]). A read not answered now, or by
/// `until`, is the next tick's. The reads start at `read_at` or later.
async fn host_reads(
    host: &dyn GitHost,
    snapshot: &QueueSnapshot,
    read_at: Timestamp,
    until: tokio::time::Instant,
) -> Vec<Event> {
    let queue = &snapshot.queue;
    let built: Vec<(&TestRun, &Sha)> = snapshot
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::InProgress)
        .filter_map(|r| Some((r, r.sha.as_ref()?)))
        .collect();
    let checks = built
        .iter()
        .map(|&(run, sha)| checks_of(host, queue, run, sha, until));
    let mut events = a_few_at_once(checks.collect()).await;
    let branches = built
        .iter()
        .map(|&(run, _)| branch_of(host, queue, run, until));
    events.extend(a_few_at_once(branches.collect()).await);
    let waiting = snapshot.outbox.iter().filter(|x| !x.held);
    let landed = waiting.map(|pending| landed_of(host, queue, pending, read_at, until));
    events.extend(a_few_at_once(landed.collect()).await);
    events.extend(target_of(host, snapshot, until).await);
    events
}

/// Where the target branch is, if the queue has pull requests and knows the target somewhere
/// else: a push whose delivery was lost (or ignored while a merge was under way) restarts the
/// groups on the new head here, as the delivery would have (docs/queue-semantics.md §8),
/// instead of at the next merge. The engine ignores a head its own merges moved past, and
/// any head while a merge is under way. A queue that has not learnt its target yet reads it
/// when it builds a branch.
async fn target_of(
    host: &dyn GitHost,
    snapshot: &QueueSnapshot,
    until: tokio::time::Instant,
) -> Vec<Event> {
    let queue = &snapshot.queue;
    let Some(known) = &queue.engine.target_head else {
        return Vec::new();
    };
    if snapshot.entries.is_empty() {
        return Vec::new();
    }
    let read = host.branch_head(&queue.repo, &queue.branch);
    match answer(until, "the target branch", read).await {
        Some(Some(sha)) if sha != *known => vec![Event::TargetMoved { sha }],
        _ => Vec::new(),
    }
}

/// The events of `reads`, [`READS_AT_ONCE`] at a time, in their order.
async fn a_few_at_once(reads: Vec<impl Future<Output = Vec<Event>>>) -> Vec<Event> {
    futures_util::stream::iter(reads)
        .buffered(READS_AT_ONCE)
        .concat()
        .await
}

/// The branch of `run` if it no longer points at the run's commit.
async fn branch_of(
    host: &dyn GitHost,
    queue: &Queue,
    run: &TestRun,
    until: tokio::time::Instant,
) -> Vec<Event> {
    let read = host.branch_head(&queue.repo, &run.branch);
    let what = format!("the test branch of run {}", run.id);
    match answer(until, &what, read).await {
        Some(sha) if sha != run.sha => vec![Event::BranchObserved {
            run_id: run.id.clone(),
            sha,
        }],
        _ => Vec::new(),
    }
}

/// `pending` as done, if it is a merge already on the target. On a paused queue, or for a
/// merge given up after [`MAX_ATTEMPTS`] failures, a merge the Git host answers is not on the
/// target is said so (`Event::MergeNotLanded`, read at `read_at` or later): the engine
/// withdraws it if nothing could have been sending it then, or fails a given-up one's pull
/// requests. Only a merge that names where it expects the target can be told not landed
/// ([`mq_core::effects::Effect::can_be_told_not_landed`]).
async fn landed_of(
    host: &dyn GitHost,
    queue: &Queue,
    pending: &PendingEffect,
    read_at: Timestamp,
    until: tokio::time::Instant,
) -> Vec<Event> {
    let read = effects::landed(host, queue, &pending.effect);
    let what = format!("whether effect {} landed", pending.id);
    let effect_id = pending.id.clone();
    match answer(until, &what, read).await {
        Some(Some(outcome)) => vec![Event::EffectSucceeded { effect_id, outcome }],
        Some(None) if may_be_told_not_landed(queue, pending) => {
            vec![Event::MergeNotLanded { effect_id, read_at }]
        }
        _ => Vec::new(),
    }
}

/// Whether the engine wants to hear that `pending` did not land: a merge on a paused queue,
/// or one given up, that can be told so.
fn may_be_told_not_landed(queue: &Queue, pending: &PendingEffect) -> bool {
    let waits = queue.mode_and_state().is_paused() || pending.attempts >= MAX_ATTEMPTS;
    waits && pending.effect.can_be_told_not_landed()
}

/// What CI reported on `sha`, the commit of `run`, as events.
async fn checks_of(
    host: &dyn GitHost,
    queue: &Queue,
    run: &TestRun,
    sha: &Sha,
    until: tokio::time::Instant,
) -> Vec<Event> {
    let what = format!("the checks of run {}", run.id);
    let Some(checks) = answer(until, &what, host.commit_checks(&queue.repo, sha)).await else {
        return Vec::new();
    };
    let statuses = checks
        .statuses
        .into_iter()
        .map(|status| Event::StatusReported {
            sha: sha.clone(),
            status,
        });
    let check_runs = checks
        .check_runs
        .into_iter()
        .map(|check| Event::CheckRunReported {
            sha: sha.clone(),
            check,
        });
    statuses.chain(check_runs).collect()
}

/// The Git host's answer to `read` (of `what`, for the log), `None` when it failed or did not
/// come by `until`: the next tick reads again.
async fn answer<T>(
    until: tokio::time::Instant,
    what: &str,
    read: impl Future<Output = HostResult<T>>,
) -> Option<T> {
    match tokio::time::timeout_at(until, read).await {
        Ok(Ok(answer)) => Some(answer),
        Ok(Err(e)) => {
            tracing::warn!(read = what, error = %e, "not readable now; the next tick reads again");
            None
        }
        Err(_) => {
            tracing::warn!(
                read = what,
                "not read in the tick's time; the next tick reads again"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mq_core::settings::QueueState;

    fn queue(state: QueueState) -> Queue {
        let repo = mq_core::ids::RepoRef::new("github.com", "acme", "rocket").unwrap();
        let org = mq_core::ids::OrgId::parse("acme").unwrap();
        let config = mq_core::settings::QueueConfig::default();
        Queue::new(org, repo, "main".into(), config, state, Timestamp(0))
    }

    /// A merge is told not landed on a paused queue, or once given up; a merge expecting no
    /// target (a direct merge before the target was known) never is.
    #[test]
    fn a_merge_expecting_a_target_is_told_not_landed_when_paused_or_given_up() {
        let merge = |expected: Option<&str>| PendingEffect {
            id: "fx1".into(),
            effect: mq_core::effects::Effect::Merge {
                run_id: None,
                prs: Vec::new(),
                method: mq_core::settings::MergeMethod::Squash,
                expected_target_sha: expected.map(Sha::new),
                tested_sha: None,
            },
            created_at: Timestamp(0),
            attempts: 0,
            next_attempt_at: Timestamp(0),
            last_error: None,
            held: false,
        };
        let (running, paused) = (queue(QueueState::Running), queue(QueueState::Paused));
        let given_up = |x: PendingEffect| PendingEffect {
            attempts: MAX_ATTEMPTS,
            ..x
        };
        assert!(may_be_told_not_landed(&paused, &merge(Some("abc1234"))));
        assert!(!may_be_told_not_landed(&running, &merge(Some("abc1234"))));
        let failed_too_often = given_up(merge(Some("abc1234")));
        assert!(may_be_told_not_landed(&running, &failed_too_often));
        for cannot_tell in [merge(None), given_up(merge(None))] {
            assert!(!may_be_told_not_landed(&paused, &cannot_tell));
            assert!(!may_be_told_not_landed(&running, &cannot_tell));
        }
        let comment = PendingEffect {
            effect: mq_core::effects::Effect::PostComment {
                pr: 1,
                body: String::new(),
            },
            ..given_up(merge(Some("abc1234")))
        };
        assert!(!may_be_told_not_landed(&paused, &comment));
    }

    #[test]
    fn due_queues_take_turns_by_the_minute() {
        let due: Vec<QueueId> = ["a", "b", "c"]
            .map(|s| QueueId::from_stored(s.into()))
            .to_vec();
        let at = |minute: i64| Timestamp(minute * 60_000 + 59_999);
        let picked: Vec<&str> = (0..6)
            .filter_map(|m| turn(&due, at(m)))
            .map(QueueId::as_str)
            .collect();
        assert_eq!(picked, ["a", "b", "c", "a", "b", "c"]);
        assert_eq!(turn(&[], at(1)), None);
    }

    /// The store lists the queues with work in any order (an index ordered by what changes as
    /// queues are worked on): the queue in turn still goes first once in three minutes each.
    #[test]
    fn each_queue_goes_first_in_turn_whatever_order_the_store_lists_them_in() {
        let ids: Vec<QueueId> = ["a", "b", "c"]
            .map(|s| QueueId::from_stored(s.into()))
            .to_vec();
        let at = |minute: i64| Timestamp(minute * 60_000);
        let mut first = std::collections::BTreeSet::new();
        for minute in 0..3 {
            let mut listed = ids.clone();
            listed.rotate_right(minute as usize);
            first.insert(in_order_of_the_minute(listed, at(minute))[0].clone());
        }
        assert_eq!(first.len(), 3, "{first:?}");
    }

    /// 20 queues, and a tick that reaches only the queues before the one that takes all its
    /// time (`slow`): over two hours, every queue is reached in about half the minutes, the
    /// one after `slow` in the index too, and none waits long.
    #[test]
    fn a_slow_queue_keeps_no_other_queue_unreached_for_long() {
        let ids: Vec<QueueId> = (0..20)
            .map(|i| QueueId::from_stored(format!("github.com/org{i:02}/repo#main")))
            .collect();
        let slow = &ids[7];
        let minutes = 120;
        let mut reached = vec![0; ids.len()];
        let mut longest_wait = vec![0; ids.len()];
        let mut waiting = vec![0; ids.len()];
        for minute in 0..minutes {
            let order = in_order_of_the_minute(ids.clone(), Timestamp(minute * 60_000 + 5));
            assert_eq!(
                order,
                in_order_of_the_minute(ids.clone(), Timestamp(minute * 60_000 + 59_999)),
                "one order per minute"
            );
            let until_slow = order.iter().position(|id| id == slow).unwrap();
            for (i, id) in ids.iter().enumerate() {
                if order[..=until_slow].contains(id) {
                    reached[i] += 1;
                    waiting[i] = 0;
                } else {
                    waiting[i] += 1;
                    longest_wait[i] = longest_wait[i].max(waiting[i]);
                }
            }
        }
        for (i, id) in ids.iter().enumerate().filter(|(_, id)| *id != slow) {
            assert!(
                (30..=90).contains(&reached[i]),
                "{id}: reached in {} of {minutes} minutes",
                reached[i]
            );
            assert!(
                longest_wait[i] <= 10,
                "{id}: {} minutes unreached",
                longest_wait[i]
            );
        }
        assert!(in_order_of_the_minute(Vec::new(), Timestamp(1)).is_empty());
    }
}
