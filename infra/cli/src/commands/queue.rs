//! A queue: the line as a table (once or redrawn), its state, its settings (with
//! auto-tuning's record), a test run, creating and deleting it.

use crate::cli::{QueueArgs, QueuesCommand, RunArgs, SettingsArgs};
use crate::commands::advice;
use crate::config::Context;
use crate::duration::short;
use crate::error::Result;
use crate::exit::Outcome;
use crate::output::{self, line, table, text, try_line};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::time::Duration;

pub fn queue(ctx: &Context, args: &QueueArgs) -> Result<Outcome> {
    if !args.watch {
        line(render(ctx)?.text.trim_end());
        return Ok(Outcome::Done);
    }
    watch(ctx, args.interval)
}

/// Draws the queue every `interval` (without a terminal, again only when something else than
/// the ages changed) until interrupted, or until standard output cannot be written to, as
/// when its reader went away (`mq queue --watch | head`): then it is done (exit 0).
fn watch(ctx: &Context, interval: Duration) -> Result<Outcome> {
    let terminal = std::io::stdout().is_terminal();
    let mut shown = Drawn::default();
    loop {
        let now = render(ctx)?;
        if terminal || now.without_ages != shown.without_ages {
            let written = if terminal {
                redraw(&shown.text, &now.text)
            } else {
                print_again(ctx, &now.text)
            };
            if written.is_err() {
                return Ok(Outcome::Done);
            }
            shown = now;
        }
        std::thread::sleep(interval);
    }
}

/// The queue as drawn, and as drawn without the ages (which change every second): without
/// a terminal, `--watch` prints the queue again only when something else changed.
#[derive(Default)]
struct Drawn {
    text: String,
    without_ages: String,
}

/// Replaces what was drawn last with `now`: up to its first line, clear below, draw.
fn redraw(before: &str, now: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let lines = before.lines().count();
    if lines > 0 {
        write!(out, "\x1b[{lines}F\x1b[J")?;
    }
    write!(out, "{now}")?;
    out.flush()
}

/// Prints the queue below what was printed before: a table and a blank line, with `--json`
/// one document per line.
fn print_again(ctx: &Context, text: &str) -> std::io::Result<()> {
    if ctx.args.json {
        try_line(text.trim_end())
    } else {
        try_line(text)
    }
}

/// The queue as text (with `--json`, `getQueue`'s JSON on one line). The table comes from
/// one `getQueueActivity` call: the line's groups (their runs and the state of each pull
/// request) and the pull requests waiting.
fn render(ctx: &Context) -> Result<Drawn> {
    if ctx.args.json {
        let queue = ctx.api()?.read("getQueue", &ctx.queue_body()?)?;
        let text = format!("{queue}\n");
        return Ok(Drawn {
            without_ages: text.clone(),
            text,
        });
    }
    let activity = ctx.api()?.read("getQueueActivity", &ctx.queue_body()?)?;
    let list = |name: &str| activity[name].as_array().cloned().unwrap_or_default();
    let (groups, waiting) = (list("line"), list("waiting"));
    let in_line: usize = groups.iter().map(|g| active_prs(g).len()).sum();
    let count = in_line + waiting.len();
    let queue = &activity["queue"];
    let mut out = format!(
        "{} {}: {}, concurrency {}, batch {}, mode {}, {count} pull request{}\n",
        ctx.repo()?,
        ctx.target()?,
        text(queue, "state"),
        text(queue, "concurrency"),
        if queue["batch"] == true { "on" } else { "off" },
        text(queue, "mode"),
        if count == 1 { "" } else { "s" }
    );
    if count == 0 {
        return Ok(Drawn {
            without_ages: out.clone(),
            text: out,
        });
    }
    out.push('\n');
    let header = ["GROUP", "PULL REQUESTS", "STATE", "RUN", "AGE"];
    let mut rows = group_rows(&groups);
    rows.extend(waiting_rows(&waiting));
    let text = format!("{out}{}", table(&header, &rows));
    for row in &mut rows {
        row[4].clear();
    }
    let without_ages = format!("{out}{}", table(&header, &rows));
    Ok(Drawn { text, without_ages })
}

/// The pull requests of a group of the line still in the queue.
fn active_prs(group: &Value) -> Vec<Value> {
    group["pullRequests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p.get("state").is_some())
        .cloned()
        .collect()
}

/// One row per group of the line, front first (then bisection runs): its pull requests,
/// their state, its run and how long it has run.
fn group_rows(groups: &[Value]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for group in groups {
        let prs = active_prs(group);
        let Some(first) = prs.first() else {
            continue;
        };
        let numbers: Vec<String> = prs
            .iter()
            .map(|p| format!("#{}", text(p, "prNumber")))
            .collect();
        let described = if prs.len() == 1 {
            format!(
                "{} {}",
                numbers[0],
                truncate(first["prTitle"].as_str().unwrap_or(""), 48)
            )
        } else {
            numbers.join(" ")
        };
        let mut state = text(first, "state");
        if group["kind"] == "bisection" {
            state.push_str(" (bisection)");
        }
        let age = group["ageSeconds"].as_u64().map(Duration::from_secs);
        rows.push(vec![
            (rows.len() + 1).to_string(),
            described,
            state,
            text(group, "testRunId"),
            age.map_or_else(|| "-".to_owned(), short),
        ]);
    }
    rows
}

/// One row per pull request waiting, next to start first.
fn waiting_rows(waiting: &[Value]) -> Vec<Vec<String>> {
    waiting
        .iter()
        .map(|w| {
            let mut state = text(w, "state");
            if w["stuck"] == true {
                state.push_str(" (stuck)");
            }
            let title = truncate(w["prTitle"].as_str().unwrap_or(""), 48);
            let age = w["waitingSeconds"].as_u64().map(Duration::from_secs);
            vec![
                "-".to_owned(),
                format!("#{} {title}", text(w, "prNumber")),
                state,
                "-".to_owned(),
                age.map_or_else(|| "-".to_owned(), short),
            ]
        })
        .collect()
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max - 1).collect();
    format!("{kept}…")
}

/// `pause`, `resume`, `drain`: the queue's new state.
pub fn set_state(ctx: &Context, state: &str) -> Result<Outcome> {
    let mut body = ctx.queue_body()?;
    body["state"] = json!(state);
    let queue = ctx.api()?.mutate("updateQueue", &body)?;
    ctx.print(&queue, ctx.queue_line(text(&queue, "state"))?);
    Ok(Outcome::Done)
}

/// Shows the settings, or changes those given and shows the result.
pub fn settings(ctx: &Context, args: &SettingsArgs) -> Result<Outcome> {
    let patch = settings_patch(args);
    let mut body = ctx.queue_body()?;
    let queue = if patch.is_empty() {
        ctx.api()?.read("getQueue", &body)?
    } else {
        merge(&mut body, patch);
        ctx.api()?.mutate("updateQueue", &body)?
    };
    print_settings(ctx, &queue)
}

fn print_settings(ctx: &Context, queue: &Value) -> Result<Outcome> {
    let mut queue = queue.clone();
    if let Some(q) = queue.as_object_mut() {
        q.remove("enqueuedPullRequests");
    }
    if ctx.args.json {
        output::json(&queue);
        return Ok(Outcome::Done);
    }
    line(format!("{} {}", ctx.repo()?, ctx.target()?));
    for (name, value) in queue.as_object().into_iter().flatten() {
        if name == "tuning" {
            line("  tuning:");
            for l in advice::tuning_lines(value) {
                line(format!("    {l}"));
            }
            continue;
        }
        let shown = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) if items.is_empty() => "(none)".to_owned(),
            Value::Array(items) => items
                .iter()
                .map(|v| text(&json!({"v": v}), "v"))
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        line(format!("  {name}: {shown}"));
    }
    Ok(Outcome::Done)
}

/// The settings given, under the API's names.
fn settings_patch(a: &SettingsArgs) -> serde_json::Map<String, Value> {
    let fields = [
        ("concurrency", a.concurrency.map(Value::from)),
        (
            "bisectionConcurrency",
            a.bisection_concurrency.map(Value::from),
        ),
        (
            "testingTimeoutMinutes",
            a.testing_timeout_minutes.map(Value::from),
        ),
        (
            "pendingFailureDepth",
            a.pending_failure_depth.map(Value::from),
        ),
        (
            "adaptivePendingFailure",
            a.adaptive_pending_failure.map(Value::from),
        ),
        ("autoTune", a.auto_tune.map(Value::from)),
        (
            "canOptimisticallyMerge",
            a.can_optimistically_merge.map(Value::from),
        ),
        ("batch", a.batch.map(Value::from)),
        (
            "batchingMaxWaitTimeMinutes",
            a.batching_max_wait_time_minutes.map(Value::from),
        ),
        ("batchingMinSize", a.batching_min_size.map(Value::from)),
        ("mode", a.mode.clone().map(Value::from)),
        ("commentsEnabled", a.comments_enabled.map(Value::from)),
        ("commandsEnabled", a.commands_enabled.map(Value::from)),
        (
            "createPrsForTestingBranches",
            a.create_prs_for_testing_branches.map(Value::from),
        ),
        (
            "directMergeMode",
            a.direct_merge_mode.clone().map(Value::from),
        ),
        (
            "optimizationMode",
            a.optimization_mode.clone().map(Value::from),
        ),
        ("mergeMethod", a.merge_method.clone().map(Value::from)),
        (
            "statusCheckEnabled",
            a.status_check_enabled.map(Value::from),
        ),
        (
            "requiredStatuses",
            a.required_statuses.clone().map(Value::from),
        ),
        (
            "deleteRequiredStatuses",
            a.delete_required_statuses.then_some(Value::from(true)),
        ),
    ];
    fields
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), value?)))
        .collect()
}

fn merge(body: &mut Value, fields: serde_json::Map<String, Value>) {
    if let Some(b) = body.as_object_mut() {
        b.extend(fields);
    }
}

pub fn run(ctx: &Context, args: &RunArgs) -> Result<Outcome> {
    let mut body = ctx.queue_body()?;
    body["testRunId"] = json!(args.id.trim());
    let run = ctx.api()?.read("getMergeQueueTestingDetails", &body)?;
    if ctx.args.json {
        output::json(&run);
        return Ok(Outcome::Done);
    }
    line(format!("run {}: {}", args.id.trim(), text(&run, "status")));
    line(format!("branch:    {}", text(&run, "testBranch")));
    line(format!("commit:    {}", text(&run, "testBranchSha")));
    line(format!("created:   {}", text(&run, "createdAt")));
    for pr in run["testedPullRequests"].as_array().into_iter().flatten() {
        line(format!(
            "tests:     #{} {} {}",
            text(pr, "prNumber"),
            text(pr, "title"),
            text(pr, "prUrl")
        ));
    }
    let required = strings(&run["requiredStatuses"]);
    let source = text(&run, "requiredStatusesSource");
    line(format!("required:  {} (from {source})", or_none(&required)));
    for check in run["statusChecks"].as_array().into_iter().flatten() {
        line(format!(
            "status:    {} {}",
            text(check, "context"),
            text(check, "url")
        ));
    }
    for suite in run["checkSuites"].as_array().into_iter().flatten() {
        for check in suite["checkRuns"].as_array().into_iter().flatten() {
            line(format!(
                "check run: {} {}",
                text(check, "name"),
                text(check, "url")
            ));
        }
    }
    Ok(Outcome::Done)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

pub fn queues(ctx: &Context, command: &QueuesCommand) -> Result<Outcome> {
    let mut body = ctx.queue_body()?;
    let (operation, done) = match command {
        QueuesCommand::Create(settings) => {
            merge(&mut body, settings_patch(settings));
            ("createQueue", "created")
        }
        QueuesCommand::Delete => ("deleteQueue", "deleted"),
    };
    let answer = ctx.api()?.mutate(operation, &body)?;
    ctx.print(&answer, ctx.queue_line(format!("queue {done}"))?);
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_settings_given_are_sent_under_the_api_names() {
        let args = SettingsArgs {
            concurrency: Some(3),
            batch: Some(false),
            auto_tune: Some(true),
            merge_method: Some("squash".into()),
            required_statuses: Some(vec!["build".into(), "test".into()]),
            ..SettingsArgs::default()
        };
        assert_eq!(
            Value::Object(settings_patch(&args)),
            json!({"concurrency": 3, "batch": false, "autoTune": true, "mergeMethod": "squash",
                   "requiredStatuses": ["build", "test"]})
        );
        assert!(settings_patch(&SettingsArgs::default()).is_empty());
    }

    #[test]
    fn a_batch_is_one_row_with_its_run_and_waiting_pull_requests_follow() {
        let groups = [
            json!({"testRunId": "7-ab12-main", "kind": "main", "ageSeconds": 185,
                   "pullRequests": [
                       {"prNumber": 1, "prTitle": "One", "state": "testing"},
                       {"prNumber": 2, "prTitle": "Two", "state": "testing"},
                       {"prNumber": 3, "prTitle": "Merged meanwhile"}]}),
            json!({"testRunId": "8-cd34-bisection", "kind": "bisection", "ageSeconds": 5,
                   "pullRequests": [{"prNumber": 4, "prTitle": "Four", "state": "pending_failure"}]}),
        ];
        assert_eq!(
            group_rows(&groups),
            [
                ["1", "#1 #2", "testing", "7-ab12-main", "3m"],
                [
                    "2",
                    "#4 Four",
                    "pending_failure (bisection)",
                    "8-cd34-bisection",
                    "5s"
                ],
            ]
        );
        let waiting = [json!({"prNumber": 5, "prTitle": "Five", "state": "pending",
                              "waitingSeconds": 7200, "stuck": true})];
        assert_eq!(
            waiting_rows(&waiting),
            [["-", "#5 Five", "pending (stuck)", "-", "2h00m"]]
        );
    }

    #[test]
    fn long_titles_are_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
