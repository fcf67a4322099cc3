//! Scenarios for parallel mode: lanes from impacted targets (docs/queue-semantics.md §7).

mod support;

use mq_core::ErrorCode;
use mq_core::effects::PendingEffect;
use mq_core::engine::view::readiness;
use mq_core::engine::{Effect, Event};
use mq_core::entry::EntryState::*;
use mq_core::entry::ImpactedTargets;
use mq_core::ids::Sha;
use mq_core::settings::{DirectMergeMode, MergeMethod, QueueMode, RequestedState, SettingsPatch};
use support::Harness;

fn parallel(concurrency: u32) -> Harness {
    Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(concurrency),
        ..Default::default()
    })
}

#[test]
fn without_impacted_targets_an_entry_stays_not_ready() {
    let mut h = parallel(4);
    h.submit(1);
    assert_eq!(h.state(1), NotReady);
    let ready = readiness(&h.snap.queue, h.entry(1).unwrap());
    assert!(ready.requires_impacted_targets);
    assert!(!ready.has_impacted_targets);
    h.set_targets(1, &["//app"]);
    assert_eq!(h.state(1), Testing);
    assert!(readiness(&h.snap.queue, h.entry(1).unwrap()).has_impacted_targets);
}

/// A pull request waiting only for its impacted targets is read again at the slow pace (one
/// tick in ten), never every minute: a close whose delivery was lost still takes it out.
#[test]
fn a_pull_request_waiting_for_its_targets_is_read_again_now_and_then() {
    let mut h = parallel(4);
    h.submit(1);
    h.auto_execute = false;
    let mut reads = 0;
    for _ in 0..30 {
        h.advance_minutes(1);
        h.snap.outbox.clear();
        let t = h.tick();
        let read = |x: &&PendingEffect| x.effect == Effect::RefreshPullRequest { pr: 1 };
        reads += t.effects.iter().filter(read).count();
    }
    assert_eq!(reads, 3, "one tick in ten");
}

#[test]
fn targets_for_another_sha_are_refused() {
    let mut h = parallel(4);
    h.submit(1);
    let err = h
        .apply(Event::SetImpactedTargets {
            pr: 1,
            head_sha: Sha::new("f".repeat(40)),
            targets: ImpactedTargets::All,
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ShaMismatch);
    assert_eq!(h.state(1), NotReady);
}

#[test]
fn a_new_head_cancels_the_entry_and_its_targets_go_with_it() {
    let mut h = parallel(4);
    h.submit(1);
    h.set_targets(1, &["//app"]);
    h.push_to_pr(1);
    assert_eq!(h.state(1), Cancelled);
    h.submit(1);
    assert_eq!(h.state(1), NotReady, "targets are needed for the new head");
}

#[test]
fn entries_depend_on_intersecting_entries_ahead_transitively() {
    let mut h = parallel(4);
    for (pr, targets) in [
        (1, vec!["a"]),
        (2, vec!["b"]),
        (3, vec!["a", "c"]),
        (4, vec!["c"]),
    ] {
        h.submit(pr);
        h.set_targets(pr, &targets);
    }
    assert_eq!(h.content_of(&h.run_of(1)), vec![1]);
    assert_eq!(
        h.content_of(&h.run_of(2)),
        vec![2],
        "disjoint: its own lane"
    );
    assert_eq!(h.content_of(&h.run_of(3)), vec![1, 3]);
    assert_eq!(
        h.content_of(&h.run_of(4)),
        vec![1, 3, 4],
        "through 3, 4 depends on 1"
    );
    let run = h.run(&h.run_of(4)).unwrap().clone();
    assert_eq!(run.dependent_prs, vec![1, 3]);
    assert_eq!(
        run.impacted_targets,
        Some(vec!["a".to_owned(), "c".to_owned()])
    );
    assert_eq!(
        run.impacted_targets_for_tested_prs,
        Some(vec!["c".to_owned()])
    );
}

/// A lane whose pull requests name more than a run keeps reports `ALL` for the union, and
/// its own list while that fits.
#[test]
fn a_run_keeps_at_most_64_kib_of_target_names_in_each_list() {
    let mut h = parallel(4);
    let names = |pr: u32| -> Vec<String> {
        (0..40)
            .map(|i| format!("//lane/{pr}/{i:02}/{}", "x".repeat(1000)))
            .collect()
    };
    for pr in 1..=2 {
        h.submit(pr);
        let mut targets = names(pr);
        targets.push("//shared".to_owned());
        let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
        h.set_targets(pr, &targets);
    }
    let run = h.run(&h.run_of(2)).unwrap().clone();
    assert_eq!(run.dependent_prs, vec![1]);
    assert_eq!(
        run.impacted_targets,
        Some(vec!["ALL".to_owned()]),
        "80 KB together"
    );
    let own = run.impacted_targets_for_tested_prs.unwrap();
    assert_eq!(own.len(), 41, "40 KB of its own");
    let bytes: usize = own.iter().map(String::len).sum();
    assert!(bytes <= mq_core::run::MAX_RUN_TARGETS_BYTES, "{bytes}");
}

#[test]
fn all_intersects_everything() {
    let mut h = parallel(4);
    h.submit(1);
    h.set_targets(1, &["a"]);
    h.submit(2);
    h.ok(Event::SetImpactedTargets {
        pr: 2,
        head_sha: h.head(2),
        targets: ImpactedTargets::All,
    });
    h.submit(3);
    h.set_targets(3, &["z"]);
    assert_eq!(h.content_of(&h.run_of(2)), vec![1, 2]);
    assert_eq!(h.content_of(&h.run_of(3)), vec![1, 2, 3]);
}

#[test]
fn disjoint_lanes_merge_independently() {
    let mut h = parallel(4);
    for (pr, t) in [(1, "a"), (2, "b")] {
        h.submit(pr);
        h.set_targets(pr, &[t]);
    }
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![2], "2 does not wait for 1");
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![2, 1]);
    // 1 was tested without 2: its merge carries no tested sha (the target moved on).
    let merges = h.emitted_where(|e| matches!(e, Effect::Merge { .. }));
    let Effect::Merge { tested_sha, .. } = merges[1] else {
        unreachable!()
    };
    assert_eq!(tested_sha, &None);
}

/// Lanes that finish out of order: 3 is tested on 1 and 2 (it intersects both), and 2 merges
/// first. 3's branch then holds 2's merge between 1's and its own, which no merge of 1 and 3
/// can land as tested: its merge carries no tested commit, and nobody fails.
#[test]
fn a_run_whose_lanes_merge_out_of_its_order_is_merged_without_its_tested_commit() {
    for method in [
        MergeMethod::Squash,
        MergeMethod::Rebase,
        MergeMethod::MergeCommit,
    ] {
        let mut h = Harness::with(SettingsPatch {
            mode: Some(QueueMode::Parallel),
            concurrency: Some(3),
            merge_method: Some(method),
            ..Default::default()
        });
        for (pr, t) in [(1, &["x"][..]), (2, &["y"]), (3, &["x", "y"])] {
            h.submit(pr);
            h.set_targets(pr, t);
        }
        assert_eq!(h.content_of(&h.run_of(3)), vec![1, 2, 3]);
        h.pass_pr(2);
        h.pass_pr(3);
        h.pass_pr(1);
        assert_eq!(h.merged_prs(), vec![2, 1, 3], "{method:?}");
        h.assert_clean();
    }
}

#[test]
fn a_failure_restarts_only_the_entries_that_depend_on_it() {
    let mut h = parallel(4);
    for (pr, t) in [(1, "a"), (2, "b"), (3, "a"), (4, "b")] {
        h.submit(pr);
        h.set_targets(pr, &[t]);
    }
    let (r2, r4) = (h.run_of(2), h.run_of(4));
    h.fail_pr(1);
    h.fail_pr(3);
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.content_of(&h.run_of(3)), vec![3], "3 restarts without 1");
    assert_eq!((h.run_of(2), h.run_of(4)), (r2, r4), "lane b untouched");
    assert_eq!(
        h.entry(2).unwrap().restarts + h.entry(4).unwrap().restarts,
        0
    );
    h.assert_clean();
}

#[test]
fn a_mode_change_makes_entries_without_targets_wait() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(1),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    assert_eq!(h.state(2), Pending);
    h.update(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        ..Default::default()
    });
    assert_eq!(
        h.snap.queue.state,
        mq_core::settings::QueueState::SwitchingModes
    );
    h.pass_pr(1);
    assert_eq!(h.snap.queue.config.mode, QueueMode::Parallel);
    assert_eq!(h.state(2), NotReady, "parallel mode needs impacted targets");
    h.set_targets(2, &["x"]);
    assert_eq!(h.state(2), Testing);
}

/// A pull request merged directly while a group of its lane started (its targets came in
/// while the merge was under way): the group was built without it, so once it lands the group
/// tests again on the target that holds it, instead of merging what was never tested. A group
/// of another lane only diverges.
#[test]
fn a_group_of_the_lane_of_a_direct_merge_under_way_tests_again_once_it_lands() {
    let mut h = Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(3),
        direct_merge_mode: Some(DirectMergeMode::Always),
        ..Default::default()
    });
    h.auto_execute = false;
    h.green_heads.insert(1);
    h.submit_up_to_date(1);
    h.set_targets(1, &["b"]);
    h.submit(2);
    h.set_targets(2, &["b"]);
    h.submit(3);
    h.set_targets(3, &["c"]);
    h.execute_all();
    h.auto_execute = true;
    assert_eq!(h.state(1), Merged);
    assert!(
        h.content_of(&h.run_of(2)).contains(&1),
        "2 tests again on 1"
    );
    assert!(
        !h.content_of(&h.run_of(3)).contains(&1),
        "3 is of another lane"
    );
    h.pass_pr(2);
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![1, 2, 3]);
    h.assert_clean();
}

/// #2 passed and its merge was withdrawn (the queue paused before it was sent), after #3,
/// which depends on #1 and #2, was built on top of #2's merge to come: #3's branch holds #2,
/// #1, #3 in that order. Once the queue runs again, the three merge in that order, the one
/// their tested commit holds (a squash or rebase writes each pull request's tree from it).
#[test]
fn a_withdrawn_merge_lands_in_the_order_the_tested_branch_holds() {
    for method in [MergeMethod::Squash, MergeMethod::Rebase] {
        let mut h = Harness::with(SettingsPatch {
            mode: Some(QueueMode::Parallel),
            concurrency: Some(3),
            merge_method: Some(method),
            ..Default::default()
        });
        for (pr, t) in [(1, &["x"][..]), (2, &["y"])] {
            h.submit(pr);
            h.set_targets(pr, t);
        }
        h.auto_execute = false;
        h.pass_pr(2);
        let merge = h
            .pending
            .iter()
            .find(|x| matches!(x.effect, Effect::Merge { .. }))
            .expect("#2's merge")
            .clone();
        h.pending.retain(|x| x.id != merge.id);
        h.auto_execute = true;
        h.execute_all();
        h.submit(3);
        h.set_targets(3, &["x", "y"]);
        assert_eq!(h.content_of(&h.run_of(3)), vec![2, 1, 3], "{method:?}");
        h.update(SettingsPatch {
            state: Some(mq_core::settings::RequestedState::Paused),
            ..Default::default()
        });
        h.ok(Event::MergeWithdrawn {
            effect_id: merge.id.clone(),
        });
        h.pass_pr(1);
        h.pass_pr(3);
        h.update(SettingsPatch {
            state: Some(mq_core::settings::RequestedState::Running),
            ..Default::default()
        });
        assert_eq!(h.merged_prs().len(), 3, "{method:?}: {:?}", h.conclusion(1));
        assert_eq!(h.host.target, vec![2, 1, 3], "{method:?}");
        h.assert_clean();
    }
}

/// #3's run (built on #1 and #2) merges without its tested commit, one pull request at a
/// time, once #2's lane merged first. While #1's merge is under way, #3 is being merged too:
/// a cancel is refused, and nothing restarts.
#[test]
fn the_pull_requests_of_a_merge_one_at_a_time_are_all_being_merged() {
    let mut h = Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(3),
        merge_method: Some(MergeMethod::Squash),
        ..Default::default()
    });
    for (pr, t) in [(1, &["x"][..]), (2, &["y"]), (3, &["x", "y"])] {
        h.submit(pr);
        h.set_targets(pr, t);
    }
    h.pass_pr(2);
    h.pass_pr(3);
    h.auto_execute = false;
    h.pass_pr(1);
    let merges = h.emitted_where(|e| {
        matches!(
            e,
            Effect::Merge {
                tested_sha: None,
                ..
            }
        )
    });
    assert_eq!(merges.len(), 1, "{merges:?}");
    let cancel = h.apply(Event::Cancel {
        pr: 3,
        reason: mq_core::engine::CancelReason::Api,
    });
    let refused = cancel.expect_err("#3 is being merged");
    assert_eq!(Harness::code(&refused), ErrorCode::PullRequestMerging);
    assert_eq!(h.state(3), TestsPassed);
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.merged_prs(), vec![2, 1, 3]);
    h.assert_clean();
}

/// A failed group's pending-failure window in parallel mode: #1 {x} fails (a flake) while
/// #2 {y} tests, and its slot goes to #3 {y}, which came first. #4 {x}, which would be tested
/// on #1, waits for a slot: the window stays open for it instead of closing empty, and #4's
/// pass clears #1.
#[test]
fn a_failure_window_waits_for_a_slot_other_lanes_hold() {
    let mut h = Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(2),
        can_optimistically_merge: Some(true),
        pending_failure_depth: Some(1),
        ..Default::default()
    });
    for (pr, target) in [(1, "x"), (2, "y"), (3, "y"), (4, "x")] {
        h.submit(pr);
        h.set_targets(pr, &[target]);
    }
    h.fail_pr(1);
    assert_eq!(h.state(1), PendingFailure);
    assert_eq!(h.state(4), Pending, "every slot is held");
    h.pass_pr(2);
    assert!(h.content_of(&h.run_of(4)).contains(&1), "#4 on #1");
    h.pass_pr(4);
    h.pass_pr(3);
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, [1, 2, 3, 4]);
    h.assert_clean();
}

/// The merge cap in parallel mode: ten pull requests of lane x, one of lane y, and #12 on
/// both, all passed while the queue was paused. A merge stopping after lane x's ten leaves #12
/// predicting the target (#11, of the other lane, stops predicting whatever the stop, and
/// lands with #12): 10, then 2.
#[test]
fn the_merge_cap_stops_within_a_lane() {
    let mut h = Harness::with(SettingsPatch {
        mode: Some(QueueMode::Parallel),
        concurrency: Some(12),
        merge_method: Some(MergeMethod::Squash),
        ..Default::default()
    });
    for pr in 1..=12 {
        h.submit(pr);
        let targets: &[&str] = match pr {
            11 => &["y"],
            12 => &["x", "y"],
            _ => &["x"],
        };
        h.set_targets(pr, targets);
    }
    h.update(SettingsPatch {
        state: Some(RequestedState::Paused),
        ..Default::default()
    });
    for pr in 1..=12 {
        h.pass_pr(pr);
    }
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    let sizes = h.merge_sizes();
    assert_eq!(sizes, [10, 2]);
    let mut merged = h.merged_prs();
    merged.sort_unstable();
    assert_eq!(merged, (1..=12).collect::<Vec<_>>());
    h.assert_clean();
}
