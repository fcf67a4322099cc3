use super::*;
use serde_json::{Value, json};

const NOW: Timestamp = Timestamp(1_795_000_000_123);

fn lines() -> Vec<Value> {
    let lines = emf_lines(&crate::prometheus_text::tests::sample(), NOW);
    assert!(
        lines.iter().all(|l| !l.contains('\n')),
        "one object per line"
    );
    lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("each line is a JSON object"))
        .collect()
}

/// The rules of the format's specification every line must follow: an `_aws` member with a
/// millisecond `Timestamp` and `CloudWatchMetrics` directives; each directive's dimensions and
/// metrics name members of the line (strings and numbers).
fn assert_valid_emf(line: &Value) {
    let aws = &line["_aws"];
    assert_eq!(aws["Timestamp"], json!(NOW.millis()), "{line}");
    let directives = aws["CloudWatchMetrics"].as_array().expect("directives");
    assert_eq!(directives.len(), 1);
    for directive in directives {
        assert_eq!(directive["Namespace"], json!(NAMESPACE));
        for set in directive["Dimensions"].as_array().expect("dimension sets") {
            let set = set.as_array().expect("a dimension set is an array");
            assert!(!set.is_empty() && set.len() <= 30);
            for name in set {
                let name = name.as_str().expect("dimension names are strings");
                assert!(line[name].is_string(), "dimension {name} has a value");
            }
        }
        for metric in directive["Metrics"].as_array().expect("metric definitions") {
            let name = metric["Name"].as_str().expect("Name");
            assert_eq!(metric["Unit"], json!("Count"), "{name}");
            assert!(line[name].is_u64(), "metric {name} has a value");
        }
    }
}

fn dimensions(line: &Value) -> Value {
    line["_aws"]["CloudWatchMetrics"][0]["Dimensions"].clone()
}

fn metric_names(line: &Value) -> Vec<&str> {
    line["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Name"].as_str().unwrap())
        .collect()
}

#[test]
fn every_line_follows_the_format() {
    let lines = lines();
    assert_eq!(lines.len(), 5, "main, bisection, and one per conclusion");
    lines.iter().for_each(assert_valid_emf);
}

#[test]
fn the_main_line_carries_the_queue_gauges() {
    let main = &lines()[0];
    assert_eq!(dimensions(main), json!([["repo", "branch", "queue_type"]]));
    assert_eq!(
        (&main["repo"], &main["branch"], &main["queue_type"]),
        (&json!("acme/rocket"), &json!("main"), &json!("main"))
    );
    assert_eq!(
        metric_names(main),
        [
            "mq_queue_depth_current",
            "mq_awaiting_mergeability",
            "mq_testing_slots_active",
            "mq_test_runs_active",
            "mq_pr_restarts_1h_total",
            "mq_effects_pending",
            "mq_entries_stuck"
        ]
    );
    let values: Vec<&Value> = metric_names(main).iter().map(|n| &main[*n]).collect();
    assert_eq!(
        values,
        [
            &json!(5),
            &json!(1),
            &json!(2),
            &json!(1),
            &json!(3),
            &json!(2),
            &json!(0)
        ]
    );
}

#[test]
fn bisection_and_conclusions_have_lines_of_their_own() {
    let lines = lines();
    let bisection = &lines[1];
    assert_eq!(bisection["queue_type"], json!("bisection"));
    assert_eq!(
        metric_names(bisection),
        ["mq_testing_slots_active", "mq_test_runs_active"]
    );
    let conclusions: Vec<(&Value, &Value)> = lines[2..]
        .iter()
        .map(|l| (&l["conclusion"], &l["mq_pr_conclusions_1h_total"]))
        .collect();
    assert_eq!(
        conclusions,
        [
            (&json!("merged"), &json!(2)),
            (&json!("failed"), &json!(0)),
            (&json!("cancelled"), &json!(0))
        ]
    );
    assert_eq!(
        dimensions(&lines[2]),
        json!([["repo", "branch", "queue_type", "conclusion"]])
    );
}

/// CloudWatch takes ASCII dimension values only: a branch named in another script is written
/// percent-encoded, and an ASCII one as it is.
#[test]
fn a_branch_named_beyond_ascii_is_a_percent_encoded_dimension() {
    let mut figures = crate::prometheus_text::tests::sample();
    figures.branch = "feature/größe".into();
    let lines = emf_lines(&figures, NOW);
    let main: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(main["branch"], json!("feature/gr%C3%B6%C3%9Fe"));
    assert_valid_emf(&main);
    assert_eq!(ascii_dimension("release/1.2"), "release/1.2");
}
