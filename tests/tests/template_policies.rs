//! The functions' permissions in `template.yaml`: the idempotency table is open to exactly the
//! endpoints that honour `Idempotency-Key`, and no statement grants every resource.

use mq_http::routes::ROUTES;
use mq_tables::schema::TEMPLATE;

/// Each function's block of the template: (route from its description, text).
fn functions() -> Vec<(String, String)> {
    let mut resources: Vec<String> = Vec::new();
    for line in TEMPLATE.lines() {
        let starts_resource = line.starts_with("  ") && !line.starts_with("   ");
        match resources.last_mut() {
            Some(last) if !starts_resource => {
                last.push_str(line);
                last.push('\n');
            }
            _ => resources.push(format!("{line}\n")),
        }
    }
    let mut blocks = Vec::new();
    for block in resources
        .iter()
        .filter(|b| b.contains("Type: AWS::Serverless::Function"))
    {
        let route = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("Description: POST /v1/"))
            .unwrap_or_default()
            .to_owned();
        blocks.push((route, block.clone()));
    }
    blocks
}

#[test]
fn only_idempotent_endpoints_may_use_the_idempotency_table() {
    let functions = functions();
    assert!(functions.len() >= 20, "{} functions", functions.len());
    for (route, block) in &functions {
        let granted = block.contains("IdempotencyKeysTable");
        let honours = mq_http::routes::route(route).is_some_and(|r| r.mutating);
        assert_eq!(granted, honours, "function of {route:?}");
    }
    let granted = functions
        .iter()
        .filter(|(_, b)| b.contains("IdempotencyKeysTable"))
        .count();
    assert_eq!(granted, ROUTES.iter().filter(|r| r.mutating).count());
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
