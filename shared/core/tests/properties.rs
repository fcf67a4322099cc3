//! Property tests: random event sequences, with flaky and real failures, against the
//! engine's promises (issue: target only moves to tested-green states; nothing lost or
//! duplicated; submission order; concurrency limits; paused queues; independent lanes;
//! determinism).
//!
//! The generated queues run in single or parallel mode (docs/queue-semantics.md §5, §7), and the
//! mode may change mid-sequence (through `switching_modes` while anything tests,
//! docs/queue-semantics.md §8). Impacted targets (a list of lanes, or `ALL`) are uploaded with a
//! submission, later, or only when the queue is drained; in single mode they are carried but
//! unused.

mod support;

use mq_core::engine::{CancelReason, Effect, Event};
use mq_core::entry::ImpactedTargets;
use mq_core::git::PrState;
use mq_core::priority::Priority;
use mq_core::settings::{
    DirectMergeMode, MergeMethod, OptimizationMode, QueueMode, QueueState, RequestedState,
    SettingsPatch,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use support::{Content, Harness};

/// One thing that can happen to a queue.
#[derive(Debug, Clone)]
enum Op {
    /// `targets`: uploaded right after the submission (CI that is quick), or not yet.
    /// `up_to_date`: the head is based on the target head and, unless the pull request is
    /// bad, its own required statuses passed (direct merge, docs/queue-semantics.md §8).
    Submit {
        pr: u32,
        priority: u8,
        no_batch: bool,
        targets: Option<ImpactedTargets>,
        up_to_date: bool,
    },
    /// `setImpactedTargets` for the pull request's current head (refused unless active). CI
    /// computes targets from the head, so uploads for a head repeat its first one.
    SetTargets {
        pr: u32,
        targets: ImpactedTargets,
    },
    /// `updateQueue` with a mode: immediate when nothing tests, else `switching_modes`.
    SwitchMode(QueueMode),
    Cancel(u32),
    Restart(u32),
    PushToPr(u32),
    Close(u32),
    /// CI answers the `n`-th run in progress; `flake` makes a good run fail.
    Answer {
        n: usize,
        flake: bool,
    },
    /// CI answers every run in progress.
    AnswerAll {
        flake: bool,
    },
    Tick(u32),
    PushOutside,
    SetState(RequestedState),
    Concurrency(u32),
    /// `updateQueue` with another `bisectionConcurrency`, whatever is bisecting.
    BisectionConcurrency(u32),
    /// `updateQueue` with another merge method, whatever is in flight.
    MergeMethod(MergeMethod),
}

fn priority() -> impl Strategy<Value = u8> {
    prop_oneof![Just(100u8), Just(100), Just(10), Just(200), Just(0)]
}

/// Impacted targets: one or two of four lanes, sometimes `ALL` (which overlaps everything).
fn targets() -> impl Strategy<Value = ImpactedTargets> {
    prop_oneof![
        1 => Just(ImpactedTargets::All),
        5 => prop::collection::btree_set(0..4u32, 1..=2)
            .prop_map(|lanes| ImpactedTargets::List(
                lanes.into_iter().map(|l| format!("lane{l}")).collect()
            )),
    ]
}

fn mode() -> impl Strategy<Value = QueueMode> {
    prop_oneof![Just(QueueMode::Single), Just(QueueMode::Parallel)]
}

fn op(prs: u32, outside: bool) -> impl Strategy<Value = Op> {
    let pr = 1..=prs;
    let mut ops = vec![
        (
            6,
            (
                pr.clone(),
                priority(),
                any::<bool>(),
                prop::option::weighted(0.7, targets()),
                prop::bool::weighted(0.2),
            )
                .prop_map(|(pr, priority, no_batch, targets, up_to_date)| Op::Submit {
                    pr,
                    priority,
                    no_batch,
                    targets,
                    up_to_date,
                })
                .boxed(),
        ),
        (
            2,
            (pr.clone(), targets())
                .prop_map(|(pr, targets)| Op::SetTargets { pr, targets })
                .boxed(),
        ),
        (1, mode().prop_map(Op::SwitchMode).boxed()),
        (1, pr.clone().prop_map(Op::Cancel).boxed()),
        (1, pr.clone().prop_map(Op::Restart).boxed()),
        (1, pr.clone().prop_map(Op::PushToPr).boxed()),
        (1, pr.prop_map(Op::Close).boxed()),
        (
            6,
            (0..4usize, prop::bool::weighted(0.15))
                .prop_map(|(n, flake)| Op::Answer { n, flake })
                .boxed(),
        ),
        (
            2,
            prop::bool::weighted(0.1)
                .prop_map(|flake| Op::AnswerAll { flake })
                .boxed(),
        ),
        (2, (0..8u32).prop_map(Op::Tick).boxed()),
        (
            1,
            prop_oneof![
                Just(RequestedState::Running),
                Just(RequestedState::Paused),
                Just(RequestedState::Draining),
            ]
            .prop_map(Op::SetState)
            .boxed(),
        ),
        (1, (1..=4u32).prop_map(Op::Concurrency).boxed()),
        (1, (1..=3u32).prop_map(Op::BisectionConcurrency).boxed()),
        (1, merge_method().prop_map(Op::MergeMethod).boxed()),
    ];
    if outside {
        ops.push((1, Just(Op::PushOutside).boxed()));
    }
    prop::strategy::Union::new_weighted(ops)
}

/// Queue settings worth exploring, in both modes, with or without direct merge.
fn merge_method() -> impl Strategy<Value = MergeMethod> {
    prop_oneof![
        Just(MergeMethod::MergeCommit),
        Just(MergeMethod::Squash),
        Just(MergeMethod::Rebase)
    ]
}

fn settings() -> impl Strategy<Value = SettingsPatch> {
    (
        mode(),
        prop::bool::weighted(0.3),
        1..=4u32,
        any::<bool>(),
        1..=4u32,
        any::<bool>(),
        1..=3u32,
        1..=3u32,
        any::<bool>(),
        merge_method(),
        any::<bool>(),
    )
        .prop_map(
            |(mode, direct, c, batch, min, optimistic, depth, bisect, skip, method, adaptive)| {
                SettingsPatch {
                    mode: Some(mode),
                    merge_method: Some(method),
                    direct_merge_mode: Some(if direct {
                        DirectMergeMode::Always
                    } else {
                        DirectMergeMode::Off
                    }),
                    concurrency: Some(c),
                    batch: Some(batch),
                    batching_min_size: Some(min),
                    batching_max_wait_time_minutes: Some(3),
                    can_optimistically_merge: Some(optimistic),
                    pending_failure_depth: Some(depth),
                    adaptive_pending_failure: Some(adaptive),
                    bisection_concurrency: Some(bisect),
                    optimization_mode: Some(if skip {
                        OptimizationMode::BisectionSkipRedundantTests
                    } else {
                        OptimizationMode::Off
                    }),
                    ..Default::default()
                }
            },
        )
}

/// CI's answer for a content: fails when it holds a bad pull request, or on a flake.
fn green(content: &Content, bad: &BTreeSet<u32>, flake: bool) -> bool {
    !flake && !content.iter().any(|c| bad.contains(c))
}

fn apply(h: &mut Harness, op: &Op, bad: &BTreeSet<u32>) {
    match op {
        Op::Submit {
            pr,
            priority,
            no_batch,
            targets,
            up_to_date,
        } => {
            let mut facts = h.facts(*pr);
            facts.based_on_target_head = *up_to_date;
            let green_head = *up_to_date && !bad.contains(pr);
            if green_head {
                h.green_heads.insert(*pr);
            }
            h.host.heads.insert(*pr, facts.head_sha.clone());
            let submitted = h.apply(Event::Submit {
                pr: facts,
                priority: Priority::of(*priority),
                no_batch: Some(*no_batch),
                force: false,
                head_checks_passed: green_head,
            });
            // A direct merge concludes the entry at once: nothing to upload for it.
            let active = submitted.is_ok() && h.entry(*pr).is_some();
            if let (true, Some(targets)) = (active, targets) {
                h.upload_targets(*pr, targets.clone()).unwrap();
            }
        }
        Op::SetTargets { pr, targets } => {
            let _ = h.upload_targets(*pr, targets.clone());
        }
        Op::SwitchMode(mode) => {
            h.update(SettingsPatch {
                mode: Some(*mode),
                ..Default::default()
            });
        }
        Op::Cancel(pr) => {
            let _ = h.apply(Event::Cancel {
                pr: *pr,
                reason: CancelReason::Api,
            });
        }
        Op::Restart(pr) => {
            let _ = h.apply(Event::Restart { pr: *pr });
        }
        Op::PushToPr(pr) => {
            h.push_to_pr(*pr);
        }
        Op::Close(pr) => {
            let mut facts = h.facts(*pr);
            facts.state = PrState::Closed;
            h.ok(Event::PrUpdated { pr: facts });
        }
        Op::Answer { n, flake } => {
            let runs: Vec<String> = h
                .testing_runs()
                .iter()
                .filter(|r| r.sha.is_some())
                .map(|r| r.id.clone())
                .collect();
            if !runs.is_empty() {
                let id = runs[n % runs.len()].clone();
                let pass = green(&h.content_of(&id), bad, *flake);
                h.report(&id, pass);
            }
        }
        Op::AnswerAll { flake } => {
            h.answer_all(|c| green(c, bad, *flake));
        }
        Op::Tick(minutes) => {
            h.advance_minutes(*minutes);
            h.tick();
        }
        Op::PushOutside => {
            h.push_outside();
        }
        Op::SetState(state) => {
            h.update(SettingsPatch {
                state: Some(*state),
                ..Default::default()
            });
        }
        Op::Concurrency(c) => {
            h.update(SettingsPatch {
                concurrency: Some(*c),
                ..Default::default()
            });
        }
        Op::BisectionConcurrency(c) => {
            h.update(SettingsPatch {
                bisection_concurrency: Some(*c),
                ..Default::default()
            });
        }
        Op::MergeMethod(method) => {
            h.update(SettingsPatch {
                merge_method: Some(*method),
                ..Default::default()
            });
        }
    }
}

/// Uploads impacted targets for every active entry that has none for its head (CI that
/// caught up), so that parallel mode can take them.
fn upload_missing_targets(h: &mut Harness) {
    let missing: Vec<u32> = h
        .snap
        .entries
        .iter()
        .filter(|e| !e.has_impacted_targets())
        .map(|e| e.pr)
        .collect();
    for pr in missing {
        let lane = ImpactedTargets::List([format!("lane{}", pr % 4)].into());
        h.upload_targets(pr, lane).unwrap();
    }
}

/// Resumes the queue and lets CI answer (without flakes) until nothing is left to do.
fn drain(h: &mut Harness, bad: &BTreeSet<u32>) {
    h.update(SettingsPatch {
        state: Some(RequestedState::Running),
        ..Default::default()
    });
    for _ in 0..200 {
        if h.snap.entries.is_empty() && h.snap.runs.is_empty() {
            return;
        }
        upload_missing_targets(h);
        h.answer_all(|c| green(c, bad, false));
        h.advance_minutes(5);
        h.tick();
    }
}

/// Every entry id ever active, from the harness's steps.
fn entry_ids(h: &Harness) -> BTreeSet<String> {
    h.concluded.iter().map(|e| e.id.clone()).collect()
}

fn run(settings: &SettingsPatch, ops: &[Op], bad: &BTreeSet<u32>) -> Harness {
    let mut h = Harness::with(settings.clone());
    for op in ops {
        apply(&mut h, op, bad);
        h.assert_clean();
    }
    h
}

/// 96 cases per property, or `PROPTEST_CASES` for a longer search.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// docs/queue-semantics.md §5: every state the queue moves the target to passed CI exactly, or
    /// is a prefix of a passing optimistic chain (checked by the driver at every merge), and
    /// runs never exceed `concurrency` / `bisectionConcurrency`, and a paused queue starts
    /// and merges nothing (checked after every step).
    #[test]
    fn the_target_only_moves_to_tested_green_states(
        settings in settings(),
        ops in prop::collection::vec(op(10, true), 1..80),
        bad in prop::collection::btree_set(1..=10u32, 0..4),
    ) {
        let mut h = run(&settings, &ops, &bad);
        drain(&mut h, &bad);
        h.assert_clean();
        for pr in &bad {
            prop_assert!(!h.host.target.contains(pr), "bad PR {pr} merged: {:?}", h.host.target);
        }
    }

    /// No entry is lost or duplicated, and once CI answers each reaches exactly one
    /// terminal state.
    #[test]
    fn every_entry_reaches_exactly_one_terminal_state(
        settings in settings(),
        ops in prop::collection::vec(op(10, true), 1..80),
        bad in prop::collection::btree_set(1..=10u32, 0..4),
    ) {
        let mut h = run(&settings, &ops, &bad);
        let mut seen: BTreeSet<String> = h.snap.entries.iter().map(|e| e.id.clone()).collect();
        seen.extend(entry_ids(&h));
        drain(&mut h, &bad);
        h.assert_clean();
        prop_assert!(h.snap.entries.is_empty(), "still active: {:?}", h.snap.entries);
        prop_assert!(h.snap.runs.is_empty());
        prop_assert!(h.host.test_prs.is_empty(), "draft pull requests left open: {:?}", h.host.test_prs);
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for e in &h.concluded {
            *count.entry(e.id.clone()).or_default() += 1;
            prop_assert!(e.state.is_terminal());
        }
        prop_assert!(count.values().all(|&n| n == 1), "concluded twice: {count:?}");
        for id in &seen {
            prop_assert!(count.contains_key(id), "entry {id} lost");
        }
        let merged_twice = h.host.target.len()
            != h.host.target.iter().collect::<BTreeSet<_>>().len();
        prop_assert!(!merged_twice, "a change merged twice: {:?}", h.host.target);
    }

    /// Single mode, one priority, no batching: pull requests merge in the order they were
    /// submitted, whatever fails, flakes or restarts.
    #[test]
    fn equal_priority_entries_merge_in_submission_order(
        concurrency in 1..=4u32,
        optimistic in any::<bool>(),
        depth in 1..=3u32,
        answers in prop::collection::vec((0..4usize, prop::bool::weighted(0.15)), 1..60),
        bad in prop::collection::btree_set(1..=12u32, 0..4),
        outside in prop::collection::vec(any::<bool>(), 60),
    ) {
        let mut h = Harness::with(SettingsPatch {
            concurrency: Some(concurrency),
            can_optimistically_merge: Some(optimistic),
            pending_failure_depth: Some(depth),
            ..Default::default()
        });
        let mut next = 1;
        for (i, (n, flake)) in answers.iter().enumerate() {
            if next <= 12 {
                h.submit(next);
                next += 1;
            }
            if outside[i] && i % 7 == 3 {
                h.push_outside();
            }
            apply(&mut h, &Op::Answer { n: *n, flake: *flake }, &bad);
            h.assert_clean();
        }
        drain(&mut h, &bad);
        let merged = h.merged_prs();
        let mut sorted = merged.clone();
        sorted.sort_unstable();
        prop_assert_eq!(merged, sorted);
    }

    /// Parallel mode: entries whose impacted targets are disjoint never restart because of
    /// each other, and never share a test branch. Some pull requests upload `ALL`, which
    /// overlaps everything (docs/queue-semantics.md §7): they may restart others and be restarted
    /// by them, and an entry whose branch holds one is no longer disjoint from anything. So an
    /// event on pull request `p` may restart entry `e` only when the footprints (own targets plus
    /// the targets of the branch's dependencies) of `e` and `p` intersect.
    #[test]
    fn disjoint_lanes_never_restart_each_other(
        concurrency in 2..=6u32,
        ops in prop::collection::vec(
            (1..=12u32, 0..5u8, prop::bool::weighted(0.2)), 1..80),
        bad in prop::collection::btree_set(1..=12u32, 0..4),
        wide in prop::collection::btree_set(1..=12u32, 0..3),
    ) {
        let mut h = Harness::with(SettingsPatch {
            mode: Some(QueueMode::Parallel),
            concurrency: Some(concurrency),
            can_optimistically_merge: Some(true),
            ..Default::default()
        });
        let lane = |pr: u32| if pr.is_multiple_of(2) { "even" } else { "odd" };
        let targets = |pr: u32| {
            if wide.contains(&pr) {
                ImpactedTargets::All
            } else {
                ImpactedTargets::List([lane(pr).to_owned()].into())
            }
        };
        // What an entry's branch touches: its own targets and those of its dependencies.
        let footprint = |h: &Harness, pr: u32| {
            let mut all = targets(pr);
            let run = h.entry(pr).and_then(|e| e.current_run.as_deref()).and_then(|id| h.run(id));
            for &d in run.map(|r| &r.dependent_prs[..]).unwrap_or_default() {
                all.absorb(&targets(d));
            }
            all
        };
        for (pr, action, flake) in ops {
            let mut before: BTreeMap<u32, (u32, ImpactedTargets)> = h
                .snap
                .entries
                .iter()
                .map(|e| (e.pr, (e.restarts, footprint(&h, e.pr))))
                .collect();
            let mut cause = footprint(&h, pr);
            let emitted = h.emitted.len();
            match action {
                0 | 1 => {
                    if h.entry(pr).is_none() && !h.host.target.contains(&pr) {
                        h.submit(pr);
                        let head = h.head(pr);
                        h.ok(Event::SetImpactedTargets { pr, head_sha: head, targets: targets(pr) });
                    }
                }
                2 => {
                    let _ = h.apply(Event::Cancel { pr, reason: CancelReason::Api });
                }
                3 => {
                    let _ = h.apply(Event::Restart { pr });
                }
                _ => {
                    if let Some(run) = h.entry(pr).and_then(|e| e.current_run.clone())
                        && h.run(&run).is_some_and(|r| r.sha.is_some()
                            && r.status == mq_core::run::RunStatus::InProgress)
                    {
                        let pass = green(&h.content_of(&run), &bad, flake);
                        h.report(&run, pass);
                    }
                }
            }
            h.assert_clean();
            cause.absorb(&footprint(&h, pr));
            // A group may start and restart within one step (a slot frees, then a failure
            // ahead of it is decided): what its branch held counts too.
            for (x, _) in &h.emitted[emitted..] {
                let Effect::CreateTestBranch { prs, dependent_prs, .. } = &x.effect else {
                    continue;
                };
                for tested in prs.iter().filter(|p| !dependent_prs.contains(&p.pr)) {
                    if let Some((_, reach)) = before.get_mut(&tested.pr) {
                        for p in prs {
                            reach.absorb(&targets(p.pr));
                        }
                    }
                }
            }
            for e in &h.snap.entries {
                let Some((restarts, reach)) = before.get(&e.pr) else { continue };
                if e.restarts != *restarts {
                    prop_assert!(reach.intersects(&cause),
                        "PR {} ({:?}) restarted because of PR {} ({:?})", e.pr, reach, pr, cause);
                }
            }
        }
        prop_assert_eq!(h.snap.queue.config.mode, QueueMode::Parallel);
        for (x, _) in &h.emitted {
            if let Effect::CreateTestBranch { prs, .. } = &x.effect {
                let lanes: BTreeSet<&str> = prs.iter().map(|p| lane(p.pr)).collect();
                let through_all = prs.iter().any(|p| wide.contains(&p.pr));
                prop_assert!(lanes.len() == 1 || through_all, "{:?}", prs);
            }
        }
    }

    /// The Git host answers effects late, while pull requests close, change and get
    /// cancelled meanwhile: every pull request the target holds concluded `merged`, once,
    /// and every `merged` one is in the target.
    #[test]
    fn late_answers_from_the_git_host_keep_the_record_true(
        settings in settings(),
        ops in prop::collection::vec((op(8, true), 0..3usize), 1..80),
        bad in prop::collection::btree_set(1..=8u32, 0..3),
    ) {
        let mut h = Harness::with(settings);
        h.auto_execute = false;
        for (op, executed) in &ops {
            apply(&mut h, op, &bad);
            h.execute_some(*executed);
            h.assert_clean();
        }
        h.auto_execute = true;
        h.execute_all();
        drain(&mut h, &bad);
        h.assert_clean();
        prop_assert!(h.snap.entries.is_empty(), "still active: {:?}", h.snap.entries);
        let in_target: Vec<u32> = h.host.target.iter().copied().filter(|&c| c <= 8).collect();
        let distinct: BTreeSet<u32> = in_target.iter().copied().collect();
        prop_assert_eq!(distinct.len(), in_target.len(), "merged twice: {:?}", in_target);
        let merged: BTreeSet<u32> = h.merged_prs().into_iter().collect();
        prop_assert_eq!(merged, distinct);
    }

    /// Never more main runs in flight than `concurrency`, nor bisection runs than
    /// `bisectionConcurrency`, after any event (also when the limits change).
    #[test]
    fn runs_in_flight_never_exceed_the_limits(
        settings in settings(),
        ops in prop::collection::vec(op(10, true), 1..80),
        bad in prop::collection::btree_set(1..=10u32, 0..4),
    ) {
        let mut h = Harness::with(settings);
        for op in &ops {
            apply(&mut h, op, &bad);
            let cfg = &h.snap.queue.config;
            let in_flight = |kind| h.snap.runs.iter().filter(|r| {
                r.kind == kind && r.status == mq_core::run::RunStatus::InProgress && !r.held
            }).count();
            prop_assert!(in_flight(mq_core::run::RunKind::Main) <= cfg.concurrency as usize);
            prop_assert!(
                in_flight(mq_core::run::RunKind::Bisection) <= cfg.bisection_concurrency as usize
            );
        }
        h.assert_clean();
    }

    /// From the moment a queue is paused until it resumes, no test branch is created for a
    /// new run and no merge is emitted; results of running tests are kept.
    #[test]
    fn nothing_starts_or_merges_while_paused(
        settings in settings(),
        before in prop::collection::vec(op(10, false), 1..40),
        during in prop::collection::vec(op(10, true), 1..40),
        bad in prop::collection::btree_set(1..=10u32, 0..4),
    ) {
        let mut h = run(&settings, &before, &bad);
        if h.snap.queue.state == QueueState::SwitchingModes {
            // A pause requested during a switch applies when the switch ends (engine
            // decision, `config.rs`): cancel the switch so that the pause applies now.
            let current = h.snap.queue.config.mode;
            apply(&mut h, &Op::SwitchMode(current), &bad);
        }
        apply(&mut h, &Op::SetState(RequestedState::Paused), &bad);
        prop_assert_eq!(h.snap.queue.state, QueueState::Paused);
        let runs_before: BTreeSet<String> = h.snap.runs.iter().map(|r| r.id.clone()).collect();
        let emitted_before = h.emitted.len();
        // No requested state (it may resume the queue). A mode change may come: a paused
        // queue switching modes stays paused until resumed.
        let resumes = |op: &&Op| matches!(op, Op::SetState(_));
        for op in during.iter().filter(|op| !resumes(op)) {
            apply(&mut h, op, &bad);
        }
        for (x, _) in &h.emitted[emitted_before..] {
            match &x.effect {
                Effect::Merge { .. } => prop_assert!(false, "merged while paused: {:?}", x),
                Effect::CreateTestBranch { run_id, .. } => {
                    prop_assert!(runs_before.contains(run_id), "started {run_id} while paused")
                }
                _ => {}
            }
        }
        h.assert_clean();
    }

    /// The same events give the same result, also when the snapshot is stored and loaded
    /// between steps (everything the engine needs lives in the snapshot).
    #[test]
    fn the_same_events_give_the_same_result(
        settings in settings(),
        ops in prop::collection::vec(op(8, true), 1..60),
        bad in prop::collection::btree_set(1..=8u32, 0..3),
    ) {
        let a = run(&settings, &ops, &bad);
        let mut b = Harness::with(settings.clone());
        b.persist = true;
        for op in &ops {
            apply(&mut b, op, &bad);
        }
        prop_assert_eq!(&a.snap, &b.snap);
        prop_assert_eq!(&a.concluded, &b.concluded);
        prop_assert_eq!(a.emitted.len(), b.emitted.len());
        for ((x, _), (y, _)) in a.emitted.iter().zip(&b.emitted) {
            prop_assert_eq!(x, y);
        }
        prop_assert_eq!(&a.host.target, &b.host.target);
    }
}
