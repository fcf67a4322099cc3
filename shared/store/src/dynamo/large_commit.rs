//! Commits that change more live items than one transaction may hold (100 actions).
//!
//! A failure that restarts a long line of batches can change more entries, runs and effects
//! than DynamoDB accepts in one `TransactWriteItems`. Such a commit is written in steps that
//! keep every reader and writer consistent:
//!
//! 1. One transaction puts the queue item at the new version, conditional on the expected
//!    version, with the commit's live changes attached to it (the *redo*, JSON in the
//!    attribute `redo`). From this moment the commit has happened.
//! 2. The changes are applied in transactions of at most 99 item writes, each conditional on
//!    the queue item still being at that version with that redo attached.
//! 3. The redo is removed, conditional on the same.
//!
//! A reader that finds a redo applies it to what it read ([`LiveChanges::apply_to`](mq_core::snapshot::LiveChanges::apply_to)), so it
//! sees the commit whole. A writer's commit is conditional on no redo being attached; when it
//! finds one it finishes applying it (the writer that attached it may have stopped) and
//! reports a conflict, so the shell retries on the completed state. Applying a redo twice is
//! harmless: every write puts or deletes an item to the value the commit gave it, and the
//! condition stops a late writer once a newer commit exists.

/// The attribute of the queue item holding a redo.
pub const REDO: &str = "redo";

/// Item writes per step transaction: one action is the condition on the queue item.
pub(crate) const STEP_ITEMS: usize = 99;
