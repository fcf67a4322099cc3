//! A submission's state history, as far as the stored facts tell it (docs/queue-semantics.md
//! §12). The queue keeps no log of state changes: an entry records when it was submitted,
//! became ready, first tested and concluded, and each run records when it started and
//! finished, with its result. The history is rebuilt from those: changes that leave no trace
//! (readiness lost and regained, a restart whose run was never built) are not in it.

use crate::entry::{Entry, EntryState};
use crate::history::Restart;
use crate::run::{RunKind, RunStatus, TestRun};
use crate::time::Timestamp;

/// One change of state, rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    pub at: Timestamp,
    pub state: EntryState,
    /// The run the change came from, when one did.
    pub run: Option<String>,
    /// Why: a run's or a conclusion's reason (`tests_failed`, `restart`, `cancelled_by_api`).
    pub reason: Option<String>,
}

impl StateChange {
    fn new(at: Timestamp, state: EntryState) -> Self {
        Self {
            at,
            state,
            run: None,
            reason: None,
        }
    }
}

/// Whether `run` tested the submission `entry` (its tested pull requests name the entry).
pub fn tested(run: &TestRun, entry: &Entry) -> bool {
    run.tested.iter().any(|t| t.entry_id == entry.id)
}

/// Whether `run` was cancelled because `entry` concluded (cancelled, closed, pushed to): the
/// entry went from testing to its conclusion, not back to `pending`.
fn ended_by_conclusion(run: &TestRun, entry: &Entry) -> bool {
    entry.state.is_terminal()
        && entry.concluded_at.is_some()
        && run.finished_at == entry.concluded_at
}

/// The state history of `entry`, oldest first, from its timestamps, the main runs among
/// `runs` that tested it (others are ignored) and its `restarts`:
///
/// - submitted: `not_ready`; ready: `pending`;
/// - each main run that tested it: `testing` when it started (or was created), then when it
///   finished `tests_passed` (passed), `pending_failure` (failed, with its reason) or
///   `pending` (cancelled, with its reason, as a restart does; nothing when it was cancelled
///   because the entry concluded then);
/// - each recorded restart: `pending` (reason `restart`);
/// - the conclusion (`merged`, `failed` or `cancelled`, with its reason), or, for an active
///   entry, its current state since it last changed.
///
/// Changes at the same time keep that order; a change to the state already reached is left
/// out.
pub fn state_history(entry: &Entry, runs: &[TestRun], restarts: &[Restart]) -> Vec<StateChange> {
    let mut changes = vec![StateChange::new(entry.submitted_at, EntryState::NotReady)];
    if let Some(ready) = entry.ready_at {
        changes.push(StateChange::new(ready, EntryState::Pending));
    }
    let mut own: Vec<&TestRun> = runs
        .iter()
        .filter(|r| r.kind == RunKind::Main && tested(r, entry))
        .collect();
    own.sort_by_key(|r| (r.started_at.unwrap_or(r.created_at), r.id.clone()));
    for run in own {
        changes.push(StateChange {
            run: Some(run.id.clone()),
            ..StateChange::new(
                run.started_at.unwrap_or(run.created_at),
                EntryState::Testing,
            )
        });
        let after = match run.status {
            RunStatus::InProgress => None,
            RunStatus::Succeeded => Some(EntryState::TestsPassed),
            RunStatus::Failed => Some(EntryState::PendingFailure),
            RunStatus::Cancelled if ended_by_conclusion(run, entry) => None,
            RunStatus::Cancelled => Some(EntryState::Pending),
        };
        if let (Some(state), Some(at)) = (after, run.finished_at) {
            changes.push(StateChange {
                at,
                state,
                run: Some(run.id.clone()),
                reason: run.reason.clone(),
            });
        }
    }
    for restart in restarts.iter().filter(|r| r.entry_id == entry.id) {
        changes.push(StateChange {
            reason: Some("restart".to_owned()),
            ..StateChange::new(restart.at, EntryState::Pending)
        });
    }
    let last = match (entry.state.is_terminal(), entry.concluded_at) {
        (true, Some(at)) => StateChange {
            reason: entry.conclusion.as_ref().map(|c| c.reason.clone()),
            run: entry.last_run.clone(),
            ..StateChange::new(at, entry.state)
        },
        // An active entry's time of change stays put when it restarts in the same state
        // (testing again at once): the changes rebuilt since then are its own, and its
        // current state comes last.
        _ => {
            let latest = changes.iter().map(|c| c.at).max();
            let at = latest.map_or(entry.state_changed_at, |l| l.max(entry.state_changed_at));
            StateChange {
                run: entry.current_run.clone(),
                ..StateChange::new(at, entry.state)
            }
        }
    };
    // Nothing rebuilt comes after the last change the entry itself records.
    changes.retain(|c| c.at <= last.at);
    changes.push(last);
    changes.sort_by_key(|c| c.at);
    changes.dedup_by(|later, earlier| later.state == earlier.state);
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Conclusion;
    use crate::run::TestedPr;

    fn run(id: &str, entry: &Entry, status: RunStatus, from: i64, to: Option<i64>) -> TestRun {
        TestRun {
            status,
            created_at: Timestamp(from - 1),
            tested: vec![TestedPr {
                entry_id: entry.id.clone(),
                pr: entry.pr,
                title: entry.pr_facts.title.clone(),
                head_sha: entry.pr_facts.head_sha.clone(),
            }],
            started_at: Some(Timestamp(from)),
            finished_at: to.map(Timestamp),
            reason: (status == RunStatus::Failed).then(|| "tests_failed".to_owned()),
            ..TestRun::sample(id)
        }
    }

    /// The first restart of `entry`, at `at`.
    fn first_restart(entry: &Entry, at: i64) -> Restart {
        Restart {
            entry_id: entry.id.clone(),
            pr: entry.pr,
            at: Timestamp(at),
            count: 1,
            total: 1,
        }
    }

    fn states(changes: &[StateChange]) -> Vec<(i64, EntryState)> {
        changes.iter().map(|c| (c.at.0, c.state)).collect()
    }

    fn merged_after_one_run() -> Entry {
        let mut entry = Entry::sample(1);
        entry.submitted_at = Timestamp(100);
        entry.ready_at = Some(Timestamp(150));
        entry.state = EntryState::Merged;
        entry.state_changed_at = Timestamp(900);
        entry.concluded_at = Some(Timestamp(900));
        entry.last_run = Some("r1".to_owned());
        entry
    }

    #[test]
    fn a_merged_pull_request_went_through_every_state_once() {
        let entry = merged_after_one_run();
        let runs = [run("r1", &entry, RunStatus::Succeeded, 200, Some(800))];
        let history = state_history(&entry, &runs, &[]);
        assert_eq!(
            states(&history),
            [
                (100, EntryState::NotReady),
                (150, EntryState::Pending),
                (200, EntryState::Testing),
                (800, EntryState::TestsPassed),
                (900, EntryState::Merged),
            ]
        );
        assert_eq!(history[2].run.as_deref(), Some("r1"));
        assert_eq!(
            history[4].run.as_deref(),
            Some("r1"),
            "merged by its last run"
        );
    }

    #[test]
    fn a_failed_pull_request_shows_its_restart_and_the_reasons() {
        let mut entry = merged_after_one_run();
        entry.state = EntryState::Failed;
        entry.conclusion = Some(Conclusion {
            reason: "tests_failed".to_owned(),
            detail: "local-ci failed".to_owned(),
        });
        let runs = [
            run("r1", &entry, RunStatus::Cancelled, 200, Some(300)),
            run("r2", &entry, RunStatus::Failed, 400, Some(850)),
            // Another submission's run is not its history.
            run(
                "r9",
                &Entry::sample(2),
                RunStatus::Succeeded,
                500,
                Some(600),
            ),
        ];
        let mut cancelled = runs[0].clone();
        cancelled.reason = Some("restart".to_owned());
        // A bisection run testing it does not change its state: it stays `pending_failure`.
        let mut split = run("r2-bisection", &entry, RunStatus::Succeeded, 860, Some(870));
        split.kind = RunKind::Bisection;
        let runs = [cancelled, runs[1].clone(), runs[2].clone(), split];
        let restarts = [first_restart(&entry, 300)];
        let history = state_history(&entry, &runs, &restarts);
        assert_eq!(
            states(&history),
            [
                (100, EntryState::NotReady),
                (150, EntryState::Pending),
                (200, EntryState::Testing),
                (300, EntryState::Pending),
                (400, EntryState::Testing),
                (850, EntryState::PendingFailure),
                (900, EntryState::Failed),
            ]
        );
        assert_eq!(history[3].reason.as_deref(), Some("restart"));
        assert_eq!(history[5].reason.as_deref(), Some("tests_failed"));
        assert_eq!(history[6].reason.as_deref(), Some("tests_failed"));
    }

    /// A push to the target restarted the group at once: the entry went from testing to
    /// testing, so its time of change stayed at the first run's start. The restart and the
    /// second run are still shown, and its current state is the second run's.
    #[test]
    fn an_entry_restarted_into_testing_shows_the_restart_and_its_new_run() {
        let mut entry = merged_after_one_run();
        entry.state = EntryState::Testing;
        entry.state_changed_at = Timestamp(200);
        entry.concluded_at = None;
        entry.current_run = Some("r2".to_owned());
        let mut cancelled = run("r1", &entry, RunStatus::Cancelled, 200, Some(300));
        cancelled.reason = Some("target_moved".to_owned());
        let runs = [
            cancelled,
            run("r2", &entry, RunStatus::InProgress, 310, None),
        ];
        let restarts = [first_restart(&entry, 300)];
        let history = state_history(&entry, &runs, &restarts);
        assert_eq!(
            states(&history),
            [
                (100, EntryState::NotReady),
                (150, EntryState::Pending),
                (200, EntryState::Testing),
                (300, EntryState::Pending),
                (310, EntryState::Testing),
            ]
        );
        assert_eq!(history[4].run.as_deref(), Some("r2"));
    }

    #[test]
    fn a_pull_request_cancelled_while_testing_goes_from_testing_to_cancelled() {
        let mut entry = merged_after_one_run();
        entry.state = EntryState::Cancelled;
        entry.conclusion = Some(Conclusion {
            reason: "cancelled_by_api".to_owned(),
            detail: "cancelled".to_owned(),
        });
        let runs = [
            run("r1", &entry, RunStatus::Cancelled, 200, Some(300)),
            run("r2", &entry, RunStatus::Cancelled, 400, Some(900)),
        ];
        let history = state_history(&entry, &runs, &[]);
        assert_eq!(
            states(&history),
            [
                (100, EntryState::NotReady),
                (150, EntryState::Pending),
                (200, EntryState::Testing),
                (300, EntryState::Pending),
                (400, EntryState::Testing),
                (900, EntryState::Cancelled),
            ]
        );
        assert_eq!(history[5].reason.as_deref(), Some("cancelled_by_api"));
    }

    #[test]
    fn an_active_entry_ends_in_its_current_state() {
        let mut entry = Entry::sample(3);
        entry.submitted_at = Timestamp(10);
        entry.ready_at = Some(Timestamp(10));
        entry.state = EntryState::Testing;
        entry.state_changed_at = Timestamp(50);
        entry.current_run = Some("r4".to_owned());
        let runs = [run("r4", &entry, RunStatus::InProgress, 50, None)];
        let history = state_history(&entry, &runs, &[]);
        assert_eq!(
            states(&history),
            [
                (10, EntryState::NotReady),
                (10, EntryState::Pending),
                (50, EntryState::Testing),
            ]
        );
        assert_eq!(history[2].run.as_deref(), Some("r4"));
    }

    #[test]
    fn a_pull_request_still_waiting_for_readiness_has_one_state() {
        let mut entry = Entry::sample(4);
        entry.state = EntryState::NotReady;
        entry.ready_at = None;
        entry.submitted_at = Timestamp(7);
        entry.state_changed_at = Timestamp(7);
        assert_eq!(
            states(&state_history(&entry, &[], &[])),
            [(7, EntryState::NotReady)]
        );
    }
}
