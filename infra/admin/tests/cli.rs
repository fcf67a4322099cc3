//! `mq-admin` against a DynamoDB-compatible server (moto on loopback): tables created
//! (twice: the second run finds them), a token created, listed without its secret,
//! accepted by the API's authentication, revoked and then refused; repository owners linked
//! (after checking a GitHub App's installation on a local server answering as GitHub's API),
//! listed and unlinked; test cases written before they expired given their expiry; and the
//! errors an operator can make.

use lambda_http::Request;
use mq_http::auth::authenticate;
use mq_store::{DynamoStore, TableNames};
use std::process::{Command, Output};

/// Runs `mq-admin` on the moto server with its own tables.
fn admin(prefix: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mq-admin"))
        .args(["--dynamodb-endpoint", &mq_tables::moto::endpoint()])
        .args(["--table-prefix", prefix])
        .args(args)
        .env_remove("MQ_DYNAMODB_ENDPOINT")
        .env_remove("MQ_GITHUB_APP_ID")
        .env_remove("MQ_GITHUB_PRIVATE_KEY")
        .env_remove("MQ_GITHUB_PRIVATE_KEY_SECRET_ARN")
        .env_remove("MQ_GITHUB_API_URL")
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
    let accepted = org.expect("the new token is accepted");
    assert_eq!((accepted.org.as_str(), accepted.id.as_str()), ("acme", id));

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

fn stderr(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "mq-admin fails");
    String::from_utf8_lossy(&output.stderr).trim().to_owned()
}

#[tokio::test]
async fn owners_are_linked_listed_and_unlinked() {
    use mq_store::OwnerStore;
    let prefix = format!("adminown{}-", std::process::id());
    stdout(&admin(&prefix, &["tables", "create"]));
    let link = |org: &str, owner: &str| {
        admin(&prefix, &["owners", "link", "--org", org, "--owner", owner])
    };
    assert_eq!(
        stdout(&link("acme", "github.com/acme")).trim(),
        "linked github.com/acme to acme"
    );
    stdout(&link("acme", "GitHub.com/Acme-Labs"));
    stdout(&link("acme", "github.com/acme"));
    assert_eq!(
        stderr(&link("umbrella", "github.com/ACME")),
        "error: github.com/ACME is linked to acme; unlink it first \
         (mq-admin owners unlink --org acme --owner github.com/ACME)"
    );
    let listed = stdout(&admin(&prefix, &["owners", "list"]));
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["github.com/acme", "acme"],
            ["github.com/acme-labs", "acme"]
        ]
    );
    let store = store(&prefix).await;
    let linked = store.owner_link("github.com/acme-labs").await.unwrap();
    assert_eq!(linked.map(|l| l.org.to_string()), Some("acme".to_owned()));

    let unlink = |org: &str| {
        admin(
            &prefix,
            &[
                "owners",
                "unlink",
                "--org",
                org,
                "--owner",
                "github.com/acme",
            ],
        )
    };
    assert_eq!(
        stderr(&unlink("umbrella")),
        "error: github.com/acme is not linked to umbrella"
    );
    assert_eq!(
        stdout(&unlink("acme")).trim(),
        "unlinked github.com/acme from acme"
    );
    assert_eq!(store.owner_link("github.com/acme").await.unwrap(), None);
    assert!(stderr(&link("acme", "github.com")).contains("must be host/owner"));
    assert!(stderr(&link("acme", "../acme")).starts_with("error: --owner host"));
}

/// Queues made before owners were linked: `unlinked` names their owners and organisations,
/// until each owner is linked.
#[tokio::test]
async fn owners_of_queues_made_before_links_are_listed_until_linked() {
    use mq_core::ids::{OrgId, RepoRef};
    use mq_core::settings::{QueueConfig, QueueState};
    use mq_core::snapshot::Queue;
    use mq_store::QueueStore;
    let prefix = format!("adminunl{}-", std::process::id());
    stdout(&admin(&prefix, &["tables", "create"]));
    let store = store(&prefix).await;
    let made = [
        ("acme", "acme", "rocket"),
        ("acme", "acme", "engine"),
        ("umbrella", "umbrella", "corp"),
        ("acme", "acme-labs", "lab"),
    ];
    for (org, owner, name) in made {
        let queue = Queue::new(
            OrgId::parse(org).unwrap(),
            RepoRef::new("github.com", owner, name).unwrap(),
            "main".to_owned(),
            QueueConfig::default(),
            QueueState::Running,
            mq_core::Timestamp::from_millis(0),
        );
        store.create_queue(&queue).await.unwrap();
    }
    for org in ["acme", "umbrella"] {
        stdout(&admin(&prefix, &["tokens", "create", "--org", org]));
    }
    let link = |org: &str, owner: &str| {
        stdout(&admin(
            &prefix,
            &["owners", "link", "--org", org, "--owner", owner],
        ));
    };
    link("acme", "github.com/acme-labs");

    let listed = stdout(&admin(&prefix, &["owners", "unlinked"]));
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("link each"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["github.com/acme", "acme", "2"],
            ["github.com/umbrella", "umbrella", "1"]
        ]
    );
    link("acme", "github.com/acme");
    link("umbrella", "github.com/umbrella");
    assert_eq!(
        stdout(&admin(&prefix, &["owners", "unlinked"])).trim(),
        "every owner of a queue is linked to an organisation"
    );
}

/// With a GitHub App, `link` asks GitHub whether the App is installed on the owner and links
/// only if it is, recording the account's GitHub id (which no rename changes).
#[tokio::test]
async fn linking_checks_the_github_apps_installation() {
    use mq_store::OwnerStore;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let github = MockServer::start().await;
    let answer = |status: u16| {
        let installation =
            serde_json::json!({ "id": 7, "account": { "id": 4242, "login": "acme" } });
        ResponseTemplate::new(status).set_body_json(installation)
    };
    // The first two looks find account 4242; later ones another account under the login.
    Mock::given(method("GET"))
        .and(path("/orgs/acme/installation"))
        .respond_with(answer(200))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&github)
        .await;
    let taken_over = serde_json::json!({ "id": 8, "account": { "id": 9999, "login": "acme" } });
    Mock::given(method("GET"))
        .and(path("/orgs/acme/installation"))
        .respond_with(ResponseTemplate::new(200).set_body_json(taken_over))
        .mount(&github)
        .await;
    for account in ["orgs", "users"] {
        Mock::given(method("GET"))
            .and(path(format!("/{account}/elsewhere/installation")))
            .respond_with(answer(404))
            .mount(&github)
            .await;
    }
    let prefix = format!("adminapp{}-", std::process::id());
    stdout(&admin(&prefix, &["tables", "create"]));
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let key = workspace.join("shared/githost/tests/fixtures/github-app-test-key.pem");
    let key = key.to_str().unwrap();
    let url = github.uri();
    let link = |owner: &str| {
        let args = [
            "owners",
            "link",
            "--org",
            "acme",
            "--owner",
            owner,
            "--github-app-id",
            "123",
            "--github-private-key",
            key,
            "--github-api-url",
            &url,
        ];
        admin(&prefix, &args)
    };
    let without_app = [
        "owners",
        "link",
        "--org",
        "acme",
        "--owner",
        "127.0.0.1/acme",
    ];
    stdout(&admin(&prefix, &without_app));
    assert_eq!(
        stdout(&link("127.0.0.1/acme")).trim(),
        "recorded GitHub account 4242 for 127.0.0.1/acme\nlinked 127.0.0.1/acme to acme",
        "a link made without the App gets its account recorded"
    );
    assert_eq!(
        stdout(&link("127.0.0.1/acme")).trim(),
        "linked 127.0.0.1/acme to acme"
    );
    let refused = stderr(&link("127.0.0.1/acme"));
    assert!(
        refused.contains(
            "was linked as GitHub account 4242, and the App is installed on account 9999"
        ),
        "{refused}"
    );
    assert_eq!(
        stderr(&link("127.0.0.1/elsewhere")),
        "error: the GitHub App is not installed on 127.0.0.1/elsewhere: install it there, then \
         link again"
    );
    assert!(stderr(&link("github.com/acme")).contains("not on 127.0.0.1"));
    let listed = stdout(&admin(&prefix, &["owners", "list"]));
    assert_eq!(
        listed.lines().count(),
        2,
        "only the installed owner is linked: {listed}"
    );
    assert_eq!(
        listed.lines().nth(1).unwrap().split_whitespace().last(),
        Some("4242"),
        "{listed}"
    );
    let store = store(&prefix).await;
    let linked = store.owner_link("127.0.0.1/acme").await.unwrap().unwrap();
    assert_eq!(linked.account_id, Some(4242));
}

/// The App's private key in MQ_GITHUB_PRIVATE_KEY, given as the PEM itself (as the local
/// gateway takes it) or as anything else, is printed neither in an error nor in the help.
#[test]
fn the_github_apps_private_key_is_never_printed() {
    let with_key = |key: &str, args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mq-admin"))
            .args(["--dynamodb-endpoint", "http://127.0.0.1:9"])
            .args(args)
            .env("MQ_GITHUB_APP_ID", "1")
            .env("MQ_GITHUB_PRIVATE_KEY", key)
            .env_remove("MQ_DYNAMODB_ENDPOINT")
            .env_remove("MQ_GITHUB_PRIVATE_KEY_SECRET_ARN")
            .env_remove("MQ_GITHUB_API_URL")
            .output()
            .expect("mq-admin runs");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), printed)
    };
    let link = [
        "owners",
        "link",
        "--org",
        "acme",
        "--owner",
        "github.com/acme",
    ];
    let (code, printed) = with_key("-----BEGIN X SECRETMARK", &link);
    assert_eq!(code, Some(1), "{printed}");
    assert!(
        printed.contains("not an RSA PEM key"),
        "read as the PEM itself: {printed}"
    );
    assert!(!printed.contains("SECRETMARK"), "{printed}");
    let (code, printed) = with_key("MIIEpAIBAAKCAQEA SECRETMARK", &link);
    assert_eq!(code, Some(1), "{printed}");
    assert!(printed.contains("neither a PEM nor a file"), "{printed}");
    assert!(!printed.contains("SECRETMARK"), "{printed}");
    let (code, help) = with_key("-----BEGIN X SECRETMARK", &["owners", "link", "--help"]);
    assert_eq!(code, Some(0), "{help}");
    assert!(help.contains("MQ_GITHUB_PRIVATE_KEY"), "{help}");
    assert!(!help.contains("SECRETMARK"), "{help}");
}

/// A test case written before test cases expired is given its expiry, once.
#[tokio::test]
async fn test_cases_written_before_they_expired_are_given_their_expiry() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use mq_core::health::{TestCase, TestIdentity};
    use mq_core::ids::{OrgId, RepoRef};
    use mq_core::time::Timestamp;
    use mq_store::TestHealthStore;
    let prefix = format!("adminexp{}-", std::process::id());
    stdout(&admin(&prefix, &["tables", "create"]));
    let store = store(&prefix).await;
    let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
    let identity = TestIdentity {
        name: "test_gone".into(),
        ..TestIdentity::default()
    };
    let id = mq_core::health::identity::test_case_id(&repo, &identity);
    let last_seen = Timestamp::from_millis(1_795_000_000_000);
    let org = OrgId::parse("acme").unwrap();
    let mut case = TestCase::new(id, org, repo, identity, last_seen);
    case.version = 1;
    store.put_test_cases(&[case]).await.unwrap();
    let key = std::collections::HashMap::from([
        (
            "pk".to_owned(),
            AttributeValue::S(format!("CASE#acme#{id}")),
        ),
        ("sk".to_owned(), AttributeValue::S("CASE".to_owned())),
    ]);
    let expiry = || async {
        let item = store
            .client()
            .get_item()
            .table_name(&store.tables().test_health)
            .set_key(Some(key.clone()))
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        item.get("expires_at").cloned()
    };
    store
        .client()
        .update_item()
        .table_name(&store.tables().test_health)
        .set_key(Some(key.clone()))
        .update_expression("REMOVE expires_at")
        .send()
        .await
        .unwrap();
    assert_eq!(expiry().await, None, "as an earlier version wrote it");

    let out = stdout(&admin(&prefix, &["test-cases", "expire"]));
    assert!(out.contains("1 given one, 0 kept"), "{out}");
    let ninety_days_on = last_seen.millis() / 1000 + 90 * 86_400;
    assert_eq!(
        expiry().await,
        Some(AttributeValue::N(ninety_days_on.to_string()))
    );
    let again = stdout(&admin(&prefix, &["test-cases", "expire"]));
    assert!(again.contains("0 given one, 0 kept"), "{again}");
}
