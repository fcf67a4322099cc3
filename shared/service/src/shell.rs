//! The commit loop under [`crate::drive`]: load the snapshot the actor may see, apply a pure
//! step, commit with the version check, retry when someone else committed first.
//!
//! Writers of one queue contend on its version: every commit moves it, and a commit that
//! started from an older version is refused. Such a refusal is the service's to absorb, not
//! the caller's. The requests of one process take turns on a queue ([`super::line`]), so
//! they never refuse each other; a commit that loses to a writer in another process (another
//! function instance, the tick, a webhook) is stepped again on the queue as it is now and
//! committed again, after a jittered back-off, for up to [`CONTENTION_BUDGET`]; only then
//! does the request answer 503, having changed nothing. The step is pure, so applying it
//! again is safe, and no Git host call happens between reading the snapshot and committing
//! (the events are built before).

use super::line::Turn;
use super::owners;
use crate::app::App;
use crate::error::ServiceError;
use mq_core::DomainError;
use mq_core::engine::Transition;
use mq_core::entry::UploadedTargets;
use mq_core::ids::{OrgId, PrNumber, QueueId};
use mq_core::snapshot::{Commit, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_store::StoreError;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// How long a request keeps committing on a queue that other writers keep changing: from its
/// first attempt, its waits in the process's line ([`super::line`]) and its retries after
/// losing to writers elsewhere; then it answers 503. An attempt takes tens of milliseconds
/// on DynamoDB (a read and a transaction), so this leaves room for dozens of simultaneous
/// writers. A submission's Git host reads count against it too; the one effect that may
/// still run at the deadline stops at [`crate::drive::EFFECT_OVERRUN`] past it, and with the
/// commit of the outcomes ([`crate::drive::OUTCOMES_GRACE`]) the request stays within the
/// functions' 29-second limit however slow the Git host is.
pub const CONTENTION_BUDGET: Duration = Duration::from_secs(15);

/// Attempts before a contended test-health write gives up with 503.
pub const MAX_COMMIT_ATTEMPTS: u32 = 12;

/// Who acts on a queue: a caller of the API (who must own it), or the service itself (the
/// tick, the result of an effect), or the service on behalf of the organisation owning a
/// repository (a webhook delivery: it reaches only that organisation's queues).
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    Org(&'a OrgId),
    Service,
    ServiceFor(&'a OrgId),
}

/// The queue as `actor` may see it; 404 when it does not exist or belongs to someone else.
/// An organisation's ownership of the repository is checked as the queue is read.
pub(crate) async fn load_for(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
) -> Result<QueueSnapshot, ServiceError> {
    crate::request_log::record_queue(id);
    let loaded = match actor {
        Actor::Org(org) => {
            let (owned, loaded) =
                tokio::join!(owners::check_queue(app, org, id), app.store.load(id));
            owned?;
            loaded?
        }
        Actor::Service | Actor::ServiceFor(_) => app.store.load(id).await?,
    };
    match (loaded, actor) {
        (Some(snapshot), Actor::Org(org) | Actor::ServiceFor(org))
            if &snapshot.queue.org == org =>
        {
            Ok(snapshot)
        }
        (Some(snapshot), Actor::Service) => Ok(snapshot),
        _ => Err(DomainError::queue_not_found().into()),
    }
}

/// A committed step: the snapshot it started from and what it did. `transition.snapshot` is
/// the queue as the store now holds it (version and order included): the next step on the
/// queue may start from it instead of reading it again.
#[derive(Debug, Clone)]
pub struct Applied {
    pub before: QueueSnapshot,
    pub transition: Transition,
    /// Until when the request retries commits: the rounds of effects after this commit
    /// share it.
    pub deadline: Instant,
    /// As the start said ([`Start::effects_until`]).
    pub effects_until: Option<Instant>,
}

/// What a commit loop starts from: a snapshot already read (the first attempt uses it; a
/// conflict means it was stale, and the loop reads the queue again), impacted targets to
/// record in the same commit, and until when conflicts are retried.
#[derive(Debug, Clone, Default)]
pub struct Start {
    pub snapshot: Option<QueueSnapshot>,
    pub uploaded: Vec<(PrNumber, UploadedTargets)>,
    /// `None`: [`CONTENTION_BUDGET`] from the first attempt.
    pub deadline: Option<Instant>,
    /// Until when the effects that follow may run: the tick's, which has a minute of its
    /// own. `None` (a request): the last one started stops [`crate::drive::EFFECT_OVERRUN`]
    /// past the deadline, within the functions' 29 seconds.
    pub effects_until: Option<Instant>,
}

impl Start {
    /// Reads the queue first.
    pub fn fresh() -> Self {
        Self::default()
    }

    /// Starts from `snapshot`, just read or committed.
    pub fn from(snapshot: QueueSnapshot) -> Self {
        Self {
            snapshot: Some(snapshot),
            ..Self::default()
        }
    }

    /// Retries conflicts until `deadline` (a request's, shared by its commits).
    pub fn until(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Lets the effects that follow run until `until` (see [`Start::effects_until`]).
    pub fn letting_effects_run_until(mut self, until: Instant) -> Self {
        self.effects_until = Some(until);
        self
    }

    /// Records `uploaded` impacted targets with the commit (one is made even when the step
    /// changes nothing else).
    pub fn recording(mut self, uploaded: Vec<(PrNumber, UploadedTargets)>) -> Self {
        self.uploaded = uploaded;
        self
    }
}

/// Applies `step` to the queue as `actor` may see it and commits the result atomically,
/// retrying from a fresh snapshot when the version moved; a domain refusal changes nothing.
/// The process's requests on the queue take turns ([`super::line`]); a commit that loses to
/// a writer elsewhere is retried until the start's deadline.
pub(crate) async fn commit_step<F>(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
    mut step: F,
    start: Start,
) -> Result<Applied, ServiceError>
where
    F: FnMut(&QueueSnapshot, Timestamp) -> Result<Transition, DomainError>,
{
    let deadline = start.deadline.unwrap_or_else(contention_deadline);
    let Some(mut turn) = app.lines.turn(id, deadline).await else {
        return Err(StoreError::Conflict.into());
    };
    let handed_over = turn.handed_over();
    if start.snapshot.is_none() && handed_over.is_some() {
        owned_by(app, actor, id).await?;
    }
    // A snapshot the caller read before its turn, with none handed over, may be older than
    // what another request of this process committed meanwhile: a refusal on it is checked
    // on a fresh read, and it is not handed on.
    let mut maybe_old = start.snapshot.is_some() && handed_over.is_none();
    let mut retry = Retry::until(deadline);
    let mut known = newer(start.snapshot, handed_over);
    loop {
        let attempt = Instant::now();
        let before = match known.take() {
            Some(snapshot) => visible_to(snapshot, actor, id)?,
            None => {
                maybe_old = false;
                load_for(app, actor, id).await?
            }
        };
        let current = !maybe_old;
        match step_and_commit(app, &mut turn, before, &mut step, &start.uploaded, current).await {
            Err(ServiceError::Refused(_)) if maybe_old => {}
            Err(e) => return Err(e),
            Ok(Some((before, transition))) => {
                return Ok(Applied {
                    before,
                    transition,
                    deadline,
                    effects_until: start.effects_until,
                });
            }
            Ok(None) if retry.wait(attempt.elapsed()).await => {}
            Ok(None) => return Err(StoreError::Conflict.into()),
        }
    }
}

/// Applies `step` to `before` and commits the result, with `uploaded` impacted targets; the
/// snapshot it started from and the transition, or `None` when another writer committed
/// first. A refusal by the step changes nothing. The queue as it is left is handed to the
/// next turn: as committed, or, when nothing was committed, as `before` if it is `current`
/// (read or handed over in this turn).
async fn step_and_commit<F>(
    app: &App,
    turn: &mut Turn<'_>,
    before: QueueSnapshot,
    step: &mut F,
    uploaded: &[(PrNumber, UploadedTargets)],
    current: bool,
) -> Result<Option<(QueueSnapshot, Transition)>, ServiceError>
where
    F: FnMut(&QueueSnapshot, Timestamp) -> Result<Transition, DomainError>,
{
    let now = app.now();
    let mut transition = match step(&before, now) {
        Ok(transition) => transition,
        Err(refused) => {
            if current {
                turn.hand_over(|| before);
            }
            return Err(refused.into());
        }
    };
    let mut commit = Commit::between(&before, &transition, now);
    if commit.changes_nothing(&before.queue) && uploaded.is_empty() {
        // Nothing changed: no write, no version bump.
        if current {
            turn.hand_over(|| before.clone());
        }
        return Ok(Some((before, transition)));
    }
    commit.uploaded_targets = uploaded.to_vec();
    commit.queue.record_commit(uuid::Uuid::new_v4().to_string());
    match committed(app, &commit).await {
        Ok(()) => {
            transition.snapshot.mark_committed(commit.queue);
            turn.hand_over(|| transition.snapshot.clone());
            Ok(Some((before, transition)))
        }
        Err(StoreError::Conflict) => Ok(None),
        Err(StoreError::NotFound) => Err(DomainError::queue_not_found().into()),
        Err(e) => Err(e.into()),
    }
}

/// The more recent of two snapshots of a queue.
fn newer(a: Option<QueueSnapshot>, b: Option<QueueSnapshot>) -> Option<QueueSnapshot> {
    match (a, b) {
        (Some(a), Some(b)) if b.queue.version > a.queue.version => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// Commits, and when the store gave no answer (it timed out or was unavailable, so the
/// write may or may not have happened), reads the queue again to find out: the commit
/// landed if the queue item remembers its id. Unknown if that read fails too.
async fn committed(app: &App, commit: &Commit) -> Result<(), StoreError> {
    let error = match app.store.commit(commit).await {
        Err(error @ StoreError::Unavailable { .. }) => error,
        other => return other,
    };
    let id = commit.queue.recent_commits.last().map(String::as_str);
    match app.store.load(&commit.queue.id).await {
        Ok(Some(now)) if id.is_some_and(|id| now.queue.has_commit(id)) => {
            tracing::warn!(%error, "the commit's answer was lost; it landed");
            Ok(())
        }
        Ok(Some(_)) => Err(error),
        Ok(None) => Err(StoreError::NotFound),
        Err(_) => Err(error),
    }
}

/// For an organisation's request, 404 unless the organisation owns the queue's repository.
/// [`load_for`] checks this with its read; a request that starts from the snapshot the turn
/// before it handed over, without reading the queue itself, checks it here.
async fn owned_by(app: &App, actor: Actor<'_>, id: &QueueId) -> Result<(), ServiceError> {
    match actor {
        Actor::Org(org) => owners::check_queue(app, org, id).await,
        Actor::Service | Actor::ServiceFor(_) => Ok(()),
    }
}

/// A snapshot already read, checked as [`load_for`] checks what it reads.
fn visible_to(
    snapshot: QueueSnapshot,
    actor: Actor<'_>,
    id: &QueueId,
) -> Result<QueueSnapshot, ServiceError> {
    crate::request_log::record_queue(id);
    let visible = &snapshot.queue.id == id
        && match actor {
            Actor::Org(org) | Actor::ServiceFor(org) => &snapshot.queue.org == org,
            Actor::Service => true,
        };
    if visible {
        Ok(snapshot)
    } else {
        Err(DomainError::queue_not_found().into())
    }
}

/// [`CONTENTION_BUDGET`] from now: until when a request starting now retries its commits.
pub fn contention_deadline() -> Instant {
    Instant::now() + CONTENTION_BUDGET
}

/// `read` (of the Git host, for a request) cut at the request's `deadline`: then the request
/// answers 503, to be retried, rather than outlive its function on a Git host that hangs.
pub async fn read_by<T, E>(
    deadline: Instant,
    read: impl Future<Output = Result<T, E>>,
) -> Result<T, ServiceError>
where
    ServiceError: From<E>,
{
    match tokio::time::timeout_at(deadline, read).await {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(ServiceError::unavailable(
            "Git host read cut at the request's deadline",
            "the Git host did not answer in time",
            Some(Duration::from_secs(1)),
            1,
        )),
    }
}

/// The retries of a commit that lost to another writer: a jittered back-off before each,
/// for as long as a deadline allows.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub deadline: Instant,
    attempt: u32,
}

impl Retry {
    /// Retries until `deadline`.
    pub fn until(deadline: Instant) -> Self {
        Self {
            deadline,
            attempt: 0,
        }
    }

    /// Waits before the next attempt and returns true; false at once when the deadline has
    /// passed. The wait is random ("full jitter"), up to the time the lost attempt took
    /// (`took`), doubled at each retry, at most `MAX_WINDOW`, and cut short at the
    /// deadline: the more writers, the more retries and the wider the window they spread
    /// over; the slower the store, the wider too, in the store's own time.
    pub async fn wait(&mut self, took: Duration) -> bool {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let doubled = took.max(MIN_WINDOW) * (1 << self.attempt.min(16));
        tokio::time::sleep(random_up_to(doubled.min(MAX_WINDOW)).min(left)).await;
        self.attempt += 1;
        true
    }
}

/// The narrowest window of [`Retry::wait`].
const MIN_WINDOW: Duration = Duration::from_millis(2);
/// The widest window of [`Retry::wait`]: a writer that keeps losing still tries about twice
/// a second.
const MAX_WINDOW: Duration = Duration::from_secs(1);

/// A random duration from zero to `max`.
fn random_up_to(max: Duration) -> Duration {
    let micros = max.as_micros().max(1);
    let random = uuid::Uuid::new_v4().as_u128() % (micros + 1);
    Duration::from_micros(random as u64)
}

/// Sleeps a random time from 0 to 5 ms × 2^attempt, at most 250 ms ("full jitter": writers
/// that collided spread out instead of colliding again).
pub async fn backoff(attempt: u32) {
    let ceiling = Duration::from_millis((5u64 << attempt.min(6)).min(250));
    tokio::time::sleep(random_up_to(ceiling)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::SystemClock;
    use crate::test_queue::{acme_queue_in_memory, concurrency};
    use mq_core::ids::OwnerRef;
    use mq_store::{OwnerLink, OwnerStore, QueueStore};
    use std::sync::Arc;

    /// The repository's owner was linked to another organisation after acme created its
    /// queue: acme's request is refused, also when it would start from the snapshot the
    /// turn before it handed over instead of reading the queue (whose read checks this).
    #[tokio::test]
    async fn a_handed_over_snapshot_is_refused_to_an_organisation_that_lost_the_repository() {
        let (store, queue) = acme_queue_in_memory().await;
        let app = App::new(store.clone(), Arc::new(SystemClock));
        let acme = queue.org.clone();
        let link = OwnerLink {
            owner: OwnerRef::new("owner", "github.com", "acme").unwrap(),
            org: OrgId::parse("umbrella").unwrap(),
            linked_at: app.now(),
            account_id: None,
        };
        store.link_owner(&link).await.unwrap();

        let id = queue.id.clone();
        let mut before = app.lines.turn(&id, contention_deadline()).await.unwrap();
        let request = {
            let (app, id) = (app.clone(), id.clone());
            tokio::spawn(async move {
                let events = [concurrency(3)];
                let step =
                    |s: &QueueSnapshot, now| crate::drive::apply_in_order(s, &events, now, true);
                commit_step(&app, Actor::Org(&acme), &id, step, Start::fresh()).await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let current = store.load(&id).await.unwrap().unwrap();
        before.hand_over(|| current);
        drop(before);

        let refused = request.await.unwrap().unwrap_err();
        assert!(
            matches!(&refused, ServiceError::Refused(e) if e.code == mq_core::ErrorCode::RepositoryNotFound),
            "{refused:?}"
        );
        let after = store.load(&id).await.unwrap().unwrap();
        assert_eq!(after.queue.config.concurrency, 1, "nothing changed");
    }

    /// A step that acts only on the queue with concurrency 3, and refuses otherwise.
    fn needs_concurrency_3(s: &QueueSnapshot, now: Timestamp) -> Result<Transition, DomainError> {
        if s.queue.config.concurrency != 3 {
            return Err(DomainError::invalid("concurrency", "is not 3 yet"));
        }
        crate::drive::apply_in_order(s, &[], now, true)
    }

    /// The tick read the queue (concurrency 1); then a request set concurrency 3, and left
    /// no snapshot behind (nobody waited). The tick's turn, from what it read, changes
    /// nothing: it must not hand that old snapshot to the request waiting behind it, which
    /// would then be refused on a queue it does not see as it is. A request that starts from
    /// an old snapshot itself, and is refused on it, reads the queue and steps again.
    #[tokio::test]
    async fn a_snapshot_read_before_the_turn_is_neither_handed_on_nor_refused_on() {
        let (store, queue) = acme_queue_in_memory().await;
        let app = App::new(store.clone(), Arc::new(SystemClock));
        let id = queue.id.clone();
        let old = store.load(&id).await.unwrap().unwrap();
        let events = [concurrency(3)];
        let step = |s: &QueueSnapshot, now| crate::drive::apply_in_order(s, &events, now, true);
        commit_step(&app, Actor::Service, &id, step, Start::fresh())
            .await
            .unwrap();

        let blocker = app.lines.turn(&id, contention_deadline()).await.unwrap();
        let tick = {
            let (app, id, old) = (app.clone(), id.clone(), old.clone());
            tokio::spawn(async move {
                let nothing =
                    |s: &QueueSnapshot, now| crate::drive::apply_in_order(s, &[], now, true);
                commit_step(&app, Actor::Service, &id, nothing, Start::from(old)).await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let waiting = {
            let (app, id) = (app.clone(), id.clone());
            tokio::spawn(async move {
                commit_step(
                    &app,
                    Actor::Service,
                    &id,
                    needs_concurrency_3,
                    Start::fresh(),
                )
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(blocker);
        tick.await.unwrap().unwrap();
        assert!(waiting.await.unwrap().is_ok(), "it saw the queue as it is");

        let from_old = commit_step(
            &app,
            Actor::Service,
            &id,
            needs_concurrency_3,
            Start::from(old),
        );
        assert!(
            from_old.await.is_ok(),
            "refused on the old snapshot, it read the queue"
        );
    }
}
