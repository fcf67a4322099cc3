//! Commits larger than one transaction may hold (100 actions, 4 MB: see
//! `transaction_limits.rs`).
//!
//! A failure that restarts a long line of batches can change more entries, runs and effects
//! than DynamoDB accepts in one `TransactWriteItems`, in number or in bytes (an entry or a
//! run with impacted targets weighs up to about 130 KB). Such a commit is written in steps
//! that keep every reader and writer consistent:
//!
//! 1. The commit's live changes (the *redo*, as JSON) are put in parts of at most 300 KB, in
//!    the partition `REDO#<queue id>` of the Queues table (sort keys
//!    `REDO#<version, 20 digits>#<token>#<part, 5 digits>`), where
//!    every function that reads or commits the queue may read and write: an item holds at
//!    most 400 KB, and a redo can hold megabytes.
//! 2. One transaction puts the queue item and `#VERSION` at the new version, conditional on
//!    the expected version, both with the attribute `redo` naming the parts (`<key
//!    prefix>/<number of parts>`). From this moment the commit has happened.
//! 3. The changes are applied in transactions of at most 99 item writes and 3 MB, each
//!    conditional on the queue item still being at that version with that redo attached.
//! 4. The redo is removed from `#VERSION`, then from the queue item, conditional on the same
//!    version.
//!
//! A reader that finds a redo reads its parts and applies it to what it read
//! ([`LiveChanges::apply_to`](mq_core::snapshot::LiveChanges::apply_to)), so it sees the
//! commit whole. A query reads the partition in key order, each item as it is then: `#VERSION`
//! first, then the effects and entries, then the queue item, then the runs. It may read the
//! queue item after step 4 and the items before it as they were before step 3. `#VERSION` read
//! before step 4 names the redo, and the reader applies it; read after, every item read after
//! it is as step 3 left it. A writer's commit is conditional on no redo being attached; when
//! it finds one it finishes applying it (the writer that attached it may have stopped) and
//! reports a conflict, so the shell retries on the completed state. Applying a redo twice is harmless:
//! every write puts or deletes an item to the value the commit gave it, and the condition
//! stops a late writer once a newer commit exists.
//!
//! The parts are written to expire in a year: a commit whose writer stopped stays attached
//! until the next writer finishes it, however long the queue is left alone. Once the redo is
//! removed, or when the transaction of step 2 lost to another commit, the parts are no longer
//! needed, and are set to expire a day later (a reader that read the queue item just before
//! may still read them meanwhile). A `redo` holding the JSON itself (written so by earlier
//! versions) is read as such.

/// The attribute of the queue item naming a large commit's redo.
pub const REDO: &str = "redo";

/// The attribute of a redo part holding its share of the redo's JSON.
pub const REDO_PART: &str = "part";

/// Item writes per step transaction: one action is the condition on the queue item.
pub(crate) const STEP_ITEMS: usize = 99;

/// How long a redo's parts are kept when written (seconds): as long as a commit may stay
/// attached, unfinished.
pub(crate) const ATTACHED_PARTS_SECONDS: i64 = 365 * 86_400;

/// How long a redo's parts are kept once it is finished or lost (seconds).
pub(crate) const FINISHED_PARTS_SECONDS: u64 = 86_400;

/// The most of a redo's JSON one part holds, in bytes.
pub const REDO_PART_BYTES: usize = 300_000;

/// Where a large commit's redo is kept: the sort key prefix of its parts and how many there
/// are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedoParts {
    pub prefix: String,
    pub parts: usize,
}

impl RedoParts {
    /// The parts of the redo of the commit to `version` by the writer `token`.
    pub fn new(version: u64, token: &str, parts: usize) -> Self {
        Self {
            prefix: format!("REDO#{version:020}#{token}"),
            parts,
        }
    }

    /// The value of the queue item's `redo` attribute that names these parts.
    pub fn attribute(&self) -> String {
        format!("{}/{}", self.prefix, self.parts)
    }

    /// The parts a `redo` attribute names; `None` for a redo written inline (JSON).
    pub fn named_by(attribute: &str) -> Option<Self> {
        let (prefix, parts) = attribute.rsplit_once('/')?;
        Some(Self {
            prefix: prefix.starts_with("REDO#").then(|| prefix.to_owned())?,
            parts: parts.parse().ok()?,
        })
    }

    /// The sort key of part `index` (from 0).
    pub fn part_sk(&self, index: usize) -> String {
        format!("{}#{index:05}", self.prefix)
    }

    /// Inclusive bounds of the parts' sort keys.
    pub fn sk_range(&self) -> (String, String) {
        (format!("{}#", self.prefix), format!("{}#~", self.prefix))
    }
}

/// `json` cut into pieces of at most [`REDO_PART_BYTES`], at character boundaries.
pub fn cut(json: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = json;
    while !rest.is_empty() {
        let end = rest.floor_char_boundary(REDO_PART_BYTES.min(rest.len()));
        let (piece, after) = rest.split_at(end);
        pieces.push(piece);
        rest = after;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redo_attribute_names_its_parts() {
        let parts = RedoParts::new(42, "d2c4-token", 7);
        assert_eq!(parts.attribute(), "REDO#00000000000000000042#d2c4-token/7");
        assert_eq!(RedoParts::named_by(&parts.attribute()), Some(parts.clone()));
        assert_eq!(RedoParts::named_by(r#"{"put_entries":[],"a":"b/c"}"#), None);
        let (lo, hi) = parts.sk_range();
        assert!(lo < parts.part_sk(0) && parts.part_sk(6) < hi);
        assert!(parts.part_sk(9) < parts.part_sk(10));
    }

    #[test]
    fn a_redo_is_cut_into_parts_an_item_holds_without_splitting_a_character() {
        let json = format!("[\"{}\"]", "é".repeat(REDO_PART_BYTES));
        let pieces = cut(&json);
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| p.len() <= REDO_PART_BYTES));
        assert_eq!(pieces.concat(), json);
        assert_eq!(cut("{}"), ["{}"]);
        assert!(cut("").is_empty());
    }
}
