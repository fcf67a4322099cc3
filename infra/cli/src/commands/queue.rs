//! A queue: the line as a table (once or redrawn), its state, its settings (with
//! auto-tuning's record), a test run, creating and deleting it.

use crate::cli::{QueueArgs, QueuesCommand, RunArgs, SettingsArgs};
use crate::commands::advice;
use crate::config::Context;
use crate::duration::short;
use crate::error::Result;
use crate::exit::Outcome;
use crate::output::{self, line, table, text};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub fn queue(ctx: &Context, args: &QueueArgs) -> Result<Outcome> {
    if !args.watch {
        line(render(ctx)?.text.trim_end());
        return Ok(Outcome::Done);
    }
    let terminal = std::io::stdout().is_terminal();
    let mut shown = Drawn::default();
    loop {
        let now = render(ctx)?;
        if terminal {
            redraw(&shown.text, &now.text);
            shown = now;
        } else if now.without_ages != shown.without_ages {
            line(&now.text);
            shown = now;
        }
        std::thread::sleep(args.interval);
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
fn redraw(before: &str, now: &str) {
    let mut out = std::io::stdout().lock();
    let lines = before.lines().count();
    if lines > 0 {
        let _ = write!(out, "\x1b[{lines}F\x1b[J");
    }
    let _ = write!(out, "{now}");
    let _ = out.flush();
}

/// The queue as text (with `--json`, the API's JSON on one line).
fn render(ctx: &Context) -> Result<Drawn> {
    let queue = ctx.api()?.read("getQueue", &ctx.queue_body()?)?;
    if ctx.args.json {
        let text = format!("{queue}\n");
        return Ok(Drawn {
            without_ages: text.clone(),
            text,
        });
    }
    let entries = queue["enqueuedPullRequests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = format!(
        "{} {}: {}, concurrency {}, batch {}, mode {}, {} pull request{}\n",
        ctx.repo()?,
        ctx.target()?,
        text(&queue, "state"),
        text(&queue, "concurrency"),
        if queue["batch"] == true { "on" } else { "off" },
        text(&queue, "mode"),
        entries.len(),
        if entries.len() == 1 { "" } else { "s" }
    );
    if entries.is_empty() {
        return Ok(Drawn {
            without_ages: out.clone(),
            text: out,
        });
    }
    out.push('\n');
    let header = ["GROUP", "PULL REQUESTS", "STATE", "RUN", "AGE"];
    let mut rows = rows(ctx, &entries)?;
    let text = format!("{out}{}", table(&header, &rows));
    for row in &mut rows {
        row[4].clear();
    }
    let without_ages = format!("{out}{}", table(&header, &rows));
    Ok(Drawn { text, without_ages })
}

/// One row per group of pull requests tested together, in queue order. A pull request's
/// state is the entry's, or else its submission's (`getSubmittedPullRequest`); entries are
/// grouped by their test run when the API names it, else each stands alone.
fn rows(ctx: &Context, entries: &[Value]) -> Result<Vec<Vec<String>>> {
    let now = OffsetDateTime::now_utc();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut last_run: Option<String> = None;
    for entry in entries {
        let state = entry_state(ctx, entry)?;
        let run = entry["testRunId"].as_str().map(str::to_owned);
        let number = format!("#{}", text(entry, "prNumber"));
        let age = age(entry["stateChangedAt"].as_str(), now);
        if run.is_some()
            && run == last_run
            && let Some(row) = rows.last_mut()
        {
            row[1] = format!("{} {number}", row[1]);
            continue;
        }
        let title = truncate(entry["prTitle"].as_str().unwrap_or(""), 48);
        let group = (rows.len() + 1).to_string();
        rows.push(vec![
            group,
            format!("{number} {title}"),
            state,
            run.clone().unwrap_or_else(|| "-".to_owned()),
            age,
        ]);
        last_run = run;
    }
    Ok(rows)
}

fn entry_state(ctx: &Context, entry: &Value) -> Result<String> {
    let mut state = match entry["state"].as_str() {
        Some(state) => state.to_owned(),
        None => {
            let mut body = ctx.queue_body()?;
            body["pr"] = json!({"number": entry["prNumber"]});
            let seen = ctx.api()?.read("getSubmittedPullRequest", &body)?;
            text(&seen, "state")
        }
    };
    if entry["stuck"] == true {
        state.push_str(" (stuck)");
    }
    Ok(state)
}

/// How long ago `at` (RFC 3339) was, e.g. `4m`.
fn age(at: Option<&str>, now: OffsetDateTime) -> String {
    let Some(at) = at.and_then(|a| OffsetDateTime::parse(a, &Rfc3339).ok()) else {
        return "-".to_owned();
    };
    let seconds = (now - at).whole_seconds().max(0) as u64;
    short(std::time::Duration::from_secs(seconds))
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
    fn ages() {
        let now = OffsetDateTime::parse("2026-01-01T10:00:00Z", &Rfc3339).unwrap();
        assert_eq!(age(Some("2026-01-01T09:56:30Z"), now), "3m");
        assert_eq!(age(Some("2026-01-01T10:00:05Z"), now), "0s");
        assert_eq!(age(Some("yesterday"), now), "-");
    }

    #[test]
    fn long_titles_are_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
