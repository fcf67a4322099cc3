//! `updateQueue`: settings, the requested state and the mode (SEMANTICS §8).
//!
//! Settings apply at once: a higher `concurrency` starts more groups, a lower one sends the
//! groups testing furthest back to `pending`; `bisectionConcurrency` limits bisection runs
//! started from then on. A requested state applies at once, except during a mode switch,
//! when it is remembered for the end of the switch. A mode change while anything is testing
//! enters `switching_modes` (no submissions, nothing new starts, passing groups merge); the
//! switch completes when nothing is testing. Entries re-check their readiness in the new
//! mode (parallel mode requires impacted targets).

use super::work::Work;
use crate::error::DomainError;
use crate::settings::{QueueState, SettingsPatch};

impl Work {
    pub fn update_settings(&mut self, patch: &SettingsPatch) -> Result<(), DomainError> {
        patch.validate()?;
        let testing = self.s.is_testing();
        let next = self
            .s
            .queue
            .mode_and_state()
            .update(patch.state, patch.mode, testing)?;
        patch.apply_fields(&mut self.s.queue.config);
        self.s.queue.set_mode_and_state(next);
        self.readiness_stale = true;
        Ok(())
    }

    /// Completes a mode switch once nothing is testing.
    pub fn finish_switch(&mut self) -> bool {
        if self.s.queue.state != QueueState::SwitchingModes || self.s.is_testing() {
            return false;
        }
        let done = self.s.queue.mode_and_state().finish_switch();
        self.s.queue.set_mode_and_state(done);
        self.readiness_stale = true;
        true
    }
}
