//! The queue engine: a pure state machine `(snapshot, event, context) -> transition`.
//!
//! This module holds the engine's contract, shared with the shell (`shared/api`) and the
//! store: the events it consumes, the effects it emits, and the transition it returns.

mod effects;
mod events;

pub use effects::{BranchPr, Effect, PendingEffect};
pub use events::{CancelReason, Ctx, EffectOutcome, Event, MergeRefusal};

use crate::entry::Entry;
use crate::run::TestRun;
use crate::snapshot::QueueSnapshot;

/// What one event did to a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The queue afterwards; its outbox holds every effect not yet executed.
    pub snapshot: QueueSnapshot,
    /// The effects this event emitted (also in `snapshot.outbox`), to execute now.
    pub effects: Vec<PendingEffect>,
    /// Entries that reached a terminal state in this event (they left `snapshot.entries`).
    pub concluded: Vec<Entry>,
    /// Runs that finished in this event (they left `snapshot.runs`).
    pub finished_runs: Vec<TestRun>,
}

impl Transition {
    /// A transition that changes nothing.
    pub fn unchanged(snapshot: &QueueSnapshot) -> Self {
        Self {
            snapshot: snapshot.clone(),
            effects: Vec::new(),
            concluded: Vec::new(),
            finished_runs: Vec::new(),
        }
    }
}
