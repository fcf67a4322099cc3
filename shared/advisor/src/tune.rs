//! When auto-tuning changes a queue's settings (docs/queue-semantics.md §13): advice for the
//! most merges per hour whose projected gain over the current settings is large. The engine
//! makes the change once two checks in a row advise the same (`mq_core::tuning`): a check
//! advises what the check before proposed as long as it is still among the best (within
//! [`TIE`] of the best's merges per hour) and still a large gain, so that two settings the
//! simulator can hardly tell apart do not keep the queue from ever being tuned.

use crate::Advice;
use crate::search::{Candidate, Goal, TIE};
use mq_core::tuning::{Advised, TunedSettings};

/// The least gain worth a change: 10% more merges per hour, or, when the current settings
/// keep up and merge as much, a 10% shorter mean time to merge (at least a minute).
pub const LARGE_GAIN: f64 = 0.10;

/// The advised settings, when they differ from the current ones and promise a large gain;
/// `None` otherwise. `proposed` is what the check before proposed: advised again while it is
/// still among the best. Auto-tuning asks for the most merges per hour.
pub fn worth_changing(advice: &Advice, proposed: Option<&TunedSettings>) -> Option<Advised> {
    if advice.goal != Goal::MostMerges {
        return None;
    }
    let still_best = proposed.and_then(|p| {
        let most = advice.best.projection.merges_per_hour;
        advice
            .candidates
            .iter()
            .find(|c| c.settings == *p && c.projection.merges_per_hour >= most * (1.0 - TIE))
    });
    let pick = still_best.unwrap_or(&advice.best);
    if pick.settings == advice.current.settings || !large_gain(&advice.current, pick) {
        return None;
    }
    Some(Advised {
        settings: pick.settings,
        reason: reason(&advice.current, pick),
    })
}

/// Whether `to` merges 10% more per hour than `from`, keeps up where `from` falls behind,
/// or merges as much 10% sooner (a minute at least) where both keep up. Settings projected
/// to merge nothing gain nothing (a window where every pull request failed projects no
/// merges for any setting).
fn large_gain(from: &Candidate, to: &Candidate) -> bool {
    let (p, q) = (&from.projection, &to.projection);
    if q.merges_per_hour <= 0.0 {
        return false;
    }
    let more = q.merges_per_hour >= p.merges_per_hour * (1.0 + LARGE_GAIN);
    let catches_up = q.keeps_up && !p.keeps_up;
    let as_many = q.merges_per_hour >= p.merges_per_hour * (1.0 - TIE);
    let saved = p.mean_minutes_to_merge - q.mean_minutes_to_merge;
    let faster = p.keeps_up
        && q.keeps_up
        && as_many
        && saved >= 1.0
        && saved >= LARGE_GAIN * p.mean_minutes_to_merge;
    more || catches_up || faster
}

fn reason(from: &Candidate, to: &Candidate) -> String {
    let (p, q) = (&from.projection, &to.projection);
    format!(
        "{} is projected to merge {:.1} pull requests per hour in {:.0} minutes on average \
         (95th percentile {:.0}), against {:.1} in {:.0} minutes ({:.0}) with {}",
        to.settings.describe(),
        q.merges_per_hour,
        q.mean_minutes_to_merge,
        q.p95_minutes_to_merge,
        p.merges_per_hour,
        p.mean_minutes_to_merge,
        p.p95_minutes_to_merge,
        from.settings.describe(),
    )
}
