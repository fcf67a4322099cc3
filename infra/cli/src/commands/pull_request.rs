//! A pull request in its queue: submit (and follow it), status, cancel, restart, impacted
//! targets.

use crate::cli::{SubmitArgs, TargetsArgs};
use crate::config::Context;
use crate::error::{Error, Result};
use crate::exit::Outcome;
use crate::output::{self, line, note};
use mq_core::entry::{MAX_IMPACTED_TARGETS, MAX_TARGETS_BYTES};
use serde_json::{Value, json};
use std::io::Read;
use std::time::{Duration, Instant};

/// The states a submission ends in.
const FINAL_STATES: [&str; 3] = ["merged", "failed", "cancelled"];

pub fn submit(ctx: &Context, args: &SubmitArgs) -> Result<Outcome> {
    let mut body = ctx.pr_body()?;
    if let Some(priority) = &args.priority {
        body["priority"] = priority_value(priority)?;
    }
    if args.no_batch {
        body["noBatch"] = json!(true);
    }
    let answer = ctx.api()?.mutate("submitPullRequest", &body)?;
    let pr = ctx.pr()?;
    if ctx.args.json && !args.wait {
        output::json(&answer);
    } else if !ctx.args.json {
        let repo = ctx.repo()?;
        line(format!("#{pr} submitted to {repo} {}", ctx.target()?));
    }
    if !args.wait {
        return Ok(Outcome::Done);
    }
    follow(ctx, &body, args.interval, args.timeout)
}

/// A priority as the API takes it: a number from 0 to 255, or a name.
fn priority_value(text: &str) -> Result<Value> {
    if let Ok(n) = text.parse::<u8>() {
        return Ok(json!(n));
    }
    let name = text.to_ascii_lowercase();
    if ["urgent", "high", "medium", "low"].contains(&name.as_str()) {
        return Ok(json!(name));
    }
    Err(Error::input(format!(
        "`{text}` is not a priority: urgent, high, medium, low, or 0 (most urgent) to 255"
    )))
}

/// Polls in a row that may fail before `--wait` gives up (exit 4).
const MOST_MISSED_POLLS: u32 = 20;

/// Follows the pull request until it ends or `timeout` runs out, printing each change. A
/// poll the API or the network failed for now (after the client's own retries) is missed,
/// not the end of the wait: the pull request stays in the queue and may still merge; after
/// [`MOST_MISSED_POLLS`] in a row the wait gives up.
fn follow(
    ctx: &Context,
    body: &Value,
    interval: Duration,
    timeout: Option<Duration>,
) -> Result<Outcome> {
    let started = Instant::now();
    let pr = ctx.pr()?;
    let mut last_seen = String::new();
    let mut state = "unknown".to_owned();
    let mut missed = 0;
    loop {
        match ctx.api()?.read("getSubmittedPullRequest", &pr_only(body)) {
            Ok(seen) => {
                missed = 0;
                state = seen["state"].as_str().unwrap_or("unknown").to_owned();
                let change = format!("{state}/{}", seen["id"]);
                if change != last_seen {
                    print_change(ctx, pr, &seen);
                    last_seen = change;
                }
                if let Some(outcome) = outcome_of(&state) {
                    return Ok(outcome);
                }
            }
            Err(e) if is_missed_poll(&e) && missed < MOST_MISSED_POLLS => {
                missed += 1;
                note(format!("{e}; asking again"));
            }
            Err(e) => return Err(e),
        }
        if let Some(limit) = timeout {
            let left = limit.saturating_sub(started.elapsed());
            if left.is_zero() {
                note(format!(
                    "#{pr} is still {state} after {}; it stays in the queue",
                    crate::duration::short(limit)
                ));
                return Ok(Outcome::TimedOut);
            }
            std::thread::sleep(interval.min(left));
        } else {
            std::thread::sleep(interval);
        }
    }
}

/// Whether a failed read may be answered later: the network, a gateway's error (a function
/// that crashed answers 502 through API Gateway), the API unavailable, or a rate limit. A 500
/// (a fault in the API) is not.
fn is_missed_poll(e: &Error) -> bool {
    match e {
        Error::Network { .. } => true,
        Error::Api { status, .. } => matches!(status, 429 | 502 | 503 | 504),
        Error::Input(_) => false,
    }
}

/// Only the fields getSubmittedPullRequest takes.
fn pr_only(body: &Value) -> Value {
    json!({"repo": body["repo"], "targetBranch": body["targetBranch"], "pr": body["pr"]})
}

fn outcome_of(state: &str) -> Option<Outcome> {
    match state {
        "merged" => Some(Outcome::Done),
        "failed" => Some(Outcome::Negative),
        "cancelled" => Some(Outcome::Cancelled),
        _ => None,
    }
}

/// One line per change: the time the queue recorded it, the state, and why a pull request
/// that is not ready is waiting.
fn print_change(ctx: &Context, pr: u32, seen: &Value) {
    if ctx.args.json {
        output::json(seen);
        return;
    }
    let state = seen["state"].as_str().unwrap_or("unknown");
    let at = seen["stateChangedAt"].as_str().unwrap_or("");
    let mut text = format!("{at} #{pr} {state}");
    if state == "not_ready" {
        text.push_str(&format!(" ({})", waiting_for(&seen["readiness"])));
    }
    if FINAL_STATES.contains(&state) {
        let title = seen["prTitle"].as_str().unwrap_or("");
        text.push_str(&format!(": {title}"));
    }
    line(text);
}

/// Why a pull request is not ready, from its readiness.
fn waiting_for(readiness: &Value) -> String {
    let mut reasons = Vec::new();
    if readiness["doesBaseBranchMatch"] == false {
        reasons.push("its base branch is not the queue's target");
    }
    if readiness["requiresImpactedTargets"] == true && readiness["hasImpactedTargets"] == false {
        reasons.push("waiting for its impacted targets: mq targets");
    }
    if reasons.is_empty() {
        reasons.push("waiting for the Git host to report it mergeable");
    }
    reasons.join("; ")
}

pub fn status(ctx: &Context) -> Result<Outcome> {
    let seen = ctx
        .api()?
        .read("getSubmittedPullRequest", &ctx.pr_body()?)?;
    if ctx.args.json {
        output::json(&seen);
        return Ok(Outcome::Done);
    }
    let t = |f: &str| output::text(&seen, f);
    let in_queue = if seen["isCurrentlySubmittedToQueue"] == true {
        "yes"
    } else {
        "no"
    };
    let mut state = t("state");
    if state == "not_ready" {
        state.push_str(&format!(" ({})", waiting_for(&seen["readiness"])));
    }
    line(format!("#{} {}", t("prNumber"), t("prTitle")));
    line(format!("state:     {state} since {}", t("stateChangedAt")));
    line(format!(
        "in queue:  {in_queue} ({} {})",
        ctx.repo()?,
        ctx.target()?
    ));
    line(format!(
        "priority:  {} ({})",
        t("priorityName"),
        t("priorityValue")
    ));
    line(format!("head:      {}", t("prSha")));
    line(format!("author:    {}", t("prAuthor")));
    line(format!("base:      {}", t("prBaseBranch")));
    Ok(Outcome::Done)
}

pub fn cancel(ctx: &Context) -> Result<Outcome> {
    pr_action(ctx, "cancelPullRequest", "cancelled")
}

pub fn restart(ctx: &Context) -> Result<Outcome> {
    pr_action(ctx, "restartTestsOnPullRequest", "restarted")
}

fn pr_action(ctx: &Context, operation: &str, done: &str) -> Result<Outcome> {
    let answer = ctx.api()?.mutate(operation, &ctx.pr_body()?)?;
    ctx.print(&answer, format!("#{} {done}", ctx.pr()?));
    Ok(Outcome::Done)
}

pub fn targets(ctx: &Context, args: &TargetsArgs) -> Result<Outcome> {
    let list = match &args.file {
        _ if args.all => None,
        Some(path) => Some(read_targets(path)?),
        None => Some(args.targets.clone()),
    };
    let list = list.filter(|l| !too_long(l));
    let mut body = ctx.pr_body()?;
    if let Some(sha) = ctx.sha()? {
        body["pr"]["sha"] = json!(sha);
    }
    body["impactedTargets"] = list.as_ref().map_or(json!("ALL"), |l| json!(l));
    let answer = ctx.api()?.mutate("setImpactedTargets", &body)?;
    let done = match &list {
        None => "every target impacted".to_owned(),
        Some(l) => format!("{} impacted targets set", l.len()),
    };
    ctx.print(&answer, format!("#{}: {done}", ctx.pr()?));
    Ok(Outcome::Done)
}

/// Whether `targets` is more than one request takes: it is then sent as `ALL`, which covers
/// it (the pull request is tested with everything, as one without targets would be).
fn too_long(targets: &[String]) -> bool {
    let bytes: usize = targets.iter().map(String::len).sum();
    let too_long = targets.len() > MAX_IMPACTED_TARGETS || bytes > MAX_TARGETS_BYTES;
    if too_long {
        note(format!(
            "{} targets ({bytes} bytes) are more than one request takes ({MAX_IMPACTED_TARGETS}, \
             {MAX_TARGETS_BYTES} bytes): sent as ALL",
            targets.len()
        ));
    }
    too_long
}

/// Targets from a file (`-`: standard input): a JSON array of strings, or one per line.
fn read_targets(path: &std::path::Path) -> Result<Vec<String>> {
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(drop)
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    read.map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    parse_targets(&text).map_err(|why| Error::input(format!("{}: {why}", path.display())))
}

fn parse_targets(text: &str) -> Result<Vec<String>, String> {
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(text)
            .map_err(|e| format!("not a JSON array of strings ({e})"));
    }
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities() {
        assert_eq!(priority_value("High").unwrap(), json!("high"));
        assert_eq!(priority_value("0").unwrap(), json!(0));
        assert!(priority_value("256").is_err());
        assert!(priority_value("soon").is_err());
    }

    #[test]
    fn targets_from_lines_or_json() {
        assert_eq!(parse_targets("//a\n\n  //b  \n").unwrap(), ["//a", "//b"]);
        assert_eq!(parse_targets(r#"["//a", "//b"]"#).unwrap(), ["//a", "//b"]);
        assert!(parse_targets("[1, 2]").is_err());
    }

    #[test]
    fn final_states_decide_the_exit_code() {
        assert_eq!(outcome_of("merged"), Some(Outcome::Done));
        assert_eq!(outcome_of("failed"), Some(Outcome::Negative));
        assert_eq!(outcome_of("cancelled"), Some(Outcome::Cancelled));
        assert_eq!(outcome_of("pending_failure"), None);
        assert_eq!(outcome_of("testing"), None);
    }

    #[test]
    fn not_ready_says_why() {
        let r = json!({"doesBaseBranchMatch": true, "requiresImpactedTargets": true, "hasImpactedTargets": false});
        assert_eq!(
            waiting_for(&r),
            "waiting for its impacted targets: mq targets"
        );
    }
}
