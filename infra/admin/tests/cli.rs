//! `mq-admin` against a DynamoDB-compatible server (moto on loopback): tables created
//! (twice: the second run finds them), a token created, listed without its secret,
//! accepted by the API's authentication, revoked and then refused, and the errors an
//! operator can make.

use lambda_http::Request;
use mq_api::auth::authenticate;
use mq_store::{DynamoStore, TableNames};
use std::process::{Command, Output};

/// Runs `mq-admin` on the moto server with its own tables.
fn admin(prefix: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mq-admin"))
        .args(["--dynamodb-endpoint", &mq_tables::moto::endpoint()])
        .args(["--table-prefix", prefix])
        .args(args)
        .env_remove("MQ_DYNAMODB_ENDPOINT")
        .output()
        .expect("mq-admin runs")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "mq-admin failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The value of a `name: value` line.
fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {name}: line in {text}"))
}

fn request_with(token: &str) -> Request {
    lambda_http::http::Request::builder()
        .header("x-api-token", token)
        .body(lambda_http::Body::Empty)
        .unwrap()
}

async fn store(prefix: &str) -> DynamoStore {
    let client = mq_tables::local_client(&mq_tables::moto::endpoint()).await;
    DynamoStore::new(client, TableNames::with_prefix(prefix))
}

#[tokio::test]
async fn tokens_are_created_listed_accepted_and_revoked() {
    let prefix = format!("admin{}-", std::process::id());
    stdout(&admin(&prefix, &["tables", "create"]));
    stdout(&admin(&prefix, &["tables", "create"]));

    let created = stdout(&admin(
        &prefix,
        &["tokens", "create", "--org", "acme", "--label", "ci"],
    ));
    let (id, token) = (field(&created, "id"), field(&created, "token"));
    assert_eq!(field(&created, "org"), "acme");
    let store = store(&prefix).await;
    let org = authenticate(&store, &request_with(token)).await;
    assert_eq!(org.expect("the new token is accepted").as_str(), "acme");

    let listed = stdout(&admin(&prefix, &["tokens", "list"]));
    let row = listed
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        (columns[1], columns[2], columns[4]),
        ("acme", "ci", "-"),
        "{row}"
    );
    assert!(!listed.contains(token), "the list never shows a secret");

    let revoked = stdout(&admin(&prefix, &["tokens", "revoke", id]));
    assert_eq!(revoked.trim(), format!("revoked {id}"));
    let refused = authenticate(&store, &request_with(token)).await;
    assert!(refused.is_err(), "a revoked token is refused");
    let listed = stdout(&admin(&prefix, &["tokens", "list"]));
    let row = listed.lines().find(|l| l.starts_with(id)).unwrap();
    assert_ne!(row.split_whitespace().last(), Some("-"), "{row}");
}

#[test]
fn mistakes_exit_with_an_error_naming_them() {
    let prefix = format!("adminerr{}-", std::process::id());
    stdout(&admin(&prefix, &["tables", "create"]));
    let unknown = admin(&prefix, &["tokens", "revoke", "tok_000000000000"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr).trim(),
        "error: no token with that id"
    );
    let bad_org = admin(&prefix, &["tokens", "create", "--org", "Not An Org!"]);
    assert_eq!(bad_org.status.code(), Some(1));
    let message = String::from_utf8_lossy(&bad_org.stderr);
    assert!(message.starts_with("error: "), "{message}");
    assert!(
        message.contains("Not An Org!"),
        "names the value: {message}"
    );
}
