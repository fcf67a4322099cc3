use super::*;
use mq_core::metrics::OutcomeFigures;
use mq_core::run::RunStatus;
use std::collections::BTreeMap;

pub(crate) fn sample() -> QueueFigures {
    QueueFigures {
        repo: "acme/rocket".into(),
        branch: "main".into(),
        state: QueueState::Paused,
        depth: 5,
        awaiting_mergeability: 1,
        effects_pending: 2,
        restarts: 3,
        wait_seconds: vec![45.0, 300.0, 4000.0],
        main: LaneFigures {
            prs_testing: 2,
            runs_active: 1,
            runs_limit: 2,
            runs_finished: BTreeMap::from([
                (RunStatus::Succeeded, 4),
                (RunStatus::Failed, 1),
                (RunStatus::Cancelled, 2),
            ]),
            test_seconds: vec![600.0, 600.0, 1200.5],
        },
        bisection: LaneFigures {
            runs_limit: 1,
            ..LaneFigures::default()
        },
        outcomes: BTreeMap::from([
            (
                Outcome::Merged,
                OutcomeFigures {
                    count: 2,
                    time_in_queue_seconds: vec![1800.0, 7300.0],
                    ci_runs: vec![1, 4],
                },
            ),
            (Outcome::Failed, OutcomeFigures::default()),
        ]),
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

const MAIN: &str = r#"branch="main",queue_type="main",repo="acme/rocket""#;
const BISECTION: &str = r#"branch="main",queue_type="bisection",repo="acme/rocket""#;

#[test]
fn gauges_carry_the_queue_labels() {
    let text = render(&[sample()]).unwrap();
    let lines = lines(&text);
    for expected in [
        format!("mq_queue_depth_current{{{MAIN}}} 5"),
        format!("mq_awaiting_mergeability{{{MAIN}}} 1"),
        format!("mq_effects_pending{{{MAIN}}} 2"),
        format!("mq_pr_restarts_1h_total{{{MAIN}}} 3"),
        format!("mq_testing_slots_active{{{MAIN}}} 2"),
        format!("mq_testing_slots_active{{{BISECTION}}} 0"),
        format!("mq_test_runs_active{{{MAIN}}} 1"),
        format!("mq_test_runs_limit{{{MAIN}}} 2"),
        format!("mq_test_runs_limit{{{BISECTION}}} 1"),
        format!(r#"mq_test_runs_finished_1h{{{MAIN},status="cancelled"}} 2"#),
        format!(r#"mq_test_runs_finished_1h{{{BISECTION},status="succeeded"}} 0"#),
    ] {
        assert!(lines.contains(&expected.as_str()), "missing {expected}");
    }
}

#[test]
fn labelled_gauges_list_every_value() {
    let text = render(&[sample()]).unwrap();
    let lines = lines(&text);
    let conclusion = |c: &str, n: u32| {
        format!(
            r#"mq_pr_conclusions_1h_total{{branch="main",conclusion="{c}",queue_type="main",repo="acme/rocket"}} {n}"#
        )
    };
    for expected in [
        conclusion("merged", 2),
        conclusion("failed", 0),
        conclusion("cancelled", 0),
    ] {
        assert!(lines.contains(&expected.as_str()), "missing {expected}");
    }
    let states: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("mq_queue_state{"))
        .copied()
        .collect();
    assert_eq!(states.len(), 4);
    assert!(states.contains(&format!(r#"mq_queue_state{{{MAIN},state="paused"}} 1"#).as_str()));
    assert_eq!(states.iter().filter(|l| l.ends_with(" 1")).count(), 1);
}

#[test]
fn histograms_have_cumulative_buckets_sum_and_count() {
    let text = render(&[sample()]).unwrap();
    let lines = lines(&text);
    let wait = |le: &str| format!(r#"mq_pr_wait_duration_1h_seconds_bucket{{{MAIN},le="{le}"}}"#);
    // Waits of 45 s, 300 s and 4000 s.
    for (le, n) in [("60", 1), ("300", 2), ("3600", 2), ("5400", 3), ("+Inf", 3)] {
        assert!(
            lines.contains(&format!("{} {n}", wait(le)).as_str()),
            "le={le}"
        );
    }
    assert!(lines.contains(&format!("mq_pr_wait_duration_1h_seconds_sum{{{MAIN}}} 4345").as_str()));
    assert!(lines.contains(&format!("mq_pr_wait_duration_1h_seconds_count{{{MAIN}}} 3").as_str()));
    assert!(
        lines.contains(&format!("mq_pr_test_duration_1h_seconds_sum{{{MAIN}}} 2400.5").as_str())
    );
    assert!(
        lines.contains(&format!("mq_pr_test_duration_1h_seconds_count{{{BISECTION}}} 0").as_str())
    );
    let merged = r#"branch="main",conclusion="merged",queue_type="main",repo="acme/rocket""#;
    assert!(lines.contains(
        &format!(r#"mq_pr_time_in_queue_1h_seconds_bucket{{{merged},le="7200"}} 1"#).as_str()
    ));
    assert!(
        lines.contains(&format!("mq_pr_time_in_queue_1h_seconds_sum{{{merged}}} 9100").as_str())
    );
    assert!(lines.contains(&format!(r#"mq_pr_ci_runs_1h_bucket{{{merged},le="3"}} 1"#).as_str()));
    assert!(lines.contains(&format!("mq_pr_ci_runs_1h_sum{{{merged}}} 5").as_str()));
}

#[test]
fn every_family_has_help_and_type() {
    let text = render(&[sample()]).unwrap();
    let helps = text.lines().filter(|l| l.starts_with("# HELP mq_")).count();
    let types = text.lines().filter(|l| l.starts_with("# TYPE mq_")).count();
    assert_eq!((helps, types), (14, 14));
    assert!(text.contains("# TYPE mq_pr_time_in_queue_1h_seconds histogram"));
    assert!(text.contains("# TYPE mq_pr_conclusions_1h_total gauge"));
}

#[test]
fn several_queues_are_told_apart_by_their_labels() {
    let mut other = sample();
    other.repo = "acme/probe".into();
    other.branch = "release/1.x".into();
    other.depth = 9;
    let text = render(&[sample(), other]).unwrap();
    let depths: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mq_queue_depth_current{"))
        .collect();
    assert_eq!(
        depths,
        [
            format!("mq_queue_depth_current{{{MAIN}}} 5").as_str(),
            r#"mq_queue_depth_current{branch="release/1.x",queue_type="main",repo="acme/probe"} 9"#
        ]
    );
}

#[test]
fn no_queues_render_an_empty_document() {
    assert_eq!(render(&[]).unwrap(), "");
}
