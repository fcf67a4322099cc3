use super::*;
use crate::entry::EntryState;

const AT: Timestamp = Timestamp(42);

fn entry(id: &str, pr: u32, seq: u64, restarts: u32) -> Entry {
    Entry {
        id: id.to_owned(),
        seq,
        state: EntryState::Testing,
        restarts,
        ..Entry::sample(pr)
    }
}

fn shared(entries: &[Entry]) -> Vec<Arc<Entry>> {
    entries.iter().cloned().map(Arc::new).collect()
}

fn prs(entries: &[Entry]) -> Vec<PrNumber> {
    entries.iter().map(|e| e.pr).collect()
}

#[test]
fn shared_entries_are_unchanged_and_a_changed_copy_is_put() {
    let before = shared(&[
        entry("a", 1, 1, 0),
        entry("b", 2, 2, 0),
        entry("c", 3, 3, 0),
    ]);
    let mut after = before.clone();
    Arc::make_mut(&mut after[1]).state = EntryState::TestsPassed;
    let diff = entry_diff(&before, &after, &[], AT);
    assert_eq!(prs(&diff.put), [2]);
    assert!(diff.delete.is_empty() && diff.restarts.is_empty());
}

#[test]
fn equal_copies_not_shared_are_compared_and_left_alone() {
    let before = shared(&[entry("a", 1, 1, 0), entry("b", 2, 2, 0)]);
    let after = shared(&[entry("a", 1, 1, 0), entry("b", 2, 2, 0)]);
    let diff = entry_diff(&before, &after, &[], AT);
    assert!(diff.put.is_empty() && diff.delete.is_empty() && diff.restarts.is_empty());
}

#[test]
fn new_entries_are_put_and_gone_ones_deleted() {
    let before = shared(&[entry("a", 1, 1, 0), entry("b", 2, 2, 0)]);
    let after = shared(&[entry("b", 2, 2, 0), entry("c", 7, 3, 0)]);
    let diff = entry_diff(&before, &after, &[], AT);
    assert_eq!(prs(&diff.put), [7]);
    assert_eq!(diff.delete, [1]);
}

#[test]
fn a_resubmission_replaces_the_entry_under_the_same_key() {
    let before = shared(&[entry("old", 1, 1, 4), entry("b", 2, 2, 0)]);
    let after = shared(&[entry("b", 2, 2, 0), entry("new", 1, 3, 1)]);
    let diff = entry_diff(&before, &after, &[], AT);
    assert_eq!(prs(&diff.put), [1]);
    assert_eq!(diff.put[0].id, "new");
    assert!(diff.delete.is_empty(), "the key is written, not deleted");
    assert_eq!(diff.restarts.len(), 1);
    assert_eq!(
        (diff.restarts[0].entry_id.as_str(), diff.restarts[0].count),
        ("new", 1)
    );
}

#[test]
fn each_increase_of_a_counter_is_a_restart() {
    let before = shared(&[
        entry("a", 1, 1, 0),
        entry("b", 2, 2, 3),
        entry("c", 3, 3, 1),
    ]);
    let after = shared(&[
        entry("a", 1, 1, 1),
        entry("b", 2, 2, 5),
        entry("c", 3, 3, 1),
    ]);
    let diff = entry_diff(&before, &after, &[], AT);
    let restart = |entry_id: &str, pr, count, total| Restart {
        entry_id: entry_id.into(),
        pr,
        at: AT,
        count,
        total,
    };
    assert_eq!(
        diff.restarts,
        [restart("a", 1, 1, 1), restart("b", 2, 2, 5)]
    );
}

#[test]
fn concluded_entries_count_their_restarts_from_before() {
    let before = shared(&[entry("a", 1, 1, 2), entry("b", 2, 2, 0)]);
    let after = shared(&[entry("b", 2, 2, 0)]);
    let concluded = [entry("a", 1, 1, 3), entry("fresh", 9, 5, 1)];
    let diff = entry_diff(&before, &after, &concluded, AT);
    assert_eq!(diff.delete, [1]);
    let counts: Vec<(&str, u32)> = diff
        .restarts
        .iter()
        .map(|r| (r.entry_id.as_str(), r.count))
        .collect();
    assert_eq!(counts, [("a", 1), ("fresh", 1)]);
}

#[test]
fn lists_out_of_submission_order_give_the_same_changes() {
    let before = shared(&[
        entry("c", 3, 3, 0),
        entry("a", 1, 1, 0),
        entry("b", 2, 2, 0),
    ]);
    let after = shared(&[
        entry("d", 4, 4, 0),
        entry("b", 2, 2, 1),
        entry("a", 1, 1, 0),
    ]);
    let diff = entry_diff(&before, &after, &[], AT);
    assert_eq!(prs(&diff.put), [2, 4]);
    assert_eq!(diff.delete, [3]);
    assert_eq!(diff.restarts.len(), 1);
}
