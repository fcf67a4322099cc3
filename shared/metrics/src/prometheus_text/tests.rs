use super::*;
use mq_core::metrics::{CiRuns, Durations, OutcomeFigures, QueueName};
use mq_core::run::RunStatus;

pub(crate) fn durations(seconds: &[f64]) -> Durations {
    Durations::of(&names::DURATION_BUCKETS, seconds.iter().copied())
}

fn ci_runs(runs: &[u32]) -> CiRuns {
    CiRuns::of(&names::CI_RUNS_BUCKETS, runs.iter().map(|n| f64::from(*n)))
}

/// Runs finished by status; the statuses not given none.
fn finished(by_status: &[(RunStatus, u64)]) -> [u64; 3] {
    FINISHED_STATUSES.map(|status| {
        let given = by_status.iter().find(|(s, _)| *s == status);
        given.map_or(0, |(_, n)| *n)
    })
}

/// Figures per outcome; the outcomes not given none.
fn outcomes<const N: usize>(given: [(Outcome, OutcomeFigures); N]) -> [OutcomeFigures; 3] {
    let mut all: [OutcomeFigures; 3] = Default::default();
    for (outcome, figures) in given {
        let i = Outcome::ALL.iter().position(|o| *o == outcome).unwrap();
        all[i] = figures;
    }
    all
}

pub(crate) fn sample() -> QueueFigures {
    QueueFigures {
        repo: "acme/rocket".into(),
        branch: "main".into(),
        state: QueueState::Paused,
        depth: 5,
        awaiting_mergeability: 1,
        effects_pending: 2,
        entries_stuck: 0,
        restarts: 3,
        wait_seconds: durations(&[45.0, 300.0, 4000.0]),
        main: LaneFigures {
            prs_testing: 2,
            runs_active: 1,
            runs_limit: 2,
            runs_finished: finished(&[
                (RunStatus::Succeeded, 4),
                (RunStatus::Failed, 1),
                (RunStatus::Cancelled, 2),
            ]),
            test_seconds: durations(&[600.0, 600.0, 1200.5]),
        },
        bisection: LaneFigures {
            runs_limit: 1,
            ..LaneFigures::default()
        },
        outcomes: outcomes([
            (
                Outcome::Merged,
                OutcomeFigures {
                    count: 2,
                    time_in_queue_seconds: durations(&[1800.0, 7300.0]),
                    ci_runs: ci_runs(&[1, 4]),
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
    let text = render(&[sample()], &[]).unwrap();
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
    let text = render(&[sample()], &[]).unwrap();
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
    let text = render(&[sample()], &[]).unwrap();
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
    let text = render(&[sample()], &[]).unwrap();
    let helps = text.lines().filter(|l| l.starts_with("# HELP mq_")).count();
    let types = text.lines().filter(|l| l.starts_with("# TYPE mq_")).count();
    assert_eq!((helps, types), (16, 16));
    assert!(text.contains("# TYPE mq_pr_time_in_queue_1h_seconds histogram"));
    assert!(text.contains("# TYPE mq_pr_conclusions_1h_total gauge"));
}

#[test]
fn several_queues_are_told_apart_by_their_labels() {
    let mut other = sample();
    other.repo = "acme/probe".into();
    other.branch = "release/1.x".into();
    other.depth = 9;
    let text = render(&[sample(), other], &[]).unwrap();
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
    assert_eq!(render(&[], &[]).unwrap(), "");
}

fn name(repo: &str, branch: &str) -> QueueName {
    QueueName {
        repo: repo.into(),
        branch: branch.into(),
    }
}

/// A queue that could not be read has its `mq_queue_read_failed` series at 1 and no other;
/// every queue read has it at 0.
#[test]
fn a_queue_not_read_is_named_by_its_read_failed_series_alone() {
    let text = render(&[sample()], &[name("acme/broken", "main")]).unwrap();
    let broken = r#"branch="main",queue_type="main",repo="acme/broken""#;
    let failed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mq_queue_read_failed{"))
        .collect();
    assert_eq!(
        failed,
        [
            format!("mq_queue_read_failed{{{broken}}} 1").as_str(),
            format!("mq_queue_read_failed{{{MAIN}}} 0").as_str(),
        ]
    );
    let others = text
        .lines()
        .filter(|l| l.contains(broken) && !l.starts_with("mq_queue_read_failed{"));
    assert_eq!(others.count(), 0);
}

/// With no queue read, the document is that one family; a repository and branch shared by a
/// queue read and one not (two Git hosts) has one series, at 1.
#[test]
fn unreadable_queues_alone_or_beside_their_namesake_render_one_series_each() {
    let alone = render(&[], &[name("acme/broken", "main")]).unwrap();
    let families: Vec<&str> = alone
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .collect();
    assert_eq!(families, ["mq_queue_read_failed gauge"]);
    let namesake = render(&[sample()], &[name("acme/rocket", "main")]).unwrap();
    let failed: Vec<&str> = namesake
        .lines()
        .filter(|l| l.starts_with("mq_queue_read_failed{"))
        .collect();
    assert_eq!(
        failed,
        [format!("mq_queue_read_failed{{{MAIN}}} 1").as_str()]
    );
}

/// Where the golden rendering of [`varied`] is kept.
const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/prometheus_text.txt"
);

fn lane(
    testing: u64,
    active: u64,
    limit: u64,
    by_status: &[(RunStatus, u64)],
    test: &[f64],
) -> LaneFigures {
    LaneFigures {
        prs_testing: testing,
        runs_active: active,
        runs_limit: limit,
        runs_finished: finished(by_status),
        test_seconds: durations(test),
    }
}

fn outcome(count: u64, time_in_queue: &[f64], runs: &[u32]) -> OutcomeFigures {
    OutcomeFigures {
        count,
        time_in_queue_seconds: durations(time_in_queue),
        ci_runs: self::ci_runs(runs),
    }
}

/// Queues in no particular order, with names needing escaping, a repository and branch
/// shared by two queues (two Git hosts), every outcome, empty and full histograms, values on
/// bucket bounds, fractional, negative, huge and not-a-number seconds, counts beyond 2^53.
fn varied() -> Vec<QueueFigures> {
    let escaped = QueueFigures {
        repo: "we\"ird\\org/na\nme".into(),
        branch: "feat/\"quoted\"\\back\nline-café".into(),
        state: QueueState::Draining,
        depth: 0,
        awaiting_mergeability: 0,
        effects_pending: 0,
        entries_stuck: 0,
        restarts: 0,
        wait_seconds: durations(&[]),
        main: LaneFigures::default(),
        bisection: lane(
            3,
            2,
            4,
            &[(RunStatus::Failed, 7)],
            &[0.001, 59.9999, 60.0001],
        ),
        outcomes: Default::default(),
    };
    let early_branch = QueueFigures {
        repo: "zeta/zed".into(),
        branch: "a-branch".into(),
        state: QueueState::SwitchingModes,
        depth: u64::MAX,
        awaiting_mergeability: (1 << 53) + 1,
        effects_pending: 1 << 53,
        entries_stuck: 0,
        restarts: (1 << 53) - 1,
        wait_seconds: durations(&[-0.0]),
        main: lane(0, 0, 1, &[], &[f64::NAN, 2.0]),
        bisection: lane(0, 0, 0, &[], &[f64::INFINITY]),
        outcomes: outcomes([
            (Outcome::Cancelled, outcome(1, &[-1.5], &[0])),
            (Outcome::Merged, outcome(1, &[1e20], &[u32::MAX])),
        ]),
    };
    let late_branch = QueueFigures {
        repo: "acme/alpha".into(),
        branch: "release/1.x".into(),
        state: QueueState::Running,
        depth: 12,
        awaiting_mergeability: 0,
        effects_pending: 1,
        entries_stuck: 0,
        restarts: 0,
        wait_seconds: durations(&[0.1, 0.2, 0.3, 1e-7, 123_456.789]),
        main: lane(
            4,
            2,
            2,
            &[(RunStatus::Succeeded, 10), (RunStatus::Cancelled, 1)],
            &[300.0, 300.25, 899.999, 900.0, 5400.0, 7200.0, 7200.001],
        ),
        bisection: lane(0, 0, 1, &[], &[]),
        outcomes: outcomes([
            (
                Outcome::Merged,
                outcome(9, &[61.5, 0.5, 3599.75], &[1, 2, 3, 4, 5, 10, 11]),
            ),
            (Outcome::Failed, outcome(2, &[7200.0, 7200.5], &[6, 1])),
            (Outcome::Cancelled, outcome(0, &[], &[])),
        ]),
    };
    let mut probe = sample();
    probe.repo = "acme/probe".into();
    probe.state = QueueState::Running;
    probe.wait_seconds = durations(&[0.3, 0.6, 0.9, 1.2]);
    let mut rocket_elsewhere = sample();
    rocket_elsewhere.depth = 7;
    rocket_elsewhere.state = QueueState::Running;
    rocket_elsewhere.wait_seconds = durations(&[0.1, 0.7]);
    rocket_elsewhere.main.test_seconds = durations(&[1.25]);
    rocket_elsewhere.main.runs_finished = finished(&[(RunStatus::Failed, 9)]);
    vec![
        sample(),
        escaped,
        late_branch,
        probe,
        early_branch,
        rocket_elsewhere,
    ]
}

/// The rendering of [`varied`] is the golden file's, byte for byte. `UPDATE_GOLDEN=1` writes
/// the file instead, for a change of the format made on purpose.
#[test]
fn varied_queues_render_as_the_golden_file() {
    let text = render(&varied(), &[]).unwrap();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &text).unwrap();
    }
    let golden = std::fs::read_to_string(GOLDEN).unwrap();
    assert!(text == golden, "differs from {GOLDEN}:\n{text}");
}

#[test]
fn the_order_of_the_queues_given_does_not_matter() {
    let mut queues = varied();
    // Sorted as the API sorts them; the two queues of acme/rocket keep their order.
    queues.sort_by(|a, b| (&a.repo, &a.branch).cmp(&(&b.repo, &b.branch)));
    assert_eq!(
        render(&queues, &[]).unwrap(),
        render(&varied(), &[]).unwrap()
    );
}

#[test]
fn labels_whose_values_run_together_alike_are_told_apart() {
    let mut one = sample();
    (one.repo, one.branch, one.depth) = ("a/bc".into(), "main".into(), 1);
    let mut other = sample();
    (other.repo, other.branch, other.depth) = ("a/b".into(), "cmain".into(), 2);
    let text = render(&[one, other], &[]).unwrap();
    let depths: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mq_queue_depth_current{"))
        .collect();
    assert_eq!(
        depths,
        [
            r#"mq_queue_depth_current{branch="cmain",queue_type="main",repo="a/b"} 2"#,
            r#"mq_queue_depth_current{branch="main",queue_type="main",repo="a/bc"} 1"#,
        ]
    );
}

/// A sample line split up: its name, its labels (names and values as written) and its value.
type Sample<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

fn parsed(line: &str) -> Sample<'_> {
    let (series, value) = line.rsplit_once(' ').unwrap();
    let Some((name, labels)) = series.split_once('{') else {
        return (series, Vec::new(), value);
    };
    let labels = labels.strip_suffix("\"}").unwrap();
    let labels = labels
        .split("\",")
        .map(|pair| pair.split_once("=\"").unwrap())
        .collect();
    (name, labels, value)
}

/// The sample lines of `text` (no label value of [`sample`] holds `",`).
fn samples(text: &str) -> Vec<Sample<'_>> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(parsed)
        .collect()
}

const ALL: [Metric; 16] = [
    names::QUEUE_DEPTH,
    names::AWAITING_MERGEABILITY,
    names::TESTING_SLOTS_ACTIVE,
    names::TEST_RUNS_ACTIVE,
    names::TEST_RUNS_LIMIT,
    names::TEST_RUNS_FINISHED,
    names::CONCLUSIONS,
    names::RESTARTS,
    names::QUEUE_STATE,
    names::EFFECTS_PENDING,
    names::ENTRIES_STUCK,
    names::WAIT_DURATION,
    names::TEST_DURATION,
    names::TIME_IN_QUEUE,
    names::CI_RUNS,
    names::READ_FAILED,
];

/// Every metric is there, with its help text, its type and the labels of its series; the
/// families are listed by name.
#[test]
fn every_metric_is_present_with_its_labels() {
    let mut other = sample();
    other.repo = "acme/probe".into();
    let text = render(&[sample(), other], &[]).unwrap();
    let histograms = [
        names::WAIT_DURATION,
        names::TEST_DURATION,
        names::TIME_IN_QUEUE,
        names::CI_RUNS,
    ];
    let queue = [BRANCH, QUEUE_TYPE, REPO];
    let outcome = [BRANCH, CONCLUSION, QUEUE_TYPE, REPO];
    // Per metric: its labels, and its series per queue.
    let expected = |m: Metric| -> (Vec<&str>, usize) {
        match m.name {
            "mq_queue_state" => ([&queue[..], &[STATE]].concat(), 4),
            "mq_test_runs_finished_1h" => ([&queue[..], &[STATUS]].concat(), 2 * 3),
            "mq_testing_slots_active"
            | "mq_test_runs_active"
            | "mq_test_runs_limit"
            | "mq_pr_test_duration_1h_seconds" => (queue.to_vec(), 2),
            "mq_pr_conclusions_1h_total"
            | "mq_pr_time_in_queue_1h_seconds"
            | "mq_pr_ci_runs_1h" => (outcome.to_vec(), 3),
            _ => (queue.to_vec(), 1),
        }
    };
    for metric in ALL {
        let histogram = histograms.contains(&metric);
        let kind = if histogram { "histogram" } else { "gauge" };
        let help = format!("# HELP {} {}", metric.name, metric.help);
        assert!(text.lines().any(|l| l == help), "{help}");
        let type_line = format!("# TYPE {} {kind}", metric.name);
        assert!(text.lines().any(|l| l == type_line), "{type_line}");
        let count = if histogram {
            format!("{}_count", metric.name)
        } else {
            metric.name.to_owned()
        };
        let series: Vec<_> = samples(&text)
            .into_iter()
            .filter(|(name, _, _)| *name == count)
            .collect();
        let (labels, per_queue) = expected(metric);
        assert_eq!(series.len(), 2 * per_queue, "{}", metric.name);
        for (_, pairs, _) in series {
            let names: Vec<&str> = pairs.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, labels, "{}", metric.name);
        }
    }
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(families.len(), ALL.len());
    assert!(families.is_sorted(), "{families:?}");
}

/// Every histogram series: `_bucket` lines with increasing bounds and cumulative counts, the
/// last `le="+Inf"` with every observation, then `_sum` and `_count`, with the series'
/// labels.
#[test]
fn histograms_are_well_formed() {
    let text = render(&varied(), &[]).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let mut checked = 0;
    let mut i = 0;
    while i < lines.len() {
        let (name, labels, _) = parsed(lines[i]);
        let Some(family) = name.strip_suffix("_bucket") else {
            i += 1;
            continue;
        };
        let mut bounds = Vec::new();
        let mut counts = Vec::new();
        while let Some(line) = lines.get(i).filter(|l| parsed(l).0 == name) {
            let (_, mut these, count) = parsed(line);
            let (le, bound) = these.pop().unwrap();
            assert_eq!((le, these.as_slice()), ("le", &labels[..labels.len() - 1]));
            bounds.push(bound);
            counts.push(count.parse::<f64>().unwrap());
            i += 1;
        }
        assert_eq!(bounds.last(), Some(&"+Inf"), "{family}");
        let finite: Vec<f64> = bounds[..bounds.len() - 1]
            .iter()
            .map(|b| b.parse().unwrap())
            .collect();
        assert!(
            finite.is_sorted() && finite.len() >= 6,
            "{family}: {bounds:?}"
        );
        assert!(counts.is_sorted(), "{family}: {counts:?}");
        let series = &labels[..labels.len() - 1];
        let (sum, sum_labels, _) = parsed(lines[i]);
        let (count, count_labels, total) = parsed(lines[i + 1]);
        assert_eq!((sum, &sum_labels[..]), (&*format!("{family}_sum"), series));
        assert_eq!(
            (count, &count_labels[..]),
            (&*format!("{family}_count"), series)
        );
        assert_eq!(total.parse::<f64>().unwrap(), *counts.last().unwrap());
        checked += 1;
        i += 2;
    }
    // Per repository and branch: a queue's waits, two lanes, three outcomes twice.
    assert_eq!(checked, 5 * (1 + 2 + 3 + 3));
}

/// Label values have `\`, `"` and newline escaped by a backslash; help texts `\` and newline.
#[test]
fn label_values_are_escaped() {
    let mut odd = sample();
    odd.repo = "we\"ird\\org/na\nme".into();
    odd.branch = "a \"b\"\\c\nd".into();
    let text = render(&[odd], &[]).unwrap();
    let labels = r#"branch="a \"b\"\\c\nd",queue_type="main",repo="we\"ird\\org/na\nme""#;
    assert!(
        text.lines()
            .any(|l| l == format!("mq_queue_depth_current{{{labels}}} 5")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l
                == format!(r#"mq_pr_wait_duration_1h_seconds_bucket{{{labels},le="+Inf"}} 3"#))
    );
    assert_eq!(
        text.lines().count(),
        render(&[sample()], &[]).unwrap().lines().count()
    );
}

#[test]
fn bucket_bounds_increase() {
    for bounds in [&names::DURATION_BUCKETS[..], &names::CI_RUNS_BUCKETS] {
        assert!(bounds.iter().all(|b| b.is_finite()));
        assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
    }
}
