//! The tick's CloudWatch metrics, end to end: a tick over a real queue, then the EMF lines
//! the tick function prints for the queues it worked on. The values are the queue's, and the
//! alarm in template.yaml queries exactly the namespace, metric, dimensions and lane those
//! lines carry (an alarm on a dimension set no line has would never fire).

use e2e::live::LiveEnv;
use e2e::{Backend, live_on_both_stores};
use mq_service::tick;
use serde_json::{Value, json};

live_on_both_stores!(the_tick_emits_the_gauges_the_alarm_reads);

async fn the_tick_emits_the_gauges_the_alarm_reads(backend: Backend) {
    let env = LiveEnv::options().without_tick().start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(3, &[]);
    env.create_queue(&repo, json!({"state": "paused"})).await;
    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }

    let started = env.app.now();
    let report = tick::run(&env.app, "emf").await.expect("the tick runs");
    assert_eq!(report.worked_queues.len(), 1, "{report:?}");
    env.clock.advance_minutes(1);
    let lines: Vec<Value> = ::tick::emf_lines_of(&env.app, &report.worked_queues, started)
        .await
        .iter()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect();
    let alarm = Alarm::in_template();
    let line = lines
        .iter()
        .find(|l| l[&alarm.metric].is_number() && l["queue_type"] == alarm.lane.as_str())
        .unwrap_or_else(|| panic!("no line has {alarm:?}: {lines:#?}"));

    assert_eq!(line[&alarm.metric], 3, "three pull requests wait");
    assert_eq!(
        line["_aws"]["Timestamp"], started.0,
        "stamped with the tick's start, not when printed"
    );
    assert_eq!(line["branch"], "main");
    assert!(
        line["repo"].as_str().unwrap().ends_with("/rocket"),
        "{line}"
    );
    let directive = &line["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(directive["Namespace"], alarm.namespace.as_str());
    let mut dimensions: Vec<String> = serde_json::from_value(directive["Dimensions"][0].clone())
        .expect("one dimension set of names");
    dimensions.sort();
    assert_eq!(dimensions, alarm.dimensions, "the alarm's SCHEMA");
    let named = directive["Metrics"].as_array().unwrap().iter();
    assert!(
        named
            .map(|m| &m["Name"])
            .any(|n| n == alarm.metric.as_str()),
        "{directive}"
    );
}

/// What the queue-depth alarm of template.yaml queries.
#[derive(Debug)]
struct Alarm {
    namespace: String,
    metric: String,
    /// Sorted.
    dimensions: Vec<String>,
    lane: String,
}

impl Alarm {
    /// Reads `SELECT MAX(<metric>) FROM SCHEMA(<namespace>, <dimensions>) WHERE queue_type =
    /// '<lane>' ...` from the template's only alarm.
    fn in_template() -> Self {
        let template = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../template.yaml"),
        )
        .expect("template.yaml");
        let query = template
            .split("SELECT ")
            .nth(1)
            .expect("the alarm's metrics query");
        let between = |from: &str, to: &str| -> String {
            let rest = &query[query.find(from).expect(from) + from.len()..];
            rest[..rest.find(to).expect(to)].trim().to_owned()
        };
        let schema = between("SCHEMA(", ")");
        let mut parts = schema.split(',').map(|p| p.trim().to_owned());
        let namespace = parts.next().expect("a namespace");
        let mut dimensions: Vec<String> = parts.collect();
        dimensions.sort();
        Self {
            namespace,
            metric: between("MAX(", ")"),
            dimensions,
            lane: between("queue_type = '", "'"),
        }
    }
}
