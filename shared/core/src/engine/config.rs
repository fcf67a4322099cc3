//! `updateQueue`: settings, the requested state and the mode (docs/queue-semantics.md §8).
//!
//! Settings apply at once: a higher `concurrency` starts more groups, a lower one sends the
//! groups testing furthest back to `pending`; `bisectionConcurrency` limits bisection runs
//! started from then on; a new `requiredStatuses` list is what runs in progress require; a
//! new `mergeMethod` restarts the groups it could not merge. A requested state applies at
//! once, except during a mode switch, when it is remembered for the end of the switch.
//! Entries re-check their readiness in the new mode (parallel mode requires impacted targets).
//!
//! # Mode switches
//!
//! A mode change while groups are in the line enters `switching_modes`, which drains: no
//! submissions, no new groups, passing groups merge. The switch ends when the line is
//! empty, not merely when nothing is testing: every group built by the old mode's rules
//! has merged, failed, or dropped back to `pending`. A passed group waiting to merge was
//! built by those rules (single mode: on every group ahead; parallel mode: on the groups
//! with intersecting targets); a group of the new mode formed on top of it would predict
//! an order its merges do not follow, and the target could reach a state nobody tested
//! (docs/queue-semantics.md §5). With an empty line the switch is immediate.
//!
//! `restartTestsOnPullRequest` during the switch re-runs the group in place (it is in line,
//! not new): held until the switch ends, it would keep the switch from ending for good.
//!
//! A mode change on a paused queue enters `switching_modes` too, but the queue stays
//! paused: nothing starts and nothing merges until it is resumed (requesting `running`
//! during the switch does it), and the switch ends `paused`. The documented rules had both
//! "switching behaves like draining" (which merges) and "paused: no merges"; a user who paused a
//! queue expects it not to merge before it is resumed.

use super::work::Work;
use crate::error::DomainError;
use crate::run::RunStatus;
use crate::settings::{ModeAndState, QueueState, SettingsPatch};
use crate::tuning::{Advised, TunedSettings};

impl Work {
    /// `updateQueue`: the settings and state an operator asked for. A change of a tuned
    /// setting, of the queue's state or of its mode is recorded on the queue's tuning
    /// (`Tuning::operator_changed`): the history before it is not the queue's as it now runs.
    pub fn update_queue(&mut self, patch: &SettingsPatch) -> Result<(), DomainError> {
        let before = self.what_tuning_depends_on();
        self.update_settings(patch)?;
        if self.what_tuning_depends_on() != before {
            self.s.queue.tuning.operator_changed(self.now);
        }
        Ok(())
    }

    fn what_tuning_depends_on(&self) -> (TunedSettings, ModeAndState) {
        let queue = &self.s.queue;
        (TunedSettings::of(&queue.config), queue.mode_and_state())
    }

    /// Applies `patch` to the queue's settings, mode and state.
    pub fn update_settings(&mut self, patch: &SettingsPatch) -> Result<(), DomainError> {
        patch.validate()?;
        let busy = self.s.has_groups();
        let next = self
            .s
            .queue
            .mode_and_state()
            .update(patch.state, patch.mode, busy)?;
        let before = self.s.queue.config.clone();
        patch.apply_fields(&mut self.s.queue.config);
        self.s.queue.set_mode_and_state(next);
        if self.s.queue.config.merge_method != before.merge_method {
            self.merge_method_changed();
        }
        if self.s.queue.config.required_statuses != before.required_statuses {
            // First: a split the new list passes at once must not imply its sibling failed.
            self.bisection_requirements_changed();
            self.required_statuses_changed();
        }
        if self.s.queue.config.create_prs_for_testing_branches
            && !before.create_prs_for_testing_branches
        {
            self.open_missing_test_pull_requests();
        }
        self.readiness_stale = true;
        Ok(())
    }

    /// `createPrsForTestingBranches` was turned on: the runs testing on a branch that exists
    /// get their draft pull request now, as those whose branch is created later will (CI
    /// that only runs on pull requests would otherwise never test them, and they would time
    /// out).
    fn open_missing_test_pull_requests(&mut self) {
        let testing: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::InProgress && r.sha.is_some() && !r.held)
            .filter(|r| !r.test_pull_request)
            .map(|r| r.id.clone())
            .collect();
        for run_id in testing {
            self.open_test_pull_request(&run_id);
        }
    }

    /// Records an auto-tuning check; applies its change when the check before advised the
    /// same (`Tuning::check`). A queue whose `autoTune` was turned off since the tick read it,
    /// or that is no longer due, records nothing.
    pub fn auto_tune(&mut self, advised: Option<&Advised>) -> Result<(), DomainError> {
        let queue = &self.s.queue;
        if !queue.tuning.due(&queue.config, queue.state, self.now) {
            return Ok(());
        }
        let mut tuning = queue.tuning.clone();
        let current = TunedSettings::of(&queue.config);
        if let Some(change) = tuning.check(self.now, current, advised) {
            self.update_settings(&change.after.patch())?;
        }
        self.s.queue.tuning = tuning;
        Ok(())
    }

    /// Completes a mode switch once the line is empty; the switch an operator asked for is
    /// recorded on the queue's tuning as ending now.
    pub fn finish_switch(&mut self) -> bool {
        if self.s.queue.state != QueueState::SwitchingModes || self.s.has_groups() {
            return false;
        }
        let done = self.s.queue.mode_and_state().finish_switch();
        self.s.queue.set_mode_and_state(done);
        self.s.queue.tuning.operator_changed(self.now);
        self.readiness_stale = true;
        true
    }
}
