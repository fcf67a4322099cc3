//! The one driver of a queue: load it, step the engine, commit, then execute the effects the
//! engine asked for and report their outcomes back, round after round. Every use of the
//! service that reads or changes a queue goes through one of its entry points:
//!
//! - [`read`]: a caller reads its queue;
//! - [`apply`]: events (a caller's request, or facts: the tick, a webhook delivery) are
//!   applied in one commit, and their effects executed;
//! - [`apply_step`]: the same for a step the use builds itself (a submission, which checks
//!   that what it read from the Git host still holds).
//!
//! The commit loop (turns, retries on conflicts, ownership) is in [`crate::shell`]. A request
//! executes the effects it caused (a bounded number of rounds); whatever is left, or failed,
//! stays in the queue's outbox and the tick executes it later.

use super::effects;
pub use super::shell::{Actor, Applied, Start};
use super::shell::{commit_step, load_for};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::DomainError;
use mq_core::effects::{Effect, PendingEffect};
use mq_core::engine::{Ctx, Event, Transition, step};
use mq_core::ids::{OrgId, QueueId};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use std::time::Duration;
use tokio::time::Instant;

/// Rounds of "execute effects, report outcomes" one request performs before leaving the rest
/// to the tick.
pub const EFFECT_ROUNDS: usize = 8;

/// How long the outcomes of a round of effects may still be committed once the request's
/// deadline has passed: a round that ran past it would otherwise get one attempt, and
/// outcomes lost to another writer make the tick execute those effects again (a test branch
/// built again restarts its CI).
pub const OUTCOMES_GRACE: Duration = Duration::from_secs(3);

/// How long past a request's deadline the effect it started last may run: then it is left to
/// the tick as failed (executing it again is safe, see [`effects`]), and with the commit of
/// the outcomes ([`OUTCOMES_GRACE`]) the request answers within the functions' 29 seconds,
/// however slow the Git host. The tick's effects run until the end of its own time
/// ([`Start::letting_effects_run_until`]).
pub const EFFECT_OVERRUN: Duration = Duration::from_secs(8);

/// The queue, if `org` owns its repository (else 404 `REPOSITORY_NOT_FOUND`) and the queue
/// exists and belongs to `org` (else 404 `QUEUE_NOT_FOUND`); never revealing which.
pub async fn read(app: &App, org: &OrgId, id: &QueueId) -> Result<QueueSnapshot, ServiceError> {
    load_for(app, Actor::Org(org), id).await
}

/// Applies `events` in order, in one commit, and executes the resulting effects for up to
/// [`EFFECT_ROUNDS`] rounds. For an API caller ([`Actor::Org`]) the first event is what it
/// asked for, and a refusal of it is the caller's error. Every other event is a fact (an
/// effect outcome, a CI result, a webhook) that the engine may find stale, which changes
/// nothing. Returns the queue as the commit left it (what the request did).
pub async fn apply(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
    events: &[Event],
    start: Start,
) -> Result<Queue, ServiceError> {
    let applied = commit_events(app, actor, id, events, start).await?;
    let queue = applied.transition.snapshot.queue.clone();
    run_effects(app, id, applied).await;
    Ok(queue)
}

/// Commits what `step` makes of the queue (retried on the queue as it is now when another
/// writer committed first) and executes the resulting effects, as [`apply`] does.
pub async fn apply_step<F>(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
    step: F,
    start: Start,
) -> Result<(), ServiceError>
where
    F: FnMut(&QueueSnapshot, Timestamp) -> Result<Transition, DomainError>,
{
    let applied = commit_step(app, actor, id, step, start).await?;
    run_effects(app, id, applied).await;
    Ok(())
}

/// Applies `events` in one commit; strict (see [`apply_in_order`]) for an API caller.
async fn commit_events(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
    events: &[Event],
    start: Start,
) -> Result<Applied, ServiceError> {
    let strict = matches!(actor, Actor::Org(_));
    let step = |snapshot: &QueueSnapshot, now| apply_in_order(snapshot, events, now, strict);
    commit_step(app, actor, id, step, start).await
}

/// Steps through `events`, merging their transitions into one; with `strict`, a refusal of the
/// first event is returned.
pub fn apply_in_order(
    snapshot: &QueueSnapshot,
    events: &[Event],
    now: Timestamp,
    strict: bool,
) -> Result<Transition, DomainError> {
    let mut total: Option<Transition> = None;
    for (i, event) in events.iter().enumerate() {
        let ctx = Ctx { now, seed: seed() };
        let from = total.as_ref().map_or(snapshot, |t| &t.snapshot);
        match (step(from, event, ctx), &mut total) {
            (Ok(t), Some(sum)) => merge(sum, t),
            (Ok(t), None) => total = Some(t),
            (Err(e), _) if strict && i == 0 => return Err(e),
            (Err(e), _) => tracing::debug!(error = %e, "stale fact ignored"),
        }
    }
    Ok(total.unwrap_or_else(|| Transition::unchanged(snapshot)))
}

/// Commits effect outcomes from `current`, retrying conflicts until `deadline`, and for at
/// least [`OUTCOMES_GRACE`] from now.
async fn commit_outcomes(
    app: &App,
    id: &QueueId,
    outcomes: &[Event],
    current: QueueSnapshot,
    deadline: Instant,
) -> Result<Applied, ServiceError> {
    let until = deadline.max(Instant::now() + OUTCOMES_GRACE);
    let start = Start::from(current).until(until);
    commit_events(app, Actor::Service, id, outcomes, start).await
}

fn merge(total: &mut Transition, next: Transition) {
    total.snapshot = next.snapshot;
    total.effects.extend(next.effects);
    total.concluded.extend(next.concluded);
    total.finished_runs.extend(next.finished_runs);
}

/// A seed for the ids an event creates.
fn seed() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

/// When `effect`'s lease ends, [`LEASE_MARGIN`] early; `None` when that has passed. Once its
/// lease is over the tick may hand the effect out again: an execution still under way then
/// could land after a newer one (an older comment over the newer), so it is cut there.
fn lease_end(app: &App, effect: &PendingEffect) -> Option<Instant> {
    let left = effect.next_attempt_at.millis_since(app.now());
    let left = Duration::from_millis(u64::try_from(left).ok()?).checked_sub(LEASE_MARGIN)?;
    Some(Instant::now() + left)
}

/// How long before its lease ends an effect's execution is cut ([`lease_end`]): the Git host
/// may still act on a request sent just before.
const LEASE_MARGIN: Duration = Duration::from_secs(2);

/// What becomes of an effect about to be sent ([`before_sending`]).
enum Sending {
    Send,
    /// A merge on a queue paused since its step: withdrawn ([`Event::MergeWithdrawn`]).
    Withdraw,
    /// Not sent now: left in the outbox, for the tick.
    Leave,
}

/// Whether `effect` is sent now. A merge is sent only while its queue is not paused, read
/// again just before: a pause answered once the merge's step had committed (an operator's
/// freeze) stops it, and the merge is withdrawn until the queue runs again. A merge whose
/// queue could not be read is left to the tick.
async fn before_sending(app: &App, id: &QueueId, effect: &PendingEffect) -> Sending {
    if !matches!(effect.effect, Effect::Merge { .. }) {
        return Sending::Send;
    }
    match app.store.load_queue(id).await {
        Ok(Some(queue)) if !queue.mode_and_state().is_paused() => Sending::Send,
        Ok(Some(_)) => {
            tracing::info!(effect = %effect.id, "merge withdrawn: the queue was paused");
            Sending::Withdraw
        }
        Ok(None) => Sending::Leave,
        Err(e) => {
            tracing::warn!(effect = %effect.id, error = %e, "merge left to the tick: the queue could not be read");
            Sending::Leave
        }
    }
}

/// Executes the effects a committed step emitted and reports their outcomes, round after
/// round, each round starting from the snapshot the previous one committed, until `deadline`
/// (the request's): no effect starts after it, and a round's commit retries conflicts until
/// it, and for at least [`OUTCOMES_GRACE`]. What is left, or failed to report, is logged: the
/// effects stay in the outbox and the tick executes them. An effect is only executed within
/// its lease: once that ran out, the tick may have handed it out again (or a newer
/// notification in its place), and it is left to the tick.
async fn run_effects(app: &App, id: &QueueId, committed: Applied) {
    let Ok(host) = app.host() else {
        return;
    };
    // Effects stop at `cut`; none starts within EFFECT_OVERRUN of it (a request: after its
    // deadline), so each started has that long at least.
    let cut = (committed.effects_until).unwrap_or(committed.deadline + EFFECT_OVERRUN);
    let start_by = cut.checked_sub(EFFECT_OVERRUN).unwrap_or(cut);
    let deadline = committed.deadline.min(start_by);
    let mut effects = committed.transition.effects;
    let mut current = committed.transition.snapshot;
    for _ in 0..EFFECT_ROUNDS {
        if effects.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!("effects left to the tick: the request's time is up");
            return;
        }
        let mut outcomes = Vec::with_capacity(effects.len());
        for effect in &effects {
            if Instant::now() >= deadline {
                tracing::warn!("effects left to the tick: the request's time is up");
                break;
            }
            let Some(lease_end) = lease_end(app, effect) else {
                tracing::debug!(effect = %effect.id, "lease over; left to the tick");
                continue;
            };
            match before_sending(app, id, effect).await {
                Sending::Send => {
                    let effect_cut = Some(cut.min(lease_end));
                    outcomes.push(effects::execute(host, &current.queue, effect, effect_cut).await);
                }
                Sending::Withdraw => outcomes.push(Event::MergeWithdrawn {
                    effect_id: effect.id.clone(),
                }),
                Sending::Leave => {}
            }
        }
        match commit_outcomes(app, id, &outcomes, current, deadline).await {
            Ok(next) => {
                effects = next.transition.effects;
                current = next.transition.snapshot;
            }
            Err(e) => {
                tracing::warn!(error = %e, "effect outcomes not recorded; the tick retries");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::SystemClock;
    use crate::test_queue::{acme_queue_in_memory, concurrency};
    use std::sync::Arc;

    /// An effect is executed only within its lease, and cut [`LEASE_MARGIN`] before it ends:
    /// then the tick may hand it out again, and an execution still under way could land after
    /// a newer one.
    #[tokio::test]
    async fn an_effect_is_cut_before_its_lease_ends() {
        let (store, _) = acme_queue_in_memory().await;
        let now = Timestamp(1_800_000_000_000);
        let app = App::new(store, Arc::new(crate::app::ManualClock::new(now)));
        let leased_for = |ms| PendingEffect {
            id: "fx1".into(),
            effect: mq_core::engine::Effect::DeleteBranch {
                branch: "mq-test/main/run-1".into(),
            },
            created_at: now,
            attempts: 0,
            next_attempt_at: now.plus_millis(ms),
            last_error: None,
            held: false,
        };
        let end = lease_end(&app, &leased_for(30_000)).expect("within its lease");
        let left = end - Instant::now();
        assert!(
            left <= Duration::from_secs(28) && left > Duration::from_secs(27),
            "{left:?}"
        );
        assert_eq!(lease_end(&app, &leased_for(1_000)), None, "too little left");
        assert_eq!(lease_end(&app, &leased_for(-1_000)), None, "over");
    }

    /// A round of effects ended after the request's deadline, and another writer committed
    /// meanwhile: its outcomes are still committed, on the queue as it now is.
    #[tokio::test]
    async fn outcomes_of_a_round_past_the_deadline_are_committed_despite_another_writer() {
        let (store, queue) = acme_queue_in_memory().await;
        let org = queue.org.clone();
        let app = App::new(store, Arc::new(SystemClock)).with_default_owner(org.clone());
        let id = queue.id.clone();
        let round_began_on = read(&app, &org, &id).await.unwrap();
        apply(&app, Actor::Service, &id, &[concurrency(2)], Start::fresh())
            .await
            .unwrap();
        let deadline = Instant::now() - Duration::from_secs(1);
        let outcomes = [concurrency(3)];
        let committed = commit_outcomes(&app, &id, &outcomes, round_began_on, deadline);
        let queue = committed.await.unwrap().transition.snapshot.queue;
        assert_eq!(queue.config.concurrency, 3);
        let stored = read(&app, &org, &id).await.unwrap().queue;
        assert_eq!(stored.config.concurrency, 3);
    }
}
