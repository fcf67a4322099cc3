//! Auto-tuning (docs/queue-semantics.md §13): the settings the advisor tunes, and what a
//! queue records of its tuning: when it was last checked, the change the last check proposed,
//! and the changes made, each with its reason.
//!
//! The advice itself is made outside the engine (it runs the simulator); the engine only
//! decides, from [`Event::AutoTune`](crate::engine::Event::AutoTune), whether a proposal is
//! applied: when two checks in a row advise the same settings, and no change was made within
//! the last window, by auto-tuning or by an operator.

use crate::settings::{QueueConfig, QueueMode, QueueState, SettingsPatch};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The window of history the advice reads, and the least time between two changes: 7 days.
pub const WINDOW_MS: i64 = 7 * 24 * 3_600_000;
/// The least time between two checks of a queue: a day.
pub const CHECK_INTERVAL_MS: i64 = 24 * 3_600_000;
/// Changes a queue keeps in its record, newest last.
pub const MAX_CHANGES: usize = 20;

/// The queue settings the advice is about; every other setting stays as the queue has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TunedSettings {
    pub concurrency: u32,
    pub batch: bool,
    pub batching_min_size: u32,
    pub bisection_concurrency: u32,
    pub pending_failure_depth: u32,
    pub can_optimistically_merge: bool,
    pub adaptive_pending_failure: bool,
}

impl TunedSettings {
    /// The tuned settings of a queue's configuration.
    pub fn of(config: &QueueConfig) -> Self {
        Self {
            concurrency: config.concurrency,
            batch: config.batch,
            batching_min_size: config.batching_min_size,
            bisection_concurrency: config.bisection_concurrency,
            pending_failure_depth: config.pending_failure_depth,
            can_optimistically_merge: config.can_optimistically_merge,
            adaptive_pending_failure: config.adaptive_pending_failure,
        }
    }

    /// The update that sets these settings (`Event::UpdateSettings`), and nothing else.
    pub fn patch(&self) -> SettingsPatch {
        SettingsPatch {
            concurrency: Some(self.concurrency),
            batch: Some(self.batch),
            batching_min_size: Some(self.batching_min_size),
            bisection_concurrency: Some(self.bisection_concurrency),
            pending_failure_depth: Some(self.pending_failure_depth),
            can_optimistically_merge: Some(self.can_optimistically_merge),
            adaptive_pending_failure: Some(self.adaptive_pending_failure),
            ..SettingsPatch::default()
        }
    }

    /// `config` with these settings.
    pub fn applied_to(&self, config: &QueueConfig) -> QueueConfig {
        let mut config = config.clone();
        self.patch().apply_fields(&mut config);
        config
    }

    /// `concurrency 8, batches of 4 (bisection 2), optimistic merge, depth 2, adaptive`.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("concurrency {}", self.concurrency)];
        if self.batch {
            parts.push(format!(
                "batches of {} (bisection {})",
                self.batching_min_size, self.bisection_concurrency
            ));
        }
        if self.can_optimistically_merge {
            parts.push("optimistic merge".into());
        }
        if self.pending_failure_depth > 1 {
            parts.push(format!("depth {}", self.pending_failure_depth));
        }
        if self.adaptive_pending_failure {
            parts.push("adaptive".into());
        }
        parts.join(", ")
    }
}

/// Settings the advice found worth changing to, and why (the projected gain).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Advised {
    pub settings: TunedSettings,
    pub reason: String,
}

/// A change of the tuned settings, proposed or made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TuningChange {
    pub at: Timestamp,
    pub before: TunedSettings,
    pub after: TunedSettings,
    pub reason: String,
}

/// What a queue records of its tuning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Tuning {
    /// When the tick last asked the advisor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<Timestamp>,
    /// The change the last check advised; the next check applies it if it advises the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed: Option<TuningChange>,
    /// The changes made, oldest first, at most [`MAX_CHANGES`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<TuningChange>,
    /// When an operator (`updateQueue`) last changed a tuned setting, the queue's state (a
    /// pause, a drain, a resume) or its mode (when the switch ended): the history before it
    /// is not the queue's as it now runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator_changed_at: Option<Timestamp>,
}

impl Tuning {
    /// Whether nothing was recorded: no check, no change, no operator's change.
    pub fn is_empty(&self) -> bool {
        *self == Tuning::default()
    }

    /// Whether a queue configured `config`, in `state`, is due for a check at `now`:
    /// `autoTune` on, single mode, running, not checked within [`CHECK_INTERVAL_MS`], and no
    /// change made within [`WINDOW_MS`] (the window then still holds the old settings), by
    /// auto-tuning or by an operator.
    pub fn due(&self, config: &QueueConfig, state: QueueState, now: Timestamp) -> bool {
        let checked = self
            .checked_at
            .is_some_and(|at| now.millis_since(at) < CHECK_INTERVAL_MS);
        config.auto_tune
            && config.mode == QueueMode::Single
            && state == QueueState::Running
            && !checked
            && !self.changed_within_window(now)
    }

    /// Whether a change was made within the last [`WINDOW_MS`], by auto-tuning or by an
    /// operator.
    pub fn changed_within_window(&self, now: Timestamp) -> bool {
        let last_tuned = self.changes.last().map(|c| c.at);
        [last_tuned, self.operator_changed_at]
            .into_iter()
            .flatten()
            .any(|at| now.millis_since(at) < WINDOW_MS)
    }

    /// Records an operator's change of a tuned setting, the state or the mode at `now`:
    /// auto-tuning makes no change for a window (it would undo the operator's choice, or read
    /// a pause as a queue falling behind, from history that predates it), and the change the
    /// last check proposed, made for the queue before, is dropped.
    pub fn operator_changed(&mut self, now: Timestamp) {
        self.operator_changed_at = Some(now);
        self.proposed = None;
    }

    /// Records a check at `now` of a queue tuned `current`, which advised `advised` (`None`:
    /// nothing worth changing). Returns the change to make: the advice of the check before,
    /// advised again. A change within the window is never made.
    pub fn check(
        &mut self,
        now: Timestamp,
        current: TunedSettings,
        advised: Option<&Advised>,
    ) -> Option<TuningChange> {
        let previous = self.proposed.take();
        self.checked_at = Some(now);
        let advised = advised.filter(|a| a.settings != current)?;
        if self.changed_within_window(now) {
            return None;
        }
        let change = TuningChange {
            at: now,
            before: current,
            after: advised.settings,
            reason: advised.reason.clone(),
        };
        let confirmed = previous.is_some_and(|p| p.before == current && p.after == change.after);
        if !confirmed {
            self.proposed = Some(change);
            return None;
        }
        self.changes.push(change.clone());
        if self.changes.len() > MAX_CHANGES {
            self.changes.remove(0);
        }
        Some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(concurrency: u32) -> TunedSettings {
        TunedSettings::of(&QueueConfig {
            concurrency,
            ..QueueConfig::default()
        })
    }

    fn advised(concurrency: u32) -> Advised {
        Advised {
            settings: settings(concurrency),
            reason: format!("concurrency {concurrency} merges more"),
        }
    }

    const DAY: i64 = CHECK_INTERVAL_MS;

    #[test]
    fn a_change_is_made_when_two_checks_in_a_row_advise_it() {
        let mut t = Tuning::default();
        let at = |days: i64| Timestamp::from_millis(days * DAY);
        assert_eq!(t.check(at(1), settings(1), Some(&advised(4))), None);
        assert!(t.proposed.is_some());
        let made = t.check(at(2), settings(1), Some(&advised(4))).unwrap();
        assert_eq!((made.before, made.after), (settings(1), settings(4)));
        assert_eq!(t.changes, vec![made]);
        assert_eq!(t.proposed, None);
        assert_eq!(t.checked_at, Some(at(2)));
    }

    #[test]
    fn different_advice_or_none_starts_over() {
        let mut t = Tuning::default();
        let at = |days: i64| Timestamp::from_millis(days * DAY);
        t.check(at(1), settings(1), Some(&advised(4)));
        assert_eq!(t.check(at(2), settings(1), Some(&advised(8))), None);
        assert_eq!(t.check(at(3), settings(1), None), None);
        assert_eq!(t.proposed, None);
        assert_eq!(t.check(at(4), settings(1), Some(&advised(1))), None);
        assert_eq!(
            t.proposed, None,
            "advice to keep the settings proposes nothing"
        );
        assert!(t.changes.is_empty());
    }

    #[test]
    fn at_most_one_change_per_window() {
        let mut t = Tuning::default();
        let at = |days: i64| Timestamp::from_millis(days * DAY);
        t.check(at(1), settings(1), Some(&advised(4)));
        t.check(at(2), settings(1), Some(&advised(4))).unwrap();
        let config = settings(4).applied_to(&QueueConfig {
            auto_tune: true,
            ..QueueConfig::default()
        });
        for day in 3..9 {
            assert!(!t.due(&config, QueueState::Running, at(day)));
            assert_eq!(t.check(at(day), settings(4), Some(&advised(8))), None);
        }
        assert!(t.due(&config, QueueState::Running, at(9)));
        assert!(!t.due(&config, QueueState::Paused, at(9)));
        assert_eq!(t.changes.len(), 1);
    }

    #[test]
    fn an_operators_change_holds_auto_tuning_off_for_a_window() {
        let mut t = Tuning::default();
        let at = |days: i64| Timestamp::from_millis(days * DAY);
        let config = QueueConfig {
            auto_tune: true,
            ..QueueConfig::default()
        };
        t.check(at(1), settings(1), Some(&advised(4)));
        t.operator_changed(at(1).plus_millis(1));
        assert_eq!(t.proposed, None);
        for day in 2..8 {
            assert!(!t.due(&config, QueueState::Running, at(day)));
            assert_eq!(t.check(at(day), settings(2), Some(&advised(4))), None);
        }
        assert!(t.due(&config, QueueState::Running, at(8).plus_millis(1)));
        assert!(t.changes.is_empty());
    }

    #[test]
    fn checks_are_a_day_apart_and_only_with_auto_tune_on() {
        let t = Tuning {
            checked_at: Some(Timestamp::from_millis(DAY)),
            ..Tuning::default()
        };
        let on = QueueConfig {
            auto_tune: true,
            ..QueueConfig::default()
        };
        let off = QueueConfig::default();
        assert!(!t.due(
            &on,
            QueueState::Running,
            Timestamp::from_millis(2 * DAY - 1)
        ));
        assert!(t.due(&on, QueueState::Running, Timestamp::from_millis(2 * DAY)));
        assert!(!t.due(&off, QueueState::Running, Timestamp::from_millis(2 * DAY)));
        let parallel = QueueConfig {
            mode: QueueMode::Parallel,
            ..on
        };
        assert!(!t.due(
            &parallel,
            QueueState::Running,
            Timestamp::from_millis(2 * DAY)
        ));
    }
}
