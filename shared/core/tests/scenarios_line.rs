//! Scenarios for submissions, priorities, entry states and predictive testing in single mode
//! (docs/queue-semantics.md §3, §4, §5), one or more per rule.

mod support;

use mq_core::ErrorCode;
use mq_core::engine::{CancelReason, Effect, EffectOutcome, Event, MAX_ATTEMPTS};
use mq_core::entry::EntryState::*;
use mq_core::git::{Mergeability, PrState};
use mq_core::priority::Priority;
use mq_core::run::RunStatus;
use mq_core::settings::{RequestedState, SettingsPatch};
use support::{CI, Harness};

fn queue(concurrency: u32) -> Harness {
    Harness::with(SettingsPatch {
        concurrency: Some(concurrency),
        ..Default::default()
    })
}

// ---- docs/queue-semantics.md §3 submissions and priorities
// -------------------------------------------------------

#[test]
fn a_submission_without_priority_is_medium_and_marked_default() {
    let mut h = queue(1);
    h.submit(1);
    let e = h.entry(1).unwrap();
    assert_eq!(
        (e.priority.value, e.priority.name()),
        (100, "medium".into())
    );
    assert!(e.priority.defaulted);
    assert!(!e.force_enqueued);
}

#[test]
fn resubmitting_an_active_pull_request_updates_priority_and_no_batch_in_place() {
    let mut h = queue(1);
    h.submit(1);
    h.submit(2);
    let id = h.entry(2).unwrap().id.clone();
    h.submit_with(2, Priority::of(10), true);
    let e = h.entry(2).unwrap();
    assert_eq!(e.id, id, "same entry");
    assert_eq!((e.priority.value, e.no_batch), (10, true));
    assert_eq!(h.snap.entries.len(), 2);
}

#[test]
fn resubmitting_without_a_priority_or_no_batch_keeps_what_the_entry_has() {
    let mut h = queue(1);
    h.submit(1);
    h.submit_with(2, Priority::of(0), true);
    let again = h.facts(2);
    h.ok(Event::Submit {
        pr: again,
        priority: Priority::default_priority(),
        no_batch: None,
        force: false,
        head_checks_passed: false,
    });
    let e = h.entry(2).unwrap();
    assert_eq!((e.priority, e.no_batch), (Priority::of(0), true), "kept");
    // Submitted with a new head before the webhook told: a new entry, the priority kept.
    let mut facts = h.facts(2);
    facts.head_sha = mq_core::ids::Sha::new("f".repeat(40));
    let first = h.entry(2).unwrap().id.clone();
    h.submit_facts(facts).unwrap();
    assert_ne!(h.entry(2).unwrap().id, first);
    assert_eq!(h.entry(2).unwrap().priority, Priority::of(0));
    h.submit_with(2, Priority::of(200), false);
    assert_eq!(
        h.entry(2).unwrap().priority.value,
        200,
        "a given priority still applies"
    );
}

/// A resubmission at the same head brings what the Git host says now: a draft marked ready
/// since (its webhook lost) tests at once, not when the tick next reads the pull request.
#[test]
fn resubmitting_at_the_same_head_takes_the_pull_request_as_the_host_describes_it_now() {
    let mut h = queue(1);
    let mut draft = h.facts(1);
    draft.draft = true;
    draft.title = "WIP: Change 1".into();
    h.submit_facts(draft).unwrap();
    assert_eq!(h.entry(1).unwrap().state, NotReady);
    let id = h.entry(1).unwrap().id.clone();

    h.submit(1);
    let e = h.entry(1).unwrap();
    assert_eq!(e.id, id, "same entry");
    assert_eq!((e.state, e.pr_facts.title.as_str()), (Testing, "Change 1"));
}

#[test]
fn resubmitting_after_a_terminal_state_creates_a_new_entry() {
    let mut h = queue(1);
    h.submit(1);
    let first = h.entry(1).unwrap().id.clone();
    h.ok(Event::Cancel {
        pr: 1,
        reason: CancelReason::Api,
    });
    h.submit(1);
    let second = h.entry(1).unwrap().id.clone();
    assert_ne!(first, second);
    assert_eq!(h.concluded[0].state, Cancelled);
}

#[test]
fn waiting_entries_go_by_priority_then_submission() {
    let mut h = queue(1);
    h.submit(1); // tests first
    h.submit_with(2, Priority::of(200), false);
    h.submit_with(3, Priority::of(100), false);
    h.submit_with(4, Priority::of(10), false);
    h.submit_with(5, Priority::of(10), false);
    let order: Vec<u32> = mq_core::engine::view::queue_order(&h.snap)
        .iter()
        .map(|e| e.pr)
        .collect();
    assert_eq!(order, vec![1, 4, 5, 3, 2]);
}

#[test]
fn a_higher_priority_never_interrupts_a_running_test() {
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    h.submit_with(2, Priority::of(10), false);
    assert_eq!(h.state(1), Testing);
    assert_eq!(h.run_of(1), run, "the running test goes on");
    assert_eq!(h.state(2), Pending);
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.state(2), Testing);
    h.assert_clean();
}

#[test]
fn urgent_goes_to_the_front_and_groups_behind_restart_on_top_of_it() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    let run1 = h.run_of(1);
    h.submit_with(3, Priority::from_name("urgent").unwrap(), false);
    // 3 tests first; 1 restarts on top of 3; 2 is beyond the limit and waits.
    let urgent_run = h.run_of(3);
    assert_eq!(h.content_of(&urgent_run), vec![3]);
    assert_ne!(h.run_of(1), run1);
    assert_eq!(h.content_of(&h.run_of(1)), vec![3, 1]);
    assert_eq!(h.state(2), Pending);
    assert!(h.entry(2).unwrap().current_run.is_none());
    assert_eq!(h.entry(1).unwrap().restarts, 1);
    let order: Vec<u32> = mq_core::engine::view::queue_order(&h.snap)
        .iter()
        .map(|e| e.pr)
        .collect();
    assert_eq!(order, vec![3, 1, 2]);
    h.pass_pr(3);
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![3, 1]);
    h.assert_clean();
}

#[test]
fn draining_and_switching_queues_refuse_submissions() {
    let mut h = queue(1);
    h.update(SettingsPatch {
        state: Some(RequestedState::Draining),
        ..Default::default()
    });
    let facts = h.facts(1);
    let err = h.submit_facts(facts).unwrap_err();
    assert_eq!(err.code, ErrorCode::QueueDraining);
    assert!(err.message.contains("draining"));
    assert!(h.snap.entries.is_empty());
}

// ---- docs/queue-semantics.md §4 entry states and transitions
// ------------------------------------------------------

#[test]
fn a_pull_request_that_is_not_mergeable_waits_not_ready_until_it_is() {
    let mut h = queue(1);
    let mut facts = h.facts(1);
    facts.mergeability = Mergeability::InProgress;
    h.submit_facts(facts.clone()).unwrap();
    assert_eq!(h.state(1), NotReady);
    let readiness = mq_core::engine::view::readiness(&h.snap.queue, h.entry(1).unwrap());
    assert!(readiness.does_base_branch_match);
    assert!(!readiness.requires_impacted_targets);
    // The tick asks the Git host again; it now says mergeable.
    h.advance_minutes(1);
    h.tick();
    assert_eq!(h.state(1), Testing);
    assert!(
        !h.emitted_where(|e| matches!(e, Effect::RefreshPullRequest { pr: 1 }))
            .is_empty()
    );
}

/// A read of a pull request emitted for an earlier entry of it (a draft, cancelled when its
/// author pushed) answers after the pull request was submitted again: the answer may be
/// older than the submission, which read the pull request itself, so it does not cancel the
/// new entry for "new commits".
#[test]
fn a_read_emitted_for_an_earlier_entry_does_not_cancel_the_new_one() {
    let mut h = queue(1);
    h.auto_execute = false;
    let mut draft = h.facts(1);
    draft.draft = true;
    h.submit_facts(draft.clone()).unwrap();
    assert_eq!(h.state(1), NotReady);
    h.advance_minutes(1);
    h.tick();
    let read = h
        .snap
        .outbox
        .iter()
        .find(|x| x.effect == Effect::RefreshPullRequest { pr: 1 })
        .expect("the draft is read again")
        .clone();
    h.advance_minutes(1);
    h.push_to_pr(1);
    assert_eq!(h.state(1), Cancelled);
    h.advance_minutes(1);
    h.submit(1);
    assert_eq!(h.state(1), Testing);
    h.ok(Event::EffectSucceeded {
        effect_id: read.id,
        outcome: mq_core::engine::EffectOutcome::PullRequest { pr: draft },
    });
    assert_eq!(h.state(1), Testing, "{:?}", h.entry(1));
}

#[test]
fn a_waiting_pull_request_that_conflicts_with_the_target_fails_with_the_reason() {
    let mut h = queue(1);
    h.submit(1);
    let mut facts = h.facts(2);
    facts.mergeability = Mergeability::NotMergeable;
    h.submit_facts(facts).unwrap();
    assert_eq!(h.state(2), Failed, "submitted while it conflicts");
    assert_eq!(h.conclusion(2), "conflicts_with_target");
    // One waiting behind a group: the Git host later says it conflicts.
    h.submit(3);
    assert_eq!(h.state(3), Pending);
    let mut facts = h.facts(3);
    facts.mergeability = Mergeability::NotMergeable;
    h.ok(Event::PrUpdated { pr: facts });
    assert_eq!(h.state(3), Failed);
    // One in a group is judged by its test branch, not by the target.
    let mut facts = h.facts(1);
    facts.mergeability = Mergeability::NotMergeable;
    h.ok(Event::PrUpdated { pr: facts });
    assert_eq!(h.state(1), Testing);
    h.assert_clean();
}

/// Two requests may execute notifications of one pull request at once: the later one waits
/// for the earlier one's outcome, so the pull request ends showing the last one.
#[test]
fn a_notification_waits_for_the_earlier_one_of_its_pull_request() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    let first = h
        .pending
        .iter()
        .find(|x| matches!(x.effect, Effect::PostComment { .. }))
        .cloned();
    let first = first.expect("a comment");
    assert!(
        h.snap
            .outbox
            .iter()
            .filter(|x| matches!(x.effect, Effect::PostComment { .. }))
            .count()
            >= 2
    );
    let held: Vec<_> = h.snap.outbox.iter().filter(|x| x.held).collect();
    assert!(
        !held.is_empty(),
        "the comment of testing waits for the queued one"
    );
    assert!(h.pending.iter().all(|x| !x.held));
    h.pending.clear();
    let t = h.ok(Event::EffectSucceeded {
        effect_id: first.id.clone(),
        outcome: mq_core::engine::EffectOutcome::Done,
    });
    let released: Vec<_> = t
        .effects
        .iter()
        .filter(|x| matches!(x.effect, Effect::PostComment { .. }))
        .collect();
    assert_eq!(released.len(), 1);
    let Effect::PostComment { body, .. } = &released[0].effect else {
        unreachable!()
    };
    assert!(body.starts_with("Testing in run"), "{body}");
    // The comment of testing is outstanding and the cancellation's waits behind it. When its
    // lease runs out, the tick does not post it again (it would show an older state): the
    // waiting one goes instead.
    h.ok(Event::Cancel {
        pr: 1,
        reason: CancelReason::Api,
    });
    let comments = |t: &mq_core::engine::Transition| -> Vec<String> {
        t.effects
            .iter()
            .filter_map(|x| match &x.effect {
                Effect::PostComment { body, .. } => Some(body.clone()),
                _ => None,
            })
            .collect()
    };
    assert!(comments(&h.tick()).is_empty(), "nothing due yet");
    h.advance_minutes(1);
    let posted = comments(&h.tick());
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert!(posted[0].starts_with("Cancelled"), "{posted:?}");
}

#[test]
fn a_pull_request_for_another_base_is_not_ready_until_its_base_matches() {
    let mut h = queue(1);
    let mut facts = h.facts(1);
    facts.base_branch = "develop".into();
    h.submit_facts(facts.clone()).unwrap();
    assert_eq!(h.state(1), NotReady);
    let readiness = mq_core::engine::view::readiness(&h.snap.queue, h.entry(1).unwrap());
    assert!(!readiness.does_base_branch_match);
    facts.base_branch = "main".into();
    h.ok(Event::PrUpdated { pr: facts });
    assert_eq!(h.state(1), Testing);
}

#[test]
fn pending_moves_to_testing_when_a_slot_frees() {
    let mut h = queue(1);
    h.submit(1);
    h.submit(2);
    assert_eq!((h.state(1), h.state(2)), (Testing, Pending));
    h.pass_pr(1);
    assert_eq!(h.state(2), Testing);
}

#[test]
fn a_pass_merges_with_the_tested_commit_and_the_target_ends_at_the_tested_tree() {
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    let tested = h.run(&run).unwrap().sha.clone();
    h.pass(&run);
    let merges = h.emitted_where(|e| matches!(e, Effect::Merge { .. }));
    match merges[0] {
        Effect::Merge {
            tested_sha,
            expected_target_sha,
            prs,
            ..
        } => {
            assert_eq!(tested_sha, &tested);
            assert_eq!(expected_target_sha, &Some(support::sha_of(&[])));
            assert_eq!(prs[0].pr, 1);
        }
        _ => unreachable!(),
    }
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.host.target, vec![1]);
    h.assert_clean();
}

#[test]
fn tests_passed_waits_for_every_group_ahead_to_merge() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.pass_pr(2);
    assert_eq!(h.state(2), TestsPassed);
    assert!(
        h.emitted_where(|e| matches!(e, Effect::Merge { .. }))
            .is_empty()
    );
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    assert_eq!(h.host.target, vec![1, 2]);
    h.assert_clean();
}

/// Passes #1 of a one-slot queue and returns its merge effect's id, not carried out.
fn passed_with_merge_waiting(h: &mut Harness) -> String {
    h.auto_execute = false;
    h.submit(1);
    h.execute_all();
    h.auto_execute = false;
    let run = h.run_of(1);
    h.pass(&run);
    h.pending
        .iter()
        .find(|x| matches!(x.effect, Effect::Merge { .. }))
        .map(|x| x.id.clone())
        .unwrap()
}

/// Someone pushes to the target while #1's merge is under way (the queue holds the push back
/// until the merge's outcome is known), and the Git host refuses the merge for another reason
/// (#1 got new commits): the push is not lost, and #2 is tested again on the new head, not on
/// the one the refused merge expected.
#[test]
fn a_push_during_a_refused_merge_restarts_the_line_on_the_new_head() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.auto_execute = false;
    let run = h.run_of(1);
    h.pass(&run);
    let merge = h
        .pending
        .iter()
        .find(|x| matches!(x.effect, Effect::Merge { .. }))
        .map(|x| x.id.clone())
        .unwrap();
    h.push_outside();
    let pushed = h.host.target_sha();
    assert_ne!(
        h.snap.queue.engine.target_head.as_ref(),
        Some(&pushed),
        "held back"
    );
    h.ok(Event::EffectSucceeded {
        effect_id: merge,
        outcome: mq_core::engine::EffectOutcome::MergeRefused {
            refusal: mq_core::engine::MergeRefusal::PrChanged { pr: 1 },
            tip: Some(pushed.clone()),
        },
    });
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.snap.queue.engine.target_head.as_ref(), Some(&pushed));
    h.execute_all();
    let run = h.run(&h.run_of(2)).unwrap();
    assert_eq!(
        run.base_sha.as_ref(),
        Some(&pushed),
        "#2 is tested on the push"
    );
}

#[test]
fn a_merge_the_git_host_rejects_fails_the_pull_request_saying_why() {
    let mut h = queue(1);
    let merge = passed_with_merge_waiting(&mut h);
    let why = "Commits must have verified signatures.";
    h.ok(Event::EffectSucceeded {
        effect_id: merge,
        outcome: mq_core::engine::EffectOutcome::MergeRefused {
            refusal: mq_core::engine::MergeRefusal::Rejected {
                pr: Some(1),
                detail: why.into(),
            },
            tip: None,
        },
    });
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "merge_failed");
    let told = format!("the Git host refused to merge the pull request: {why}");
    assert_eq!(h.conclusion_detail(1), told);
    assert!(
        h.last_comment(1).contains(&format!("{told} Last tested")),
        "one full stop: {}",
        h.last_comment(1)
    );
}

/// Someone pushed on top of a merge while it was in flight: once it is recorded, the groups
/// behind restart on the target's tip, as after any push to the target.
#[test]
fn a_merge_with_a_push_on_top_restarts_the_groups_behind_on_the_tip() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.execute_all();
    h.auto_execute = false;
    let behind = h.run_of(2);
    let run = h.run_of(1);
    h.pass(&run);
    let merge = h
        .pending
        .iter()
        .find(|x| matches!(x.effect, Effect::Merge { .. }))
        .map(|x| x.id.clone())
        .unwrap();
    let merged = h.run(&run).and_then(|r| r.sha.clone()).unwrap();
    let tip = mq_core::ids::Sha::new("7".repeat(40));
    h.ok(Event::EffectSucceeded {
        effect_id: merge,
        outcome: mq_core::engine::EffectOutcome::Merged {
            target_sha: merged,
            tip: Some(tip.clone()),
        },
    });
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.snap.queue.engine.target_head, Some(tip));
    assert_ne!(h.run_of(2), behind, "#2 restarted on the tip");
}

/// The target read right after a merge may still show the commit before it (a host whose
/// reads lag its writes): that is no push, and nothing restarts on it.
#[test]
fn a_tip_read_before_the_merge_showed_is_not_a_push() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.execute_all();
    h.auto_execute = false;
    let behind = h.run_of(2);
    let run = h.run_of(1);
    h.pass(&run);
    let merge = h
        .pending
        .iter()
        .find(|x| matches!(x.effect, Effect::Merge { .. }))
        .cloned()
        .unwrap();
    let Effect::Merge {
        expected_target_sha: Some(before),
        ..
    } = merge.effect
    else {
        panic!("a merge expects the target's commit");
    };
    let merged = h.run(&run).and_then(|r| r.sha.clone()).unwrap();
    h.ok(Event::EffectSucceeded {
        effect_id: merge.id,
        outcome: mq_core::engine::EffectOutcome::Merged {
            target_sha: merged.clone(),
            tip: Some(before),
        },
    });
    assert_eq!(h.state(1), Merged);
    assert_eq!(h.snap.queue.engine.target_head, Some(merged));
    assert_eq!(h.run_of(2), behind, "#2 goes on");
}

#[test]
fn a_merge_given_up_on_tells_what_the_host_answered() {
    let mut h = queue(1);
    let merge = passed_with_merge_waiting(&mut h);
    h.ok(Event::EffectFailed {
        effect_id: merge,
        error: "GitHub answered 502".into(),
        permanent: true,
        retry_after_ms: None,
    });
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "merge_failed");
    assert_eq!(
        h.conclusion_detail(1),
        "the merge could not be carried out, the Git host answered: GitHub answered 502"
    );
}

/// A merge failing too often without being refused may have landed (an attempt's answer lost,
/// or cut at its deadline): it is never sent again, and its pull requests fail only once the
/// Git host says it did not land (the tick asks), or after a day without an answer; found
/// landed, they merge.
#[test]
fn a_merge_failing_too_often_fails_its_pull_requests_only_once_found_not_landed() {
    for answer in [Some(false), Some(true), None] {
        let mut h = queue(1);
        let merge = passed_with_merge_waiting(&mut h);
        for _ in 0..MAX_ATTEMPTS {
            h.ok(Event::EffectFailed {
                effect_id: merge.clone(),
                error: "GitHub answered 502".into(),
                permanent: false,
                retry_after_ms: None,
            });
        }
        assert_eq!(h.state(1), TestsPassed, "not failed yet");
        h.advance_minutes(23 * 60);
        let tick = h.tick();
        assert!(
            tick.effects.iter().all(|x| x.id != merge),
            "a given-up merge is not sent again"
        );
        assert_eq!(h.state(1), TestsPassed, "still waiting for an answer");
        let Some(landed) = answer else {
            h.advance_minutes(60);
            h.tick();
            assert_eq!(h.state(1), Failed, "no answer for a day");
            assert!(h.snap.outbox.iter().all(|x| x.id != merge));
            continue;
        };
        if landed {
            let tip = h.run(&h.run_of(1)).and_then(|r| r.sha.clone()).unwrap();
            h.ok(Event::EffectSucceeded {
                effect_id: merge,
                outcome: EffectOutcome::Merged {
                    target_sha: tip,
                    tip: None,
                },
            });
            assert_eq!(h.state(1), Merged);
        } else {
            let read_at = h.now;
            h.ok(Event::MergeNotLanded {
                effect_id: merge.clone(),
                read_at,
            });
            assert_eq!(h.state(1), Failed);
            assert_eq!(
                h.conclusion_detail(1),
                "the merge could not be carried out, the Git host answered: GitHub answered 502"
            );
            assert!(h.snap.outbox.iter().all(|x| x.id != merge));
        }
    }
}

#[test]
fn a_failure_with_nothing_ahead_or_behind_fails_the_pull_request() {
    let mut h = queue(1);
    h.submit(1);
    h.fail_pr(1);
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "tests_failed");
    assert!(h.host.target.is_empty());
}

#[test]
fn cancelling_by_api_closing_pushing_or_rebasing_cancels_the_entry() {
    let mut h = queue(4);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.ok(Event::Cancel {
        pr: 1,
        reason: CancelReason::Api,
    });
    let mut closed = h.facts(2);
    closed.state = PrState::Closed;
    h.ok(Event::PrUpdated { pr: closed });
    h.push_to_pr(3);
    let mut rebased = h.facts(4);
    rebased.base_branch = "release".into();
    h.ok(Event::PrUpdated { pr: rebased });
    let reasons: Vec<String> = (1..=4).map(|pr| h.conclusion(pr)).collect();
    assert_eq!(
        reasons,
        vec![
            "cancelled_by_api",
            "pr_closed",
            "new_commits",
            "base_changed"
        ]
    );
    assert!(h.snap.entries.is_empty());
    assert!(h.testing_runs().is_empty(), "their runs were cancelled");
    h.assert_clean();
}

/// A pull request merged outside the queue (by hand, or by another branch's queue) leaves it
/// without a failing status on its head: another queue's "Merged" stays green.
#[test]
fn a_pull_request_merged_outside_the_queue_leaves_it_without_a_failing_status() {
    let mut h = queue(1);
    h.submit(1);
    let mut merged = h.facts(1);
    merged.state = PrState::Merged;
    h.ok(Event::PrUpdated { pr: merged });
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.conclusion(1), "pr_merged");
    let statuses = h.emitted_where(|e| matches!(e, Effect::SetStatusCheck { pr: 1, .. }));
    let Some(Effect::SetStatusCheck {
        state, description, ..
    }) = statuses.last()
    else {
        panic!("no status");
    };
    assert_eq!(*state, mq_core::git::StatusState::Success);
    assert_eq!(description, "Merged outside the queue");
    assert!(
        h.last_comment(1).starts_with(
            "Left the queue for `main`: the pull request was merged outside this queue."
        ),
        "{}",
        h.last_comment(1)
    );
    assert!(h.testing_runs().is_empty(), "its run was cancelled");
    h.assert_clean();
}

#[test]
fn cancelling_a_pull_request_ahead_rebuilds_the_groups_behind_without_it() {
    let mut h = queue(4);
    for pr in 1..=4 {
        h.submit(pr);
    }
    let runs: Vec<String> = (1..=4).map(|pr| h.run_of(pr)).collect();
    assert_eq!(h.content_of(&runs[3]), vec![1, 2, 3, 4]);
    h.ok(Event::Cancel {
        pr: 2,
        reason: CancelReason::Api,
    });
    assert_eq!(h.state(2), Cancelled);
    assert_eq!(h.conclusion(2), "cancelled_by_api");
    // The group ahead of 2 goes on; every group behind it restarts without it.
    assert_eq!(h.run_of(1), runs[0]);
    assert_eq!(h.entry(1).unwrap().restarts, 0);
    for (pr, content) in [(3, vec![1, 3]), (4, vec![1, 3, 4])] {
        let run = h.run_of(pr);
        assert_ne!(run, runs[pr as usize - 1], "PR {pr} has a new run");
        assert_eq!(h.content_of(&run), content);
        assert_eq!(h.state(pr), Testing);
        assert_eq!(h.entry(pr).unwrap().restarts, 1);
    }
    assert_eq!(h.run(&h.run_of(4)).unwrap().dependent_prs, vec![1, 3]);
    let cancelled: Vec<&String> = h
        .emitted
        .iter()
        .filter_map(|(x, _)| match &x.effect {
            Effect::CancelRun { run_id, .. } => Some(run_id),
            _ => None,
        })
        .collect();
    assert_eq!(cancelled, vec![&runs[1], &runs[2], &runs[3]]);
    for pr in [1, 3, 4] {
        h.pass_pr(pr);
    }
    assert_eq!(h.merged_prs(), vec![1, 3, 4]);
    assert_eq!(h.host.target, vec![1, 3, 4]);
    h.assert_clean();
}

#[test]
fn cancel_and_restart_refuse_pull_requests_that_are_not_active() {
    let mut h = queue(1);
    let err = h
        .apply(Event::Cancel {
            pr: 9,
            reason: CancelReason::Api,
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PullRequestNotActive);
    h.submit(1);
    h.fail_pr(1);
    let err = h.apply(Event::Restart { pr: 1 }).unwrap_err();
    assert_eq!(err.code, ErrorCode::PullRequestNotActive, "failed");
    h.submit(2);
    h.submit(3);
    let err = h.apply(Event::Restart { pr: 3 }).unwrap_err();
    assert_eq!(err.code, ErrorCode::PullRequestNotTesting, "pending");
}

/// The pull request's comment names the run it is testing in, after a restart too, and says
/// so when it goes back to waiting in line.
#[test]
fn a_restart_or_a_return_to_the_line_is_told_to_the_pull_request() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.ok(Event::Restart { pr: 1 });
    let run = h.run_of(1);
    assert!(h.last_comment(1).contains(&run), "{}", h.last_comment(1));

    h.update(SettingsPatch {
        concurrency: Some(1),
        ..Default::default()
    });
    assert_eq!(h.state(2), Pending);
    assert!(
        h.last_comment(2).starts_with("Queued for merging"),
        "{}",
        h.last_comment(2)
    );
}

#[test]
fn restart_reruns_the_group_in_place_and_nothing_else_restarts() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    let (r1, r2) = (h.run_of(1), h.run_of(2));
    let content1 = h.content_of(&r1);
    h.ok(Event::Restart { pr: 1 });
    assert_ne!(h.run_of(1), r1);
    assert_eq!(h.run_of(2), r2, "the group behind goes on");
    assert_eq!(h.content_of(&h.run_of(1)), content1, "same base");
    assert_eq!(h.state(1), Testing);
    h.pass_pr(1);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    h.assert_clean();
}

#[test]
fn restarting_a_pending_failure_with_every_slot_busy_waits_for_a_slot() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(1),
        pending_failure_depth: Some(1),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    h.fail_pr(1);
    // 2 tests on top of 1 (the depth window); 1 waits in pending_failure.
    assert_eq!(h.state(1), PendingFailure);
    h.ok(Event::Restart { pr: 1 });
    assert_eq!(h.state(1), Testing);
    let held = h.run(&h.run_of(1)).unwrap().held;
    assert!(held, "no slot: the restart waits");
    h.fail_pr(2);
    h.assert_clean();
}

/// A pull request made a draft after it passed is not tested again as a draft when its group
/// restarts (here on a push to the target): it waits, not ready, until it is ready again.
#[test]
fn a_draft_is_not_restarted_in_place() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.pass_pr(2);
    assert_eq!(h.state(2), TestsPassed);
    h.set_draft(2, true);
    h.push_outside();
    assert_eq!(h.state(1), Testing);
    assert_eq!(h.state(2), NotReady);
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1]);
    h.set_draft(2, false);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    h.assert_clean();
}

/// The same when an urgent pull request comes ahead: #1 restarts behind #3, and #2, made a
/// draft after it passed, waits not ready instead of being tested again (and, passing, failed
/// by the Git host's refusal to merge a draft).
#[test]
fn a_draft_behind_an_urgent_pull_request_waits_not_ready() {
    use mq_core::priority::Priority;
    let mut h = queue(3);
    h.submit(1);
    h.submit(2);
    h.pass_pr(2);
    h.set_draft(2, true);
    h.submit_with(3, Priority::of(0), false);
    assert_eq!(h.state(3), Testing);
    assert_eq!(h.state(1), Testing);
    assert_eq!(h.state(2), NotReady);
    h.pass_pr(3);
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![3, 1]);
    h.set_draft(2, false);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![3, 1, 2]);
    h.assert_clean();
}

/// `ciRuns` counts the runs that set off CI, those that got their test branch: a restart held
/// for a slot, and replaced before it got one, is none; released, it is one.
#[test]
fn a_restart_held_for_a_slot_and_replaced_takes_no_ci_run() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(1),
        pending_failure_depth: Some(1),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    h.fail_pr(1);
    let ci_runs = |h: &Harness, pr| h.entry(pr).unwrap().ci_runs;
    assert_eq!((ci_runs(&h, 1), ci_runs(&h, 2)), (1, 1));
    h.ok(Event::Restart { pr: 1 });
    h.ok(Event::Restart { pr: 1 });
    assert!(
        h.run(&h.run_of(1)).unwrap().held,
        "no slot: the restart waits"
    );
    assert_eq!(ci_runs(&h, 1), 1, "no branch, no CI");
    h.fail_pr(2);
    assert!(!h.run(&h.run_of(1)).unwrap().held, "released");
    assert_eq!(ci_runs(&h, 1), 2);
    h.pass_pr(1);
    h.assert_clean();
}

#[test]
fn a_cancelled_entry_cannot_be_cancelled_again_while_it_is_being_merged() {
    let mut h = queue(1);
    h.submit(1);
    h.auto_execute = false;
    h.pass_pr(1);
    let err = h
        .apply(Event::Cancel {
            pr: 1,
            reason: CancelReason::Api,
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PullRequestMerging);
    h.execute_all();
    assert_eq!(h.state(1), Merged);
}

#[test]
fn a_pull_request_closed_while_its_merge_is_under_way_is_merged_when_the_merge_lands() {
    let mut h = queue(1);
    h.submit(1);
    h.auto_execute = false;
    h.pass_pr(1);
    let mut closed = h.facts(1);
    closed.state = PrState::Closed;
    h.ok(Event::PrUpdated { pr: closed });
    assert_eq!(h.state(1), TestsPassed, "the merge decides");
    h.execute_all();
    assert_eq!(h.state(1), Merged, "the target holds it");
    h.assert_clean();
}

#[test]
fn a_pull_request_closed_while_its_merge_is_under_way_is_cancelled_when_the_merge_is_refused() {
    let mut h = queue(1);
    h.submit(1);
    h.auto_execute = false;
    h.pass_pr(1);
    let mut closed = h.facts(1);
    closed.state = PrState::Closed;
    h.ok(Event::PrUpdated { pr: closed });
    h.auto_execute = true;
    h.push_outside();
    // The merge expected the old target: refused, so the close takes effect.
    h.execute_all();
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.conclusion(1), "pr_closed");
    assert!(h.host.target_history.is_empty(), "nothing merged");
    h.assert_clean();
}

/// The host refuses the merge because the pull request was closed, before the queue heard
/// of the close: it is cancelled (pr_closed), not failed, and the group behind restarts.
#[test]
fn a_merge_refused_because_the_pull_request_was_closed_cancels_it() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.auto_execute = false;
    h.pass_pr(1);
    h.host.closed.insert(1);
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.conclusion(1), "pr_closed");
    assert_eq!(h.content_of(&h.run_of(2)), vec![2], "restarted without 1");
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![2]);
    h.assert_clean();
}

/// Merged by hand after it passed: the merge is refused, and the pull request leaves as
/// merged outside the queue, not as closed.
#[test]
fn a_merge_refused_because_the_pull_request_was_merged_outside_says_so() {
    let mut h = queue(1);
    h.submit(1);
    h.auto_execute = false;
    h.pass_pr(1);
    h.host.merged_outside.insert(1);
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.conclusion(1), "pr_merged");
    h.assert_clean();
}

#[test]
fn new_commits_during_a_merge_refuse_it_and_a_resubmission_waits_for_its_answer() {
    let mut h = queue(1);
    h.submit(1);
    h.auto_execute = false;
    h.pass_pr(1);
    h.push_to_pr(1);
    assert_eq!(h.state(1), TestsPassed);
    let err = h.submit_facts(h.facts(1)).unwrap_err();
    assert_eq!(err.code, ErrorCode::PullRequestMerging);
    h.execute_all();
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.conclusion(1), "new_commits");
    assert!(h.host.target_history.is_empty(), "nothing merged");
    h.auto_execute = true;
    h.submit(1);
    assert_eq!(h.state(1), Testing, "the new head is tested");
    h.assert_clean();
}

// ---- docs/queue-semantics.md §5 predictive testing
// ----------------------------------------------------------------

#[test]
fn each_group_tests_the_target_plus_every_group_ahead() {
    let mut h = queue(3);
    for pr in 1..=3 {
        h.submit(pr);
    }
    assert_eq!(h.content_of(&h.run_of(1)), vec![1]);
    assert_eq!(h.content_of(&h.run_of(2)), vec![1, 2]);
    assert_eq!(h.content_of(&h.run_of(3)), vec![1, 2, 3]);
    let run3 = h.run(&h.run_of(3)).unwrap().clone();
    assert_eq!(run3.dependent_prs, vec![1, 2]);
    assert_eq!(run3.branch, format!("mq-test/main/{}", run3.id));
}

/// A target branch name as long as a branch name may be still leaves room for the test
/// branch: past 200 bytes the test branch names the target by a digest, distinct per target.
#[test]
fn a_long_target_branch_still_gives_test_branches_a_valid_name() {
    let mut branches = Vec::new();
    for target in ["r".repeat(200), "x".repeat(255), "y".repeat(255)] {
        let mut h = queue(1);
        h.snap.queue.branch = target.clone();
        h.submit(1);
        let run = h.run(&h.run_of(1)).unwrap().clone();
        assert!(run.branch.len() <= 255, "{}", run.branch.len());
        assert!(run.branch.starts_with("mq-test/"), "{}", run.branch);
        assert!(
            run.branch.ends_with(&format!("/{}", run.id)),
            "{}",
            run.branch
        );
        if target.len() <= 200 {
            assert_eq!(run.branch, format!("mq-test/{target}/{}", run.id));
        }
        branches.push(run.branch.rsplit_once('/').unwrap().0.to_owned());
    }
    branches.dedup();
    assert_eq!(branches.len(), 3, "{branches:?}");
}

#[test]
fn at_most_concurrency_groups_test_at_once() {
    let mut h = queue(3);
    for pr in 1..=6 {
        h.submit(pr);
    }
    assert_eq!(h.testing_runs().len(), 3);
    assert_eq!(h.state(4), Pending);
    h.assert_clean();
}

#[test]
fn a_failure_waits_for_the_groups_ahead_and_restarts_without_a_failed_one() {
    let mut h = queue(3);
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.fail_pr(2);
    assert_eq!(h.state(2), PendingFailure, "1 is still testing");
    h.fail_pr(1);
    // 1 fails for real (nothing ahead; its window, 2, finished). 2 restarts without it.
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.state(2), Testing);
    assert_eq!(h.content_of(&h.run_of(2)), vec![2]);
    assert_eq!(h.content_of(&h.run_of(3)), vec![2, 3]);
    h.pass_pr(2);
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![2, 3]);
    h.assert_clean();
}

#[test]
fn pending_failure_waits_for_the_depth_window_then_fails_and_restarts_the_rest() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(4),
        pending_failure_depth: Some(2),
        ..Default::default()
    });
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(1);
    assert_eq!(h.state(1), PendingFailure);
    h.fail_pr(2);
    assert_eq!(h.state(1), PendingFailure, "3 has not finished");
    h.fail_pr(3);
    assert_eq!(
        h.state(1),
        Failed,
        "two groups behind finished without a pass"
    );
    for pr in 2..=4 {
        assert_eq!(h.state(pr), Testing, "PR {pr} restarts without 1");
        assert!(!h.content_of(&h.run_of(pr)).contains(&1));
    }
    h.assert_clean();
}

#[test]
fn optimistic_merge_clears_a_failure_when_a_group_behind_passes() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(3),
        can_optimistically_merge: Some(true),
        ..Default::default()
    });
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.fail_pr(1); // a flake
    assert_eq!(h.state(1), PendingFailure);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2], "2 contained 1 and passed");
    assert_eq!(h.host.target, vec![1, 2]);
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![1, 2, 3]);
    h.assert_clean();
}

#[test]
fn without_optimistic_merge_a_pass_behind_does_not_clear_the_failure() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.fail_pr(1);
    h.pass_pr(2);
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.state(2), Testing, "2 restarts without 1");
    assert_eq!(h.content_of(&h.run_of(2)), vec![2]);
}

fn adaptive(concurrency: u32, depth: u32) -> Harness {
    Harness::with(SettingsPatch {
        concurrency: Some(concurrency),
        can_optimistically_merge: Some(true),
        pending_failure_depth: Some(depth),
        adaptive_pending_failure: Some(true),
        ..Default::default()
    })
}

#[test]
fn adaptive_pending_failure_fails_at_once_while_no_flake_was_seen() {
    let mut h = adaptive(4, 2);
    for pr in 1..=4 {
        h.submit(pr);
    }
    h.fail_pr(2);
    assert_eq!(h.state(2), PendingFailure, "1 is still testing");
    h.pass_pr(1);
    assert_eq!(h.state(2), Failed, "everything ahead passed: no window");
    for pr in [3, 4] {
        assert_eq!(h.state(pr), Testing, "PR {pr} restarts without 2");
        assert!(!h.content_of(&h.run_of(pr)).contains(&2));
    }
    assert_eq!(h.snap.queue.engine.last_flake_at, None);
    h.assert_clean();
}

#[test]
fn a_group_that_fails_at_once_gets_no_new_group_built_on_it() {
    let mut h = adaptive(2, 1);
    for pr in 1..=3 {
        h.submit(pr);
    }
    let failed = h.fail_pr(1);
    assert_eq!(h.state(1), Failed);
    let built: Vec<Vec<u32>> = failed
        .effects
        .iter()
        .filter_map(|x| match &x.effect {
            Effect::CreateTestBranch { prs, .. } => Some(prs.iter().map(|p| p.pr).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(built, vec![vec![2], vec![2, 3]], "nothing on top of 1");
    h.assert_clean();
}

#[test]
fn a_failed_head_that_passes_when_submitted_again_is_a_flake_and_brings_the_window_back() {
    let mut h = adaptive(3, 1);
    h.submit(1);
    h.fail_pr(1); // a flake
    assert_eq!(h.state(1), Failed, "no flake seen yet: it fails at once");
    assert_eq!(h.snap.queue.engine.failed_heads.len(), 1);
    h.advance_minutes(5);
    h.submit(1); // submitted again, unchanged
    let flake_at = h.now;
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1]);
    assert_eq!(h.snap.queue.engine.last_flake_at, Some(flake_at));
    assert!(h.snap.queue.engine.failed_heads.is_empty(), "used up");

    // The window is back: a failure waits for the group behind, whose pass clears it.
    h.submit(2);
    h.submit(3);
    h.fail_pr(2);
    assert_eq!(h.state(2), PendingFailure, "the window waits for 3");
    h.pass_pr(3);
    assert_eq!(h.merged_prs(), vec![1, 2, 3]);

    // Seven days without a flake close it again.
    h.advance_minutes(7 * 24 * 60);
    h.submit(4);
    h.submit(5);
    h.fail_pr(4);
    assert_eq!(h.state(4), Failed);
    assert_eq!(h.state(5), Testing);
    assert_eq!(h.content_of(&h.run_of(5)), vec![1, 2, 3, 5], "without 4");
    h.assert_clean();
}

#[test]
fn a_head_that_failed_and_passes_after_new_commits_is_no_flake() {
    let mut h = adaptive(2, 1);
    h.submit(1);
    h.fail_pr(1);
    h.push_to_pr(1); // the fix
    h.submit(1);
    h.pass_pr(1);
    assert_eq!(h.merged_prs(), vec![1]);
    assert_eq!(h.snap.queue.engine.last_flake_at, None);
    assert_eq!(
        h.snap.queue.engine.failed_heads.len(),
        1,
        "kept for a while"
    );
}

#[test]
fn a_failure_cleared_by_a_pass_behind_is_a_flake_with_or_without_adaptation() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(2),
        can_optimistically_merge: Some(true),
        ..Default::default()
    });
    h.submit(1);
    h.submit(2);
    h.fail_pr(1);
    let at = h.now;
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), vec![1, 2]);
    assert_eq!(h.snap.queue.engine.last_flake_at, Some(at));
}

#[test]
fn a_failure_behind_a_pass_that_came_first_is_a_flake_under_adaptation_too() {
    let mut h = adaptive(2, 1);
    h.submit(1);
    h.submit(2);
    h.pass_pr(2);
    assert_eq!(h.merged_prs(), Vec::<u32>::new(), "1 is still testing");
    let at = h.now;
    h.fail_pr(1);
    assert_eq!(h.merged_prs(), vec![1, 2], "the pass behind proves 1");
    assert_eq!(h.snap.queue.engine.last_flake_at, Some(at));
    h.assert_clean();
}

#[test]
fn a_queue_remembers_a_bounded_number_of_failed_heads() {
    let mut h = adaptive(1, 1);
    for pr in 1..=40 {
        h.submit(pr);
        h.fail_pr(pr);
        assert_eq!(h.state(pr), Failed);
    }
    let heads = &h.snap.queue.engine.failed_heads;
    assert_eq!(heads.len(), mq_core::snapshot::MAX_FAILED_HEADS);
    assert_eq!(
        heads.first().map(|f| f.pr),
        Some(9),
        "the oldest are forgotten"
    );
}

#[test]
fn a_push_outside_the_queue_restarts_every_testing_group_on_the_new_head() {
    let mut h = queue(2);
    h.submit(1);
    h.submit(2);
    h.push_outside();
    let outside = h.host.target.clone();
    for pr in [1, 2] {
        let content = h.content_of(&h.run_of(pr));
        assert!(content.starts_with(&outside), "{content:?}");
        assert_eq!(h.entry(pr).unwrap().restarts, 1);
    }
    h.pass_pr(1);
    h.pass_pr(2);
    assert_eq!(h.host.target[1..], [1, 2]);
    h.assert_clean();
}

#[test]
fn a_merge_refused_because_the_target_moved_restarts_on_the_actual_head() {
    let mut h = queue(1);
    h.submit(1);
    // Someone pushes and the webhook is lost: the merge finds out.
    h.host.push(support::OUTSIDE + 7);
    let moved = h.host.target.clone();
    h.pass_pr(1);
    assert_eq!(h.state(1), Testing, "restarted");
    assert!(h.content_of(&h.run_of(1)).starts_with(&moved));
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
    h.assert_clean();
}

/// The webhook of a push (the queue's own merge of 1) read the target's head before the merge
/// of 2 landed, and is handled after it: it names a head the queue merged past. The target has
/// not moved back; nothing restarts, and 3 merges as tested.
#[test]
fn a_late_push_report_of_a_head_the_queue_merged_past_restarts_nothing() {
    let mut h = queue(3);
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.pass_pr(1);
    let after_1 = h.snap.queue.engine.target_head.clone().unwrap();
    h.pass_pr(2);
    assert_eq!(h.state(2), Merged);
    let run_of_3 = h.run_of(3);
    h.ok(Event::TargetMoved {
        sha: after_1.clone(),
    });
    assert_ne!(h.snap.queue.engine.target_head, Some(after_1));
    assert_eq!(h.run_of(3), run_of_3, "not restarted");
    assert_eq!(h.entry(3).unwrap().restarts, 0);
    h.pass_pr(3);
    assert_eq!(h.state(3), Merged);
    h.assert_clean();
}

/// Building a branch finds a pull request's head already on the target (someone merged it by
/// hand, and the push was handled before the "closed" delivery, or that was lost): it is
/// cancelled as merged outside, not failed, and the group behind goes on without it.
#[test]
fn a_pull_request_found_already_on_the_target_is_cancelled_as_merged_outside() {
    let mut h = queue(2);
    h.auto_execute = false;
    h.submit(1);
    h.submit(2);
    let build_of_1 = h
        .pending
        .iter()
        .find(|x| {
            matches!(&x.effect, Effect::CreateTestBranch { prs, .. } if prs.len() == 1 && prs[0].pr == 1)
        })
        .cloned()
        .unwrap();
    h.pending.retain(|x| x.id != build_of_1.id);
    h.ok(Event::EffectSucceeded {
        effect_id: build_of_1.id.clone(),
        outcome: mq_core::engine::EffectOutcome::MergedOutside { pr: 1 },
    });
    assert_eq!(h.state(1), Cancelled);
    assert_eq!(h.conclusion(1), "pr_merged");
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.content_of(&h.run_of(2)), vec![2], "restarted without 1");
    h.pass_pr(2);
    assert_eq!(h.state(2), Merged);
}

#[test]
fn a_test_branch_that_conflicts_fails_the_pull_request() {
    let mut h = queue(1);
    h.host.conflicts.insert(1);
    h.submit(1);
    assert_eq!(h.state(1), Failed);
    assert_eq!(h.conclusion(1), "merge_conflict");
}

#[test]
fn a_group_whose_branch_conflicted_keeps_its_slot_until_it_fails() {
    let mut h = queue(2);
    h.host.conflicts.insert(2);
    for pr in 1..=5 {
        h.submit(pr);
    }
    // 2's branch conflicted while 1 tests: nothing new is built on it meanwhile.
    assert_eq!(h.state(2), PendingFailure);
    assert_eq!(h.state(3), Pending, "no group is started on top of 2");
    assert_eq!(h.testing_runs().len(), 1);
    h.pass_pr(1);
    assert_eq!(h.state(2), Failed);
    assert_eq!(h.conclusion(2), "merge_conflict");
    assert_eq!(h.content_of(&h.run_of(3)), vec![1, 3]);
    assert_eq!(h.content_of(&h.run_of(4)), vec![1, 3, 4]);
    h.assert_clean();
}

#[test]
fn statuses_and_check_runs_are_folded_per_required_name() {
    use mq_core::git::{CheckConclusion, CheckRunReport, CheckStatus, StatusReport, StatusState};
    let mut h = queue(1);
    h.host.required.contexts = vec!["build".into(), "test".into()];
    h.submit(1);
    let run = h.run_of(1);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    h.ok(Event::StatusReported {
        sha: sha.clone(),
        status: StatusReport {
            context: "build".into(),
            state: StatusState::Success,
            url: String::new(),
            description: String::new(),
            updated_at: h.now,
        },
    });
    assert_eq!(h.state(1), Testing, "test is still missing");
    let t0 = h.now;
    let check = |status, conclusion| CheckRunReport {
        id: 7,
        name: "test".into(),
        status,
        conclusion,
        url: "https://ci/7".into(),
        suite_id: 3,
        updated_at: t0,
    };
    h.ok(Event::CheckRunReported {
        sha: sha.clone(),
        check: check(CheckStatus::InProgress, None),
    });
    assert_eq!(h.state(1), Testing);
    h.advance_minutes(1);
    let done = CheckRunReport {
        updated_at: h.now,
        ..check(CheckStatus::Completed, Some(CheckConclusion::Skipped))
    };
    h.passed.insert(h.content_of(&run));
    h.ok(Event::CheckRunReported { sha, check: done });
    assert_eq!(h.state(1), Merged, "skipped counts as passed");
    let _ = CI;
    h.assert_clean();
}

/// Two check runs named `ci`, from two workflows (two check suites): one still running does
/// not let the other's pass merge the run. A re-run in the same suite replaces the attempt
/// before it.
#[test]
fn a_required_check_passes_only_when_every_suite_reporting_it_passed() {
    use mq_core::git::{CheckConclusion, CheckRunReport, CheckStatus};
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    let check = |id, suite_id, status, conclusion, at| CheckRunReport {
        id,
        name: CI.into(),
        status,
        conclusion,
        url: String::new(),
        suite_id,
        updated_at: at,
    };
    let started = h.now;
    h.ok(Event::CheckRunReported {
        sha: sha.clone(),
        check: check(1, 10, CheckStatus::InProgress, None, started),
    });
    h.advance_minutes(1);
    let passed = Some(CheckConclusion::Success);
    h.ok(Event::CheckRunReported {
        sha: sha.clone(),
        check: check(2, 11, CheckStatus::Completed, passed, h.now),
    });
    assert_eq!(h.state(1), Testing, "suite 10's ci is still running");
    h.advance_minutes(1);
    let failed = Some(CheckConclusion::Failure);
    h.ok(Event::CheckRunReported {
        sha: sha.clone(),
        check: check(1, 10, CheckStatus::Completed, failed, h.now),
    });
    assert_eq!(h.state(1), Failed, "one suite's ci failed");

    // A new attempt in the same suite replaces the one still shown as running.
    h.submit(2);
    let run = h.run_of(2);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    h.ok(Event::CheckRunReported {
        sha: sha.clone(),
        check: check(3, 20, CheckStatus::InProgress, None, h.now),
    });
    h.advance_minutes(1);
    h.passed.insert(h.content_of(&run));
    h.ok(Event::CheckRunReported {
        sha,
        check: check(4, 20, CheckStatus::Completed, passed, h.now),
    });
    assert_eq!(h.state(2), Merged);
}

/// Reports of one second delivered out of order (GitHub's times are whole seconds): a
/// status's `pending` after its `success`, a check run's `in_progress` after its completion.
/// The results stand, and the run passes once the other required name does.
#[test]
fn a_late_report_of_the_same_second_does_not_undo_a_result() {
    use mq_core::git::{CheckConclusion, CheckRunReport, CheckStatus, StatusReport, StatusState};
    let mut h = queue(1);
    h.update(SettingsPatch {
        required_statuses: Some(vec!["lint".into(), "build".into(), CI.into()]),
        ..Default::default()
    });
    h.submit(1);
    let run = h.run_of(1);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    let at = h.now;
    for state in [StatusState::Success, StatusState::Pending] {
        let status = StatusReport {
            context: "lint".into(),
            state,
            url: String::new(),
            description: String::new(),
            updated_at: at,
        };
        h.ok(Event::StatusReported {
            sha: sha.clone(),
            status,
        });
    }
    let check = |status, conclusion| CheckRunReport {
        id: 7,
        name: "build".into(),
        status,
        conclusion,
        url: String::new(),
        suite_id: 1,
        updated_at: at,
    };
    let done = check(CheckStatus::Completed, Some(CheckConclusion::Success));
    for check in [done, check(CheckStatus::InProgress, None)] {
        h.ok(Event::CheckRunReported {
            sha: sha.clone(),
            check,
        });
    }
    assert_eq!(h.state(1), Testing, "ci has not reported");
    h.pass(&run);
    assert_eq!(h.state(1), Merged);
    h.assert_clean();
}

/// A run keeps one report per check name and suite however often CI re-runs its checks (its
/// item must stay within DynamoDB's 400 KB), and judges by the latest attempt.
#[test]
fn re_runs_of_a_check_do_not_grow_the_run() {
    use mq_core::git::{CheckRunReport, CheckStatus};
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    for attempt in 1..=500u64 {
        let check = CheckRunReport {
            id: attempt,
            name: if attempt % 2 == 0 {
                CI.into()
            } else {
                "lint".into()
            },
            status: CheckStatus::InProgress,
            conclusion: None,
            url: String::new(),
            suite_id: 10,
            updated_at: h.now.plus_millis(i64::try_from(attempt).unwrap()),
        };
        h.ok(Event::CheckRunReported {
            sha: sha.clone(),
            check,
        });
    }
    let kept: Vec<u64> = h
        .run(&run)
        .unwrap()
        .check_runs
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(kept, [499, 500], "the latest attempt of each name");
    assert_eq!(h.state(1), Testing);
}

#[test]
fn a_timed_out_check_run_fails_the_run() {
    use mq_core::git::{CheckConclusion, CheckRunReport, CheckStatus};
    let mut h = queue(1);
    h.submit(1);
    let run = h.run_of(1);
    let sha = h.run(&run).unwrap().sha.clone().unwrap();
    h.ok(Event::CheckRunReported {
        sha,
        check: CheckRunReport {
            id: 1,
            name: CI.into(),
            status: CheckStatus::Completed,
            conclusion: Some(CheckConclusion::TimedOut),
            url: String::new(),
            suite_id: 0,
            updated_at: h.now,
        },
    });
    assert_eq!(h.state(1), Failed);
    let finished = h.finished_runs.iter().find(|r| r.id == run).unwrap();
    assert_eq!(finished.status, RunStatus::Failed);
}

/// How each check-run conclusion and commit-status state counts for a required status:
/// passed, failed or still pending. The engine decides (`git.rs`):
/// `success`, `neutral` and `skipped` pass, every other conclusion fails, a check run not
/// completed is pending; a status passes on `success`, fails on `failure` and `error`. Each
/// report goes through the engine as CI's answer on a run's branch.
#[test]
fn every_check_conclusion_and_status_state_counts_as_pass_fail_or_pending() {
    use mq_core::git::{
        CheckConclusion as C, CheckRunReport, CheckStatus, StatusReport, StatusState, Verdict,
    };
    #[derive(Debug, Clone, Copy)]
    enum Report {
        Check(CheckStatus, Option<C>),
        Status(StatusState),
    }
    use Report::{Check, Status};
    let done = |c| Check(CheckStatus::Completed, Some(c));
    let table = [
        (done(C::Success), Verdict::Passed),
        (done(C::Neutral), Verdict::Passed),
        (done(C::Skipped), Verdict::Passed),
        (done(C::Failure), Verdict::Failed),
        (done(C::Cancelled), Verdict::Failed),
        (done(C::TimedOut), Verdict::Failed),
        (done(C::ActionRequired), Verdict::Failed),
        (done(C::Stale), Verdict::Failed),
        (done(C::StartupFailure), Verdict::Failed),
        (Check(CheckStatus::Completed, None), Verdict::Pending),
        (Check(CheckStatus::Queued, None), Verdict::Pending),
        (Check(CheckStatus::InProgress, None), Verdict::Pending),
        (Check(CheckStatus::Waiting, None), Verdict::Pending),
        (Check(CheckStatus::Requested, None), Verdict::Pending),
        (Check(CheckStatus::Pending, None), Verdict::Pending),
        (Status(StatusState::Success), Verdict::Passed),
        (Status(StatusState::Pending), Verdict::Pending),
        (Status(StatusState::Failure), Verdict::Failed),
        (Status(StatusState::Error), Verdict::Failed),
    ];
    for (report, verdict) in table {
        let mut h = queue(1);
        h.submit(1);
        let run = h.run_of(1);
        let sha = h.run(&run).unwrap().sha.clone().unwrap();
        if verdict == Verdict::Passed {
            // The driver accepts merges of contents CI passed.
            h.passed.insert(h.content_of(&run));
        }
        let event = match report {
            Check(status, conclusion) => Event::CheckRunReported {
                sha,
                check: CheckRunReport {
                    id: 1,
                    name: CI.into(),
                    status,
                    conclusion,
                    url: String::new(),
                    suite_id: 0,
                    updated_at: h.now,
                },
            },
            Status(state) => Event::StatusReported {
                sha,
                status: StatusReport {
                    context: CI.into(),
                    state,
                    url: String::new(),
                    description: String::new(),
                    updated_at: h.now,
                },
            },
        };
        h.ok(event);
        let (entry, run_status) = match verdict {
            Verdict::Passed => (Merged, RunStatus::Succeeded),
            Verdict::Failed => (Failed, RunStatus::Failed),
            Verdict::Pending => (Testing, RunStatus::InProgress),
        };
        let status = h
            .run(&run)
            .or_else(|| h.finished_runs.iter().find(|r| r.id == run))
            .map(|r| r.status);
        assert_eq!(
            (h.state(1), status),
            (entry, Some(run_status)),
            "{report:?} should count as {verdict:?}"
        );
        h.assert_clean();
    }
}

// ---- reconciliation with the Git host and stuck entries -----------------------------------

/// Someone pushed a commit onto a run's branch: the run does not take that commit for its own
/// (it is not what the pull request was reviewed as, and it must never land); the branch is
/// built again, the same stamped commit as before, and CI's results are read again.
#[test]
fn a_run_whose_branch_points_at_a_commit_it_did_not_record_has_it_built_again() {
    let mut h = queue(1);
    h.submit(1);
    let id = h.run_of(1);
    let built = h.run(&id).unwrap().sha.clone().unwrap();
    let pushed = mq_core::ids::Sha::new("e".repeat(40));
    h.auto_execute = false;
    let t = h.ok(Event::BranchObserved {
        run_id: id.clone(),
        sha: Some(pushed.clone()),
    });
    assert_eq!(h.run(&id).unwrap().sha, None);
    assert!(
        t.effects
            .iter()
            .any(|x| matches!(&x.effect, Effect::CreateTestBranch { run_id, .. } if *run_id == id))
    );
    h.auto_execute = true;
    h.execute_all();
    assert_eq!(h.run(&id).unwrap().sha.as_ref(), Some(&built));
    h.pass(&id);
    assert_eq!(h.state(1), Merged);
    h.assert_clean();
}

/// A tool that pushes to every branch keeps pushing to a run's branch: the third push found
/// fails the run, saying why, instead of the branch being built again until the run times
/// out.
#[test]
fn a_run_whose_branch_someone_keeps_pushing_to_fails_saying_why() {
    let mut h = queue(1);
    h.submit(1);
    let id = h.run_of(1);
    for push in 1..=3 {
        let pushed = mq_core::ids::Sha::new(format!("{push:x}").repeat(40));
        h.ok(Event::BranchObserved {
            run_id: id.clone(),
            sha: Some(pushed),
        });
        assert_eq!(h.state(1) == Failed, push == 3, "push {push}");
    }
    assert_eq!(h.conclusion(1), "test_branch_pushed");
    h.assert_clean();
}

/// A tool that deletes branches it takes for stale keeps deleting a run's branch: the branch
/// is built again twice, and the third deletion found fails the run, saying why, instead of
/// CI starting over every minute until the run times out.
#[test]
fn a_run_whose_branch_someone_keeps_deleting_fails_saying_why() {
    let mut h = queue(1);
    h.submit(1);
    let id = h.run_of(1);
    for deletion in 1..=3 {
        h.ok(Event::BranchObserved {
            run_id: id.clone(),
            sha: None,
        });
        assert_eq!(h.state(1) == Failed, deletion == 3, "deletion {deletion}");
    }
    assert_eq!(h.conclusion(1), "test_branch_pushed");
    assert!(
        h.conclusion_detail(1).contains("deleting it"),
        "{}",
        h.conclusion_detail(1)
    );
    h.assert_clean();
}

/// A restart is a new run on a new branch: pushes found on the branch of the run it replaces
/// do not count towards its own three.
#[test]
fn a_restarted_run_counts_pushes_to_its_own_branch_only() {
    let mut h = queue(1);
    h.submit(1);
    let push = |h: &mut Harness, id: &str, n: u32| {
        h.ok(Event::BranchObserved {
            run_id: id.to_owned(),
            sha: Some(mq_core::ids::Sha::new(format!("{n:x}").repeat(40))),
        });
    };
    let first = h.run_of(1);
    push(&mut h, &first, 1);
    push(&mut h, &first, 2);
    h.ok(Event::Restart { pr: 1 });
    let second = h.run_of(1);
    assert_ne!(second, first);
    push(&mut h, &second, 3);
    assert_eq!(h.state(1), Testing, "one push on its own branch");
    h.pass_pr(1);
    assert_eq!(h.state(1), Merged);
    h.assert_clean();
}

/// A run whose branch is gone has it built again, with the same stamps.
#[test]
fn a_run_whose_branch_is_gone_has_it_built_again() {
    let mut h = queue(1);
    h.submit(1);
    let id = h.run_of(1);
    let before = h.run(&id).unwrap().chain.clone();
    h.auto_execute = false;
    let t = h.ok(Event::BranchObserved {
        run_id: id.clone(),
        sha: None,
    });
    let rebuilt: Vec<_> = t
        .effects
        .iter()
        .filter(|x| matches!(&x.effect, Effect::CreateTestBranch { run_id, .. } if *run_id == id))
        .collect();
    assert_eq!(rebuilt.len(), 1);
    assert_eq!(h.run(&id).unwrap().chain, before, "the same commits");
    // While the branch is being built, what the host shows is not judged.
    let t = h.ok(Event::BranchObserved {
        run_id: id.clone(),
        sha: None,
    });
    assert!(t.effects.is_empty());
    h.auto_execute = true;
    h.execute_all();
    h.pass(&id);
    assert_eq!(h.state(1), Merged);
}

#[test]
fn entries_that_do_not_move_while_nothing_is_in_flight_are_stuck() {
    use mq_core::engine::view::stuck_entries;
    let mut h = queue(1);
    h.submit(1);
    h.submit(2);
    let timeout = h.snap.queue.config.testing_timeout_minutes;
    h.advance_minutes(timeout + 1);
    assert!(
        stuck_entries(&h.snap, h.now).is_empty(),
        "a run is testing #1"
    );
    // The run lost its branch and nothing is building it: nothing moves #1 or #2 any more.
    let id = h.run_of(1);
    let mut lost = h.snap.clone();
    lost.runs.iter_mut().find(|r| r.id == id).unwrap().sha = None;
    lost.outbox.clear();
    assert_eq!(stuck_entries(&lost, h.now), vec![1, 2]);
    let soon = lost.entries[0].state_changed_at.plus_minutes(timeout - 1);
    assert!(stuck_entries(&lost, soon).is_empty(), "not for long enough");
    lost.queue.state = mq_core::settings::QueueState::Paused;
    assert!(
        stuck_entries(&lost, h.now).is_empty(),
        "a paused queue moves nothing"
    );
    lost.queue.state = mq_core::settings::QueueState::Draining;
    assert_eq!(
        stuck_entries(&lost, h.now),
        vec![1],
        "#2 waits for the queue to run"
    );
    let tested_before = lost.entries.iter_mut().find(|e| e.pr == 2).unwrap();
    std::sync::Arc::make_mut(tested_before).first_tested_at = Some(h.now);
    assert_eq!(
        stuck_entries(&lost, h.now),
        vec![1, 2],
        "a draining queue tests #2 again: it was tested before"
    );
}

/// A run in progress with no branch and nothing building it (its creation's intent was lost)
/// has its branch built again at the next tick.
#[test]
fn a_run_whose_branch_creation_was_lost_has_it_built_at_the_tick() {
    let mut h = queue(1);
    h.auto_execute = false;
    h.submit(1);
    let id = h.run_of(1);
    h.snap.outbox.clear();
    h.pending.clear();
    let t = h.tick();
    let rebuilt = t
        .effects
        .iter()
        .any(|x| matches!(&x.effect, Effect::CreateTestBranch { run_id, .. } if *run_id == id));
    assert!(rebuilt);
    h.auto_execute = true;
    h.execute_all();
    h.pass(&id);
    assert_eq!(h.state(1), Merged);
}

/// A restart held for a slot keeps the stamp of its merge commits when it is released: a
/// group rebuilt behind it meanwhile holds its pull requests stamped as it will build them, so
/// both branches hold the same commits (docs/queue-semantics.md §10) and, once the restart
/// merges, the group behind still predicts the target and merges without testing again.
#[test]
fn a_held_restart_builds_the_commits_the_groups_behind_it_hold() {
    let mut h = Harness::with(SettingsPatch {
        concurrency: Some(3),
        pending_failure_depth: Some(1),
        merge_method: Some(mq_core::settings::MergeMethod::MergeCommit),
        ..Default::default()
    });
    for pr in 1..=3 {
        h.submit(pr);
    }
    h.fail_pr(1);
    assert_eq!(h.state(1), PendingFailure);
    h.update(SettingsPatch {
        concurrency: Some(2),
        ..Default::default()
    });
    h.ok(Event::Restart { pr: 1 });
    let restart = h.run_of(1);
    assert!(h.run(&restart).unwrap().held, "no slot: held");
    h.advance_minutes(5);
    h.ok(Event::Cancel {
        pr: 2,
        reason: CancelReason::Api,
    });
    let behind = h.run_of(3);
    let restarts = h.entry(3).unwrap().restarts;
    assert!(!h.run(&restart).unwrap().held, "released");
    h.pass(&restart);
    assert_eq!(h.merged_prs(), vec![1]);
    assert_eq!(h.run_of(3), behind, "#3's group still predicts the target");
    h.pass(&behind);
    assert_eq!(h.merged_prs(), vec![1, 3]);
    let three = h.concluded.iter().find(|e| e.pr == 3).unwrap();
    assert_eq!(three.restarts, restarts, "#3 was not tested again");
    h.assert_clean();
}

/// An effect that failed some seconds into a tick is retried by the tick a minute later, not
/// two: the tick runs once a minute and retries what is due when it starts. A wait the Git
/// host asked for is not shortened.
#[test]
fn an_effect_that_failed_during_a_tick_is_retried_by_the_next_one() {
    for (asked, retried) in [(None, true), (Some(61_000), false)] {
        let mut h = queue(1);
        h.auto_execute = false;
        h.submit(1);
        let build = h
            .pending
            .iter()
            .find(|x| matches!(x.effect, Effect::CreateTestBranch { .. }))
            .cloned()
            .expect("the branch is asked for");
        let tick = h.now;
        h.now = tick.plus_millis(12_000);
        h.ok(Event::EffectFailed {
            effect_id: build.id.clone(),
            error: "502 Server Error".into(),
            permanent: false,
            retry_after_ms: asked,
        });
        h.now = tick.plus_millis(60_000);
        let next = h.tick();
        let handed_out = next.effects.iter().any(|x| x.id == build.id);
        assert_eq!(handed_out, retried, "asked to wait {asked:?}");
    }
}
