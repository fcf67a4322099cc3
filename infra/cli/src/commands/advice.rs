//! `mq advice`: the settings advised for a goal from the queue's own history
//! (`getQueueAdvice`, docs/queue-semantics.md §13), and auto-tuning's record.

use crate::cli::AdviceArgs;
use crate::config::Context;
use crate::error::Result;
use crate::exit::Outcome;
use crate::output::{table, text};
use serde_json::{Value, json};

/// Asks for the advice and prints it (with `--json`, the API's answer).
pub fn advice(ctx: &Context, args: &AdviceArgs) -> Result<Outcome> {
    let answer = ctx.api()?.read("getQueueAdvice", &request(ctx, args)?)?;
    let heading = ctx.queue_line(format!("advice for {}", goal(&answer)))?;
    ctx.print(
        &answer,
        format!("{heading}\n{}", render(&answer).trim_end()),
    );
    Ok(Outcome::Done)
}

/// The body of `getQueueAdvice`: the queue, the goal, and the budget and window when given.
fn request(ctx: &Context, args: &AdviceArgs) -> Result<Value> {
    let mut body = ctx.queue_body()?;
    body["goal"] = json!(args.goal.api_name());
    if let Some(runs) = args.ci_runs_per_hour {
        body["ciRunsPerHour"] = json!(runs);
    }
    if let Some(days) = args.window_days {
        body["windowDays"] = json!(days);
    }
    Ok(body)
}

/// The answer's goal in words.
fn goal(answer: &Value) -> String {
    match answer["goal"].as_str() {
        Some("mostMerges") => "the most merges per hour".to_owned(),
        Some("fewestCiRuns") => "the fewest CI runs per merge".to_owned(),
        Some("fastestWithinBudget") => format!(
            "the shortest time to merge within {} CI runs per hour",
            text(answer, "ciRunsPerHour")
        ),
        _ => text(answer, "goal"),
    }
}

/// The window, the estimates, the advice or why there is none, and the tuning record,
/// separated by blank lines.
fn render(answer: &Value) -> String {
    let advice = match answer.get("advice") {
        Some(advice) => advised(advice),
        None => no_advice(&answer["noAdvice"]),
    };
    let mut tuning = format!("autoTune: {}\n", on_off(&answer["autoTune"]));
    for l in tuning_lines(&answer["tuning"]) {
        tuning.push_str(&format!("  {l}\n"));
    }
    [
        window(&answer["window"]),
        estimates(&answer["estimates"]),
        advice,
        tuning,
    ]
    .join("\n")
}

fn window(window: &Value) -> String {
    let shortened = if window["shortened"] == true {
        " (shortened to the most recent items a request reads)"
    } else {
        ""
    };
    format!(
        "window: {} to {}, {} hours{shortened}\n",
        text(window, "from"),
        text(window, "to"),
        number(&window["hours"], 1)
    )
}

/// The estimates shown: their names, the API's, and their decimals (none: a percentage).
const ESTIMATES: [(&str, &str, Option<usize>); 7] = [
    ("arrivals per hour", "arrivalsPerHour", Some(2)),
    ("departures per hour", "departuresPerHour", Some(2)),
    ("mean CI minutes", "ciMinutes", Some(1)),
    ("broken rate", "brokenRate", None),
    ("flake rate", "flakeRate", None),
    ("conflict rate", "conflictRate", None),
    ("backlog", "backlog", Some(1)),
];

/// The workload estimated from the window, each with its count, then what the window
/// measured of the queue as it ran.
fn estimates(e: &Value) -> String {
    let rows: Vec<Vec<String>> = ESTIMATES
        .iter()
        .map(|&(name, field, decimals)| {
            let value = &e[field]["value"];
            let shown = decimals.map_or_else(|| percent(value), |d| number(value, d));
            vec![name.to_owned(), shown, text(&e[field], "count")]
        })
        .collect();
    let o = &e["observed"];
    format!(
        "{}observed: {} merges/h, {} min to merge (p95 {}), {} CI runs per merge, {} CI runs/h, {} merges\n",
        table(&["ESTIMATE", "VALUE", "COUNT"], &rows),
        number(&o["mergesPerHour"], 2),
        number(&o["meanMinutesToMerge"], 1),
        number(&o["p95MinutesToMerge"], 1),
        number(&o["ciRunsPerMerge"], 2),
        number(&o["ciRunsPerHour"], 1),
        text(o, "merges")
    )
}

/// The advice in words, then the projections of the current settings, the best and the
/// other candidates (settings last: the widest column).
fn advised(advice: &Value) -> String {
    let summary = text(advice, "summary");
    let mut out = if advice["changesSettings"] == true {
        format!("advice: {summary}\n")
    } else {
        format!("advice: keep the current settings ({summary})\n")
    };
    if advice["withinBudget"] == false {
        out.push_str("no setting keeps within the budget: this one uses the least\n");
    }
    let others = advice["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .skip(1);
    let mut rows = vec![
        candidate_row("current", &advice["current"]),
        candidate_row("best", &advice["best"]),
    ];
    rows.extend(others.map(|c| candidate_row("other", c)));
    let header = [
        "",
        "MERGES/H",
        "MEAN MIN",
        "P95 MIN",
        "CI RUNS/MERGE",
        "CI RUNS/H",
        "KEEPS UP",
        "SETTINGS",
    ];
    out.push('\n');
    out.push_str(&table(&header, &rows));
    out.push_str(&format!(
        "({} projections, {} pull requests simulated)\n",
        text(advice, "evaluations"),
        text(advice, "simulatedPrs")
    ));
    out
}

fn candidate_row(label: &str, candidate: &Value) -> Vec<String> {
    let p = &candidate["projection"];
    vec![
        label.to_owned(),
        number(&p["mergesPerHour"], 2),
        number(&p["meanMinutesToMerge"], 1),
        number(&p["p95MinutesToMerge"], 1),
        number(&p["ciRunsPerMerge"], 2),
        number(&p["ciRunsPerHour"], 1),
        yes_no(&p["keepsUp"]),
        text(&candidate["settings"], "summary"),
    ]
}

/// `no advice (not enough history): <the API's message>`.
fn no_advice(no: &Value) -> String {
    format!(
        "no advice ({}): {}\n",
        text(no, "reason").replace('_', " "),
        text(no, "message")
    )
}

/// Auto-tuning's record (a `Tuning`), one line each: the last check, the change it
/// proposed, the changes made, oldest first, and an operator's last change.
pub fn tuning_lines(tuning: &Value) -> Vec<String> {
    let checked = tuning["checkedAt"].as_str().unwrap_or("never");
    let mut lines = vec![format!("last check: {checked}")];
    if tuning["proposed"].is_object() {
        lines.push(format!("proposed {}", change(&tuning["proposed"])));
    }
    let changes = tuning["changes"].as_array().map_or(&[][..], Vec::as_slice);
    if changes.is_empty() {
        lines.push("changes: none".to_owned());
    }
    lines.extend(changes.iter().map(|c| format!("changed {}", change(c))));
    if let Some(at) = tuning["operatorChangedAt"].as_str() {
        lines.push(format!("changed by an operator: {at}"));
    }
    lines
}

/// `<at>: <before> -> <after> (<reason>)`.
fn change(c: &Value) -> String {
    format!(
        "{}: {} -> {} ({})",
        text(c, "at"),
        text(&c["before"], "summary"),
        text(&c["after"], "summary"),
        text(c, "reason")
    )
}

/// A number with `decimals` decimals, or `-` when there is no figure (null).
fn number(value: &Value, decimals: usize) -> String {
    value
        .as_f64()
        .map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

/// A share as a percentage with one decimal, or `-`.
fn percent(value: &Value) -> String {
    value
        .as_f64()
        .map_or_else(|| "-".to_owned(), |v| format!("{:.1}%", v * 100.0))
}

fn on_off(value: &Value) -> &'static str {
    if *value == true { "on" } else { "off" }
}

fn yes_no(value: &Value) -> String {
    if *value == true { "yes" } else { "no" }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tuned settings as the API answers them, with their summary.
    fn settings(concurrency: u32, batch: bool) -> Value {
        let batches = if batch {
            ", batches of 4 (bisection 2)"
        } else {
            ""
        };
        let summary =
            format!("concurrency {concurrency}{batches}, optimistic merge, depth 2, adaptive");
        json!({"concurrency": concurrency, "batch": batch, "batchingMinSize": 4,
               "bisectionConcurrency": 2, "pendingFailureDepth": 2,
               "canOptimisticallyMerge": true, "adaptivePendingFailure": true,
               "summary": summary})
    }

    fn estimate(value: Value, count: u32) -> Value {
        json!({"value": value, "count": count})
    }

    fn answer() -> Value {
        let projection = json!({"mergesPerHour": 3.456, "meanMinutesToMerge": 20.04,
            "p95MinutesToMerge": null, "ciRunsPerMerge": 1.2, "ciRunsPerHour": 4.0,
            "keepsUp": true});
        json!({
            "window": {"from": "2026-01-01T00:00:00Z", "to": "2026-01-08T00:00:00Z",
                       "hours": 168.0, "shortened": false},
            "goal": "mostMerges",
            "estimates": {
                "windowHours": 168.0,
                "arrivalsPerHour": estimate(json!(2.5), 420),
                "departuresPerHour": estimate(json!(2.4), 400),
                "ciMinutes": estimate(json!(14.25), 380),
                "ciQuantiles": [],
                "brokenRate": estimate(json!(0.08), 300),
                "flakeRate": estimate(json!(null), 0),
                "conflictRate": estimate(json!(0.02), 410),
                "backlog": estimate(json!(1.0), 168),
                "backlogFloor": null, "settlingMinutes": null,
                "observed": {"mergesPerHour": 2.4, "meanMinutesToMerge": null,
                    "p95MinutesToMerge": null, "ciRunsPerMerge": 1.5, "ciRunsPerHour": 3.6,
                    "merges": 400}
            },
            "advice": {
                "current": {"settings": settings(1, false), "projection": projection},
                "best": {"settings": settings(4, true), "projection": projection},
                "candidates": [{"settings": settings(4, true), "projection": projection},
                               {"settings": settings(2, false), "projection": projection}],
                "summary": "concurrency 4, batches of 4 (bisection 2), optimistic merge, depth 2, adaptive",
                "changesSettings": true, "withinBudget": true,
                "evaluations": 40, "simulatedPrs": 20000
            },
            "autoTune": true,
            "tuning": {"checkedAt": "2026-01-08T03:00:00Z", "changes": [{
                "at": "2026-01-02T03:00:00Z", "before": settings(1, false),
                "after": settings(2, false), "reason": "12% more merges per hour"}]}
        })
    }

    #[test]
    fn the_advice_shows_estimates_candidates_and_the_tuning_record() {
        let shown = render(&answer());
        for expected in [
            "window: 2026-01-01T00:00:00Z to 2026-01-08T00:00:00Z, 168.0 hours",
            "arrivals per hour    2.50   420",
            "mean CI minutes      14.2   380",
            "broken rate          8.0%   300",
            "flake rate           -      0",
            "observed: 2.40 merges/h, - min to merge (p95 -), 1.50 CI runs per merge",
            "advice: concurrency 4, batches of 4 (bisection 2)",
            "current  3.46      20.0      -        1.20           4.0        yes       concurrency 1, optimistic",
            "best     3.46      20.0      -        1.20           4.0        yes       concurrency 4, batches",
            "other    3.46      20.0      -        1.20           4.0        yes       concurrency 2,",
            "(40 projections, 20000 pull requests simulated)",
            "autoTune: on",
            "  last check: 2026-01-08T03:00:00Z",
            "  changed 2026-01-02T03:00:00Z: concurrency 1, optimistic merge, depth 2, adaptive -> concurrency 2,",
        ] {
            assert!(shown.contains(expected), "{expected}:\n{shown}");
        }
    }

    #[test]
    fn without_advice_the_reason_is_given_in_words() {
        let mut a = answer();
        a.as_object_mut().unwrap().remove("advice");
        a["noAdvice"] = json!({"reason": "not_enough_history", "message": "the window holds 0"});
        a["autoTune"] = json!(false);
        a["tuning"] = json!({"changes": []});
        let shown = render(&a);
        assert!(
            shown.contains("no advice (not enough history): the window holds 0"),
            "{shown}"
        );
        assert!(
            shown.contains("autoTune: off\n  last check: never\n  changes: none"),
            "{shown}"
        );
        assert!(!shown.contains("SETTINGS"), "{shown}");
    }

    #[test]
    fn the_goal_is_named_in_words() {
        let a = json!({"goal": "fastestWithinBudget", "ciRunsPerHour": 20.0});
        assert_eq!(
            goal(&a),
            "the shortest time to merge within 20.0 CI runs per hour"
        );
    }
}
