//! The advisor's own checks: estimates from a history written by hand, goals and their
//! ranking, the search's budget and determinism, and advice from a simulated history.

use mq_advisor::search::{Candidate, rank};
use mq_advisor::{AdviceError, Budget, Goal, Past, Projection, Settings, Space, advise, estimate};
use mq_core::entry::{Conclusion, Entry, EntryState};
use mq_core::git::PrFacts;
use mq_core::history::History;
use mq_core::ids::Sha;
use mq_core::metrics::Window;
use mq_core::run::{RunStatus, TestRun, TestedPr};
use mq_core::settings::{QueueConfig, QueueMode};
use mq_core::time::Timestamp;

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

fn at(minutes: i64) -> Timestamp {
    Timestamp(minutes * MIN)
}

/// An entry of `pr` at `head`, submitted at `submitted` (minutes), tested from `tested`,
/// ended `state` at `ended` (`None`: still active), for `reason`.
fn entry(
    pr: u32,
    head: &str,
    submitted: i64,
    tested: i64,
    ended: Option<(EntryState, i64, Option<&str>)>,
) -> Entry {
    let (state, concluded_at, reason) = match ended {
        Some((state, t, reason)) => (state, Some(at(t)), reason),
        None => (EntryState::Testing, None, None),
    };
    let facts = PrFacts {
        head_sha: Sha::new(head),
        ..PrFacts::sample(pr)
    };
    Entry {
        state,
        ready_at: Some(at(submitted)),
        first_tested_at: Some(at(tested)),
        concluded_at,
        ci_runs: 1,
        conclusion: reason.map(|reason| Conclusion {
            reason: reason.to_owned(),
            detail: String::new(),
        }),
        ..Entry::submitted(format!("e{pr}"), submitted as u64, facts, at(submitted))
    }
}

/// A run of `prs` (number, head) started at `started` and finished `minutes` later.
fn run(id: &str, prs: &[(u32, &str)], started: i64, minutes: i64, passed: bool) -> TestRun {
    TestRun {
        status: if passed {
            RunStatus::Succeeded
        } else {
            RunStatus::Failed
        },
        reason: (!passed).then(|| "tests_failed".to_owned()),
        created_at: at(started),
        started_at: Some(at(started)),
        finished_at: Some(at(started + minutes)),
        tested: prs
            .iter()
            .map(|(pr, head)| TestedPr {
                entry_id: format!("e{pr}"),
                pr: *pr,
                title: String::new(),
                head_sha: Sha::new(*head),
            })
            .collect(),
        ..TestRun::sample(id)
    }
}

/// Ten hours: 10 pull requests, one broken (#3), one failed by a flake and merged when
/// submitted again (#5), one that conflicted and merged with a fixed head (#7), one still
/// testing at the end (#10).
fn history() -> Past {
    use EntryState::*;
    let concluded = vec![
        entry(1, "a1", 0, 0, Some((Merged, 30, None))),
        entry(2, "a2", 60, 60, Some((Merged, 90, None))),
        entry(3, "a3", 120, 120, Some((Failed, 150, Some("tests_failed")))),
        entry(4, "a4", 180, 180, Some((Merged, 210, None))),
        entry(5, "a5", 200, 210, Some((Failed, 240, Some("tests_failed")))),
        entry(5, "a5", 240, 240, Some((Merged, 270, None))),
        entry(6, "a6", 300, 300, Some((Merged, 330, None))),
        entry(
            7,
            "a7",
            320,
            330,
            Some((Failed, 330, Some("merge_conflict"))),
        ),
        entry(7, "b7", 340, 340, Some((Merged, 370, None))),
        entry(8, "a8", 380, 380, Some((Merged, 410, None))),
        entry(9, "a9", 400, 410, Some((Merged, 440, None))),
    ];
    let active = vec![entry(10, "a10", 580, 590, None)];
    let runs = vec![
        run("r1", &[(1, "a1")], 0, 30, true),
        run("r2", &[(2, "a2")], 60, 30, true),
        run("r3", &[(3, "a3")], 120, 30, false),
        run("r4", &[(4, "a4")], 180, 30, true),
        run("r5", &[(5, "a5")], 210, 30, false),
        run("r6", &[(5, "a5")], 240, 30, true),
        run("r7", &[(6, "a6")], 300, 30, true),
        run("r8", &[(7, "b7")], 340, 30, true),
        run("r9", &[(8, "a8")], 380, 30, true),
        run("r10", &[(9, "a9")], 410, 30, true),
    ];
    let kept = History {
        concluded,
        finished_runs: runs,
        restarts: Vec::new(),
    };
    Past {
        window: Window {
            from: at(0),
            to: at(600),
        },
        kept,
        active,
    }
}

#[test]
fn estimates_are_counts_over_the_window() {
    let e = estimate(&history());
    assert_eq!(e.window_hours, 10.0);
    // Ten heads first submitted (#5 again is no arrival, #7's fix neither).
    assert_eq!(e.arrivals_per_hour.count, 10);
    assert!((e.arrivals_per_hour.value - 1.0).abs() < 1e-9);
    assert_eq!(e.ci_minutes.count, 10);
    assert!((e.ci_minutes.value - 30.0).abs() < 1e-9);
    assert_eq!(e.ci_quantiles.len(), 21);
    // Decided an hour before the end: eight merged heads, and #3.
    assert_eq!((e.broken_rate.count, e.broken_rate.value), (9, 1.0 / 9.0));
    // Runs with only merged heads: eight passed, #5's first failed.
    assert_eq!(e.flake_rate.count, 9);
    assert!((e.flake_rate.value - 1.0 / 9.0).abs() < 1e-9);
    // Nine pull requests whose first entry left, one of them for a conflict.
    assert_eq!(
        (e.conflict_rate.count, e.conflict_rate.value),
        (9, 1.0 / 9.0)
    );
    // Entries waited 40 minutes in all for their first test.
    assert!((e.backlog.value - 40.0 / 600.0).abs() < 1e-9);
    assert!(!e.saturated(1));
    assert_eq!(e.observed.merges, 8);
    assert!((e.observed.merges_per_hour - 0.8).abs() < 1e-9);
}

#[test]
fn an_entry_in_both_the_history_and_the_snapshot_counts_once() {
    let mut h = history();
    let again = h.kept.concluded[0].clone();
    h.active.push(again);
    assert_eq!(estimate(&h), estimate(&history()));
}

fn candidate(concurrency: u32, merges: f64, minutes: f64, per_merge: f64) -> Candidate {
    let base = Settings::of(&QueueConfig::default());
    Candidate {
        settings: Settings {
            concurrency,
            ..base
        },
        projection: Projection {
            merges_per_hour: merges,
            mean_minutes_to_merge: minutes,
            p95_minutes_to_merge: minutes * 2.0,
            ci_runs_per_merge: per_merge,
            ci_runs_per_hour: merges * per_merge,
            keeps_up: true,
        },
    }
}

fn order(goal: Goal, mut candidates: Vec<Candidate>) -> Vec<u32> {
    rank(goal, &mut candidates);
    candidates.iter().map(|c| c.settings.concurrency).collect()
}

#[test]
fn goals_rank_by_their_figure_then_by_time() {
    let all = vec![
        candidate(1, 10.0, 90.0, 1.0),
        candidate(2, 9.9, 60.0, 1.5),
        candidate(3, 8.0, 40.0, 2.0),
        candidate(4, 12.0, 200.0, 3.0),
    ];
    // 12 is the most; 10 and 9.9 are not within 2% of it.
    assert_eq!(order(Goal::MostMerges, all.clone()), vec![4, 1, 2, 3]);
    // Keeping 95% of 12 leaves only 4.
    assert_eq!(order(Goal::FewestCiRuns, all.clone())[0], 4);
    let mut no_4 = all.clone();
    no_4.pop();
    // Within 2% of 10 merges: 1 and 2, the faster first.
    assert_eq!(order(Goal::MostMerges, no_4.clone()), vec![2, 1, 3]);
    assert_eq!(order(Goal::FewestCiRuns, no_4)[0], 1);
    // Runs per hour: 10, 14.85, 16, 36; a budget of 15 leaves 1 and 2.
    let budget = Goal::FastestWithinBudget {
        ci_runs_per_hour: 15.0,
    };
    assert_eq!(order(budget, all), vec![2, 1, 3, 4]);
}

#[test]
fn a_setting_that_falls_behind_comes_after_those_that_keep_up() {
    let mut behind = candidate(8, 30.0, 500.0, 1.0);
    behind.projection.keeps_up = false;
    let all = vec![behind, candidate(2, 10.0, 60.0, 1.0)];
    assert_eq!(order(Goal::MostMerges, all.clone()), vec![2, 8]);
    assert_eq!(order(Goal::FewestCiRuns, all), vec![2, 8]);
}

#[test]
fn the_search_space_holds_the_neighbours_of_its_settings() {
    let base = Settings::of(&QueueConfig::default());
    let space = Settings::space(&base);
    // Bisection concurrency a quarter, half or all of concurrency: fewer distinct below 4.
    assert_eq!(space.len(), (8 + 15 + 15 + 5 * 22) * 7);
    for s in space.iter().step_by(97) {
        for n in s.neighbours(&base) {
            assert!(space.contains(&n), "{} -> {}", s.describe(), n.describe());
        }
    }
}

#[test]
fn the_advice_patch_sets_exactly_the_tuned_settings() {
    let current = QueueConfig {
        concurrency: 3,
        testing_timeout_minutes: 45,
        ..QueueConfig::default()
    };
    let tuned = Settings {
        concurrency: 8,
        batch: true,
        batching_min_size: 6,
        bisection_concurrency: 2,
        pending_failure_depth: 2,
        can_optimistically_merge: true,
        adaptive_pending_failure: true,
    };
    let after = tuned.applied_to(&current);
    assert_eq!(Settings::of(&after), tuned);
    assert_eq!(after.testing_timeout_minutes, 45, "the rest stays");
}

#[test]
fn advice_needs_history_and_single_mode() {
    let e = estimate(&history());
    let refused = advise(
        &e,
        &QueueConfig::default(),
        Goal::MostMerges,
        Budget::default(),
    );
    assert_eq!(
        refused.unwrap_err(),
        AdviceError::NotEnoughHistory {
            heads: 10,
            runs: 10
        }
    );
    let parallel = QueueConfig {
        mode: QueueMode::Parallel,
        ..QueueConfig::default()
    };
    let refused = advise(&e, &parallel, Goal::MostMerges, Budget::default());
    assert_eq!(refused.unwrap_err(), AdviceError::ParallelMode);
}

/// A history of the engine itself: the simulator runs a saturated queue at concurrency 2 and
/// keeps what a store would keep.
fn simulated_history() -> (Past, QueueConfig) {
    use mq_simulation::workload::{Arrivals, Workload};
    use mq_simulation::{Options, simulate};
    let workload = Workload {
        prs: 160,
        arrivals: Arrivals::Saturated { backlog: 12 },
        ci_minutes: 30.0,
        ci_jitter: 0.1,
        failure_rate: 0.1,
        flake_rate: 0.0,
        conflict_rate: 0.0,
        ci_quantiles: None,
        exact_shares: false,
        targets: 1,
        seed: 5,
    };
    let settings = mq_simulation::scenarios::predictive(2, 1).settings;
    let options = Options {
        trace: true,
        ..Options::default()
    };
    let trace = simulate(&workload, &settings, options).trace.unwrap();
    let window = Window {
        from: Timestamp(0),
        to: Timestamp(trace.end_ms + HOUR),
    };
    let history = Past {
        window,
        kept: trace.kept.clone(),
        active: Vec::new(),
    };
    (history, settings.initial_config().unwrap().0)
}

#[test]
fn advice_from_a_simulated_history_is_deterministic_bounded_and_no_worse() {
    let (history, config) = simulated_history();
    let e = estimate(&history);
    assert!(e.saturated(1), "{e:?}");
    assert!((e.broken_rate.value - 0.1).abs() < 0.06, "{e:?}");
    assert_eq!(e.flake_rate.value, 0.0);
    let budget = Budget {
        work: 40_000_000,
        seed: 3,
    };
    let advice = advise(&e, &config, Goal::MostMerges, budget).unwrap();
    assert!(
        advice.work <= budget.work * 6 / 5,
        "{} over {}",
        advice.work,
        budget.work
    );
    assert_eq!(advice.best, advice.candidates[0]);
    assert!(advice.candidates.contains(&advice.current));
    assert!(advice.best.projection.merges_per_hour >= advice.current.projection.merges_per_hour);
    assert!(
        advice.best.projection.merges_per_hour > 1.2 * advice.current.projection.merges_per_hour
    );
    let again = advise(&e, &config, Goal::MostMerges, budget).unwrap();
    assert_eq!(advice, again, "the same history gives the same advice");
    let json = serde_json::to_value(&advice).unwrap();
    assert_eq!(json["goal"]["goal"], "mostMerges");
    assert!(json["best"]["settings"]["concurrency"].is_u64());
    assert!(json["estimates"]["flakeRate"]["count"].is_u64());
}

/// A queue whose own settings are far outside the search (a concurrency of four billion,
/// batches of a million) is still advised within the budget: its projection simulates a
/// line no longer than the search's longest.
#[test]
fn advice_for_a_queue_with_huge_settings_stays_within_its_budget() {
    let (history, config) = simulated_history();
    let e = estimate(&history);
    let budget = Budget {
        work: 40_000_000,
        seed: 3,
    };
    let huge = [
        QueueConfig {
            concurrency: u32::MAX,
            bisection_concurrency: u32::MAX,
            ..config.clone()
        },
        QueueConfig {
            batch: true,
            batching_min_size: 1_000_000,
            ..config.clone()
        },
    ];
    for current in huge {
        let advice = advise(&e, &current, Goal::MostMerges, budget).unwrap();
        assert!(
            advice.work <= budget.work * 6 / 5,
            "{} over {}",
            advice.work,
            budget.work
        );
        assert_eq!(advice.current.settings, Settings::of(&current));
    }
}

fn advice_of(current: Candidate, candidates: Vec<Candidate>) -> mq_advisor::Advice {
    mq_advisor::Advice {
        goal: Goal::MostMerges,
        estimates: estimate(&history()),
        current,
        best: candidates[0],
        candidates,
        within_budget: true,
        evaluations: 0,
        work: 0,
        simulated_prs: 0,
    }
}

#[test]
fn auto_tuning_changes_settings_for_a_large_gain_only() {
    use mq_advisor::worth_changing;
    let now = candidate(1, 5.0, 60.0, 1.0);
    // 12% more merges per hour: large.
    let more = advice_of(now, vec![candidate(4, 5.6, 60.0, 1.0), now]);
    let advised = worth_changing(&more, None).expect("a large gain");
    assert_eq!(advised.settings.concurrency, 4);
    assert!(
        advised.reason.contains("concurrency 4"),
        "{}",
        advised.reason
    );
    // 5% more, and as fast: not worth a change.
    let small = advice_of(now, vec![candidate(2, 5.25, 58.0, 1.0), now]);
    assert_eq!(worth_changing(&small, None), None);
    // As many merges, 20 minutes sooner: large.
    let sooner = advice_of(now, vec![candidate(2, 5.0, 40.0, 1.0), now]);
    assert_eq!(
        worth_changing(&sooner, None).unwrap().settings.concurrency,
        2
    );
    // The current settings are the best.
    let keep = advice_of(now, vec![now, candidate(2, 4.0, 60.0, 1.0)]);
    assert_eq!(worth_changing(&keep, None), None);
    // Nothing merges whatever the settings (every pull request of the window failed).
    let none = |concurrency| Candidate {
        projection: Projection {
            merges_per_hour: 0.0,
            mean_minutes_to_merge: 0.0,
            p95_minutes_to_merge: 0.0,
            keeps_up: false,
            ..candidate(concurrency, 0.0, 0.0, 0.0).projection
        },
        ..candidate(concurrency, 0.0, 0.0, 0.0)
    };
    let nothing = advice_of(none(4), vec![none(1), none(4)]);
    assert_eq!(worth_changing(&nothing, None), None);
}

#[test]
fn auto_tuning_keeps_to_its_proposal_while_it_is_among_the_best() {
    use mq_advisor::worth_changing;
    let now = candidate(1, 5.0, 60.0, 1.0);
    let (c6, c8) = (candidate(6, 8.1, 30.0, 1.0), candidate(8, 8.0, 30.0, 1.0));
    let advice = advice_of(now, vec![c6, c8, now]);
    let proposed = c8.settings;
    let advised = worth_changing(&advice, Some(&proposed)).unwrap();
    assert_eq!(
        advised.settings, proposed,
        "within 2% of the best: advised again"
    );
    let far = candidate(8, 7.0, 30.0, 1.0);
    let advice = advice_of(now, vec![c6, far, now]);
    let advised = worth_changing(&advice, Some(&proposed)).unwrap();
    assert_eq!(advised.settings, c6.settings, "no longer among the best");
}
