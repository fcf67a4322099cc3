//! Advice on a queue's settings from its own history, and auto-tuning
//! (docs/queue-semantics.md §13).
//!
//! `getQueueAdvice` reads a window of the queue's history (the entries concluded in it, the
//! runs finished in it, the restarts, and the entries in the queue now), estimates its
//! workload and asks the advisor for the settings best for the caller's goal. The advisor
//! runs the simulator for a fixed amount of work ([`App::advice_work`]), on a blocking
//! thread. The tick asks it for one due queue with `autoTune` on per run
//! ([`auto_tune`]), and records the check through the engine (`Event::AutoTune`).

use super::drive::{self, Actor, Start};
use crate::app::App;
use crate::error::ServiceError;
use mq_advisor::{Advice, AdviceError, Budget, Estimates, Goal, Past};
use mq_core::engine::Event;
use mq_core::history::History;
use mq_core::ids::{OrgId, QueueId};
use mq_core::metrics::Window;
use mq_core::snapshot::QueueSnapshot;
use mq_core::time::Timestamp;
use mq_core::tuning::{TunedSettings, WINDOW_MS};
use mq_wire::advice::{AdviceView, AdviceWindow, NoAdvice, QueueAdvice, TuningView};

/// The most conclusions, and the most finished runs, one advice reads: a window holding
/// more is shortened to the most recent ones.
pub const MAX_HISTORY_ITEMS: usize = 20_000;

/// What the caller asks of `getQueueAdvice`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdviceRequest {
    pub goal: Goal,
    pub window_ms: i64,
}

/// The advice for the queue `id` of `org`: its estimates, and the settings best for the goal
/// (or why there are none).
pub async fn queue_advice(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    request: AdviceRequest,
) -> Result<QueueAdvice, ServiceError> {
    let snapshot = drive::read(app, org, id).await?;
    let loaded = load_history(app, &snapshot, request.window_ms, app.now()).await?;
    let estimates = mq_advisor::estimate(&loaded.past);
    let advice = advise(app, &estimates, &snapshot, request.goal, None).await?;
    let queue = &snapshot.queue;
    let (advice, no_advice) = match advice {
        Ok(advice) => (Some(view(&advice)), None),
        Err(refused) => (None, Some(no_advice(&refused))),
    };
    Ok(QueueAdvice {
        window: AdviceWindow {
            from: loaded.past.window.from.to_rfc3339(),
            to: loaded.past.window.to.to_rfc3339(),
            hours: loaded.past.hours(),
            shortened: loaded.shortened,
        },
        goal: request.goal,
        estimates,
        advice,
        no_advice,
        auto_tune: queue.config.auto_tune,
        tuning: TuningView::from(&queue.tuning),
    })
}

/// Checks the queue `id` for auto-tuning if it is due (`Tuning::due`): asks the advisor for
/// the most merges per hour over the last window, and records the check with what it found
/// worth changing to ([`mq_advisor::worth_changing`]). Returns whether it checked.
pub async fn auto_tune(app: &App, id: &QueueId) -> Result<bool, ServiceError> {
    let Some(snapshot) = app.store.load(id).await? else {
        return Ok(false);
    };
    let now = app.now();
    let queue = &snapshot.queue;
    if !queue.tuning.due(&queue.config, queue.state, now) {
        return Ok(false);
    }
    let loaded = load_history(app, &snapshot, WINDOW_MS, now).await?;
    let estimates = mq_advisor::estimate(&loaded.past);
    let proposed = queue.tuning.proposed.as_ref().map(|p| p.after);
    let advised = match advise(app, &estimates, &snapshot, Goal::MostMerges, proposed).await? {
        Ok(advice) => mq_advisor::worth_changing(&advice, proposed.as_ref()),
        Err(refused) => {
            tracing::info!(queue = %id, reason = %refused, "auto-tuning: no advice");
            None
        }
    };
    if let Some(a) = &advised {
        tracing::info!(queue = %id, reason = %a.reason, "auto-tuning: advised a change");
    }
    let events = [Event::AutoTune { advised }];
    drive::apply(app, Actor::Service, id, &events, Start::from(snapshot)).await?;
    Ok(true)
}

/// A window of history as the store gave it.
pub struct Loaded {
    pub past: Past,
    /// Whether the window was shortened to [`MAX_HISTORY_ITEMS`].
    pub shortened: bool,
}

/// The queue's history over the `window_ms` before `now` (nothing before its creation), as
/// summaries ([`mq_core::entry::Entry::summary`], [`mq_core::run::TestRun::summary`]): the
/// advisor uses nothing they leave out (BENCHMARKS.md has what that saves). A window holding more than
/// [`MAX_HISTORY_ITEMS`] conclusions or runs starts at the oldest item read instead, so that
/// what it holds is whole.
pub async fn load_history(
    app: &App,
    snapshot: &QueueSnapshot,
    window_ms: i64,
    now: Timestamp,
) -> Result<Loaded, ServiceError> {
    let id = &snapshot.queue.id;
    let mut window = Window::last(&snapshot.queue, now, window_ms);
    // One more than kept: more than MAX_HISTORY_ITEMS read says the window holds more.
    let (concluded, runs) = tokio::join!(
        app.store
            .conclusion_summaries_between(id, window, MAX_HISTORY_ITEMS + 1),
        app.store
            .finished_run_summaries_between(id, window, MAX_HISTORY_ITEMS + 1)
    );
    let (mut concluded, mut runs) = (concluded?, runs?);
    let oldest_kept = [
        full_from(&concluded, |e| e.concluded_at),
        full_from(&runs, |r| r.finished_at),
    ];
    let shortened = oldest_kept.iter().any(Option::is_some);
    if let Some(from) = oldest_kept.into_iter().flatten().max() {
        window = Window {
            from,
            to: window.to,
        };
        concluded.retain(|e| e.concluded_at.is_some_and(|at| at >= from));
        runs.retain(|r| r.finished_at.is_some_and(|at| at >= from));
    }
    // The advisor uses no restart: none is read.
    let kept = History {
        concluded,
        finished_runs: runs,
        restarts: Vec::new(),
    };
    let past = Past::new(window, kept, snapshot);
    Ok(Loaded { past, shortened })
}

/// When the read (newest first) found more than [`MAX_HISTORY_ITEMS`]: the window then
/// starts just after the oldest item read, so that every item of the millisecond it starts
/// at was read.
fn full_from<T>(items: &[T], at: impl Fn(&T) -> Option<Timestamp>) -> Option<Timestamp> {
    if items.len() <= MAX_HISTORY_ITEMS {
        return None;
    }
    items
        .last()
        .and_then(at)
        .map(|oldest| oldest.plus_millis(1))
}

/// Runs the advisor on a blocking thread (it is CPU-bound for its whole budget,
/// `app.advice_work` units of simulated work); `proposed` is projected too
/// (`mq_advisor::advise_considering`).
async fn advise(
    app: &App,
    estimates: &Estimates,
    snapshot: &QueueSnapshot,
    goal: Goal,
    proposed: Option<TunedSettings>,
) -> Result<Result<Advice, AdviceError>, ServiceError> {
    let estimates = estimates.clone();
    let config = snapshot.queue.config.clone();
    let budget = Budget {
        work: app.advice_work,
        ..Budget::default()
    };
    let advise =
        move || mq_advisor::advise_considering(&estimates, &config, goal, budget, proposed);
    tokio::task::spawn_blocking(advise)
        .await
        .map_err(ServiceError::internal)
}

fn view(advice: &Advice) -> AdviceView {
    AdviceView {
        current: advice.current.into(),
        best: advice.best.into(),
        candidates: advice.candidates.iter().copied().map(Into::into).collect(),
        summary: advice.best.settings.describe(),
        changes_settings: advice.best.settings != advice.current.settings,
        within_budget: advice.within_budget,
        evaluations: advice.evaluations,
        simulated_prs: advice.simulated_prs,
    }
}

fn no_advice(refused: &AdviceError) -> NoAdvice {
    NoAdvice {
        reason: refused.reason().to_owned(),
        message: refused.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window holding exactly the most items kept is whole; one more read says it holds
    /// more, and the window then starts after the oldest read (its millisecond may hold
    /// items not read).
    #[test]
    fn a_window_is_shortened_only_when_it_holds_more_than_is_kept() {
        let items: Vec<i64> = (0..MAX_HISTORY_ITEMS as i64)
            .rev()
            .map(|i| 1_000 + i)
            .collect();
        let at = |t: &i64| Some(Timestamp(*t));
        assert_eq!(full_from(&items, at), None);
        let mut more = items.clone();
        more.push(999);
        assert_eq!(full_from(&more, at), Some(Timestamp(1_000)));
    }
}
