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
