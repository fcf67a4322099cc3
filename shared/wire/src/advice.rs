//! `getQueueAdvice` (`openapi/openapi.json`): a queue's workload estimated from its history,
//! and the settings the simulator finds best for a goal (docs/queue-semantics.md §13); and
//! auto-tuning's record, which `getQueue` shows too.

use super::common::{Int, QueueTarget, RepoBody};
use mq_advisor::{Candidate, Estimates, Goal, Projection};
use mq_core::DomainError;
use mq_core::time::Timestamp;
use mq_core::tuning::{TunedSettings, Tuning, TuningChange};
use serde::{Deserialize, Serialize};

/// The longest window a caller may ask for, in days.
pub const MAX_WINDOW_DAYS: i128 = 30;

mq_core::wire_enum! {
    /// The goals a caller may pick, by name (in any case, as every enum is read).
    #[derive(Default)]
    pub enum GoalName {
        #[default]
        MostMerges => "mostMerges",
        FewestCiRuns => "fewestCiRuns",
        FastestWithinBudget => "fastestWithinBudget",
    }
}

/// The body of `getQueueAdvice`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueueAdviceRequest {
    pub repo: RepoBody,
    pub target_branch: String,
    #[serde(default)]
    pub goal: GoalName,
    /// The CI budget of `fastestWithinBudget`, in runs per hour.
    pub ci_runs_per_hour: Option<f64>,
    /// Days of history to read, 1 to 30; 7 when absent.
    pub window_days: Option<Int>,
}

impl QueueAdviceRequest {
    pub fn target(&self) -> Result<QueueTarget, DomainError> {
        QueueTarget::new(&self.repo, &self.target_branch)
    }

    /// The goal, with its budget: `ciRunsPerHour` (a positive number) goes with
    /// `fastestWithinBudget`, and only with it.
    pub fn goal(&self) -> Result<Goal, DomainError> {
        match (self.goal, self.ci_runs_per_hour) {
            (GoalName::FastestWithinBudget, Some(runs)) if runs.is_finite() && runs > 0.0 => {
                Ok(Goal::FastestWithinBudget {
                    ci_runs_per_hour: runs,
                })
            }
            (GoalName::FastestWithinBudget, Some(_)) => Err(DomainError::invalid(
                "ciRunsPerHour",
                "must be a number greater than 0",
            )),
            (GoalName::FastestWithinBudget, None) => Err(DomainError::invalid(
                "ciRunsPerHour",
                "is required with goal fastestWithinBudget",
            )),
            (_, Some(_)) => Err(DomainError::invalid(
                "ciRunsPerHour",
                "is only taken with goal fastestWithinBudget",
            )),
            (GoalName::MostMerges, None) => Ok(Goal::MostMerges),
            (GoalName::FewestCiRuns, None) => Ok(Goal::FewestCiRuns),
        }
    }

    /// The window's length in milliseconds.
    pub fn window_ms(&self) -> Result<i64, DomainError> {
        let days = match self.window_days {
            None => return Ok(mq_core::tuning::WINDOW_MS),
            Some(Int(days)) => days,
        };
        if !(1..=MAX_WINDOW_DAYS).contains(&days) {
            return Err(DomainError::invalid(
                "windowDays",
                &format!("must be between 1 and {MAX_WINDOW_DAYS}"),
            ));
        }
        Ok(days as i64 * 24 * 3_600_000)
    }
}

/// The `getQueueAdvice` response.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueAdvice {
    pub window: AdviceWindow,
    /// `goal`, and `ciRunsPerHour` with `fastestWithinBudget`.
    #[serde(flatten)]
    pub goal: Goal,
    /// The queue's workload, estimated from the window.
    pub estimates: Estimates,
    /// The advice, when the window holds enough history and the queue is in single mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<AdviceView>,
    /// Why there is no advice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_advice: Option<NoAdvice>,
    pub auto_tune: bool,
    pub tuning: TuningView,
}

/// The window the estimates were read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdviceWindow {
    pub from: String,
    pub to: String,
    pub hours: f64,
    /// Whether the window was shortened to the most recent items a request reads.
    pub shortened: bool,
}

/// The advised settings, next to the current ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdviceView {
    /// The current settings and their projection.
    pub current: CandidateView,
    /// The first of `candidates`: the advice.
    pub best: CandidateView,
    /// The settings decided on, best first, each with its projection.
    pub candidates: Vec<CandidateView>,
    /// `best` in words, and whether it differs from the current settings.
    pub summary: String,
    pub changes_settings: bool,
    /// Whether the best meets the CI budget (always true without one).
    pub within_budget: bool,
    /// The simulator's projections made and the pull requests they simulated.
    pub evaluations: u32,
    pub simulated_prs: u64,
}

/// Tuned settings (`TunedSettings` in `openapi/openapi.json`), with their summary in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TunedSettingsView {
    #[serde(flatten)]
    pub settings: TunedSettings,
    /// `concurrency 8, batches of 4 (bisection 2), optimistic merge, depth 2, adaptive`
    /// ([`TunedSettings::describe`]).
    pub summary: String,
}

impl From<TunedSettings> for TunedSettingsView {
    fn from(settings: TunedSettings) -> Self {
        Self {
            summary: settings.describe(),
            settings,
        }
    }
}

/// A setting with its projection (`Candidate`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateView {
    pub settings: TunedSettingsView,
    pub projection: Projection,
}

impl From<Candidate> for CandidateView {
    fn from(c: Candidate) -> Self {
        Self {
            settings: c.settings.into(),
            projection: c.projection,
        }
    }
}

/// Why a queue gets no advice: `not_enough_history` (with what the window holds) or
/// `parallel_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoAdvice {
    pub reason: String,
    pub message: String,
}

/// Auto-tuning's record on a queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TuningView {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub checked_at: Option<String>,
    /// The change the last check advised; the next check makes it if it advises the same.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub proposed: Option<TuningChangeView>,
    /// The changes made, oldest first.
    #[serde(default)]
    pub changes: Vec<TuningChangeView>,
    /// When an operator last changed a tuned setting, the state or the mode: no change is
    /// made for a window after.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub operator_changed_at: Option<String>,
}

/// A change of the tuned settings, proposed or made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TuningChangeView {
    pub at: String,
    pub before: TunedSettingsView,
    pub after: TunedSettingsView,
    pub reason: String,
}

impl From<&TuningChange> for TuningChangeView {
    fn from(c: &TuningChange) -> Self {
        Self {
            at: c.at.to_rfc3339(),
            before: c.before.into(),
            after: c.after.into(),
            reason: c.reason.clone(),
        }
    }
}

impl From<&Tuning> for TuningView {
    fn from(t: &Tuning) -> Self {
        Self {
            checked_at: t.checked_at.map(Timestamp::to_rfc3339),
            proposed: t.proposed.as_ref().map(TuningChangeView::from),
            changes: t.changes.iter().map(TuningChangeView::from).collect(),
            operator_changed_at: t.operator_changed_at.map(Timestamp::to_rfc3339),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: serde_json::Value) -> Result<QueueAdviceRequest, serde_json::Error> {
        serde_json::from_value(body)
    }

    fn base() -> serde_json::Value {
        serde_json::json!({"repo": {"host": "github.com", "owner": "o", "name": "r"}, "targetBranch": "main"})
    }

    #[test]
    fn goals_are_read_in_any_case() {
        let mut b = base();
        b["goal"] = "FewestCIRuns".into();
        assert_eq!(request(b.clone()).unwrap().goal, GoalName::FewestCiRuns);
        b["goal"] = "soonest".into();
        let refused = request(b).unwrap_err().to_string();
        assert!(refused.contains("\"mostMerges\""), "{refused}");
    }

    #[test]
    fn the_goal_defaults_to_most_merges_and_a_budget_goes_with_its_goal() {
        let r = request(base()).unwrap();
        assert_eq!(r.goal().unwrap(), Goal::MostMerges);
        assert_eq!(r.window_ms().unwrap(), mq_core::tuning::WINDOW_MS);
        let mut b = base();
        b["goal"] = "fastestWithinBudget".into();
        assert!(request(b.clone()).unwrap().goal().is_err());
        b["ciRunsPerHour"] = 12.5.into();
        assert_eq!(
            request(b).unwrap().goal().unwrap(),
            Goal::FastestWithinBudget {
                ci_runs_per_hour: 12.5
            }
        );
        let mut b = base();
        b["ciRunsPerHour"] = 3.into();
        assert!(request(b).unwrap().goal().is_err());
        let mut b = base();
        b["goal"] = "fastest".into();
        assert!(request(b).is_err());
    }

    #[test]
    fn the_window_is_one_to_thirty_days() {
        for (days, ok) in [(0, false), (1, true), (30, true), (31, false)] {
            let mut b = base();
            b["windowDays"] = days.into();
            assert_eq!(request(b).unwrap().window_ms().is_ok(), ok, "{days}");
        }
    }
}
