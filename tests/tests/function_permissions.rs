//! Every DynamoDB request an endpoint sends is allowed by its function's policy in
//! `template.yaml`. Moto does not enforce IAM: a request the policy does not cover would only
//! fail once deployed. The requests are those `dynamodb_request_counts` logs, on moto: every
//! endpoint, with the effects rounds of those that act on the Git host, and the tick; and a
//! few other paths (`measure_other_paths`).

use e2e::requests::{measure, measure_other_paths};
use e2e::template::{dynamodb_allowed, function_blocks, served_by};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_an_endpoint_sends_is_allowed_by_its_functions_policy() {
    let functions: Vec<(String, Vec<(String, String)>)> = function_blocks()
        .iter()
        .filter_map(|block| Some((served_by(block)?, dynamodb_allowed(block))))
        .collect();
    let mut denied = Vec::new();
    let mut calls = measure().await;
    calls.extend(measure_other_paths().await);
    for call in calls {
        let Some((_, allowed)) = functions.iter().find(|(route, _)| route == call.endpoint) else {
            panic!("no function serves {}", call.endpoint);
        };
        for sent in &call.sent {
            for (action, resource) in &sent.needs {
                let index_wildcard = resource
                    .split_once("/index/")
                    .map(|(table, _)| format!("{table}/index/*"));
                let granted = allowed.iter().any(|(a, r)| {
                    a == action && (r == resource || Some(r) == index_wildcard.as_ref())
                });
                if !granted {
                    denied.push(format!(
                        "{} ({}): {action} on {resource}, by {sent}",
                        call.endpoint, call.case
                    ));
                }
            }
        }
    }
    denied.dedup();
    assert!(denied.is_empty(), "not allowed:\n{}", denied.join("\n"));
}
