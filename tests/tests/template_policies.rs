//! The functions' permissions in `template.yaml`: the idempotency table is open to exactly the
//! endpoints that honour `Idempotency-Key` and the webhook (which follows a comment once), no statement grants every resource, the dashboard's
//! operations only read, the function of the pages has no permission at all, the tick is
//! never run again by Lambda's retries, and Lambda keeps every log line `LogLevel` asks for.

use mq_http::routes::ROUTES;
use mq_tables::schema::TEMPLATE;

/// Each function's block of the template: (route from its description, text).
fn functions() -> Vec<(String, String)> {
    e2e::template::function_blocks()
        .into_iter()
        .map(|block| {
            let route = block
                .lines()
                .find_map(|l| l.trim().strip_prefix("Description: POST /v1/"))
                .unwrap_or_default()
                .to_owned();
            (route, block)
        })
        .collect()
}

#[test]
fn only_idempotent_endpoints_may_use_the_idempotency_table() {
    let functions = functions();
    assert!(functions.len() >= 20, "{} functions", functions.len());
    let webhook = |route: &str| route.starts_with("webhooks/github");
    for (route, block) in &functions {
        let granted = block.contains("IdempotencyKeysTable");
        let honours = mq_http::routes::route(route).is_some_and(|r| r.mutating);
        assert_eq!(granted, honours || webhook(route), "function of {route:?}");
    }
    let granted = functions
        .iter()
        .filter(|(_, b)| b.contains("IdempotencyKeysTable"))
        .count();
    assert_eq!(granted, ROUTES.iter().filter(|r| r.mutating).count() + 1);
}

/// An unanswered `Idempotency-Key` claim is taken over only once its function has certainly
/// been stopped: every function of an endpoint that honours the key runs at most half as long
/// as a claim holds.
#[test]
fn an_idempotency_claim_outlives_the_function_that_made_it() {
    let globals = TEMPLATE.split("\nResources:").next().unwrap();
    let timeout = |text: &str| -> Option<i64> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("Timeout:"))
            .map(|t| t.trim().parse().expect("a Timeout in seconds"))
    };
    let default = timeout(globals).expect("the functions' default Timeout");
    let mut checked = 0;
    for (route, block) in functions() {
        if !mq_http::routes::route(&route).is_some_and(|r| r.mutating) {
            continue;
        }
        let seconds = timeout(&block).unwrap_or(default);
        assert!(
            2 * seconds * 1000 <= mq_http::idempotency::STALE_AFTER_MS,
            "the function of {route:?} runs up to {seconds} s"
        );
        checked += 1;
    }
    assert_eq!(checked, ROUTES.iter().filter(|r| r.mutating).count());
}

/// Every function that commits to a queue (puts its queue item; `createQueue` only creates
/// it) may read the queue item alone: the effects its commits cause may include a merge,
/// before which the queue is read again (a pause answered meanwhile stops the merge).
#[test]
fn every_function_that_commits_to_a_queue_may_read_its_item() {
    let allowed = |block: &str, action: &str| {
        e2e::template::dynamodb_allowed(block)
            .iter()
            .any(|(a, resource)| a == action && resource == "Queues")
    };
    let mut committing = 0;
    for block in e2e::template::function_blocks() {
        let creates_only = e2e::template::served_by(&block).as_deref() == Some("createQueue");
        if allowed(&block, "dynamodb:PutItem") && !creates_only {
            committing += 1;
            let name = block.lines().next().unwrap_or_default().trim().to_owned();
            assert!(allowed(&block, "dynamodb:GetItem"), "{name}");
        }
    }
    assert!(committing >= 8, "{committing} functions commit to queues");
}

/// Logs are kept for a bounded time: every function logs to the one log group the template
/// makes (none overrides it), and every log group of the template has a retention. The group
/// Lambda would create itself for a function keeps its logs forever.
#[test]
fn every_log_is_kept_for_a_bounded_time() {
    let globals = TEMPLATE.split("\nResources:").next().unwrap();
    assert!(globals.contains("LogGroup: !Ref FunctionLogs"), "{globals}");
    for (route, block) in functions() {
        assert!(
            !block.contains("LoggingConfig"),
            "the function of {route:?} logs elsewhere"
        );
    }
    let groups: Vec<String> = e2e::template::resource_blocks()
        .into_iter()
        .filter(|block| block.contains("Type: AWS::Logs::LogGroup"))
        .collect();
    assert!(groups.len() >= 2, "{groups:?}");
    for group in groups {
        assert!(
            group.contains("RetentionInDays: !Ref LogRetentionDays"),
            "{group}"
        );
    }
}

#[test]
fn no_statement_grants_every_resource_or_action() {
    for line in TEMPLATE.lines() {
        let t = line.trim();
        assert!(
            !(t.starts_with("Resource:") && t.contains('*') && !t.contains("/*")),
            "{t}"
        );
        assert!(!(t.starts_with("Action:") && t.contains('*')), "{t}");
    }
}

/// The read-only operations of the dashboard, and the advice, may read tables, never write them.
#[test]
fn the_dashboards_operations_only_read() {
    let functions = functions();
    for name in [
        "listQueues",
        "getQueueActivity",
        "getPullRequestHistory",
        "getQueueAdvice",
    ] {
        let (_, block) = functions
            .iter()
            .find(|(route, _)| route == name)
            .unwrap_or_else(|| panic!("no function for {name}"));
        let actions: Vec<&str> = block
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Action:"))
            .collect();
        assert!(!actions.is_empty(), "{name} has no statement");
        for action in actions {
            for verb in action
                .trim_matches(|c| c == ' ' || c == '[' || c == ']')
                .split(',')
            {
                let verb = verb.trim();
                assert!(
                    [
                        "dynamodb:GetItem",
                        "dynamodb:BatchGetItem",
                        "dynamodb:Query"
                    ]
                    .contains(&verb),
                    "{name} may {verb}"
                );
            }
        }
    }
}

/// The pages are files built into the function: it needs no table, no secret, no policy.
#[test]
fn the_pages_function_has_no_permission() {
    let functions = functions();
    let (_, block) = functions
        .iter()
        .find(|(_, b)| b.contains("CodeUri: functions/dashboard"))
        .expect("the dashboard function");
    assert!(!block.contains("Policies:"), "{block}");
    assert!(!block.contains("Table"), "{block}");
}

/// The schedule is the tick's only retry: neither EventBridge nor Lambda's asynchronous
/// invocation runs a failed or timed-out tick again (it would add Git host calls exactly when
/// the host is slow, and repeat recovery and auto-tuning).
#[test]
fn a_failed_tick_is_not_retried() {
    let tick = e2e::template::function_blocks()
        .into_iter()
        .find(|block| block.contains("Binary: tick"))
        .expect("the tick's function");
    let lines: Vec<&str> = tick.lines().map(str::trim).collect();
    let invoke = lines
        .iter()
        .position(|l| *l == "EventInvokeConfig:")
        .expect("EventInvokeConfig on the tick");
    assert!(
        lines[invoke..].contains(&"MaximumRetryAttempts: 0"),
        "{tick}"
    );
    let retries = lines
        .iter()
        .filter(|l| **l == "MaximumRetryAttempts: 0")
        .count();
    assert_eq!(retries, 2, "the schedule's and the invocation's: {tick}");
}

/// A function whose route works on the Git host gets the GitHub App's settings and may read
/// its key (without them it leaves its effects to the tick, or drops them); no other
/// endpoint's function may.
#[test]
fn functions_that_need_the_git_host_get_the_github_app() {
    let mut checked = 0;
    for (route, block) in &functions() {
        let Some(route) = mq_http::routes::route(route) else {
            continue;
        };
        let needs = route.needs == mq_http::routes::Needs::GitHost;
        assert_eq!(block.contains("MQ_GITHUB_APP_ID"), needs, "{}", route.name);
        assert_eq!(block.contains("ReadGitHubKey"), needs, "{}", route.name);
        checked += 1;
    }
    assert!(checked >= 20, "{checked} functions");
}

/// Lambda drops a JSON log line whose `level` is below the functions' `ApplicationLogLevel`:
/// it lets every level `LogLevel` offers through, so that `RUST_LOG` alone chooses.
#[test]
fn lambda_lets_through_every_log_level_the_stack_offers() {
    const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
    let value = |text: &str, key: &str| -> String {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in the template"))
            .trim()
            .to_owned()
    };
    let rank = |level: &str| {
        LEVELS
            .iter()
            .position(|l| l.eq_ignore_ascii_case(level))
            .unwrap_or_else(|| panic!("unknown level {level}"))
    };
    let let_through = rank(&value(TEMPLATE, "ApplicationLogLevel:"));
    let parameter = TEMPLATE.split("\n  LogLevel:\n").nth(1).expect("LogLevel");
    let offered = value(parameter, "AllowedValues:");
    for level in offered.trim_matches(|c| c == '[' || c == ']').split(',') {
        let level = level.trim();
        assert!(
            rank(level) >= let_through,
            "LogLevel {level} is dropped by Lambda"
        );
    }
}
