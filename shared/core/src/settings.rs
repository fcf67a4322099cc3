//! Queue settings (`Queue` and `updateQueue` in `openapi/openapi.json`) with the defaults of
//! docs/queue-semantics.md §8, and their validation.

use crate::error::{DomainError, ErrorCode};
use crate::wire_enum;
use serde::{Deserialize, Serialize};

wire_enum! {
    /// The queue's state (the queue states in `openapi/openapi.json`).
    pub enum QueueState {
        Running => "running",
        Paused => "paused",
        Draining => "draining",
        SwitchingModes => "switching_modes",
    }
}

wire_enum! {
    /// The states an operator may request through `updateQueue`.
    pub enum RequestedState {
        Running => "running",
        Paused => "paused",
        Draining => "draining",
    }
}

impl From<RequestedState> for QueueState {
    fn from(s: RequestedState) -> Self {
        match s {
            RequestedState::Running => QueueState::Running,
            RequestedState::Paused => QueueState::Paused,
            RequestedState::Draining => QueueState::Draining,
        }
    }
}

wire_enum! {
    pub enum QueueMode {
        Single => "single",
        Parallel => "parallel",
    }
}

wire_enum! {
    pub enum DirectMergeMode {
        Off => "off",
        Always => "always",
    }
}

wire_enum! {
    pub enum OptimizationMode {
        Off => "off",
        BisectionSkipRedundantTests => "bisection_skip_redundant_tests",
    }
}

wire_enum! {
    pub enum MergeMethod {
        MergeCommit => "merge_commit",
        Squash => "squash",
        Rebase => "rebase",
    }
}

/// How long an observed flake keeps the pending-failure window open under
/// `adaptive_pending_failure` (docs/queue-semantics.md §5): seven days, the advisor's default
/// window of history.
pub const FLAKE_MEMORY_MS: i64 = 7 * 24 * 3_600_000;

/// Lowest and highest value of every integer queue setting.
pub const SETTING_MIN: u64 = 1;
pub const SETTING_MAX: u64 = 4_294_967_295;

/// Checks an integer queue setting against 1..=4294967295.
pub fn setting_int(field: &str, value: i128) -> Result<u32, DomainError> {
    if (i128::from(SETTING_MIN)..=i128::from(SETTING_MAX)).contains(&value) {
        Ok(value as u32)
    } else {
        Err(DomainError::invalid(
            field,
            &format!("must be an integer from {SETTING_MIN} to {SETTING_MAX}, got {value}"),
        ))
    }
}

/// Longest list of required statuses, and longest status name.
pub const MAX_REQUIRED_STATUSES: usize = 100;
pub const MAX_STATUS_NAME_LEN: usize = 255;

/// The configurable part of a queue, every field of `Queue` in `openapi/openapi.json` except state
/// and branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueConfig {
    pub concurrency: u32,
    pub testing_timeout_minutes: u32,
    pub mode: QueueMode,
    pub can_optimistically_merge: bool,
    pub pending_failure_depth: u32,
    /// Pending failure adapts to the queue's flakes (docs/queue-semantics.md §5): while no
    /// flake was observed within [`FLAKE_MEMORY_MS`], a failed group whose groups ahead all
    /// passed fails at once instead of waiting for the `pendingFailureDepth` window.
    pub adaptive_pending_failure: bool,
    pub batch: bool,
    pub batching_max_wait_time_minutes: u32,
    pub batching_min_size: u32,
    pub create_prs_for_testing_branches: bool,
    pub comments_enabled: bool,
    pub commands_enabled: bool,
    pub status_check_enabled: bool,
    pub bisection_concurrency: u32,
    /// The queue's own list (`merge_instance`); empty means "use the repository's sources".
    pub required_statuses: Vec<String>,
    pub direct_merge_mode: DirectMergeMode,
    pub optimization_mode: OptimizationMode,
    pub merge_method: MergeMethod,
    /// The tick applies the advisor's settings when they promise a large gain, at most once
    /// per window (docs/queue-semantics.md §13).
    pub auto_tune: bool,
}

/// The pull requests a group of the line takes at most (docs/queue-semantics.md §6):
/// `batchingMinSize` (at least 1) with batching on, else 1.
pub fn group_size(batch: bool, batching_min_size: u32) -> u32 {
    if batch { batching_min_size.max(1) } else { 1 }
}

impl QueueConfig {
    /// The pull requests a group of this queue's line takes at most ([`group_size`]).
    pub fn group_size(&self) -> u32 {
        group_size(self.batch, self.batching_min_size)
    }
}

impl Default for QueueConfig {
    /// docs/queue-semantics.md §8: running, single, concurrency 1, timeout 60, optimistic merge
    /// off, pending failure depth 1, adaptive pending failure off, batching off (max wait 5, min
    /// size 4), bisection concurrency = concurrency, direct merge off, optimization off, squash,
    /// comments/commands/status check on, createPrsForTestingBranches off, no own required
    /// statuses, auto-tuning off.
    fn default() -> Self {
        Self {
            concurrency: 1,
            testing_timeout_minutes: 60,
            mode: QueueMode::Single,
            can_optimistically_merge: false,
            pending_failure_depth: 1,
            adaptive_pending_failure: false,
            batch: false,
            batching_max_wait_time_minutes: 5,
            batching_min_size: 4,
            create_prs_for_testing_branches: false,
            comments_enabled: true,
            commands_enabled: true,
            status_check_enabled: true,
            bisection_concurrency: 1,
            required_statuses: Vec::new(),
            direct_merge_mode: DirectMergeMode::Off,
            optimization_mode: OptimizationMode::Off,
            merge_method: MergeMethod::Squash,
            auto_tune: false,
        }
    }
}

/// A partial update of a queue (`updateQueue`, and the settings of `createQueue`).
///
/// Integer fields hold values already checked by [`setting_int`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsPatch {
    pub state: Option<RequestedState>,
    pub concurrency: Option<u32>,
    pub bisection_concurrency: Option<u32>,
    pub testing_timeout_minutes: Option<u32>,
    pub pending_failure_depth: Option<u32>,
    pub adaptive_pending_failure: Option<bool>,
    pub can_optimistically_merge: Option<bool>,
    pub batch: Option<bool>,
    pub batching_max_wait_time_minutes: Option<u32>,
    pub batching_min_size: Option<u32>,
    pub mode: Option<QueueMode>,
    pub comments_enabled: Option<bool>,
    pub commands_enabled: Option<bool>,
    pub create_prs_for_testing_branches: Option<bool>,
    pub direct_merge_mode: Option<DirectMergeMode>,
    pub optimization_mode: Option<OptimizationMode>,
    pub merge_method: Option<MergeMethod>,
    pub status_check_enabled: Option<bool>,
    pub required_statuses: Option<Vec<String>>,
    pub delete_required_statuses: Option<bool>,
    pub auto_tune: Option<bool>,
}

impl SettingsPatch {
    /// Checks rules that involve more than one field or a list's content.
    pub fn validate(&self) -> Result<(), DomainError> {
        if let Some(list) = &self.required_statuses {
            check_required_statuses(list)?;
            if !list.is_empty() && self.delete_required_statuses == Some(true) {
                return Err(DomainError::invalid(
                    "deleteRequiredStatuses",
                    "cannot be true while requiredStatuses sets a list",
                ));
            }
        }
        Ok(())
    }

    /// A queue's settings at creation: defaults, with this patch's fields applied.
    ///
    /// `bisectionConcurrency` defaults to the concurrency. The mode applies directly (nothing
    /// is testing yet), and a requested state becomes the initial state.
    pub fn initial_config(&self) -> Result<(QueueConfig, QueueState), DomainError> {
        self.validate()?;
        let mut config = QueueConfig::default();
        self.apply_fields(&mut config);
        if let Some(mode) = self.mode {
            config.mode = mode;
        }
        if self.bisection_concurrency.is_none() {
            config.bisection_concurrency = config.concurrency;
        }
        let state = self
            .state
            .map(QueueState::from)
            .unwrap_or(QueueState::Running);
        Ok((config, state))
    }

    /// Copies every plain setting (not `state`, not `mode`) into `config`.
    pub fn apply_fields(&self, config: &mut QueueConfig) {
        macro_rules! set {
            ($($field:ident),+) => { $( if let Some(v) = self.$field { config.$field = v; } )+ };
        }
        set!(
            concurrency,
            bisection_concurrency,
            testing_timeout_minutes,
            pending_failure_depth,
            adaptive_pending_failure,
            can_optimistically_merge,
            batch,
            batching_max_wait_time_minutes,
            batching_min_size,
            comments_enabled,
            commands_enabled,
            create_prs_for_testing_branches,
            direct_merge_mode,
            optimization_mode,
            merge_method,
            status_check_enabled,
            auto_tune
        );
        if let Some(list) = &self.required_statuses {
            // An empty list is ignored (docs/queue-semantics.md §8).
            if !list.is_empty() {
                config.required_statuses = dedup(list);
            }
        }
        if self.delete_required_statuses == Some(true) {
            config.required_statuses.clear();
        }
    }
}

fn dedup(list: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for s in list {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

fn check_required_statuses(list: &[String]) -> Result<(), DomainError> {
    if list.len() > MAX_REQUIRED_STATUSES {
        return Err(DomainError::invalid(
            "requiredStatuses",
            &format!("may hold at most {MAX_REQUIRED_STATUSES} names"),
        ));
    }
    for (i, s) in list.iter().enumerate() {
        if s.trim().is_empty() || s.chars().count() > MAX_STATUS_NAME_LEN {
            return Err(DomainError::invalid(
                &format!("requiredStatuses[{i}]"),
                &format!("must be a non-empty name of at most {MAX_STATUS_NAME_LEN} characters"),
            ));
        }
        if s == crate::git::QUEUE_STATUS_CONTEXT {
            return Err(DomainError::invalid(
                &format!("requiredStatuses[{i}]"),
                &format!(
                    "names the queue's own status `{s}`, which the queue sets on pull requests \
                     and on what it merges, never on a test branch: a run would wait for it \
                     until it timed out"
                ),
            ));
        }
    }
    Ok(())
}

/// The state and mode a queue moves to when an operator updates it (docs/queue-semantics.md §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeAndState {
    pub state: QueueState,
    pub mode: QueueMode,
    /// Set while `switching_modes`: the mode the queue switches to once its line is empty.
    pub pending_mode: Option<QueueMode>,
    /// Set while `switching_modes`: the state the queue returns to after the switch.
    pub resume_state: Option<QueueState>,
}

impl ModeAndState {
    /// Applies a requested state and mode; `busy` says whether groups are in the line
    /// (testing, or tested and not yet merged or failed).
    ///
    /// - A mode change while the line is busy enters `switching_modes` (behaves like
    ///   draining); with an empty line the switch is immediate.
    /// - Requesting the current mode during a switch cancels the switch.
    /// - During a switch a requested state is remembered and applied once the switch ends;
    ///   a remembered `paused` already stops merges during the switch ([`Self::is_paused`]).
    pub fn update(
        &self,
        requested_state: Option<RequestedState>,
        requested_mode: Option<QueueMode>,
        busy: bool,
    ) -> Result<ModeAndState, DomainError> {
        let mut next = self.clone();
        let switching = self.state == QueueState::SwitchingModes;
        if let Some(s) = requested_state {
            if switching {
                next.resume_state = Some(s.into());
            } else {
                next.state = s.into();
            }
        }
        let Some(mode) = requested_mode else {
            return Ok(next);
        };
        let target = self.pending_mode.unwrap_or(self.mode);
        if mode == target {
            return Ok(next);
        }
        if switching && mode == self.mode {
            // Back to the current mode: the switch is cancelled.
            next.state = next.resume_state.take().unwrap_or(QueueState::Running);
            next.pending_mode = None;
            return Ok(next);
        }
        if busy {
            if !switching {
                next.resume_state = Some(next.state);
            }
            next.state = QueueState::SwitchingModes;
            next.pending_mode = Some(mode);
        } else {
            next.mode = mode;
            next.pending_mode = None;
        }
        Ok(next)
    }

    /// Completes a pending switch (once the line is empty).
    pub fn finish_switch(&self) -> ModeAndState {
        match (self.state, self.pending_mode) {
            (QueueState::SwitchingModes, Some(mode)) => ModeAndState {
                state: self.resume_state.unwrap_or(QueueState::Running),
                mode,
                pending_mode: None,
                resume_state: None,
            },
            _ => self.clone(),
        }
    }

    /// Paused, or switching modes from a paused queue (the switch ends `paused`): nothing
    /// starts and nothing merges until the queue is resumed.
    pub fn is_paused(&self) -> bool {
        self.state == QueueState::Paused
            || (self.state == QueueState::SwitchingModes
                && self.resume_state == Some(QueueState::Paused))
    }
}

/// Refuses submissions while the queue drains or switches modes (docs/queue-semantics.md §3).
pub fn accepts_submissions(state: QueueState) -> Result<(), DomainError> {
    match state {
        QueueState::Draining => Err(DomainError::conflict(
            ErrorCode::QueueDraining,
            "the queue is draining and accepts no new pull requests; set its state to running to resume",
        )),
        QueueState::SwitchingModes => Err(DomainError::conflict(
            ErrorCode::QueueSwitchingModes,
            "the queue is switching modes and accepts no new pull requests until the tests in flight finish",
        )),
        QueueState::Running | QueueState::Paused => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(mode: QueueMode) -> ModeAndState {
        ModeAndState {
            state: QueueState::Running,
            mode,
            pending_mode: None,
            resume_state: None,
        }
    }

    #[test]
    fn defaults_follow_semantics() {
        let (config, state) = SettingsPatch::default().initial_config().unwrap();
        assert_eq!(state, QueueState::Running);
        assert_eq!(config, QueueConfig::default());
        assert_eq!(config.merge_method, MergeMethod::Squash);
        assert_eq!(config.bisection_concurrency, 1);
    }

    #[test]
    fn bisection_concurrency_defaults_to_concurrency() {
        let patch = SettingsPatch {
            concurrency: Some(5),
            ..Default::default()
        };
        assert_eq!(patch.initial_config().unwrap().0.bisection_concurrency, 5);
    }

    #[test]
    fn integer_settings_range_from_one_to_u32_max() {
        assert_eq!(setting_int("concurrency", 1).unwrap(), 1);
        assert_eq!(setting_int("concurrency", 4_294_967_295).unwrap(), u32::MAX);
        let zero = setting_int("concurrency", 0).unwrap_err();
        assert!(zero.message.starts_with("concurrency must be"));
        assert!(setting_int("concurrency", 4_294_967_296).is_err());
        assert!(setting_int("concurrency", -1).is_err());
    }

    #[test]
    fn empty_required_statuses_are_ignored_and_delete_clears() {
        let mut config = QueueConfig {
            required_statuses: vec!["ci".into()],
            ..Default::default()
        };
        SettingsPatch {
            required_statuses: Some(vec![]),
            ..Default::default()
        }
        .apply_fields(&mut config);
        assert_eq!(config.required_statuses, vec!["ci".to_owned()]);
        SettingsPatch {
            delete_required_statuses: Some(true),
            ..Default::default()
        }
        .apply_fields(&mut config);
        assert!(config.required_statuses.is_empty());
    }

    #[test]
    fn a_list_and_delete_together_are_refused() {
        let patch = SettingsPatch {
            required_statuses: Some(vec!["ci".into()]),
            delete_required_statuses: Some(true),
            ..Default::default()
        };
        assert!(
            patch
                .validate()
                .unwrap_err()
                .message
                .starts_with("deleteRequiredStatuses")
        );
    }

    #[test]
    fn blank_status_names_are_refused_by_index() {
        let patch = SettingsPatch {
            required_statuses: Some(vec!["ci".into(), " ".into()]),
            ..Default::default()
        };
        assert!(
            patch
                .validate()
                .unwrap_err()
                .message
                .starts_with("requiredStatuses[1]")
        );
    }

    /// Lengths count characters, as the OpenAPI's `maxLength` does, not bytes.
    #[test]
    fn status_names_are_measured_in_characters() {
        let named = |name: String| SettingsPatch {
            required_statuses: Some(vec![name]),
            ..Default::default()
        };
        assert!(named("é".repeat(MAX_STATUS_NAME_LEN)).validate().is_ok());
        assert!(
            named("é".repeat(MAX_STATUS_NAME_LEN + 1))
                .validate()
                .is_err()
        );
    }

    #[test]
    fn the_queues_own_status_is_refused_as_a_required_status() {
        let patch = SettingsPatch {
            required_statuses: Some(vec!["ci".into(), "merge-queue".into()]),
            ..Default::default()
        };
        let refused = patch.validate().unwrap_err();
        assert!(
            refused.message.starts_with("requiredStatuses[1]"),
            "{refused:?}"
        );
        assert!(patch.initial_config().is_err());
    }

    #[test]
    fn mode_change_with_nothing_testing_is_immediate() {
        let next = running(QueueMode::Single)
            .update(None, Some(QueueMode::Parallel), false)
            .unwrap();
        assert_eq!(next, running(QueueMode::Parallel));
    }

    #[test]
    fn mode_change_while_testing_switches_then_returns_to_running() {
        let switching = running(QueueMode::Single)
            .update(None, Some(QueueMode::Parallel), true)
            .unwrap();
        assert_eq!(switching.state, QueueState::SwitchingModes);
        assert_eq!(switching.mode, QueueMode::Single);
        assert_eq!(switching.pending_mode, Some(QueueMode::Parallel));
        assert_eq!(switching.finish_switch(), running(QueueMode::Parallel));
    }

    #[test]
    fn a_paused_queue_stays_paused_after_a_switch() {
        let paused = ModeAndState {
            state: QueueState::Paused,
            ..running(QueueMode::Single)
        };
        let done = paused
            .update(None, Some(QueueMode::Parallel), true)
            .unwrap()
            .finish_switch();
        assert_eq!(done.state, QueueState::Paused);
        assert_eq!(done.mode, QueueMode::Parallel);
    }

    #[test]
    fn a_switch_keeps_a_paused_queue_paused_until_resumed() {
        let paused = ModeAndState {
            state: QueueState::Paused,
            ..running(QueueMode::Single)
        };
        let switching = paused
            .update(None, Some(QueueMode::Parallel), true)
            .unwrap();
        assert_eq!(switching.state, QueueState::SwitchingModes);
        assert!(switching.is_paused());
        let resumed = switching
            .update(Some(RequestedState::Running), None, true)
            .unwrap();
        assert!(!resumed.is_paused());
        let paused_again = resumed
            .update(Some(RequestedState::Paused), None, true)
            .unwrap();
        assert!(paused_again.is_paused());
    }

    #[test]
    fn requesting_the_current_mode_cancels_a_switch() {
        let switching = running(QueueMode::Single)
            .update(None, Some(QueueMode::Parallel), true)
            .unwrap();
        let back = switching
            .update(None, Some(QueueMode::Single), true)
            .unwrap();
        assert_eq!(back, running(QueueMode::Single));
    }

    #[test]
    fn draining_and_switching_refuse_submissions() {
        assert!(accepts_submissions(QueueState::Running).is_ok());
        assert!(accepts_submissions(QueueState::Paused).is_ok());
        assert_eq!(
            accepts_submissions(QueueState::Draining).unwrap_err().code,
            ErrorCode::QueueDraining
        );
        assert_eq!(
            accepts_submissions(QueueState::SwitchingModes)
                .unwrap_err()
                .code,
            ErrorCode::QueueSwitchingModes
        );
    }
}
