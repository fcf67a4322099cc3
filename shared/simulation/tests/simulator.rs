//! The simulator's own checks: the bound, the violation check, and short runs of every
//! scenario.

use mq_core::ids::Sha;
use mq_simulation::host::Host;
use mq_simulation::{Bound, presets, run};

#[test]
fn the_bound_is_the_expected_place_of_the_first_failure() {
    let b = Bound::new(0.1, 8, 30.0);
    assert!((b.per_cycle - 5.6953).abs() < 1e-3, "{}", b.per_cycle);
    assert_eq!(Bound::new(0.0, 8, 30.0).per_cycle, 8.0);
    assert!((Bound::new(0.5, 1, 30.0).per_cycle - 1.0).abs() < 1e-9);
}

#[test]
fn a_move_of_the_target_is_green_only_onto_a_passing_state() {
    let mut host = Host::default();
    let (tested, _) = host.create_branch(None, vec![1, 2, 3]);
    assert!(
        !host.exact_move_is_green(Some(&tested), &[1, 2, 3]),
        "not passed yet"
    );
    host.passed.insert(tested.clone());
    assert!(host.exact_move_is_green(Some(&tested), &[1, 2, 3]));
    assert!(
        host.exact_move_is_green(Some(&tested), &[1, 2]),
        "a prefix of the chain"
    );
    assert!(!host.exact_move_is_green(Some(&tested), &[2, 3]), "skips 1");
    assert!(
        !host.exact_move_is_green(Some(&tested), &[1, 2, 3, 4]),
        "beyond the test"
    );
    assert!(!host.exact_move_is_green(None, &[1]));
    host.target = vec![1];
    assert!(
        host.exact_move_is_green(Some(&tested), &[2, 3]),
        "after 1 merged"
    );
    assert!(!host.exact_move_is_green(Some(&Sha::new("b99")), &[2]));
}

#[test]
fn every_scenario_runs_clean_and_the_queue_beats_one_at_a_time() {
    for mut scenario in presets() {
        scenario.workload.prs = 120;
        let figures = run(&scenario);
        for f in &figures {
            assert_eq!(f.violations, 0, "{}: {}", scenario.name, f.policy);
            assert!(f.merges > 0, "{}: {}", scenario.name, f.policy);
        }
        if scenario.name == "throughput" {
            let queue = &figures[0];
            let bors = figures.iter().find(|f| f.policy.contains("bors")).unwrap();
            assert!(queue.merges_per_hour > 3.0 * bors.merges_per_hour);
        }
    }
}

#[test]
fn conflicting_heads_fail_and_merge_once_fixed_and_the_trace_says_what_happened() {
    use mq_core::entry::EntryState;
    use mq_simulation::workload::{Arrivals, Workload};
    use mq_simulation::{Options, simulate};
    let workload = Workload {
        prs: 150,
        arrivals: Arrivals::PerHour(12.0),
        ci_minutes: 20.0,
        ci_jitter: 0.1,
        failure_rate: 0.05,
        flake_rate: 0.05,
        conflict_rate: 0.1,
        ci_quantiles: None,
        exact_shares: false,
        targets: 50,
        seed: 3,
    };
    let settings = mq_simulation::scenarios::adaptive(4, 1).settings;
    let options = Options {
        trace: true,
        ..Options::default()
    };
    let run = simulate(&workload, &settings, options);
    let trace = run.trace.expect("a trace");
    assert_eq!(run.tally.violations, 0);
    assert_eq!(run.tally.done(), 150);
    let conflicted: Vec<u32> = trace
        .kept
        .concluded
        .iter()
        .filter(|e| {
            e.conclusion
                .as_ref()
                .is_some_and(|c| c.reason == "merge_conflict")
        })
        .map(|e| e.pr)
        .collect();
    assert!(!trace.conflicting.is_empty());
    for pr in &trace.conflicting {
        assert!(conflicted.contains(pr), "#{pr} conflicted once");
        let merged = trace
            .kept
            .concluded
            .iter()
            .find(|e| e.pr == *pr && e.state == EntryState::Merged);
        let bad = trace.bad.contains(pr);
        assert_eq!(
            merged.is_some(),
            !bad,
            "#{pr}: merged with its fixed head unless broken"
        );
        if let Some(e) = merged {
            assert_eq!(e.pr_facts.head_sha.as_str(), format!("h{pr}f"));
        }
    }
    let answered = trace.ci_answers.len() as u32;
    assert!(
        answered <= run.tally.ci_runs && answered + 4 >= run.tally.ci_runs,
        "every run answered but those still testing at the end"
    );
    assert!(trace.ci_answers.iter().any(|a| a.flaked));
    assert!(!trace.kept.restarts.is_empty());
    assert!(trace.active.is_empty(), "every pull request left the queue");
}

#[test]
fn the_steady_figures_leave_out_the_queue_filling_up_and_draining() {
    use mq_simulation::{Options, simulate};
    let mut scenario = presets().remove(0);
    scenario.workload.prs = 400;
    let settings = &scenario.policies[0].settings;
    let whole = simulate(&scenario.workload, settings, Options::default());
    let fed = simulate(
        &scenario.workload,
        settings,
        Options {
            until_fed: true,
            ..Options::default()
        },
    );
    let steady = whole.tally.steady(0.1).expect("a steady part");
    assert_eq!(
        fed.tally.steady(0.1),
        Some(steady),
        "the drain is not needed"
    );
    let overall = whole.tally.figures("", None);
    assert!(steady.merges_per_hour > overall.merges_per_hour);
    assert!(fed.tally.done() < whole.tally.done());
}

#[test]
fn exact_shares_break_and_conflict_exactly_that_many() {
    use mq_simulation::workload::{Arrivals, Workload};
    let workload = Workload {
        prs: 400,
        arrivals: Arrivals::PerHour(10.0),
        ci_minutes: 30.0,
        ci_jitter: 0.1,
        failure_rate: 0.07,
        flake_rate: 0.0,
        conflict_rate: 0.03,
        ci_quantiles: None,
        exact_shares: true,
        targets: 50,
        seed: 9,
    };
    for seed in 1..=5 {
        let w = Workload {
            seed,
            ..workload.clone()
        };
        assert_eq!(w.bad().len(), 28);
        assert_eq!(w.conflicting().len(), 12);
    }
}

#[test]
fn a_queue_that_cannot_keep_up_stops_once_too_many_are_in_it() {
    use mq_simulation::workload::{Arrivals, Workload};
    use mq_simulation::{Options, simulate};
    let workload = Workload {
        prs: 600,
        arrivals: Arrivals::PerHour(10.0),
        ci_minutes: 30.0,
        ci_jitter: 0.1,
        failure_rate: 0.05,
        flake_rate: 0.0,
        conflict_rate: 0.0,
        ci_quantiles: None,
        exact_shares: false,
        targets: 50,
        seed: 2,
    };
    let one_at_a_time = mq_simulation::scenarios::predictive(1, 1).settings;
    let options = Options {
        until_fed: true,
        max_active: Some(50),
        ..Options::default()
    };
    let run = simulate(&workload, &one_at_a_time, options);
    assert!(run.overloaded);
    let steady = run.tally.steady(0.1).expect("merges before it stopped");
    assert!(steady.merges_per_hour < 2.5, "{steady:?}");
    let eight = mq_simulation::scenarios::predictive(8, 1).settings;
    let eight = simulate(&workload, &eight, options);
    assert!(!eight.overloaded);
    assert!(
        eight.active_at_end < eight.active_early * 2 + 10,
        "it keeps up"
    );
}

/// Without batching and without flakes, predictive testing with adaptive pending failure
/// decides as the github-like baseline does (a failure whose groups ahead passed fails at
/// once, and everything behind it restarts without it). Both draw CI's answers per branch
/// (common random numbers), so their figures are the same, on any seed: the saturated
/// 10%-broken scenario of `simulate`, at the preset seed and two others.
#[test]
fn adaptive_pending_failure_matches_the_github_like_baseline_when_nothing_flakes() {
    use mq_simulation::baselines::github;
    let preset = presets()
        .into_iter()
        .find(|s| s.name == "throughput")
        .expect("the throughput scenario");
    for seed in [preset.workload.seed, 1, 2] {
        let workload = mq_simulation::workload::Workload {
            seed,
            prs: 600,
            ..preset.workload.clone()
        };
        let adaptive = mq_simulation::scenarios::adaptive(8, 1).settings;
        let queue = mq_simulation::simulate(&workload, &adaptive, Default::default());
        let ours = queue.tally.figures("adaptive", None);
        let theirs = github(&workload, 8, None);
        assert_eq!(ours.merges, theirs.merges, "seed {seed}");
        assert_eq!(ours.merges_per_hour, theirs.merges_per_hour, "seed {seed}");
        assert_eq!(
            ours.ci_runs_per_merge, theirs.ci_runs_per_merge,
            "seed {seed}"
        );
        assert_eq!(
            ours.mean_minutes_to_merge, theirs.mean_minutes_to_merge,
            "seed {seed}"
        );
    }
}
