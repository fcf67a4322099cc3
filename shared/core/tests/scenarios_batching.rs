//! Scenarios for batching and bisection (docs/queue-semantics.md §6).

mod support;

use mq_core::engine::{Effect, Event};
use mq_core::entry::EntryState::*;
use mq_core::git::{StatusReport, StatusState};
use mq_core::priority::Priority;
use mq_core::run::RunKind;
use mq_core::settings::{OptimizationMode, SettingsPatch};
use support::Harness;

fn batching(min_size: u32, concurrency: u32) -> Harness {
    Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(min_size),
        batching_max_wait_time_minutes: Some(5),
        concurrency: Some(concurrency),
        bisection_concurrency: Some(2),
        ..Default::default()
    })
}

#[test]
fn a_batch_starts_once_min_size_entries_wait_and_takes_at_most_that_many() {
    let mut h = batching(3, 1);
    h.submit(1);
    h.submit(2);
    assert_eq!(h.state(1), Pending, "the batch is still forming");
    assert!(h.testing_runs().is_empty());
    h.submit(3);
    h.submit(4);
    let run = h.run_of(1);
    assert_eq!(h.content_of(&run), vec![1, 2, 3]);
    assert_eq!(h.state(4), Pending);
    assert_eq!(h.run(&run).unwrap().tested.len(), 3);
}

#[test]
fn after_the_max_wait_a_batch_takes_what_is_there() {
    let mut h = batching(4, 1);
    h.submit(1);
    h.submit(2);
    h.advance_minutes(4);
    h.tick();
    assert!(h.testing_runs().is_empty());
    h.advance_minutes(1);
    h.tick();
    assert_eq!(h.content_of(&h.run_of(1)), vec![1, 2]);
}

#[test]
fn no_batch_entries_are_tested_alone_and_never_wait() {
    let mut h = batching(3, 2);
    h.submit(1);
    h.submit_with(2, Priority::default_priority(), true);
    assert_eq!(h.state(1), Pending, "1 waits for its batch");
    assert_eq!(h.content_of(&h.run_of(2)), vec![2], "2 does not wait");
    h.submit(3);
    h.submit(4);
    assert_eq!(h.content_of(&h.run_of(1)), vec![2, 1, 3, 4]);
}

#[test]
fn a_passing_batch_merges_each_pull_request_as_its_own_commit() {
    let mut h = batching(3, 1);
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.pass_pr(1);
    let merges = h.emitted_where(|e| matches!(e, Effect::Merge { .. }));
    let Effect::Merge { prs, .. } = merges[0] else {
        unreachable!()
    };
    let numbers: Vec<u32> = prs.iter().map(|p| p.pr).collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    assert_eq!(h.merged_prs(), vec![1, 2, 3]);
    h.assert_clean();
}

#[test]
fn a_failed_batch_is_bisected_and_only_the_culprit_fails() {
    let mut h = batching(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    let bad = 3;
    // The batch fails; nothing is behind it: bisection finds 3; the others go back to the
    // queue (they have waited long enough to form a batch of what is there) and merge.
    for _ in 0..10 {
        h.answer_all(|c| !c.contains(&bad));
        h.advance_minutes(5);
        h.tick();
    }
    assert_eq!(h.state(bad), Failed);
    assert_eq!(h.conclusion(bad), "tests_failed");
    assert_eq!(
        h.conclusion_detail(bad),
        "required status `ci` failed on the test branch (found by bisecting its batch)",
        "named as a failure of its own would be"
    );
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 2, 4]);
    let bisections: Vec<_> = h
        .finished_runs
        .iter()
        .filter(|r| r.kind == RunKind::Bisection)
        .collect();
    assert!(!bisections.is_empty());
    assert!(bisections.iter().all(|r| r.id.contains("-bisection")));
    h.assert_clean();
}

/// Two pull requests that each pass alone but fail together: bisection finds no culprit, and
/// batched together again they would be bisected again, without end. Back from their
/// splits, each is tested with its split only: #2 fails on top of #1.
#[test]
fn pull_requests_that_fail_only_together_are_not_batched_together_again() {
    let mut h = batching(2, 1);
    h.submit(1);
    h.submit(2);
    let mut answered = 0;
    for _ in 0..20 {
        answered += h.answer_at_most(10, |c| !(c.contains(&1) && c.contains(&2)));
        h.advance_minutes(5);
        h.tick();
    }
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.state(2), Failed);
    assert_eq!(h.conclusion(2), "tests_failed");
    assert_eq!(
        answered, 5,
        "the batch, its two splits, #1 alone, #2 on top of #1"
    );
    h.assert_clean();
}

/// With more than two pull requests, the ones back from a split that passed are tested
/// together, and apart from the rest, once.
#[test]
fn pull_requests_back_from_a_split_are_tested_with_that_split_only() {
    let mut h = batching(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    let clash = |c: &Vec<u32>| c.contains(&1) && c.contains(&3);
    for _ in 0..20 {
        h.answer_at_most(10, |c| !clash(c));
        h.advance_minutes(5);
        h.tick();
    }
    assert_eq!(h.merged_prs(), vec![1, 2, 4]);
    assert_eq!(h.state(3), Failed);
    let mains: Vec<Vec<u32>> = h
        .finished_runs
        .iter()
        .filter(|r| r.kind == RunKind::Main)
        .map(|r| r.tested.iter().map(|t| t.pr).collect())
        .collect();
    assert_eq!(
        mains,
        vec![vec![1, 2, 3, 4], vec![1, 2], vec![3, 4], vec![4]]
    );
    h.assert_clean();
}

#[test]
fn a_culprit_fails_for_the_reason_its_own_split_failed() {
    let mut h = batching(4, 1);
    h.host.conflicts.insert(4);
    for pr in 1..=4 {
        h.submit(pr);
    }
    // The batch's branch conflicts on 4; bisection also finds 2 broken.
    for _ in 0..10 {
        h.answer_all(|c| !c.contains(&2));
        h.advance_minutes(5);
        h.tick();
    }
    assert_eq!(h.conclusion(4), "merge_conflict");
    assert_eq!(h.conclusion(2), "tests_failed", "not the batch's conflict");
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 3]);
    h.assert_clean();
}

#[test]
fn bisection_runs_respect_bisection_concurrency() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(8),
        concurrency: Some(1),
        bisection_concurrency: Some(1),
        ..Default::default()
    });
    for pr in 1..=8 {
        h.submit(pr);
    }
    h.fail_pr(1);
    let bisecting: Vec<_> = h
        .testing_runs()
        .into_iter()
        .filter(|r| r.kind == RunKind::Bisection)
        .map(|r| r.tested.len())
        .collect();
    assert_eq!(bisecting, vec![4], "one half at a time");
    for pr in 1..=8 {
        assert_eq!(h.state(pr), PendingFailure);
    }
    h.assert_clean();
}

#[test]
fn a_split_that_passes_goes_back_to_the_queue_in_its_place() {
    let mut h = batching(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.submit_with(5, Priority::of(200), false);
    h.fail_pr(1);
    // halves [1,2] and [3,4] test on the batch's base
    let left = h.run_of(1);
    assert_eq!(h.content_of(&left), vec![1, 2]);
    h.pass(&left);
    assert_eq!(
        h.content_of(&h.run_of(1)),
        vec![1, 2],
        "tested again at once, with its split only"
    );
    assert_eq!(h.run(&h.run_of(1)).unwrap().kind, RunKind::Main);
    assert_eq!(
        (h.state(1), h.state(2), h.state(5)),
        (Testing, Testing, Pending)
    );
}

#[test]
fn skipping_redundant_tests_blames_the_single_sibling_of_a_passing_half() {
    let mut plain = batching(2, 1);
    let mut skip = batching(2, 1);
    skip.update(SettingsPatch {
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    for h in [&mut plain, &mut skip] {
        h.update(SettingsPatch {
            bisection_concurrency: Some(1),
            ..Default::default()
        });
        h.submit(1);
        h.submit(2);
        h.fail_pr(1);
        // [1] is tested first, passes.
        let left = h.run_of(1);
        assert_eq!(h.content_of(&left), vec![1]);
        h.pass(&left);
    }
    assert_eq!(
        skip.state(2),
        Failed,
        "the sibling of a passing half is the culprit"
    );
    assert_eq!(
        plain.state(2),
        PendingFailure,
        "without the option, [2] is tested"
    );
    let bisections = |h: &Harness| {
        h.emitted_where(|e| matches!(e, Effect::CreateTestBranch { run_id, .. } if run_id.contains("-bisection")))
            .len()
    };
    assert_eq!(bisections(&skip), 1);
    assert_eq!(bisections(&plain), 2);
}

/// A batch [1, 2] that timed out (CI did not report in time: a runner outage as likely as
/// a pull request's hanging test) holds no known culprit: once [1] passes, [2] is tested,
/// not failed for a timeout it never had, and both merge.
#[test]
fn skipping_redundant_tests_blames_nobody_for_a_batch_that_timed_out() {
    let mut h = batching(2, 1);
    h.update(SettingsPatch {
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        bisection_concurrency: Some(1),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    let timeout = h.snap.queue.config.testing_timeout_minutes;
    h.advance_minutes(timeout + 1);
    h.tick();
    assert_eq!((h.state(1), h.state(2)), (PendingFailure, PendingFailure));
    h.execute_all();
    let left = h.run_of(1);
    assert_eq!(h.content_of(&left), vec![1]);
    h.pass(&left);
    assert_eq!(h.state(2), PendingFailure, "[2] is tested");
    for _ in 0..10 {
        h.answer_all(|_| true);
    }
    assert_eq!(h.merged_prs(), vec![1, 2]);
    h.assert_clean();
}

/// A batch [1,2] fails on `lint`; [1]'s split has passed `ci` and waits for `lint` when the
/// operator stops requiring `lint`: [1] passes at once, and [2] is not taken to hold the
/// failure (the failure it would be implied from was under the old list): it is tested,
/// passes, and merges.
#[test]
fn a_changed_list_of_required_statuses_implies_no_failure_from_before() {
    let mut h = batching(2, 1);
    h.update(SettingsPatch {
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        bisection_concurrency: Some(1),
        required_statuses: Some(vec!["ci".into(), "lint".into()]),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    let batch = h.run_of(1);
    let sha = h.run(&batch).unwrap().sha.clone().unwrap();
    let lint = StatusReport {
        context: "lint".into(),
        state: StatusState::Failure,
        url: String::new(),
        description: String::new(),
        updated_at: h.now,
    };
    h.ok(Event::StatusReported { sha, status: lint });
    let left = h.run_of(1);
    assert_eq!(h.content_of(&left), vec![1], "bisected");
    h.pass(&left);
    assert_eq!(h.state(1), PendingFailure, "lint has not reported on [1]");
    h.update(SettingsPatch {
        required_statuses: Some(vec!["ci".into()]),
        ..Default::default()
    });
    assert_eq!(h.state(2), PendingFailure, "tested, not implied");
    h.pass_pr(2);
    // Neither half fails under the new list: the two are tested together again and merge.
    h.answer_all(|_| true);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    h.assert_clean();
}

#[test]
fn skipping_redundant_tests_never_retests_a_set_known_to_fail() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        concurrency: Some(1),
        bisection_concurrency: Some(1),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    // [1,2] passes: [3,4] is implied to fail (the batch failed) and is split at once.
    let left = h.run_of(1);
    h.pass(&left);
    let right_tests: Vec<Vec<u32>> = h
        .emitted_where(|e| matches!(e, Effect::CreateTestBranch { run_id, .. } if run_id.contains("-bisection")))
        .iter()
        .map(|e| match e {
            Effect::CreateTestBranch { prs, .. } => prs.iter().map(|p| p.pr).collect(),
            _ => unreachable!(),
        })
        .collect();
    assert!(
        !right_tests.contains(&vec![3, 4]),
        "[3,4] was not tested: {right_tests:?}"
    );
    assert!(right_tests.contains(&vec![3]));
}

/// `bisectionConcurrency` lowered from 2 to 1 while both halves of a failed batch test: the
/// half started last stops and is tested once the other has its result, and the culprit is
/// found all the same.
#[test]
fn a_lower_bisection_concurrency_stops_the_splits_over_it() {
    let mut h = batching(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    let bisecting = |h: &Harness| {
        h.testing_runs()
            .iter()
            .filter(|r| r.kind == RunKind::Bisection)
            .map(|r| r.tested.iter().map(|t| t.pr).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    assert_eq!(bisecting(&h), [vec![1, 2], vec![3, 4]]);
    h.update(SettingsPatch {
        bisection_concurrency: Some(1),
        ..Default::default()
    });
    assert_eq!(bisecting(&h), [vec![1, 2]]);
    h.answer_all(|content| !content.contains(&3));
    assert_eq!(h.state(3), Failed);
    // The others wait for a batch again, then merge together.
    h.advance_minutes(5);
    h.tick();
    h.answer_all(|content| !content.contains(&3));
    assert_eq!(h.merged_prs(), vec![1, 2, 4]);
    assert_eq!(h.state(3), Failed);
    h.assert_clean();
}

#[test]
fn a_failing_batch_ahead_restarts_the_groups_behind_without_it() {
    let mut h = batching(2, 2);
    for pr in 1..=4 {
        h.submit(pr);
    }
    let behind = h.run_of(3);
    assert_eq!(h.content_of(&behind), vec![1, 2, 3, 4]);
    h.fail_pr(1);
    h.fail_pr(3);
    // [1,2] fails (its window closed) and is bisected; [3,4] restarts without it.
    assert_eq!(h.content_of(&h.run_of(3)), vec![3, 4]);
    h.ok(Event::Tick);
    h.assert_clean();
}

#[test]
fn cancelling_a_pull_request_of_a_batch_restarts_the_batch_without_it() {
    let mut h = batching(3, 1);
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.ok(Event::Cancel {
        pr: 2,
        reason: mq_core::engine::CancelReason::Api,
    });
    assert_eq!(h.state(2), Cancelled);
    assert_eq!(h.content_of(&h.run_of(1)), vec![1, 3]);
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1, 3]);
    h.assert_clean();
}

#[test]
fn closing_a_pull_request_under_bisection_takes_it_out_of_its_split() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        concurrency: Some(1),
        bisection_concurrency: Some(2),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    let mut closed = h.facts(3);
    closed.state = mq_core::git::PrState::Closed;
    h.ok(Event::PrUpdated { pr: closed });
    assert_eq!(h.state(3), Cancelled);
    assert_eq!(
        h.content_of(&h.run_of(4)),
        vec![4],
        "the split goes on without 3"
    );
    h.assert_clean();
}

/// [1,2,3] fails; [1,2] is tested first and 2, the culprit, is cancelled while it is: the
/// split goes on as [1] and passes. [1] and [3] are not the halves of a set that failed, so
/// 3 is tested, not blamed.
#[test]
fn skipping_redundant_tests_implies_nothing_from_a_half_a_pull_request_left() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(3),
        concurrency: Some(1),
        bisection_concurrency: Some(1),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.fail_pr(1);
    assert_eq!(h.content_of(&h.run_of(1)), vec![1, 2]);
    h.ok(Event::Cancel {
        pr: 2,
        reason: mq_core::engine::CancelReason::Api,
    });
    let left = h.run_of(1);
    assert_eq!(h.content_of(&left), vec![1], "the split goes on without 2");
    h.pass(&left);
    assert_eq!(h.state(3), PendingFailure, "3 is not blamed");
    let right = h.run_of(3);
    assert_eq!(h.content_of(&right), vec![3], "3 is tested alone");
    h.pass(&right);
    assert_eq!(
        (h.state(1), h.state(3)),
        (Testing, Pending),
        "back in the queue, each with its own split"
    );
    assert_eq!(h.content_of(&h.run_of(1)), vec![1]);
    h.assert_clean();
}

/// [1,2] fails (1 is broken) and is bisected; while [1] tests, an urgent #9 (broken too)
/// comes ahead of everything and starts testing. [2] is tested on what was ahead of the
/// batch when it failed (nothing), not on #9's untested group: #9's failure blames #9
/// alone, and 2 goes back to the queue.
#[test]
fn a_split_is_tested_on_what_had_passed_ahead_of_its_batch_not_on_a_group_that_came_ahead() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(2),
        concurrency: Some(1),
        bisection_concurrency: Some(1),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    h.fail_pr(1);
    assert_eq!(h.content_of(&h.run_of(1)), vec![1], "[1] is tested first");
    h.submit_with(9, Priority::of(0), true);
    assert_eq!(h.content_of(&h.run_of(9)), vec![9]);
    h.fail_pr(1);
    assert_eq!(h.state(1), Failed);
    let split = h.run_of(2);
    assert_eq!(h.content_of(&split), vec![2], "not on #9");
    h.fail_pr(9);
    assert_eq!(h.state(9), Failed);
    h.pass(&split);
    assert_eq!(h.state(2), Testing, "2 was never the culprit");
    assert_eq!(h.content_of(&h.run_of(2)), vec![2]);
    h.assert_clean();
}

fn batch_of_four_failing() -> Harness {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        concurrency: Some(1),
        bisection_concurrency: Some(2),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    h
}

/// A batch that fails while its queue drains is still bisected: its pull requests are in
/// line, and the innocent ones are tested again with their split and merge, as they would on
/// a running queue: the drain finishes the line. Pull requests submitted after the batch
/// started do not start.
#[test]
fn a_batch_failing_while_the_queue_drains_is_bisected() {
    let mut h = batch_of_four_failing();
    h.submit(5);
    h.update(SettingsPatch {
        state: Some(mq_core::settings::RequestedState::Draining),
        ..Default::default()
    });
    h.fail_pr(1);
    assert_eq!(h.content_of(&h.run_of(1)), vec![1, 2]);
    assert_eq!(h.content_of(&h.run_of(3)), vec![3, 4]);
    h.fail_pr(1);
    h.pass_pr(3);
    assert_eq!(
        (h.state(3), h.state(4)),
        (Testing, Testing),
        "with their split"
    );
    assert_eq!(h.content_of(&h.run_of(3)), vec![3, 4]);
    h.fail_pr(1);
    h.pass_pr(2);
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.state(2), Pending, "waits for a testing slot");
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![3, 4]);
    assert_eq!(h.state(2), Testing);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![3, 4, 2]);
    assert_eq!(h.state(5), Pending, "nothing new starts");
    assert_eq!(h.testing_runs().len(), 0);
    h.assert_clean();
}

/// Group [1, 2] passed ahead of batch [3, 4], which fails while the queue is paused (so [1, 2]
/// waits to merge); a push to the target then sends [1, 2] back to be tested again. Switching
/// modes, the queue starts no new group: the bisection of [3, 4] does not wait for [1, 2] to
/// pass again, and the queue's failure is decided (the switch then ends). Draining, [1, 2] was
/// in line and tests again, and the bisection goes on once it merged. A draft #1 is not
/// waited for either way.
#[test]
fn a_bisection_goes_on_when_the_groups_it_was_tested_on_cannot_test_again() {
    use mq_core::settings::{QueueMode, QueueState, RequestedState};
    for (switch, draft) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut h = batching(2, 2);
        for pr in 1..=4 {
            h.submit(pr);
        }
        h.update(SettingsPatch {
            state: Some(RequestedState::Paused),
            ..Default::default()
        });
        h.pass_pr(1);
        h.fail_pr(3);
        h.push_outside();
        assert_eq!((h.state(1), h.state(2)), (Pending, Pending));
        if draft {
            let mut facts = h.facts(1);
            facts.draft = true;
            h.ok(Event::PrUpdated { pr: facts });
            assert_eq!(h.state(1), NotReady);
        }
        let next = match switch {
            true => SettingsPatch {
                mode: Some(QueueMode::Parallel),
                ..Default::default()
            },
            false => SettingsPatch {
                state: Some(RequestedState::Draining),
                ..Default::default()
            },
        };
        h.update(next);
        h.update(SettingsPatch {
            state: Some(if switch {
                RequestedState::Running
            } else {
                RequestedState::Draining
            }),
            ..Default::default()
        });
        for _ in 0..10 {
            h.answer_all(|content| !content.contains(&4));
        }
        assert_eq!(h.state(4), Failed, "switch: {switch}, draft: {draft}");
        assert!(
            h.snap.queue.engine.bisections.is_empty(),
            "switch: {switch}, draft: {draft}"
        );
        if switch {
            assert_eq!(h.snap.queue.state, QueueState::Running);
            assert_eq!(h.snap.queue.config.mode, QueueMode::Parallel);
        }
        h.assert_clean();
    }
}

/// The same on a running queue: group [1, 2], which batch [3, 4] failed on, went back to
/// waiting while the queue was paused, and #1 became a draft. Resumed, the queue tests #2
/// without #1, and the bisection does not wait for #1, which may stay a draft for good: its
/// splits are tested without #1, also once #1 is ready again.
#[test]
fn a_bisection_goes_on_when_a_group_it_was_tested_on_is_no_longer_ready() {
    use mq_core::settings::RequestedState;
    let mut h = batching(2, 2);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.update(SettingsPatch {
        state: Some(RequestedState::Paused),
        ..Default::default()
    });
    h.pass_pr(1);
    h.fail_pr(3);
    h.push_outside();
    let mut facts = h.facts(1);
    facts.draft = true;
    h.ok(Event::PrUpdated { pr: facts });
    assert_eq!(h.state(1), NotReady);
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    for _ in 0..10 {
        // #2, alone, waits for its batching wait (5 minutes).
        h.advance_minutes(6);
        h.tick();
        h.answer_all(|content| !content.contains(&4));
    }
    assert_eq!(h.state(4), Failed);
    assert!(h.snap.queue.engine.bisections.is_empty());
    // The Git host reads #1 ready again later: it merges too, in its place.
    assert_eq!(h.merged_prs(), vec![2, 1, 3]);
    h.assert_clean();
}

/// The same, with #1 made a draft while it had passed, before its group went back to waiting:
/// back in line, it is judged not ready, so it is not tested as a draft, and the bisection
/// does not wait for it.
#[test]
fn a_pull_request_made_a_draft_while_passed_is_not_ready_once_back_in_line() {
    use mq_core::settings::RequestedState;
    let mut h = batching(2, 2);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.update(SettingsPatch {
        state: Some(RequestedState::Paused),
        ..Default::default()
    });
    h.pass_pr(1);
    h.fail_pr(3);
    h.set_draft(1, true);
    assert_eq!(h.state(1), TestsPassed);
    h.push_outside();
    assert_eq!(h.state(1), NotReady);
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    for _ in 0..10 {
        h.advance_minutes(6);
        h.tick();
        h.answer_all(|content| !content.contains(&4));
    }
    assert_eq!(h.state(4), Failed);
    assert!(h.snap.queue.engine.bisections.is_empty());
    assert_eq!(h.merged_prs(), vec![2, 1, 3]);
    h.assert_clean();
}

/// A split is tested on the groups that had passed ahead of its batch: one of them tested
/// again in its place (an urgent pull request came ahead of it) may yet fail, so a split
/// testing on it stops, and is tested again once that group has its result: #2, which fails
/// only with #4, is not failed for #4's sake.
#[test]
fn a_split_tested_on_a_group_that_restarts_in_place_is_tested_again() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(2),
        batching_max_wait_time_minutes: Some(5),
        concurrency: Some(3),
        bisection_concurrency: Some(2),
        ..Default::default()
    });
    h.submit_with(1, Priority::default_priority(), true);
    h.submit_with(4, Priority::default_priority(), true);
    h.submit(2);
    h.submit(3);
    h.auto_execute = false;
    h.pass_pr(1);
    // #1's merge is under way all along: #4, passed behind it, waits for it.
    let at = h
        .pending
        .iter()
        .position(|x| matches!(x.effect, Effect::Merge { .. }))
        .unwrap();
    let merging = h.pending.remove(at).unwrap();
    h.execute_all();
    h.pass_pr(4);
    h.execute_all();
    // [2, 3] fails, and is bisected on [1, 4].
    h.fail_pr(2);
    h.execute_all();
    let split = h.run_of(2);
    h.submit_with(5, Priority::of(0), false);
    h.execute_all();
    assert_eq!(h.state(4), Testing, "tested again, behind #5");
    let stopped = h.run(&split).is_none_or(|r| r.is_finished());
    assert!(stopped, "the split waits for [4]'s result");
    let merged = h.execute(&merging.effect);
    h.ok(Event::EffectSucceeded {
        effect_id: merging.id,
        outcome: merged,
    });
    // #4 fails on #5; #2 and #3, tested without it, pass.
    h.auto_execute = true;
    h.fail_pr(4);
    h.answer_all(|content| !content.contains(&4));
    assert_eq!(h.state(4), Failed);
    assert_eq!(h.state(2), Merged);
    assert_eq!(h.state(3), Merged);
    h.assert_clean();
}

/// A group ahead that is not ready only for a while (the Git host still computing whether #1
/// merges cleanly) is not left behind: the splits wait for it to pass again.
#[test]
fn a_bisection_waits_for_a_group_ahead_that_is_not_ready_for_a_while() {
    use mq_core::settings::RequestedState;
    let mut h = batching(2, 2);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.update(SettingsPatch {
        state: Some(RequestedState::Paused),
        ..Default::default()
    });
    h.pass_pr(1);
    h.fail_pr(3);
    h.push_outside();
    h.computing_mergeability.insert(1);
    h.ok(Event::PrUpdated { pr: h.facts(1) });
    assert_eq!(h.state(1), NotReady);
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    for _ in 0..5 {
        h.advance_minutes(6);
        h.tick();
        h.answer_all(|content| !content.contains(&4));
        assert_eq!(
            (h.state(3), h.state(4)),
            (PendingFailure, PendingFailure),
            "the splits wait for #1"
        );
    }
    assert_eq!((h.state(1), h.state(2)), (NotReady, Merged));
    h.computing_mergeability.clear();
    for _ in 0..10 {
        h.advance_minutes(6);
        h.tick();
        h.answer_all(|content| !content.contains(&4));
    }
    assert_eq!(h.state(4), Failed);
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 2, 3]);
    h.assert_clean();
}

/// A batch [1, 2, 3, 4] that timed out is bisected; split [1, 2] fails its tests, and once
/// [1] passes, #2 is the culprit without a run of its own: it fails for its split's failed
/// tests, not for the batch's timeout.
#[test]
fn an_implied_culprit_fails_for_the_reason_of_the_set_it_was_half_of() {
    let mut h = batching(4, 1);
    h.update(SettingsPatch {
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        bisection_concurrency: Some(1),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    let timeout = h.snap.queue.config.testing_timeout_minutes;
    h.advance_minutes(timeout + 1);
    h.tick();
    for _ in 0..10 {
        h.answer_all(|content| !content.contains(&2));
    }
    assert_eq!(h.state(2), Failed);
    assert_eq!(
        h.conclusion(2),
        "tests_failed",
        "{}",
        h.conclusion_detail(2)
    );
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 3, 4]);
    h.assert_clean();
}

/// Batch [2, 3, 4, 5] fails while #1 waits to merge ahead of it (the queue is paused, then
/// the target moves); #1 turns into a draft and is left behind, and split [2, 3] fails
/// without it (#3 needs #1). Once #1 is ready again and merges, the splits test on a target
/// with #1: the failure of [2, 3] without #1 implies nothing, and [3] is tested, passes and
/// merges.
#[test]
fn a_failure_without_a_pull_request_left_behind_implies_nothing_once_it_merges() {
    use mq_core::settings::RequestedState;
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        concurrency: Some(2),
        bisection_concurrency: Some(1),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    h.submit_with(1, Priority::default_priority(), true);
    for pr in 2..=5 {
        h.submit(pr);
    }
    h.update(SettingsPatch {
        state: Some(RequestedState::Paused),
        ..Default::default()
    });
    h.pass_pr(1);
    h.fail_pr(2);
    h.push_outside();
    let mut draft = h.facts(1);
    draft.draft = true;
    h.ok(Event::PrUpdated { pr: draft });
    assert_eq!(h.state(1), NotReady);
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    let split = h.run_of(2);
    let content = h.content_of(&split);
    assert!(
        content.ends_with(&[2, 3]) && !content.contains(&1),
        "{content:?}"
    );
    h.fail(&split);
    let failed = &h.snap.queue.engine.bisections[0].failed_sets;
    assert!(failed.contains(&vec![2, 3]), "{failed:?}");
    // The Git host reads #1 ready again: it is tested, and merges.
    h.advance_minutes(1);
    h.tick();
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
    let needs_one = |content: &Vec<u32>| content.contains(&1) || !content.contains(&3);
    for _ in 0..10 {
        h.advance_minutes(1);
        h.tick();
        h.answer_all(needs_one);
    }
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 2, 3, 4, 5]);
    h.assert_clean();
}

/// The same with a direct merge: #1's (nothing tested) is under way while batch [2, 3, 4, 5]
/// and its split [2, 3] fail without #1; once #1 lands, [2, 3]'s failure implies nothing.
#[test]
fn a_failure_before_a_direct_merge_landed_implies_nothing_once_it_did() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        bisection_concurrency: Some(1),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        direct_merge_mode: Some(mq_core::settings::DirectMergeMode::Always),
        ..Default::default()
    });
    h.green_heads.insert(1);
    h.auto_execute = false;
    h.submit_up_to_date(1);
    let direct = h
        .pending
        .iter()
        .find(|x| matches!(x.effect, Effect::Merge { run_id: None, .. }))
        .expect("a direct merge")
        .clone();
    h.pending.retain(|x| x.id != direct.id);
    h.auto_execute = true;
    for pr in 2..=5 {
        h.submit(pr);
    }
    h.fail(&h.run_of(2));
    let split = h.run_of(2);
    let content = h.content_of(&split);
    assert!(
        content.ends_with(&[2, 3]) && !content.contains(&1),
        "{content:?}"
    );
    h.fail(&split);
    let outcome = h.execute(&direct.effect);
    h.ok(Event::EffectSucceeded {
        effect_id: direct.id,
        outcome,
    });
    assert_eq!(h.state(1), Merged);
    let needs_one = |content: &Vec<u32>| content.contains(&1) || !content.contains(&3);
    for _ in 0..10 {
        h.answer_all(needs_one);
    }
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, vec![1, 2, 3, 4, 5]);
}

/// Batch [2, 3, 4, 5] fails on #1, which passed ahead of it, because #4 clashes with #1. Then
/// #1 is closed before it merges: the splits are tested without it, and the failure of the
/// batch on #1 implies nothing of them. Skipping redundant tests, [4, 5] is still tested
/// after [2, 3] passes, and nobody fails.
#[test]
fn skipping_redundant_tests_implies_nothing_once_the_base_of_the_bisection_changed() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        concurrency: Some(2),
        bisection_concurrency: Some(1),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    h.submit_with(1, Priority::default_priority(), true);
    for pr in 2..=5 {
        h.submit(pr);
    }
    assert_eq!(h.content_of(&h.run_of(2)), vec![1, 2, 3, 4, 5]);
    h.auto_execute = false;
    h.pass_pr(1);
    h.fail_pr(2);
    assert_eq!(h.state(4), PendingFailure);
    h.host.closed.insert(1);
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.state(1), Cancelled);
    for _ in 0..10 {
        h.answer_all(|content| !(content.contains(&1) && content.contains(&4)));
    }
    assert_eq!(h.merged_prs(), vec![2, 3, 4, 5]);
    h.assert_clean();
}

/// Batch [4, 5] fails on group [2, 3] ahead of it (#5 clashes with #2). [2, 3] is then sent back
/// to wait while the queue starts nothing new (a switch to `merge_commit` restarts it, #1 having
/// landed as a squash, on a paused queue), and the queue switches modes: the splits are tested
/// without [2, 3], so the batch's failure implies nothing of them. Skipping redundant tests, [5]
/// is still tested after [4] passes, and does not fail.
#[test]
fn a_bisection_tested_without_groups_left_waiting_implies_nothing() {
    use mq_core::settings::{MergeMethod, RequestedState};
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(2),
        concurrency: Some(3),
        bisection_concurrency: Some(1),
        merge_method: Some(MergeMethod::Squash),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    h.submit_with(1, Priority::default_priority(), true);
    for pr in 2..=5 {
        h.submit(pr);
    }
    assert_eq!(h.content_of(&h.run_of(4)), vec![1, 2, 3, 4, 5]);
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
    h.update(SettingsPatch {
        state: Some(RequestedState::Paused),
        ..Default::default()
    });
    h.pass_pr(2);
    h.fail_pr(4);
    assert_eq!(h.state(5), PendingFailure);
    h.update(SettingsPatch {
        merge_method: Some(MergeMethod::MergeCommit),
        ..Default::default()
    });
    assert_eq!((h.state(2), h.state(3)), (Pending, Pending));
    h.update(SettingsPatch {
        mode: Some(mq_core::settings::QueueMode::Parallel),
        ..Default::default()
    });
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    for _ in 0..10 {
        h.answer_all(|content| !(content.contains(&2) && content.contains(&5)));
    }
    assert_ne!(h.state(5), Failed);
    assert!(h.snap.queue.engine.bisections.is_empty());
    h.assert_clean();
}

/// A mode switch waits for a bisection: the failure is not decided yet.
#[test]
fn a_mode_switch_waits_for_a_bisection_to_end() {
    use mq_core::settings::{QueueMode, QueueState};
    let mut h = batch_of_four_failing();
    h.update(SettingsPatch {
        bisection_concurrency: Some(1),
        ..Default::default()
    });
    h.fail_pr(1);
    h.update(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        ..Default::default()
    });
    let mut splits = 0;
    while !h.snap.queue.engine.bisections.is_empty() {
        assert_eq!(h.snap.queue.state, QueueState::SwitchingModes);
        let run = h.testing_runs()[0].id.clone();
        if h.content_of(&run).contains(&1) {
            h.fail(&run);
        } else {
            h.pass(&run);
        }
        splits += 1;
    }
    assert_eq!(splits, 4, "[1,2], [3,4], [1], [2]");
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.snap.queue.state, QueueState::Running);
    assert_eq!(h.snap.queue.config.mode, QueueMode::Parallel);
    h.assert_clean();
}

#[test]
fn skipping_redundant_tests_tests_the_halves_one_after_the_other() {
    let mut h = Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(4),
        concurrency: Some(1),
        bisection_concurrency: Some(4),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    let halves: Vec<Vec<u32>> = h
        .testing_runs()
        .iter()
        .filter(|r| r.kind == RunKind::Bisection)
        .map(|r| r.tested.iter().map(|t| t.pr).collect())
        .collect();
    assert_eq!(
        halves,
        vec![vec![1, 2]],
        "the second half waits for the first"
    );
    h.fail_pr(1);
    // [1,2] failed: [3,4] is still needed (it may hold another culprit), and [1,2] splits.
    let mut testing: Vec<Vec<u32>> = h
        .testing_runs()
        .iter()
        .map(|r| r.tested.iter().map(|t| t.pr).collect())
        .collect();
    testing.sort();
    assert_eq!(testing, vec![vec![1], vec![3, 4]]);
}

fn skipping_redundant_tests(min_size: u32, concurrency: u32) -> Harness {
    Harness::with(SettingsPatch {
        batch: Some(true),
        batching_min_size: Some(min_size),
        concurrency: Some(concurrency),
        bisection_concurrency: Some(1),
        optimization_mode: Some(OptimizationMode::BisectionSkipRedundantTests),
        ..Default::default()
    })
}

/// [1,2,3,4] fails and [1,2] is tested; the target moves, then [1,2] fails: a result on the
/// old target. On the new one, [1] passing implies nothing of [2]: 2 is tested, not blamed.
#[test]
fn a_split_that_fails_on_the_target_before_it_moved_implies_nothing_after() {
    let mut h = skipping_redundant_tests(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    let left = h.run_of(1);
    assert_eq!(h.content_of(&left), vec![1, 2]);
    h.push_outside();
    h.fail(&left);
    h.pass_pr(3);
    assert_eq!(tested(&h, 1), vec![1]);
    h.pass_pr(1);
    assert_ne!(h.state(2), Failed, "2 was never tested on the new target");
    assert_eq!(tested(&h, 2), vec![2], "2 is tested alone");
    h.pass_pr(2);
    assert_ne!(h.state(2), Failed);
    h.assert_clean();
}

/// The pull requests the run testing `pr` tests.
fn tested(h: &Harness, pr: u32) -> Vec<u32> {
    let run = h.run(&h.run_of(pr)).expect("a run tests it");
    run.tested.iter().map(|t| t.pr).collect()
}

/// [2,3,4,5] fails on top of #1, which passed; #1 gets new commits and leaves the queue
/// before the splits test, so they test without it, and [2,3] fails. #1, submitted again, is
/// a new entry, not the base [2,3] failed on: the next split is tested without it, at once,
/// not on it once it passes (its result would imply a culprit from results on two bases).
#[test]
fn a_pull_request_that_left_a_bisection_s_base_and_came_back_is_not_its_base() {
    use mq_core::settings::RequestedState;
    let mut h = skipping_redundant_tests(4, 2);
    h.submit_with(1, Priority::default_priority(), true);
    for pr in 2..=5 {
        h.submit(pr);
    }
    assert_eq!(tested(&h, 2), vec![2, 3, 4, 5]);
    let state = |state| SettingsPatch {
        state: Some(state),
        ..Default::default()
    };
    h.update(state(RequestedState::Paused));
    h.pass_pr(1);
    h.fail_pr(2);
    h.push_to_pr(1);
    assert_eq!(h.state(1), Cancelled);
    h.update(state(RequestedState::Running));
    let split = h.run_of(2);
    assert_eq!(tested(&h, 2), vec![2, 3]);
    h.submit_with(1, Priority::default_priority(), true);
    assert_eq!(h.state(1), Testing);
    h.fail(&split);
    let next = h.run(&h.run_of(4)).expect("[4,5] is tested at once");
    assert_eq!(next.kind, RunKind::Bisection);
    assert!(next.dependent_prs.is_empty(), "{:?}", next.dependent_prs);
    for _ in 0..10 {
        h.answer_at_most(20, |c| c.contains(&1) || !c.contains(&3));
        h.tick();
    }
    assert_eq!(h.state(1), Merged);
    h.assert_clean();
}

/// A restart of a pull request whose split is testing tests the split again, and counts as a
/// restart of each of its pull requests. One whose split waits to test has nothing to re-run:
/// refused, and nothing changes.
#[test]
fn a_restart_of_a_split_counts_for_its_pull_requests() {
    let mut h = skipping_redundant_tests(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    let split = h.run_of(1);
    assert_eq!(tested(&h, 1), vec![1, 2]);
    h.ok(Event::Restart { pr: 2 });
    let again = h.run_of(1);
    assert_ne!(again, split, "tested again");
    assert_eq!(tested(&h, 1), vec![1, 2]);
    let restarts = |h: &Harness, pr| h.entry(pr).unwrap().restarts;
    assert_eq!(
        (restarts(&h, 1), restarts(&h, 2), restarts(&h, 3)),
        (1, 1, 0)
    );
    assert_eq!(h.state(3), PendingFailure);
    let before = h.snap.clone();
    let waiting = h.apply(Event::Restart { pr: 3 }).unwrap_err();
    assert_eq!(waiting.code, mq_core::ErrorCode::PullRequestNotTesting);
    assert!(
        waiting.message.contains("not started testing"),
        "{waiting:?}"
    );
    assert_eq!(h.snap, before, "nothing changed");
    h.assert_clean();
}

/// Groups back from the splits of a failed batch go back to wait before their result (the
/// queue is paused and the target moves): they keep to their splits when tested again, not
/// batched together into the set that failed.
#[test]
fn pull_requests_back_from_a_split_stay_with_it_when_their_group_goes_back_to_wait() {
    use mq_core::settings::RequestedState;
    let mut h = batching(4, 2);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    h.pass(&h.run_of(1));
    h.pass(&h.run_of(3));
    assert_eq!((tested(&h, 1), tested(&h, 3)), (vec![1, 2], vec![3, 4]));
    let state = |state| SettingsPatch {
        state: Some(state),
        ..Default::default()
    };
    h.update(state(RequestedState::Paused));
    h.push_outside();
    assert_eq!((h.state(1), h.state(3)), (Pending, Pending));
    h.update(state(RequestedState::Running));
    assert_eq!((tested(&h, 1), tested(&h, 3)), (vec![1, 2], vec![3, 4]));
    h.assert_clean();
}

/// `batchingMinSize` lowered while a batch is bisected: a split back from it is tested in
/// groups of at most the new size.
#[test]
fn a_split_back_in_line_is_tested_in_groups_of_at_most_the_batch_size() {
    let mut h = batching(4, 1);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    h.update(SettingsPatch {
        batching_min_size: Some(1),
        ..Default::default()
    });
    h.pass(&h.run_of(1));
    assert_eq!(tested(&h, 1), vec![1]);
    h.assert_clean();
}
