//! Scenarios for queue settings and states (docs/queue-semantics.md §8), the outbox and the views.

mod support;

use mq_core::ErrorCode;
use mq_core::engine::view::{pr_url, required_statuses, test_branch_sha};
use mq_core::engine::{Effect, EffectOutcome, Event, MAX_ATTEMPTS, most_prs_per_merge};
use mq_core::entry::EntryState::*;
use mq_core::git::{Mergeability, PrFacts, RequiredStatusesSource, Review};
use mq_core::run::RunStatus;
use mq_core::settings::{
    DirectMergeMode, MergeMethod, QueueMode, QueueState, RequestedState, SettingsPatch,
};
use std::collections::BTreeSet;
use support::Harness;

fn queue(concurrency: u32) -> Harness {
    Harness::with(SettingsPatch {
        concurrency: Some(concurrency),
        ..Default::default()
    })
}

fn set_state(h: &mut Harness, state: RequestedState) {
    h.update(SettingsPatch {
        state: Some(state),
        ..Default::default()
    });
}

fn set_mode(h: &mut Harness, mode: QueueMode) {
    h.update(SettingsPatch {
        mode: Some(mode),
        ..Default::default()
    });
}

#[test]
fn paused_starts_nothing_keeps_results_and_merges_when_resumed() {
    let mut h = queue(2);
    h.submit(1);
    set_state(&mut h, RequestedState::Paused);
    h.submit(2);
    assert_eq!(h.state(2), Pending, "nothing starts while paused");
    h.pass_pr(1);
    assert_eq!(
        h.state(1),
        TestsPassed,
        "the result is kept, nothing merges"
    );
    assert!(
        h.emitted_where(|e| matches!(e, Effect::Merge { .. }))
            .is_empty()
    );
    set_state(&mut h, RequestedState::Running);
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.state(2), Testing);
    h.assert_clean();
}

/// A queue of concurrency 2 where #1 passed (its merge in the outbox, not carried out: the
/// harness executes nothing by itself) and #2 is testing behind it.
fn one_passed_ahead_of_another() -> Harness {
    let mut h = queue(2);
    h.auto_execute = false;
    h.submit(1);
    h.submit(2);
    h.execute_all();
    h.pass_pr(1);
    h
}

/// The merge waiting in the outbox, if one is.
fn merge(h: &Harness) -> Option<mq_core::effects::PendingEffect> {
    let mut merges = h.snap.outbox.iter();
    merges
        .find(|x| matches!(x.effect, Effect::Merge { .. }))
        .cloned()
}

/// A merge emitted before a pause and found paused just before it was sent is withdrawn
/// (nothing is being merged while the queue is paused), and emitted again when the queue
/// runs. One tried before stays: it may have landed.
#[test]
fn a_merge_withdrawn_on_a_paused_queue_is_emitted_again_when_it_runs() {
    let mut h = one_passed_ahead_of_another();
    let sent_later = merge(&h).expect("#1's merge emitted");
    set_state(&mut h, RequestedState::Paused);
    h.ok(Event::MergeWithdrawn {
        effect_id: sent_later.id.clone(),
    });
    assert!(merge(&h).is_none(), "withdrawn");
    assert_eq!(h.state(1), TestsPassed);
    set_state(&mut h, RequestedState::Running);
    let again = merge(&h).expect("emitted again when the queue runs");
    assert_ne!(again.id, sent_later.id);
    h.execute_all();
    assert_eq!(h.state(1), Merged);

    h.pass_pr(2);
    let tried = merge(&h).expect("#2's merge emitted");
    h.ok(Event::EffectFailed {
        effect_id: tried.id.clone(),
        error: "a lost answer".into(),
        permanent: false,
        retry_after_ms: None,
    });
    set_state(&mut h, RequestedState::Paused);
    h.ok(Event::MergeWithdrawn {
        effect_id: tried.id.clone(),
    });
    assert_eq!(
        merge(&h).map(|x| x.id),
        Some(tried.id),
        "it may have landed"
    );
}

/// A merge whose step came before a pause, and that was never sent (the request that emitted
/// it ran out of time), is not sent by the tick while the queue is paused. Once its lease is
/// over and the tick finds it is not on the target, it is withdrawn: the pull request can be
/// cancelled meanwhile, and the merge is emitted again when the queue runs. A read made while
/// the lease still ran proves nothing: the request may be sending it.
#[test]
fn a_merge_never_sent_is_withdrawn_once_the_tick_finds_it_not_landed_on_a_paused_queue() {
    use mq_core::engine::EFFECT_LEASE_MS;
    let mut h = one_passed_ahead_of_another();
    let never_sent = merge(&h).expect("the merge emitted");
    h.pending.clear();
    set_state(&mut h, RequestedState::Paused);
    h.ok(Event::MergeNotLanded {
        effect_id: never_sent.id.clone(),
        read_at: never_sent.created_at.plus_millis(EFFECT_LEASE_MS - 1),
    });
    assert_eq!(
        merge(&h),
        Some(never_sent.clone()),
        "in its lease: may be sent"
    );
    h.advance_minutes(1);
    h.tick();
    assert!(
        h.pending.iter().all(|x| x.id != never_sent.id),
        "not sent while paused"
    );
    h.ok(Event::MergeNotLanded {
        effect_id: never_sent.id.clone(),
        read_at: h.now,
    });
    assert!(merge(&h).is_none(), "withdrawn");
    assert_eq!(h.state(1), TestsPassed);
    set_state(&mut h, RequestedState::Running);
    let again = merge(&h).expect("emitted again when the queue runs");
    assert_ne!(again.id, never_sent.id);
    h.execute_all();
    assert_eq!(h.merged_prs(), vec![1]);

    h.pass_pr(2);
    let never_sent = merge(&h).expect("#2's merge emitted");
    h.pending.clear();
    set_state(&mut h, RequestedState::Paused);
    let cancel = Event::Cancel {
        pr: 2,
        reason: mq_core::engine::CancelReason::Api,
    };
    assert!(h.apply(cancel.clone()).is_err(), "its merge is under way");
    h.advance_minutes(1);
    h.ok(Event::MergeNotLanded {
        effect_id: never_sent.id.clone(),
        read_at: h.now,
    });
    h.ok(cancel);
    assert_eq!(h.state(2), Cancelled, "no merge under way once withdrawn");
    set_state(&mut h, RequestedState::Running);
    assert!(merge(&h).is_none());
    assert_eq!(h.merged_prs(), vec![1]);
    h.assert_clean();
}

/// Under `squash` and `rebase` the pull requests of a merge that landed are closed by an effect
/// of their own, emitted once the merge is recorded: one the Git host keeps failing is given up
/// without failing the pull request, which stays merged, and without holding up the next
/// merge. While the close waits, the pull request (still open on the Git host) cannot be
/// submitted again at the head that landed. Under `merge_commit` (GitHub marks them merged)
/// nothing is closed.
#[test]
fn pull_requests_whose_changes_landed_rewritten_are_closed_by_an_effect_of_their_own() {
    for method in [
        MergeMethod::Squash,
        MergeMethod::Rebase,
        MergeMethod::MergeCommit,
    ] {
        let mut h = Harness::with(SettingsPatch {
            concurrency: Some(2),
            merge_method: Some(method),
            ..Default::default()
        });
        h.submit(1);
        h.submit(2);
        h.auto_execute = false;
        h.pass_pr(1);
        let merge = h
            .pending
            .iter()
            .find(|x| matches!(x.effect, Effect::Merge { .. }))
            .cloned()
            .expect("#1's merge");
        let merged = h.execute(&merge.effect);
        h.ok(Event::EffectSucceeded {
            effect_id: merge.id,
            outcome: merged,
        });
        assert_eq!(h.state(1), Merged, "{method:?}");
        let closes: Vec<_> = h
            .snap
            .outbox
            .iter()
            .filter(|x| matches!(x.effect, Effect::CloseLandedPullRequest { .. }))
            .cloned()
            .collect();
        if method == MergeMethod::MergeCommit {
            assert!(closes.is_empty());
            continue;
        }
        assert_eq!(closes.len(), 1, "{method:?}");
        let again = h.submit_facts(h.facts(1)).unwrap_err();
        assert_eq!(again.code, ErrorCode::PullRequestNotOpen, "{again:?}");
        for _ in 0..MAX_ATTEMPTS {
            h.ok(Event::EffectFailed {
                effect_id: closes[0].id.clone(),
                error: "502 Server Error".into(),
                permanent: false,
                retry_after_ms: None,
            });
        }
        assert!(
            h.snap.outbox.iter().all(|x| x.id != closes[0].id),
            "given up"
        );
        assert_eq!(h.state(1), Merged, "{method:?}: still merged");
        h.auto_execute = true;
        h.execute_all();
        h.pass_pr(2);
        assert_eq!(h.merged_prs(), vec![1, 2], "{method:?}");
        assert_eq!(h.host.closed_after_landing, vec![2], "{method:?}");
        h.assert_clean();
    }
}

/// With optimistic merge, a group that fails while the queue is paused waits for the groups
/// that start behind it once it is resumed: a pause does not turn a flake that a pass behind
/// would clear into a failure.
#[test]
fn a_failure_while_paused_waits_for_the_groups_behind_it_to_start() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(1),
        can_optimistically_merge: Some(true),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Paused);
    h.fail_pr(1);
    assert_eq!(
        h.state(1),
        PendingFailure,
        "the window may grow once resumed"
    );
    set_state(&mut h, RequestedState::Running);
    assert_eq!(h.state(2), Testing);
    assert!(h.content_of(&h.run_of(2)).contains(&1), "2 is tested on 1");
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2], "2 contained 1 and passed");
    h.assert_clean();
}

/// With nothing waiting to start behind it, a group failing while the queue is paused fails
/// at once: no group would start behind it once resumed.
#[test]
fn a_failure_while_paused_with_nothing_behind_fails_at_once() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(1),
        can_optimistically_merge: Some(true),
        ..Default::default()
    });
    h.submit(1);
    set_state(&mut h, RequestedState::Paused);
    h.fail_pr(1);
    assert_eq!(h.state(1), Failed);
}

/// Draining starts nothing behind a failed group: its window closes at once.
#[test]
fn a_failure_while_draining_fails_at_once() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(1),
        can_optimistically_merge: Some(true),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Draining);
    h.fail_pr(1);
    assert_eq!((h.state(1), h.state(2)), (Failed, Pending));
}

#[test]
fn draining_finishes_running_tests_merges_them_and_starts_nothing() {
    let mut h = queue(1);
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Draining);
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.state(2), Pending, "nothing new starts");
    set_state(&mut h, RequestedState::Running);
    assert_eq!(h.state(2), Testing);
}

/// A restart re-runs a group already in line: draining lets it run (nothing *new* starts),
/// a paused queue holds it until resumed.
#[test]
fn a_restart_runs_while_draining_and_waits_while_paused() {
    let mut h = queue(1);
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Draining);
    h.ok(Event::Restart { pr: 1 });
    assert!(h.run(&h.run_of(1)).is_some_and(|r| !r.held));
    h.pass_pr(1);
    assert_eq!((h.state(1), h.state(2)), (Merged, Pending));
    set_state(&mut h, RequestedState::Running);
    set_state(&mut h, RequestedState::Paused);
    h.ok(Event::Restart { pr: 2 });
    assert!(h.run(&h.run_of(2)).is_some_and(|r| r.held));
    set_state(&mut h, RequestedState::Running);
    assert!(h.run(&h.run_of(2)).is_some_and(|r| !r.held));
    h.pass_pr(2);
    assert_eq!(h.state(2), Merged);
    h.assert_clean();
}

/// Groups in line that a push to the target restarts while the queue drains are tested again
/// and merge: they are in line, not new, and a drain finishes the line.
#[test]
fn groups_a_push_restarts_while_draining_test_again_and_merge() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.submit(3);
    set_state(&mut h, RequestedState::Draining);
    h.push_outside();
    assert_eq!(
        (h.state(1), h.state(2), h.state(3)),
        (Testing, Testing, Pending)
    );
    h.pass_pr(1);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    assert_eq!(h.state(3), Pending, "nothing new starts");
    h.assert_clean();
}

/// A group in line that must test again while the queue drains, and finds no testing slot
/// free, waits in `pending` and tests when a slot frees: it was in line, and the drain
/// finishes the line; a pull request never tested does not start. Here #2 passed behind #1,
/// which let #3 start; a push restarts all three.
#[test]
fn a_group_restarted_without_a_free_slot_while_draining_tests_when_one_frees() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.pass_pr(2);
    h.submit(3);
    h.submit(4);
    assert_eq!(
        (h.state(1), h.state(2), h.state(3), h.state(4)),
        (Testing, TestsPassed, Testing, Pending)
    );
    set_state(&mut h, RequestedState::Draining);
    h.push_outside();
    assert_eq!(h.state(3), Pending, "no testing slot");
    h.pass_pr(1);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    assert_eq!(h.state(3), Testing, "a slot freed");
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![1, 2, 3]);
    assert_eq!(h.state(4), Pending, "nothing new starts");
    h.assert_clean();
}

/// A pull request sent back to wait while the queue was paused (a push restarted its group),
/// and then drained, tests again: it was in line.
#[test]
fn a_group_sent_back_while_paused_tests_again_once_the_queue_drains() {
    let mut h = queue(1);
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Paused);
    h.push_outside();
    assert_eq!((h.state(1), h.state(2)), (Pending, Pending));
    set_state(&mut h, RequestedState::Draining);
    assert_eq!((h.state(1), h.state(2)), (Testing, Pending));
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1]);
    assert_eq!(h.state(2), Pending, "never tested: nothing new starts");
    h.assert_clean();
}

/// A lower `concurrency` while the queue drains sends the groups testing beyond it back to
/// wait, and they test again when a slot frees.
#[test]
fn a_lower_concurrency_while_draining_tests_the_groups_beyond_it_later() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Draining);
    h.update(SettingsPatch {
        concurrency: Some(1),
        ..Default::default()
    });
    assert_eq!(h.state(2), Pending);
    h.pass_pr(1);
    assert_eq!(h.state(2), Testing);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    h.assert_clean();
}

#[test]
fn a_mode_change_while_testing_switches_and_then_returns_to_running() {
    let mut h = queue(1);
    h.submit(1);
    set_mode(&mut h, QueueMode::Parallel);
    assert_eq!(h.snap.queue.state, QueueState::SwitchingModes);
    assert_eq!(h.snap.queue.config.mode, QueueMode::Single);
    let err = h.submit_facts(h.facts(2)).unwrap_err();
    assert_eq!(err.code, ErrorCode::QueueSwitchingModes);
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged, "passing groups merge during the switch");
    assert_eq!(h.snap.queue.state, QueueState::Running);
    assert_eq!(h.snap.queue.config.mode, QueueMode::Parallel);
}

/// `restartTestsOnPullRequest` during `switching_modes` re-runs the group in place (it is in
/// line, not new): a run held until the switch ends would count as testing and keep the
/// switch from ending, for good (a held run does not time out either). docs/queue-semantics.md §8:
/// "when nothing is testing the mode switches and the state returns to `running`".
#[test]
fn a_restart_held_during_a_mode_switch_does_not_block_the_switch() {
    let mut h = queue(1);
    h.submit(1);
    set_mode(&mut h, QueueMode::Parallel);
    assert_eq!(h.snap.queue.state, QueueState::SwitchingModes);
    h.ok(Event::Restart { pr: 1 });
    let run = h.run_of(1);
    if h.run(&run).is_some_and(|r| r.sha.is_some()) {
        h.pass(&run);
    }
    h.advance_minutes(61); // past the testing timeout
    h.tick();
    assert_eq!(
        (h.snap.queue.state, h.snap.queue.config.mode),
        (QueueState::Running, QueueMode::Parallel),
        "the switch completes (PR 1 is {:?}, its run held: {:?})",
        h.state(1),
        h.run(&run).map(|r| r.held)
    );
}

/// A mode change on a paused queue with a group testing enters `switching_modes`, which
/// merges like draining, but the queue stays paused: a passed group does not merge before
/// the queue is resumed. docs/queue-semantics.md §8: "`paused`: no test starts and no merges; ...
/// merges happen when resumed".
#[test]
fn a_mode_change_keeps_a_paused_queue_from_merging() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    set_state(&mut h, RequestedState::Paused);
    h.pass_pr(1);
    assert_eq!(h.state(1), TestsPassed, "paused: kept, not merged");
    set_mode(&mut h, QueueMode::Parallel);
    assert_eq!(
        h.snap.queue.state,
        QueueState::SwitchingModes,
        "2 is testing"
    );
    assert_eq!(h.state(1), TestsPassed, "still not resumed: nothing merges");
    assert!(
        h.emitted_where(|e| matches!(e, Effect::Merge { .. }))
            .is_empty()
    );
}

/// A switch to single mode must not end while groups tested in parallel mode still wait to
/// merge: they do not contain each other (2 and 3 are in different lanes), so a single-mode
/// group behind them (4) built on them in line order, [1, 2, 3, 4], would not predict their
/// merges (1 and 3 together, then 2), and 4 would merge to [1, 3, 2, 4], a state nobody
/// tested. docs/queue-semantics.md §5: a group's pass proves that exact future state of the
/// target branch.
#[test]
fn a_switch_to_single_mode_never_merges_a_state_that_was_not_tested() {
    let mut h = Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(3),
        ..Default::default()
    });
    for (pr, targets) in [(1, vec!["a", "b"]), (2, vec!["a"]), (3, vec!["b"])] {
        h.submit(pr);
        h.set_targets(pr, &targets);
    }
    h.submit(4); // no impacted targets: waits in parallel mode
    assert_eq!(h.content_of(&h.run_of(2)), vec![1, 2]);
    assert_eq!(h.content_of(&h.run_of(3)), vec![1, 3]);
    h.pass_pr(2);
    h.pass_pr(3);
    set_mode(&mut h, QueueMode::Single);
    assert_eq!(
        h.snap.queue.state,
        QueueState::SwitchingModes,
        "1 is testing"
    );
    h.pass_pr(1);
    assert_eq!(h.snap.queue.config.mode, QueueMode::Single);
    let run4 = h.run_of(4);
    let tested4 = h.content_of(&run4);
    if h.state(2) == Testing {
        h.pass_pr(2);
    }
    if h.run_of(4) == run4 {
        h.pass(&run4);
    } else {
        h.pass_pr(4); // restarted on the new order: fine
    }
    assert_eq!(h.state(4), Merged);
    h.assert_clean();
    assert_eq!(h.host.target.len(), 4);
    assert!(
        h.passed.contains(&h.host.target),
        "the target {:?} was never tested (4 tested {tested4:?})",
        h.host.target
    );
}

#[test]
fn a_mode_change_with_nothing_testing_is_immediate() {
    let mut h = queue(1);
    set_mode(&mut h, QueueMode::Parallel);
    assert_eq!(
        (h.snap.queue.state, h.snap.queue.config.mode),
        (QueueState::Running, QueueMode::Parallel)
    );
}

#[test]
fn a_higher_concurrency_starts_more_and_a_lower_one_sends_the_last_back() {
    let mut h = queue(1);
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.update(SettingsPatch {
        concurrency: Some(3),
        ..Default::default()
    });
    assert_eq!(h.testing_runs().len(), 3);
    h.update(SettingsPatch {
        concurrency: Some(2),
        ..Default::default()
    });
    assert_eq!(h.testing_runs().len(), 2);
    assert_eq!(
        (h.state(1), h.state(2), h.state(3)),
        (Testing, Testing, Pending)
    );
    h.assert_clean();
}

#[test]
fn a_run_in_progress_past_the_timeout_is_cancelled_and_fails() {
    let mut h = timing_out_after_30_minutes();
    h.submit(1);
    let run = h.run_of(1);
    h.advance_minutes(29);
    h.tick();
    assert_eq!(h.state(1), Testing);
    h.advance_minutes(1);
    h.tick();
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "timeout");
    assert!(
        !h.emitted_where(|e| matches!(e, Effect::CancelRun { run_id, .. } if *run_id == run))
            .is_empty()
    );
}

#[test]
fn direct_merge_merges_an_up_to_date_green_pull_request_without_a_run() {
    let mut h = Harness::with(SettingsPatch {
        direct_merge_mode: Some(DirectMergeMode::Always),
        ..Default::default()
    });
    h.green_heads.insert(1);
    h.submit_up_to_date(1);
    assert_eq!(h.state(1), Merged);
    assert!(h.finished_runs.is_empty(), "no test run");
    let merges = h.emitted_where(|e| matches!(e, Effect::Merge { .. }));
    let Effect::Merge {
        run_id, tested_sha, ..
    } = merges[0]
    else {
        unreachable!()
    };
    assert_eq!((run_id, tested_sha), (&None, &None));
    h.assert_clean();
}

/// A direct merge withdrawn on a paused queue puts its pull request back to `pending`: it has
/// no run whose merge could be emitted again, and would otherwise wait for good.
#[test]
fn a_direct_merge_withdrawn_on_a_paused_queue_is_tested_when_it_runs() {
    let mut h = Harness::with(SettingsPatch {
        direct_merge_mode: Some(DirectMergeMode::Always),
        ..Default::default()
    });
    h.auto_execute = false;
    h.green_heads.insert(1);
    h.submit_up_to_date(1);
    let merge = h
        .snap
        .outbox
        .iter()
        .find(|x| matches!(x.effect, Effect::Merge { .. }));
    let merge = merge.expect("a direct merge emitted").id.clone();
    set_state(&mut h, RequestedState::Paused);
    h.ok(Event::MergeWithdrawn { effect_id: merge });
    assert_eq!(h.state(1), Pending);
    set_state(&mut h, RequestedState::Running);
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.state(1), Testing);
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
}

#[test]
fn direct_merge_needs_green_up_to_date_and_nothing_ahead() {
    let mut h = Harness::with(SettingsPatch {
        direct_merge_mode: Some(DirectMergeMode::Always),
        ..Default::default()
    });
    // Not based on the target head: tested normally.
    h.green_heads.insert(1);
    h.submit(1);
    assert_eq!(h.state(1), Testing);
    // Up to date and green, but 1 is ahead.
    h.green_heads.insert(2);
    h.submit_up_to_date(2);
    assert_eq!(h.state(2), Pending);
    // Up to date, nothing ahead, but its own statuses did not pass.
    h.pass_pr(1);
    h.pass_pr(2);
    h.submit_up_to_date(3);
    assert_eq!(h.state(3), Testing);
}

#[test]
fn direct_merge_in_parallel_mode_needs_nothing_in_line_it_may_depend_on() {
    let mut h = Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(2),
        direct_merge_mode: Some(DirectMergeMode::Always),
        ..Default::default()
    });
    // 9 waits for its impacted targets: not in line, so nothing depends on it.
    h.submit(9);
    assert_eq!(h.state(9), NotReady);
    // Up to date, green, nothing in line: merged at once, without impacted targets or a run.
    h.green_heads.insert(1);
    h.submit_up_to_date(1);
    assert_eq!(h.state(1), Merged);
    assert!(h.finished_runs.is_empty(), "no test run");
    let merges = h.emitted_where(|e| matches!(e, Effect::Merge { .. }));
    let Effect::Merge {
        run_id,
        prs,
        expected_target_sha,
        tested_sha,
        ..
    } = merges[0]
    else {
        unreachable!()
    };
    assert_eq!((run_id, tested_sha), (&None, &None));
    assert_eq!(prs.iter().map(|p| p.pr).collect::<Vec<_>>(), vec![1]);
    assert_eq!(expected_target_sha, &Some(support::sha_of(&[])));
    assert_eq!(h.host.target, vec![1]);
    // With 9 in line (lane a), 2 has no impacted targets yet, so it may depend on 9: no
    // direct merge; like any entry it waits for its targets, then tests in its own lane.
    h.set_targets(9, &["a"]);
    assert_eq!(h.state(9), Testing);
    h.green_heads.insert(2);
    h.submit_up_to_date(2);
    assert_eq!(h.state(2), NotReady, "tested, not merged directly");
    h.set_targets(2, &["b"]);
    assert_eq!(h.state(2), Testing);
    assert_eq!(h.content_of(&h.run_of(2)), vec![1, 2], "lane b: without 9");
    h.pass_pr(2);
    h.pass_pr(9);
    assert_eq!(h.merged_prs(), vec![1, 2, 9]);
    assert_eq!(h.host.target, vec![1, 2, 9]);
    h.assert_clean();
}

#[test]
fn the_queue_own_required_statuses_win_over_the_repository() {
    let mut h = queue(1);
    h.update(SettingsPatch {
        required_statuses: Some(vec!["lint".into()]),
        ..Default::default()
    });
    h.submit(1);
    let run = h.run(&h.run_of(1)).unwrap().clone();
    assert_eq!(
        required_statuses(&h.snap.queue, &run),
        (
            vec!["lint".to_owned()],
            Some(RequiredStatusesSource::MergeInstance)
        )
    );
    // The repository's "ci" passing is not enough.
    h.pass_pr(1);
    assert_eq!(h.state(1), Testing);
}

/// A new `requiredStatuses` list is what runs in progress require: a status taken off the list
/// (a job that no longer reports) no longer holds a run back, and a status added to it (a new
/// scan) is required of runs already testing too.
#[test]
fn a_new_list_of_required_statuses_applies_to_runs_in_progress() {
    let mut h = queue(2);
    let require = |h: &mut Harness, names: &[&str]| {
        h.update(SettingsPatch {
            required_statuses: Some(names.iter().map(|n| n.to_string()).collect()),
            ..Default::default()
        });
    };
    require(&mut h, &["ci", "legacy"]);
    h.submit(1);
    h.submit(2);
    h.pass_pr(1);
    assert_eq!(h.state(1), Testing, "legacy has not reported");
    require(&mut h, &["ci"]);
    assert_eq!(h.state(1), Merged);
    require(&mut h, &["ci", "scan"]);
    h.pass_pr(2);
    assert_eq!(h.state(2), Testing, "scan has not reported");
    h.assert_clean();
}

#[test]
fn without_a_queue_list_the_repository_sources_apply_and_an_empty_update_is_ignored() {
    let mut h = queue(1);
    h.update(SettingsPatch {
        required_statuses: Some(vec!["lint".into()]),
        ..Default::default()
    });
    h.update(SettingsPatch {
        required_statuses: Some(vec![]),
        ..Default::default()
    });
    assert_eq!(
        h.snap.queue.config.required_statuses,
        vec!["lint".to_owned()]
    );
    h.update(SettingsPatch {
        delete_required_statuses: Some(true),
        ..Default::default()
    });
    h.submit(1);
    let run = h.run(&h.run_of(1)).unwrap().clone();
    assert_eq!(
        required_statuses(&h.snap.queue, &run).1,
        Some(RequiredStatusesSource::RepoProviderBranchProtection)
    );
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
}

#[test]
fn a_run_with_no_required_statuses_from_any_source_fails() {
    let mut h = queue(1);
    h.host.required.contexts.clear();
    h.host.required.source = None;
    h.submit(1);
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "no_required_statuses");
}

#[test]
fn the_merge_method_is_passed_to_the_git_host() {
    for method in [
        MergeMethod::MergeCommit,
        MergeMethod::Squash,
        MergeMethod::Rebase,
    ] {
        let mut h = Harness::with(SettingsPatch {
            merge_method: Some(method),
            ..Default::default()
        });
        h.submit(1);
        h.pass_pr(1);
        let merges = h.emitted_where(|e| matches!(e, Effect::Merge { .. }));
        assert!(matches!(merges[0], Effect::Merge { method: m, .. } if *m == method));
    }
}

/// Under `merge_commit` the target is fast-forwarded to each group's tested commit, so the
/// branch of a group behind must hold the very merge commits of the groups ahead (the driver
/// refuses, and records, a merge that is not a fast-forward).
#[test]
fn merge_commits_with_concurrency_merge_every_good_pull_request_by_fast_forward() {
    let mut h = Harness::with(SettingsPatch {
        merge_method: Some(MergeMethod::MergeCommit),
        concurrency: Some(3),
        ..Default::default()
    });
    for pr in 1..=12 {
        h.submit(pr);
    }
    while !h.snap.entries.is_empty() {
        let front = h.testing_runs()[0].id.clone();
        h.pass(&front);
    }
    assert_eq!(h.merged_prs(), (1..=12).collect::<Vec<_>>());
    assert_eq!(h.host.target, (1..=12).collect::<Vec<_>>());
    h.assert_clean();
}

/// A group restarted in place is a new commit: the groups behind it, built on its earlier
/// commit, cannot be fast-forwarded onto it once it merges alone, so they restart then (only
/// under `merge_commit`; a squash keeps them, since the tree is the same).
#[test]
fn a_restart_in_place_under_merge_commits_restarts_the_groups_behind_when_it_merges() {
    for (method, restarts_behind) in [
        (MergeMethod::MergeCommit, true),
        (MergeMethod::Squash, false),
    ] {
        let mut h = Harness::with(SettingsPatch {
            merge_method: Some(method),
            concurrency: Some(2),
            ..Default::default()
        });
        h.submit(1);
        h.submit(2);
        let behind = h.run_of(2);
        h.ok(Event::Restart { pr: 1 });
        h.pass_pr(1);
        assert_eq!(h.state(1), Merged);
        assert_eq!(h.state(2), Testing);
        assert_eq!(h.run_of(2) != behind, restarts_behind, "{method:?}");
        h.pass_pr(2);
        assert_eq!(h.state(2), Merged);
        h.assert_clean();
    }
}

/// A switch to `merge_commit` after a pull request landed as a squash (or while its squash is
/// on its way): the groups behind it hold its merge commit, not the target's squash, so they
/// cannot be fast-forwarded onto the target. They restart on it and merge; nobody fails.
#[test]
fn a_switch_to_merge_commits_restarts_the_groups_built_before_a_squash_landed() {
    for switch_while_merging in [false, true] {
        let mut h = Harness::with(SettingsPatch {
            merge_method: Some(MergeMethod::Squash),
            concurrency: Some(2),
            ..Default::default()
        });
        h.submit(1);
        h.submit(2);
        let behind = h.run_of(2);
        h.auto_execute = !switch_while_merging;
        h.pass_pr(1);
        h.update(SettingsPatch {
            merge_method: Some(MergeMethod::MergeCommit),
            ..Default::default()
        });
        h.auto_execute = true;
        h.execute_all();
        assert_eq!(h.state(1), Merged, "{switch_while_merging}");
        assert_ne!(h.run_of(2), behind, "{switch_while_merging}");
        h.pass_pr(2);
        assert_eq!(h.state(2), Merged, "{switch_while_merging}");
        h.assert_clean();
    }
}

/// A switch to `merge_commit` leaves alone a group whose squash is on its way: it merges as
/// sent, and the groups behind it restart once it has landed.
#[test]
fn a_switch_to_merge_commits_leaves_a_merge_under_way_alone() {
    let mut h = Harness::with(SettingsPatch {
        merge_method: Some(MergeMethod::Squash),
        concurrency: Some(3),
        ..Default::default()
    });
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.pass_pr(1);
    let merging = h.run_of(2);
    h.auto_execute = false;
    h.pass_pr(2);
    h.update(SettingsPatch {
        merge_method: Some(MergeMethod::MergeCommit),
        ..Default::default()
    });
    assert_eq!(h.entry(2).unwrap().restarts, 0);
    assert!(h.run(&merging).is_some(), "not restarted");
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.state(2), Merged);
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![1, 2, 3]);
    h.assert_clean();
}

/// A switch to `merge_commit` while a group's squash waits unsent, which the pause then
/// withdraws: the group no longer merges as it was sent, so it is judged as the switch judged
/// the others. Built on a squash that landed, it cannot be fast-forwarded onto the target: it
/// is tested again and merges; nobody fails.
#[test]
fn a_squash_withdrawn_after_a_switch_to_merge_commits_is_tested_again() {
    let mut h = Harness::with(SettingsPatch {
        merge_method: Some(MergeMethod::Squash),
        concurrency: Some(2),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    h.pass_pr(1);
    let built = h.run_of(2);
    h.auto_execute = false;
    h.pass_pr(2);
    let unsent = merge(&h).expect("#2's squash emitted");
    h.pending.clear();
    h.update(SettingsPatch {
        merge_method: Some(MergeMethod::MergeCommit),
        ..Default::default()
    });
    set_state(&mut h, RequestedState::Paused);
    h.ok(Event::MergeWithdrawn {
        effect_id: unsent.id.clone(),
    });
    assert!(merge(&h).is_none(), "withdrawn");
    h.auto_execute = true;
    set_state(&mut h, RequestedState::Running);
    assert_ne!(h.run_of(2), built, "tested again on the squash of #1");
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    h.assert_clean();
}

/// Groups that passed while waiting for the one ahead of them do not all merge in one go: a
/// merge lands at most `most_prs_per_merge` pull requests (fewer for a squash, whose every pull
/// request the Git host writes anew), the rest in the next, so the Git host's work for one
/// merge fits the tick's time. Everything merges, in order.
#[test]
fn passed_groups_merge_at_most_so_many_pull_requests_at_once() {
    for method in [MergeMethod::Squash, MergeMethod::MergeCommit] {
        let most = most_prs_per_merge(method);
        let n = most as u32 + 5;
        let mut h = Harness::with(SettingsPatch {
            merge_method: Some(method),
            concurrency: Some(n),
            ..Default::default()
        });
        for pr in 1..=n {
            h.submit(pr);
        }
        for pr in 2..=n {
            h.pass_pr(pr);
        }
        assert!(h.merged_prs().is_empty(), "{method:?}");
        h.pass_pr(1);
        let sizes = h.merge_sizes();
        assert_eq!(sizes, [most, 5], "{method:?}");
        assert_eq!(h.merged_prs(), (1..=n).collect::<Vec<_>>(), "{method:?}");
        h.assert_clean();
    }
}

/// The cap gives way where stopping sooner would restart the groups behind: batch A, tested
/// again in its place, is a new commit that batch X behind it was not built on (#41 behind X
/// was, or was not: tested again in its place too), and X, failed on a flake, was cleared by
/// #41's pass. A, X and #41 land together (41 pull requests), X without being tested again.
#[test]
fn the_merge_cap_gives_way_to_groups_that_passed_only_together() {
    use mq_core::priority::Priority;
    for restart_behind in [false, true] {
        let mut h = Harness::with(SettingsPatch {
            batch: Some(true),
            batching_min_size: Some(20),
            concurrency: Some(3),
            merge_method: Some(MergeMethod::MergeCommit),
            can_optimistically_merge: Some(true),
            pending_failure_depth: Some(1),
            ..Default::default()
        });
        for pr in 1..=40 {
            h.submit(pr);
        }
        h.submit_with(41, Priority::default_priority(), true);
        assert_eq!(h.testing_runs().len(), 3);
        h.ok(Event::Restart { pr: 1 });
        if restart_behind {
            h.ok(Event::Restart { pr: 41 });
        }
        h.fail_pr(21);
        assert_eq!(h.state(21), PendingFailure, "{restart_behind}");
        h.pass_pr(41);
        h.pass_pr(1);
        assert_eq!(
            h.merged_prs(),
            (1..=41).collect::<Vec<_>>(),
            "{restart_behind}"
        );
        let x = h.concluded.iter().find(|e| e.pr == 21).unwrap();
        assert_eq!(x.restarts, 0, "X is not tested again: {restart_behind}");
        h.assert_clean();
    }
}

/// Under squash a group restarted in place still lets the cap stop there: the groups behind
/// it hold its pull requests at the same heads, which is all a squash's prediction needs. 12
/// pull requests land as 6 and 6.
#[test]
fn the_merge_cap_stops_at_a_squashed_group_restarted_in_place() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(6),
        concurrency: Some(2),
        merge_method: Some(MergeMethod::Squash),
        ..Default::default()
    });
    for pr in 1..=12 {
        h.submit(pr);
    }
    let behind = h.run_of(7);
    h.ok(Event::Restart { pr: 1 });
    h.pass_pr(7);
    h.pass_pr(1);
    let sizes = h.merge_sizes();
    assert_eq!(sizes, [6, 6]);
    assert_eq!(h.merged_prs(), (1..=12).collect::<Vec<_>>());
    let tested = h.concluded.iter().find(|e| e.pr == 7).unwrap();
    assert_eq!(tested.restarts, 0, "not tested again");
    assert_eq!(tested.last_run.as_deref(), Some(behind.as_str()));
    h.assert_clean();
}

/// `createPrsForTestingBranches`: a draft pull request per test branch, opened once the
/// branch exists and closed when its run has a result or is cancelled.
#[test]
fn test_branches_get_draft_pull_requests_while_their_runs_test() {
    let mut h = Harness::with(SettingsPatch {
        create_prs_for_testing_branches: Some(true),
        concurrency: Some(2),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    let (one, two) = (h.run_of(1), h.run_of(2));
    let branch = |h: &Harness, id: &str| h.run(id).unwrap().branch.clone();
    let open = [branch(&h, &one), branch(&h, &two)];
    assert_eq!(h.host.test_prs, open.iter().cloned().collect());
    let opened = h.emitted_where(|e| matches!(e, Effect::OpenTestPullRequest { .. }));
    let Effect::OpenTestPullRequest { title, body, .. } = opened[1] else {
        unreachable!()
    };
    assert_eq!(title, &format!("[merge queue] #2 into main (run {two})"));
    assert!(
        body.contains("#2 on top of `main` with #1 ahead of it"),
        "{body}"
    );
    h.pass_pr(2);
    assert_eq!(
        h.host.test_prs,
        [open[0].clone()].into(),
        "a run with a result"
    );
    h.ok(Event::Cancel {
        pr: 1,
        reason: mq_core::engine::CancelReason::Api,
    });
    let again = h.run_of(2);
    assert_ne!(again, two, "#2 restarted without #1");
    let now_open = [branch(&h, &again)].into();
    assert_eq!(h.host.test_prs, now_open, "the cancelled run's is closed");
    h.pass_pr(2);
    assert!(h.host.test_prs.is_empty());
    h.assert_clean();

    let mut off = Harness::with(SettingsPatch::default());
    off.submit(1);
    off.pass_pr(1);
    assert!(
        off.emitted_where(|e| matches!(e, Effect::OpenTestPullRequest { .. }))
            .is_empty()
    );
}

/// `createPrsForTestingBranches` turned on while runs test (CI only runs on pull requests,
/// and nothing reports on their branches): each gets its draft pull request at once, and
/// turning it on again opens none twice.
#[test]
fn draft_pull_requests_are_opened_for_runs_testing_when_turned_on() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    assert!(h.host.test_prs.is_empty());
    let on = SettingsPatch {
        create_prs_for_testing_branches: Some(true),
        ..Default::default()
    };
    h.update(on.clone());
    let branch = |h: &Harness, pr| h.run(&h.run_of(pr)).unwrap().branch.clone();
    let open: BTreeSet<String> = [branch(&h, 1), branch(&h, 2)].into();
    assert_eq!(h.host.test_prs, open);
    h.update(on);
    let opened = h.emitted_where(|e| matches!(e, Effect::OpenTestPullRequest { .. }));
    assert_eq!(opened.len(), 2);
    h.pass_pr(1);
    h.pass_pr(2);
    assert!(h.host.test_prs.is_empty(), "closed when the runs end");
    h.assert_clean();
}

/// GitHub may refuse for a while to open a pull request from a branch just pushed: the open is
/// tried again while its run tests, and dropped once the run has its result, so no pull
/// request is opened for a run that is over.
#[test]
fn a_test_pull_request_not_opened_before_its_run_ends_is_never_opened() {
    let mut h = Harness::with(SettingsPatch {
        create_prs_for_testing_branches: Some(true),
        ..Default::default()
    });
    h.auto_execute = false;
    h.submit(1);
    while let Some(x) = h.pending.pop_front() {
        if !h.snap.outbox.iter().any(|o| o.id == x.id) {
            continue;
        }
        if matches!(x.effect, Effect::OpenTestPullRequest { .. }) {
            h.ok(Event::EffectFailed {
                effect_id: x.id,
                error: "GitHub does not see the branch yet".into(),
                permanent: false,
                retry_after_ms: None,
            });
        } else {
            let outcome = h.execute(&x.effect);
            h.ok(Event::EffectSucceeded {
                effect_id: x.id,
                outcome,
            });
        }
    }
    assert!(h.host.test_prs.is_empty());
    assert_eq!(h.state(1), Testing, "the run goes on");
    h.auto_execute = true;
    h.pass_pr(1);
    let opens = |h: &Harness| {
        h.emitted_where(|e| matches!(e, Effect::OpenTestPullRequest { .. }))
            .len()
    };
    let tried = opens(&h);
    h.advance_minutes(60);
    h.tick();
    assert_eq!(opens(&h), tried, "not tried again");
    assert_eq!(h.state(1), Merged);
    assert!(h.host.test_prs.is_empty(), "{:?}", h.host.test_prs);
    h.assert_clean();
}

#[test]
fn comments_and_status_checks_follow_their_settings() {
    let mut h = Harness::with(SettingsPatch {
        comments_enabled: Some(false),
        ..Default::default()
    });
    h.submit(1);
    h.pass_pr(1);
    assert!(
        h.emitted_where(|e| matches!(e, Effect::PostComment { .. }))
            .is_empty()
    );
    assert!(
        !h.emitted_where(|e| matches!(e, Effect::SetStatusCheck { .. }))
            .is_empty()
    );
}

/// Turning comments and status checks off while a pull request is under way does not leave
/// it as the queue last told it: its status, set pending, is set passed at the end (a branch
/// requiring it could not merge otherwise), and its comment says it merged. Nothing new is
/// started: a pull request submitted after the change hears nothing.
#[test]
fn turning_notifications_off_still_ends_what_was_started() {
    let mut h = queue(1);
    h.submit(1);
    h.update(SettingsPatch {
        comments_enabled: Some(false),
        status_check_enabled: Some(false),
        ..Default::default()
    });
    h.submit(2);
    let before = h.emitted.len();
    h.pass_pr(1);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    let after: Vec<&Effect> = h.emitted[before..].iter().map(|(x, _)| &x.effect).collect();
    let statuses: Vec<_> = after
        .iter()
        .filter_map(|e| match e {
            Effect::SetStatusCheck { pr, state, .. } => Some((*pr, *state)),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, vec![(1, mq_core::git::StatusState::Success)]);
    let comments: Vec<_> = after
        .iter()
        .filter_map(|e| match e {
            Effect::PostComment { pr, body } => Some((*pr, body.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(comments[0].0, 1);
    assert!(comments[0].1.starts_with("Merged into"), "{comments:?}");
    assert!(!h.entry(1).is_some_and(|e| e.status_pending));
}

/// A draft submitted, then marked ready for review, and the webhook delivery that says so
/// never comes (GitHub does not send a failed delivery again): the tick reads the pull
/// request again and it starts testing.
#[test]
fn a_draft_marked_ready_is_seen_by_the_tick_without_its_delivery() {
    let mut h = queue(1);
    let mut draft = h.facts(1);
    draft.draft = true;
    h.submit_facts(draft).unwrap();
    assert_eq!(h.state(1), NotReady);
    h.advance_minutes(1);
    h.tick();
    assert_eq!(h.state(1), Testing, "read again, no longer a draft");
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1]);
    h.assert_clean();
}

/// Submits #1 while its branch's review rules do not approve it; its facts.
fn submit_unreviewed(h: &mut Harness) -> PrFacts {
    let unreviewed = PrFacts {
        review: Review::Required,
        ..h.facts(1)
    };
    h.submit_facts(unreviewed.clone()).unwrap();
    unreviewed
}

/// A pull request its branch's review rules do not approve waits, not ready, however green:
/// the queue moves the target itself, so it keeps the rule that changes arrive reviewed. A
/// request for changes keeps it waiting; once approved (read again by the tick, without a
/// delivery) it is tested and merged.
#[test]
fn a_pull_request_waits_for_the_approval_its_branch_requires() {
    let mut h = queue(1);
    let unreviewed = submit_unreviewed(&mut h);
    assert_eq!(h.state(1), NotReady);
    let changes = PrFacts {
        review: Review::ChangesRequested,
        ..unreviewed
    };
    h.ok(Event::PrUpdated { pr: changes });
    assert_eq!(h.state(1), NotReady);
    assert!(h.snap.runs.is_empty(), "nothing tested");
    h.advance_minutes(1);
    h.tick();
    assert_eq!(h.state(1), Testing, "approved when read again");
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1]);
    h.assert_clean();
}

/// A pull request waiting long for its reviews is read again every minute at first, then once
/// every ten minutes, not every minute for days.
#[test]
fn a_pull_request_waiting_long_is_read_again_less_often() {
    let mut h = queue(1);
    submit_unreviewed(&mut h);
    h.auto_execute = false;
    let mut reads_by_minute = Vec::new();
    for _ in 0..40 {
        h.advance_minutes(1);
        h.pending.clear();
        h.snap.outbox.clear();
        let t = h.tick();
        let reads = t
            .effects
            .iter()
            .filter(|x| x.effect == Effect::RefreshPullRequest { pr: 1 })
            .count();
        reads_by_minute.push(reads);
    }
    let first: usize = reads_by_minute[..9].iter().sum();
    let later: usize = reads_by_minute[10..40].iter().sum();
    assert_eq!(first, 9, "every minute at first: {reads_by_minute:?}");
    assert_eq!(later, 3, "once in ten minutes later: {reads_by_minute:?}");
    assert_eq!(h.state(1), NotReady);
    // Read while GitHub computes its mergeability: every minute again.
    let computing = std::sync::Arc::make_mut(&mut h.snap.entries[0]);
    computing.pr_facts.mergeability = Mergeability::InProgress;
    for _ in 0..3 {
        h.advance_minutes(1);
        h.snap.outbox.clear();
        let t = h.tick();
        let read = t
            .effects
            .iter()
            .any(|x| x.effect == Effect::RefreshPullRequest { pr: 1 });
        assert!(read, "read while mergeability is computed");
    }
}

// ---- the outbox ---------------------------------------------------------------------------

#[test]
fn a_failed_effect_is_retried_by_the_tick_with_backoff() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    let create = pending_branch_build(&h);
    h.pending.clear();
    h.ok(Event::EffectFailed {
        effect_id: create.id.clone(),
        error: "503 from the Git host".into(),
        permanent: false,
        retry_after_ms: None,
    });
    let stored = h.snap.outbox.iter().find(|x| x.id == create.id).unwrap();
    assert_eq!(stored.attempts, 1);
    assert_eq!(stored.last_error.as_deref(), Some("503 from the Git host"));
    h.advance_minutes(1);
    let t = h.tick();
    assert!(t.effects.iter().any(|x| x.id == create.id), "emitted again");
    h.auto_execute = true;
    h.execute_all();
    assert!(h.run(&h.run_of(1)).unwrap().sha.is_some());
}

/// A Git host that asks to wait (a rate limit until its reset, 40 minutes away) is not asked
/// again before: a retry on the backoff (1, 2, 4, ... minutes) would fail again, and bring the
/// effect nearer to being given up.
#[test]
fn a_failed_effect_waits_as_long_as_the_git_host_asked() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    let create = pending_branch_build(&h);
    h.pending.clear();
    h.ok(Event::EffectFailed {
        effect_id: create.id.clone(),
        error: "rate limited: API rate limit exceeded".into(),
        permanent: false,
        retry_after_ms: Some(40 * 60_000),
    });
    h.advance_minutes(39);
    let t = h.tick();
    assert!(!t.effects.iter().any(|x| x.id == create.id), "not before");
    h.advance_minutes(1);
    let t = h.tick();
    assert!(t.effects.iter().any(|x| x.id == create.id), "emitted again");
    let stored = h.snap.outbox.iter().find(|x| x.id == create.id).unwrap();
    assert_eq!(stored.attempts, 1);
}

/// The testing timeout is CI's time: it counts from when the test branch was built. A branch
/// the Git host kept refusing to build for a while (a rate limit, an outage) leaves CI its
/// whole timeout once built, and the pull request does not fail `timeout` for the Git host's
/// trouble; the retries of the build are bounded on their own
/// (`an_effect_that_keeps_failing_is_given_up_and_its_run_fails`).
#[test]
fn the_testing_timeout_counts_from_the_built_branch() {
    let mut h = timing_out_after_30_minutes();
    h.auto_execute = false;
    h.submit(1);
    let create = pending_branch_build(&h);
    h.ok(Event::EffectFailed {
        effect_id: create.id.clone(),
        error: "403 rate limit".into(),
        permanent: false,
        retry_after_ms: None,
    });
    h.advance_minutes(40);
    h.tick();
    assert_eq!(h.state(1), Testing, "no timeout while the branch is built");
    h.auto_execute = true;
    h.execute_all();
    let run = h.run_of(1);
    assert!(h.run(&run).unwrap().sha.is_some(), "built");
    h.advance_minutes(29);
    h.tick();
    assert_eq!(h.state(1), Testing);
    h.advance_minutes(1);
    h.tick();
    assert_eq!(h.conclusion(1), "timeout");
}

/// A branch deleted (or pushed to) by someone else is built again, and the run keeps its first
/// start: a bot that keeps deleting test branches does not put the timeout off for ever.
#[test]
fn a_branch_built_again_keeps_the_run_s_first_start() {
    let mut h = timing_out_after_30_minutes();
    h.submit(1);
    let run = h.run_of(1);
    h.advance_minutes(20);
    h.ok(Event::BranchObserved {
        run_id: run.clone(),
        sha: None,
    });
    assert!(h.run(&run).unwrap().sha.is_some(), "built again");
    h.advance_minutes(10);
    h.tick();
    assert_eq!(h.conclusion(1), "timeout");
}

#[test]
fn an_effect_that_keeps_failing_is_given_up_and_its_run_fails() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    let create = pending_branch_build(&h);
    for _ in 0..MAX_ATTEMPTS {
        h.ok(Event::EffectFailed {
            effect_id: create.id.clone(),
            error: "timeout".into(),
            permanent: false,
            retry_after_ms: None,
        });
    }
    assert!(h.snap.outbox.iter().all(|x| x.id != create.id));
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "test_branch_error");
    assert_eq!(
        h.conclusion_detail(1),
        "the test branch could not be made ready for CI: timeout"
    );
}

/// `createPrsForTestingBranches`: a test branch whose pull request the Git host refuses to
/// open for good (the App may not open pull requests) fails its run at once, saying so,
/// rather than waiting for the testing timeout on CI that runs only on pull requests.
#[test]
fn a_test_pull_request_refused_for_good_fails_its_run_saying_why() {
    let mut h = Harness::with(SettingsPatch {
        create_prs_for_testing_branches: Some(true),
        ..Default::default()
    });
    h.auto_execute = false;
    h.submit(1);
    let open = loop {
        let mut pending = h.pending.iter();
        let open = pending.find(|x| matches!(x.effect, Effect::OpenTestPullRequest { .. }));
        if let Some(open) = open.cloned() {
            break open;
        }
        h.execute_some(1);
    };
    h.ok(Event::EffectFailed {
        effect_id: open.id.clone(),
        error: "Resource not accessible by integration".into(),
        permanent: true,
        retry_after_ms: None,
    });
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "test_branch_error");
    assert_eq!(
        h.conclusion_detail(1),
        "the test branch could not be made ready for CI: the Git host did not open its pull request \
         (createPrsForTestingBranches): Resource not accessible by integration"
    );
}

/// A refusal names what the host said (here a configuration file that does not parse), so
/// the author knows what to mend.
#[test]
fn a_test_branch_the_host_refuses_tells_its_pull_request_why() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    let create = pending_branch_build(&h);
    let answer = "invalid: .merge-queue.yaml: required_statuses: invalid type: string \"ci\"";
    h.ok(Event::EffectFailed {
        effect_id: create.id.clone(),
        error: answer.into(),
        permanent: true,
        retry_after_ms: None,
    });
    assert_eq!(h.state(1), Failed);
    assert_eq!(
        h.conclusion_detail(1),
        format!("the test branch could not be made ready for CI: {answer}")
    );
}

#[test]
fn results_for_unknown_effects_and_shas_change_nothing() {
    let mut h = queue(1);
    h.submit(1);
    let before = h.snap.clone();
    let t = h.ok(Event::EffectSucceeded {
        effect_id: "nope".into(),
        outcome: EffectOutcome::Done,
    });
    assert_eq!(t.snapshot, before);
    let t = h.ok(Event::StatusReported {
        sha: mq_core::ids::Sha::new("0".repeat(40)),
        status: mq_core::git::StatusReport {
            context: "ci".into(),
            state: mq_core::git::StatusState::Failure,
            url: String::new(),
            description: String::new(),
            updated_at: h.now,
        },
    });
    assert_eq!(t.snapshot, before);
}

/// CI that reports thousands of names on a test commit (a status per build target) does not
/// grow the run past what one stored item holds: reports of names the run does not require
/// are kept up to a bound, those it requires always, and the verdict reads them.
#[test]
fn a_run_keeps_every_required_report_and_a_bounded_number_of_others() {
    use mq_core::engine::MAX_OTHER_REPORTS;
    use mq_core::git::{CheckRunReport, CheckStatus, StatusReport, StatusState};
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    for i in 0..2_000u64 {
        let status = StatusReport {
            context: format!("target-{i}"),
            state: StatusState::Success,
            url: format!("https://ci.example/{i}"),
            description: String::new(),
            updated_at: h.now,
        };
        h.ok(Event::StatusReported {
            sha: sha.clone(),
            status,
        });
        let check = CheckRunReport {
            id: i,
            name: format!("job-{i}"),
            status: CheckStatus::Completed,
            conclusion: Some(mq_core::git::CheckConclusion::Success),
            url: String::new(),
            suite_id: 1,
            updated_at: h.now,
        };
        h.ok(Event::CheckRunReported {
            sha: sha.clone(),
            check,
        });
    }
    let kept = h.run(&run).unwrap();
    assert_eq!(kept.statuses.len(), MAX_OTHER_REPORTS);
    assert_eq!(kept.check_runs.len(), MAX_OTHER_REPORTS);
    h.pass(&run);
    assert_eq!(
        h.merged_prs(),
        vec![1],
        "the required status, reported last, is kept"
    );
}

/// A name the run did not keep reports of (past the bound) may become required by a change of
/// the queue's list: the run reads what CI reported from the host again, instead of waiting
/// for a report that already came.
#[test]
fn a_change_of_the_required_list_reads_the_reports_again() {
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    let fetches = |h: &Harness| {
        h.emitted_where(|e| matches!(e, Effect::FetchChecks { run_id, .. } if *run_id == run))
            .len()
    };
    let before = fetches(&h);
    h.auto_execute = false;
    for name in ["target-1999", "target-1998"] {
        h.update(SettingsPatch {
            required_statuses: Some(vec![name.into()]),
            ..Default::default()
        });
    }
    assert_eq!(
        fetches(&h),
        before + 1,
        "one read asked for, not one per change"
    );
}

#[test]
fn statuses_reported_before_the_branch_was_known_are_fetched() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    // Execute the branch creation, then answer the fetch with a success already there.
    while let Some(x) = h.pending.pop_front() {
        let outcome = match &x.effect {
            Effect::FetchChecks { .. } => EffectOutcome::Checks {
                statuses: vec![mq_core::git::StatusReport {
                    context: "ci".into(),
                    state: mq_core::git::StatusState::Success,
                    url: String::new(),
                    description: String::new(),
                    updated_at: h.now,
                }],
                check_runs: vec![],
            },
            other => h.execute(other),
        };
        if matches!(x.effect, Effect::FetchChecks { .. }) {
            let run = h.run_of(1);
            h.passed.insert(h.content_of(&run));
        }
        let _ = h.apply(Event::EffectSucceeded {
            effect_id: x.id,
            outcome,
        });
    }
    assert_eq!(h.state(1), Merged);
    h.assert_clean();
}

#[test]
fn a_finished_run_is_kept_as_history_with_its_status() {
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    h.pass(&run);
    let done = h.finished_runs.iter().find(|r| r.id == run).unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(
        pr_url(&h.snap.queue.repo, done.tested[0].pr),
        "https://github.com/acme/rocket/pull/1"
    );
    assert_eq!(done.statuses[0].context, "ci");
    assert!(!test_branch_sha(done).is_empty());
}

// ---- views ----------------------------------------------------------------------------------

#[test]
fn the_public_view_of_an_entry_follows_its_life() {
    use mq_core::engine::view::{queue_order, test_run_id};
    use mq_core::priority::Priority;
    let mut h = queue(1);
    h.submit(1);
    h.submit_with(2, Priority::from_name("urgent").unwrap(), false);
    let urgent = h.entry(2).unwrap();
    assert!(urgent.priority.is_urgent());
    assert_eq!(urgent.priority.name(), "urgent");
    assert!(!urgent.priority.defaulted);
    let medium = h.entry(1).unwrap();
    assert!(medium.priority.defaulted);
    assert_eq!(medium.priority.name(), "medium");
    assert!(medium.state.is_active());
    h.pass_pr(2);
    h.pass_pr(1);
    let done = h.concluded.iter().find(|e| e.pr == 1).unwrap();
    assert_eq!(done.state, Merged);
    assert!(!done.state.is_active());
    assert!(
        test_run_id(done).is_some(),
        "a merged entry names its last run"
    );
    assert!(
        queue_order(&h.snap).is_empty(),
        "terminal entries leave the list"
    );
}

/// Auto-tuning (docs/queue-semantics.md §13): a change advised at two checks a day apart is
/// made, and starts the groups the new concurrency allows; none is made again within the
/// window, and none at all with `autoTune` off.
#[test]
fn auto_tuning_makes_a_change_advised_twice_once_per_window() {
    use mq_core::tuning::{Advised, CHECK_INTERVAL_MS, TunedSettings, WINDOW_MS};
    let mut h = Harness::with(SettingsPatch {
        auto_tune: Some(true),
        testing_timeout_minutes: Some(100_000),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    assert_eq!(h.testing_runs().len(), 1);
    let before = TunedSettings::of(&h.snap.queue.config);
    let advised = Advised {
        settings: TunedSettings {
            concurrency: 3,
            ..before
        },
        reason: "concurrency 3 merges more".into(),
    };
    let tune = |h: &mut Harness| {
        h.ok(Event::AutoTune {
            advised: Some(advised.clone()),
        })
    };
    tune(&mut h);
    assert_eq!(
        h.snap.queue.config.concurrency, 1,
        "a first check only proposes"
    );
    assert!(h.snap.queue.tuning.proposed.is_some());
    h.advance_minutes((CHECK_INTERVAL_MS / 60_000) as u32 - 1);
    tune(&mut h);
    assert_eq!(h.snap.queue.config.concurrency, 1, "checks are a day apart");
    h.advance_minutes(1);
    tune(&mut h);
    assert_eq!(h.snap.queue.config.concurrency, 3);
    assert_eq!(
        h.testing_runs().len(),
        3,
        "the new concurrency applies at once"
    );
    let made = &h.snap.queue.tuning.changes;
    assert_eq!(made.len(), 1);
    assert_eq!((made[0].before, made[0].after), (before, advised.settings));
    assert_eq!(made[0].reason, advised.reason);
    // Within the window: no check, no change.
    let again = Advised {
        settings: TunedSettings {
            concurrency: 8,
            ..before
        },
        reason: "more".into(),
    };
    for _ in 0..(WINDOW_MS / CHECK_INTERVAL_MS) {
        h.advance_minutes((CHECK_INTERVAL_MS / 60_000) as u32);
        h.ok(Event::AutoTune {
            advised: Some(again.clone()),
        });
    }
    assert_eq!(h.snap.queue.config.concurrency, 3);
    assert_eq!(h.snap.queue.tuning.changes.len(), 1);
    // `autoTune` off: nothing is recorded.
    h.update(SettingsPatch {
        auto_tune: Some(false),
        ..Default::default()
    });
    let checked = h.snap.queue.tuning.checked_at;
    h.advance_minutes(2 * (CHECK_INTERVAL_MS / 60_000) as u32);
    h.ok(Event::AutoTune {
        advised: Some(again),
    });
    assert_eq!(h.snap.queue.tuning.checked_at, checked);
    assert_eq!(h.snap.queue.config.concurrency, 3);
}

/// An operator's change of a tuned setting (docs/queue-semantics.md §13) drops the change
/// auto-tuning proposed and holds it off for a window; changing another setting does not.
#[test]
fn an_operators_change_of_a_tuned_setting_holds_auto_tuning_off_for_a_window() {
    use mq_core::tuning::{Advised, CHECK_INTERVAL_MS, TunedSettings, WINDOW_MS};
    let mut h = Harness::with(SettingsPatch {
        auto_tune: Some(true),
        ..Default::default()
    });
    h.submit(1);
    let advised = Advised {
        settings: TunedSettings {
            concurrency: 4,
            ..TunedSettings::of(&h.snap.queue.config)
        },
        reason: "concurrency 4 merges more".into(),
    };
    let day = (CHECK_INTERVAL_MS / 60_000) as u32;
    let tune = |h: &mut Harness| {
        h.ok(Event::AutoTune {
            advised: Some(advised.clone()),
        })
    };
    tune(&mut h);
    assert!(h.snap.queue.tuning.proposed.is_some());
    h.update(SettingsPatch {
        comments_enabled: Some(false),
        ..Default::default()
    });
    assert!(
        h.snap.queue.tuning.proposed.is_some(),
        "a setting auto-tuning leaves alone changes nothing"
    );
    assert_eq!(h.snap.queue.tuning.operator_changed_at, None);
    h.update(SettingsPatch {
        concurrency: Some(2),
        ..Default::default()
    });
    let changed_at = h.now;
    assert_eq!(h.snap.queue.tuning.operator_changed_at, Some(changed_at));
    assert_eq!(h.snap.queue.tuning.proposed, None);
    for _ in 0..(WINDOW_MS / CHECK_INTERVAL_MS) {
        h.advance_minutes(day);
        tune(&mut h);
    }
    assert_eq!(
        h.snap.queue.config.concurrency, 2,
        "the operator's choice holds"
    );
    assert!(h.snap.queue.tuning.changes.is_empty());
    h.advance_minutes(1);
    tune(&mut h);
    h.advance_minutes(day);
    tune(&mut h);
    assert_eq!(
        h.snap.queue.config.concurrency, 4,
        "a window later, advice given twice is followed"
    );
}

/// A pause counts as an operator's change (docs/queue-semantics.md §13): a window after the
/// resume, not after the pause, auto-tuning may change the queue again, so the backlog the
/// pause left is never read as the queue falling behind. A mode switch counts when it ends.
#[test]
fn a_pause_or_a_mode_switch_holds_auto_tuning_off_for_a_window_after_it() {
    use mq_core::tuning::WINDOW_MS;
    let mut h = Harness::with(SettingsPatch {
        auto_tune: Some(true),
        ..Default::default()
    });
    h.submit(1);
    set_state(&mut h, RequestedState::Paused);
    assert_eq!(h.snap.queue.tuning.operator_changed_at, Some(h.now));
    h.advance_minutes(2 * 24 * 60);
    set_state(&mut h, RequestedState::Running);
    let resumed = h.now;
    assert_eq!(h.snap.queue.tuning.operator_changed_at, Some(resumed));
    set_state(&mut h, RequestedState::Running);
    assert_eq!(
        h.snap.queue.tuning.operator_changed_at,
        Some(resumed),
        "asking for the state it is in changes nothing"
    );
    let (config, tuning) = (&h.snap.queue.config, &h.snap.queue.tuning);
    let due = |at: i64| tuning.due(config, QueueState::Running, resumed.plus_millis(at));
    assert!(!due(WINDOW_MS - 1));
    assert!(due(WINDOW_MS));

    // A switch to parallel mode while a group tests: recorded when it ends.
    h.advance_minutes(60);
    set_mode(&mut h, QueueMode::Parallel);
    assert_eq!(h.snap.queue.state, QueueState::SwitchingModes);
    h.advance_minutes(60);
    h.pass_pr(1);
    assert_eq!(
        (h.snap.queue.state, h.snap.queue.config.mode),
        (QueueState::Running, QueueMode::Parallel)
    );
    assert_eq!(h.snap.queue.tuning.operator_changed_at, Some(h.now));
}

/// A run that timed out while its branch was being built again (someone pushed to it), and
/// stays in the queue (its failure waits on the group behind it), has the build dropped: the
/// branch is deleted instead of built for a run that is over, where CI would run until the
/// run was closed.
#[test]
fn a_run_over_while_its_branch_was_built_again_has_the_build_dropped() {
    let mut h = Harness::with(SettingsPatch {
        testing_timeout_minutes: Some(30),
        concurrency: Some(2),
        can_optimistically_merge: Some(true),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    let first = h.run_of(1);
    let branch = h.run(&first).unwrap().branch.clone();
    h.advance_minutes(20);
    h.ok(Event::Restart { pr: 2 });
    h.auto_execute = false;
    h.ok(Event::BranchObserved {
        run_id: first.clone(),
        sha: Some(mq_core::ids::Sha::new("e".repeat(40))),
    });
    h.advance_minutes(11);
    h.tick();
    assert_eq!(h.state(1), PendingFailure, "waits on 2");
    assert!(h.run(&first).is_some_and(|r| r.status == RunStatus::Failed));
    h.advance_minutes(5);
    let t = h.tick();
    let built =
        |e: &Effect| matches!(e, Effect::CreateTestBranch { run_id, .. } if *run_id == first);
    let deleted = |e: &Effect| matches!(e, Effect::DeleteBranch { branch: b } if *b == branch);
    assert!(
        !t.effects.iter().any(|x| built(&x.effect)),
        "not built again"
    );
    assert!(
        t.effects.iter().any(|x| deleted(&x.effect)),
        "deleted instead"
    );
}

/// A queue whose runs time out after 30 minutes.
fn timing_out_after_30_minutes() -> Harness {
    Harness::with(SettingsPatch {
        testing_timeout_minutes: Some(30),
        ..Default::default()
    })
}

/// The test branch build waiting to be executed.
fn pending_branch_build(h: &Harness) -> mq_core::effects::PendingEffect {
    h.pending
        .iter()
        .find(|x| matches!(x.effect, Effect::CreateTestBranch { .. }))
        .cloned()
        .expect("a test branch build pending")
}
