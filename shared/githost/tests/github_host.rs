//! The GitHub adapter against a local HTTP server answering as GitHub's REST API documents.

mod fake_github;

use fake_github::FakeGitHub;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mq_core::Timestamp;
use mq_core::engine::BranchPr;
use mq_core::git::{
    CheckConclusion, Mergeability, PrState, RequiredStatusesSource, Review, StatusState,
};
use mq_core::ids::{RepoRef, Sha};
use mq_core::run::MergeStamp;
use mq_core::settings::MergeMethod;
use mq_githost::github::{GitHubAuth, GitHubConfig, GitHubHost, RetryPolicy};
use mq_githost::pins::AccountPins;
use mq_githost::{
    GitHost, HostError, HostResult, MergeOutcome, MergeRequest, StatusUpdate, TestBranchOutcome,
    TestBranchRequest, TestPullRequest,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const REPO: &str = "/repos/acme/rocket";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD1: &str = "aaaa111111111111111111111111111111111111";
const HEAD2: &str = "bbbb222222222222222222222222222222222222";

fn repo() -> RepoRef {
    RepoRef::new("github.com", "acme", "rocket").unwrap()
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        attempts: 3,
        max_wait: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
    }
}

/// The adapter with a token, on a repository whose branches require no review (the review
/// query answers `reviewDecision: null`, unless the test answered it first).
async fn with_token(server: &MockServer) -> GitHubHost {
    no_review_rules(server).await;
    let config = GitHubConfig::new(GitHubAuth::Token("ghp_test".into()))
        .with_api(server.uri(), "github.com")
        .with_retry(quick_retries());
    GitHubHost::new(config).unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn rfc3339(unix: u64) -> String {
    mq_core::Timestamp::from_millis(i64::try_from(unix * 1000).unwrap()).to_rfc3339()
}

fn pr(n: u32, head: &str, title: &str) -> BranchPr {
    BranchPr {
        pr: n,
        head_sha: Sha::new(head),
        title: title.into(),
        stamp: None,
    }
}

/// A pull request as `GET /repos/{owner}/{repo}/pulls/{pull_number}` documents it (abridged).
fn pull_json(number: u32, head: &str, state: &str, merged: bool, mergeable: Value) -> Value {
    json!({
        "url": format!("https://api.github.com/repos/acme/rocket/pulls/{number}"),
        "id": 1_000 + number, "node_id": "MDExOlB1bGxSZXF1ZXN0MQ==",
        "html_url": format!("https://github.com/acme/rocket/pull/{number}"),
        "number": number, "state": state, "locked": false,
        "title": "Amazing new feature",
        "user": { "login": "octocat", "id": 1, "type": "User", "site_admin": false },
        "body": "Please pull these awesome changes in!",
        "labels": [], "milestone": null, "active_lock_reason": null,
        "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:01:12Z",
        "closed_at": null, "merged_at": null, "merge_commit_sha": null,
        "head": { "label": "octocat:new-topic", "ref": "new-topic", "sha": head,
                  "user": { "login": "octocat", "id": 1 }, "repo": { "id": 1296269, "name": "rocket", "full_name": "acme/rocket" } },
        "base": { "label": "acme:main", "ref": "main", "sha": BASE,
                  "user": { "login": "acme", "id": 2 }, "repo": { "id": 1296269, "name": "rocket", "full_name": "acme/rocket" } },
        "draft": false, "merged": merged, "mergeable": mergeable, "rebaseable": true,
        "mergeable_state": "clean", "comments": 10, "review_comments": 0, "commits": 3,
        "additions": 100, "deletions": 3, "changed_files": 5
    })
}

fn ref_json(branch: &str, sha: &str) -> Value {
    json!({
        "ref": format!("refs/heads/{branch}"), "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
        "url": format!("https://api.github.com/repos/acme/rocket/git/refs/heads/{branch}"),
        "object": { "type": "commit", "sha": sha, "url": format!("https://api.github.com/repos/acme/rocket/git/commits/{sha}") }
    })
}

fn commit_json(sha: &str, tree: &str, parents: &[&str], message: &str) -> Value {
    json!({
        "sha": sha, "node_id": "MDY6Q29tbWl0NmRjYjA5YjViNTc4NzVmMzM0ZjYxYWViZWQ2OTVlMmU0MTkzZGI1ZQ==",
        "url": format!("https://api.github.com/repos/acme/rocket/git/commits/{sha}"),
        "author": { "date": "2014-11-07T22:01:45Z", "name": "Monalisa Octocat", "email": "octocat@github.com" },
        "committer": { "date": "2014-11-07T22:01:45Z", "name": "Monalisa Octocat", "email": "octocat@github.com" },
        "message": message,
        "tree": { "url": format!("https://api.github.com/repos/acme/rocket/git/trees/{tree}"), "sha": tree },
        "parents": parents.iter().map(|p| json!({ "sha": p, "url": "https://api.github.com/x", "html_url": "https://github.com/x" })).collect::<Vec<_>>(),
        "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null }
    })
}

/// A commit as `POST /repos/{owner}/{repo}/merges` answers it (abridged).
fn merge_json(sha: &str, tree: &str, parents: &[&str], message: &str) -> Value {
    json!({
        "sha": sha, "node_id": "MDY6Q29tbWl0N2ZkMWE2MGIwMWY5MWIzMTRmNTk5NTVhNGU0ZDRlODBkOGVkZjExZA==",
        "url": format!("https://api.github.com/repos/acme/rocket/commits/{sha}"),
        "html_url": format!("https://github.com/acme/rocket/commit/{sha}"),
        "commit": {
            "author": { "name": "The Octocat", "date": "2012-03-06T15:06:50-08:00", "email": "octocat@nowhere.com" },
            "committer": { "name": "The Octocat", "date": "2012-03-06T15:06:50-08:00", "email": "octocat@nowhere.com" },
            "message": message,
            "tree": { "sha": tree, "url": format!("https://api.github.com/repos/acme/rocket/git/trees/{tree}") },
            "comment_count": 0,
            "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null }
        },
        "author": { "login": "octocat", "id": 1 }, "committer": { "login": "octocat", "id": 1 },
        "parents": parents.iter().map(|p| json!({ "sha": p, "url": "https://api.github.com/x" })).collect::<Vec<_>>()
    })
}

fn message(text: &str) -> Value {
    json!({ "message": text, "documentation_url": "https://docs.github.com/rest" })
}

/// The GraphQL review query answers `decision` for every pull request.
async fn review_rules_say(server: &MockServer, decision: Value) {
    let answer =
        json!({ "data": { "repository": { "pullRequest": { "reviewDecision": decision } } } });
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(server)
        .await;
}

async fn no_review_rules(server: &MockServer) {
    review_rules_say(server, Value::Null).await;
}

async fn mock(server: &MockServer, verb: &str, at: &str, status: u16, body: Value) {
    Mock::given(method(verb))
        .and(path(at))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(server)
        .await;
}

#[tokio::test]
async fn an_app_trades_a_signed_jwt_for_an_installation_token_and_caches_it() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/installation")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 42, "account": { "login": "acme", "id": 2 }, "app_id": 123, "target_type": "Organization",
            "permissions": { "contents": "write", "pull_requests": "write", "statuses": "write" }
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/42/access_tokens"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "token": "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
            "expires_at": rfc3339(now() + 3600),
            "permissions": { "contents": "write" }, "repository_selection": "all"
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/pulls/7")))
        .and(header(
            "authorization",
            "Bearer ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(pull_json(
            7,
            HEAD1,
            "open",
            false,
            json!(true),
        )))
        .expect(2)
        .mount(&server)
        .await;
    let answer = json!({ "data": { "repository": { "pullRequest": { "reviewDecision": "REVIEW_REQUIRED" } } } });
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(header(
            "authorization",
            "Bearer ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        ))
        .and(body_partial_json(json!({
            "variables": { "owner": "acme", "name": "rocket", "number": 7 }
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/compare/main...{HEAD1}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "status": "ahead", "ahead_by": 3, "behind_by": 0, "total_commits": 3 }),
        ))
        .mount(&server)
        .await;

    let key = include_str!("fixtures/github-app-test-key.pem");
    let config = GitHubConfig::new(GitHubAuth::App {
        app_id: 123,
        private_key_pem: key.into(),
    })
    .with_api(server.uri(), "github.com");
    let host = GitHubHost::new(config).unwrap();
    for _ in 0..2 {
        let facts = host.pull_request(&repo(), 7, "main").await.unwrap();
        assert_eq!(
            (facts.title.as_str(), facts.author.as_str()),
            ("Amazing new feature", "octocat")
        );
        assert_eq!(
            (facts.state, facts.mergeability),
            (PrState::Open, Mergeability::Mergeable)
        );
        assert!(facts.based_on_target_head);
        assert_eq!(
            facts.review,
            Review::Required,
            "read with the installation token"
        );
    }

    let requests = server.received_requests().await.unwrap();
    let to_installation = requests
        .iter()
        .find(|r| r.url.path().ends_with("/installation"))
        .unwrap();
    let bearer = to_installation
        .headers
        .get("authorization")
        .unwrap()
        .to_str()
        .unwrap();
    let jwt = bearer.strip_prefix("Bearer ").unwrap();
    let public =
        DecodingKey::from_rsa_pem(include_bytes!("fixtures/github-app-test-key.pub.pem")).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&["123"]);
    validation.set_required_spec_claims(&["exp", "iat", "iss"]);
    let claims = jsonwebtoken::decode::<Value>(jwt, &public, &validation)
        .unwrap()
        .claims;
    let (iat, exp) = (
        claims["iat"].as_u64().unwrap(),
        claims["exp"].as_u64().unwrap(),
    );
    let now = now();
    assert!(
        (now - 62..=now - 58).contains(&iat),
        "iat {iat} is 60 s before {now}"
    );
    assert!(
        exp > now && exp - iat <= 600,
        "exp {exp} within 10 minutes of iat {iat}"
    );
    assert_eq!(claims["iss"], "123");
}

#[tokio::test]
async fn an_installation_token_close_to_expiry_is_renewed() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/installation"),
        200,
        json!({ "id": 42 }),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/42/access_tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({ "token": "ghs_short", "expires_at": rfc3339(now() + 120) })),
        )
        .expect(2)
        .mount(&server)
        .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    let key = include_str!("fixtures/github-app-test-key.pem");
    let config = GitHubConfig::new(GitHubAuth::App {
        app_id: 123,
        private_key_pem: key.into(),
    })
    .with_api(server.uri(), "github.com");
    let host = GitHubHost::new(config).unwrap();
    for _ in 0..2 {
        assert_eq!(
            host.branch_head(&repo(), "main").await.unwrap(),
            Some(Sha::new(BASE))
        );
    }
}

/// Matches a request whose bearer JWT is signed by the test key (`github-app-test-key.pem`).
struct SignedByTheTestKey;

impl wiremock::Match for SignedByTheTestKey {
    fn matches(&self, request: &wiremock::Request) -> bool {
        let public =
            DecodingKey::from_rsa_pem(include_bytes!("fixtures/github-app-test-key.pub.pem"))
                .unwrap();
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let validation = Validation::new(Algorithm::RS256);
        bearer.is_some_and(|jwt| jsonwebtoken::decode::<Value>(jwt, &public, &validation).is_ok())
    }
}

/// A key source that counts its reads.
#[derive(Debug)]
struct CountedKey {
    pem: &'static str,
    reads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl mq_githost::SecretSource for CountedKey {
    async fn read(&self) -> Result<String, String> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.pem.to_owned())
    }
}

/// GitHub answers the App's calls signed by the test key, and refuses (401) any other JWT.
async fn github_knowing_the_test_key() -> MockServer {
    let server = MockServer::start().await;
    let refused = json!({ "message": "A JSON web token could not be decoded" });
    for (verb, at, answer) in [
        ("GET", format!("{REPO}/installation"), json!({ "id": 42 })),
        (
            "POST",
            "/app/installations/42/access_tokens".to_owned(),
            json!({ "token": "ghs_fresh", "expires_at": rfc3339(now() + 3600) }),
        ),
    ] {
        Mock::given(method(verb))
            .and(path(at.clone()))
            .and(SignedByTheTestKey)
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .with_priority(1)
            .mount(&server)
            .await;
        mock(&server, verb, &at, 401, refused.clone()).await;
    }
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    server
}

/// The App's key rotated (the one the process read refused by GitHub): it is read again from
/// its source, and the call goes on with the new one. A key still refused is the service's
/// credentials failing, retried later (not the repository refusing, which fails a pull request
/// for good), and read again at most once a minute.
#[tokio::test]
async fn a_rotated_app_key_is_read_again_when_github_refuses_the_one_held() {
    let server = github_knowing_the_test_key().await;
    let rotated_away = include_str!("fixtures/github-app-rotated-away-key.pem");
    let host_reading = |source: &std::sync::Arc<CountedKey>| {
        let config = GitHubConfig::new(GitHubAuth::App {
            app_id: 123,
            private_key_pem: rotated_away.into(),
        })
        .with_api(server.uri(), "github.com")
        .with_retry(quick_retries())
        .with_key_source(source.clone());
        GitHubHost::new(config).unwrap()
    };
    let reads = |source: &CountedKey| source.reads.load(std::sync::atomic::Ordering::SeqCst);

    let rotated = std::sync::Arc::new(CountedKey {
        pem: include_str!("fixtures/github-app-test-key.pem"),
        reads: 0.into(),
    });
    let host = host_reading(&rotated);
    assert_eq!(
        host.branch_head(&repo(), "main").await.unwrap(),
        Some(Sha::new(BASE))
    );
    assert_eq!(reads(&rotated), 1);

    let still_wrong = std::sync::Arc::new(CountedKey {
        pem: rotated_away,
        reads: 0.into(),
    });
    let host = host_reading(&still_wrong);
    for _ in 0..2 {
        let refused = host.branch_head(&repo(), "main").await.unwrap_err();
        assert!(
            matches!(&refused, HostError::Transient { message, .. } if message.contains("credentials")),
            "{refused:?}"
        );
    }
    assert_eq!(reads(&still_wrong), 1, "once a minute at most");
}

/// `GET /orgs/{org}/installation`, then `GET /users/{username}/installation`, as the App
/// (a JWT): an organisation or a user with the App installed, and an account without it.
#[tokio::test]
async fn an_apps_installation_on_an_owner_is_found_on_an_organisation_or_a_user() {
    let server = MockServer::start().await;
    let installation = json!({ "id": 7, "account": { "login": "acme", "id": 99 }, "app_id": 123 });
    let not_found = json!({ "message": "Not Found" });
    mock(
        &server,
        "GET",
        "/orgs/acme/installation",
        200,
        installation.clone(),
    )
    .await;
    for account in ["octocat", "nobody"] {
        mock(
            &server,
            "GET",
            &format!("/orgs/{account}/installation"),
            404,
            not_found.clone(),
        )
        .await;
    }
    mock(
        &server,
        "GET",
        "/users/octocat/installation",
        200,
        installation,
    )
    .await;
    mock(&server, "GET", "/users/nobody/installation", 404, not_found).await;
    let key = include_str!("fixtures/github-app-test-key.pem");
    let config = GitHubConfig::new(GitHubAuth::App {
        app_id: 123,
        private_key_pem: key.into(),
    })
    .with_api(server.uri(), "github.com");
    let host = GitHubHost::new(config).unwrap();
    let owner = |s: &str| mq_core::ids::OwnerRef::parse("owner", s).unwrap();
    let installed = async |s: &str| host.app_installed_account(&owner(s)).await;
    assert_eq!(installed("github.com/acme").await.unwrap(), Some(99));
    assert_eq!(installed("github.com/octocat").await.unwrap(), Some(99));
    assert_eq!(installed("github.com/nobody").await.unwrap(), None);
    let elsewhere = installed("git.example.com/acme").await;
    assert!(matches!(elsewhere, Err(HostError::Invalid(m)) if m.contains("not on github.com")));
    let requests = server.received_requests().await.unwrap();
    assert!(
        requests.iter().all(|r| r
            .headers
            .get("authorization")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("Bearer ey")),
        "every call is made as the App (a JWT)"
    );
    let with_token = with_token(&server)
        .await
        .app_installed_account(&owner("github.com/acme"))
        .await;
    assert!(matches!(with_token, Err(HostError::Invalid(_))));
}

async fn with_app(server: &MockServer) -> GitHubHost {
    no_review_rules(server).await;
    let key = include_str!("fixtures/github-app-test-key.pem");
    let config = GitHubConfig::new(GitHubAuth::App {
        app_id: 123,
        private_key_pem: key.into(),
    })
    .with_api(server.uri(), "github.com")
    .with_retry(quick_retries());
    GitHubHost::new(config).unwrap()
}

/// The accounts owners were linked as, for the adapter: `github.com/acme` as account 99.
#[derive(Debug)]
struct AcmeIs99;

#[async_trait::async_trait]
impl AccountPins for AcmeIs99 {
    async fn linked_account(&self, owner_key: &str) -> HostResult<Option<u64>> {
        Ok((owner_key == "github.com/acme").then_some(99))
    }
}

/// A login is taken over (renamed or deleted, registered again, the App installed there):
/// the App acts on a repository under a linked owner's name only through an installation of
/// the account that owner was linked as, whatever its login; an owner linked without one is
/// served on any.
#[tokio::test]
async fn an_installation_of_another_account_under_a_linked_owners_name_is_refused() {
    for (account, pins, served) in [(99, true, true), (4_000, true, false), (4_000, false, true)] {
        let server = MockServer::start().await;
        let installation = json!({ "id": 42, "account": { "id": account, "login": "acme" } });
        mock(
            &server,
            "GET",
            &format!("{REPO}/installation"),
            200,
            installation,
        )
        .await;
        mock(
            &server,
            "POST",
            "/app/installations/42/access_tokens",
            201,
            json!({ "token": "ghs_x", "expires_at": rfc3339(now() + 3600) }),
        )
        .await;
        mock(
            &server,
            "GET",
            &format!("{REPO}/git/ref/heads/main"),
            200,
            ref_json("main", BASE),
        )
        .await;
        let key = include_str!("fixtures/github-app-test-key.pem");
        let mut config = GitHubConfig::new(GitHubAuth::App {
            app_id: 123,
            private_key_pem: key.into(),
        })
        .with_api(server.uri(), "github.com")
        .with_retry(quick_retries());
        if pins {
            config = config.with_account_pins(Arc::new(AcmeIs99));
        }
        let host = GitHubHost::new(config).unwrap();
        let read = host.branch_head(&repo(), "main").await;
        if served {
            assert_eq!(read.unwrap(), Some(Sha::new(BASE)), "account {account}");
            continue;
        }
        let Err(HostError::NotFound(why)) = read else {
            panic!("expected a refusal, got {read:?}");
        };
        assert!(why.contains("not to account 99"), "{why}");
        let again = host.branch_head(&repo(), "main").await;
        let remembered = |e: &HostError| matches!(e, HostError::Transient { message, .. } if message.contains("not to account 99"));
        assert!(again.as_ref().is_err_and(remembered), "{again:?}");
        let requests = server.received_requests().await.unwrap();
        let lookups = requests
            .iter()
            .filter(|r| r.url.path().ends_with("/installation"));
        assert_eq!(lookups.count(), 1, "the refusal is remembered for a minute");
        assert!(
            requests
                .iter()
                .all(|r| !r.url.path().ends_with("/access_tokens")),
            "no token is asked for another account's installation"
        );
    }
}

/// An installation token that is due for renewal at once, so every call asks for one.
fn short_token(token: &str) -> ResponseTemplate {
    ResponseTemplate::new(201)
        .set_body_json(json!({ "token": token, "expires_at": rfc3339(now() + 120) }))
}

/// After the App is reinstalled, its old installation answers 404 to token requests: the
/// installation is looked up again and the call goes through, without a restart.
#[tokio::test]
async fn a_reinstalled_app_is_found_on_its_new_installation() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/installation")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "id": 42 })))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/installation"),
        200,
        json!({ "id": 43 }),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/42/access_tokens"))
        .respond_with(short_token("ghs_old"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mock(
        &server,
        "POST",
        "/app/installations/42/access_tokens",
        404,
        message("Not Found"),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/43/access_tokens"))
        .respond_with(short_token("ghs_new"))
        .mount(&server)
        .await;
    for token in ["ghs_old", "ghs_new"] {
        Mock::given(method("GET"))
            .and(path(format!("{REPO}/git/ref/heads/main")))
            .and(header("authorization", format!("Bearer {token}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(ref_json("main", BASE)))
            .expect(1)
            .mount(&server)
            .await;
    }
    let host = with_app(&server).await;
    for _ in 0..2 {
        assert_eq!(
            host.branch_head(&repo(), "main").await.unwrap(),
            Some(Sha::new(BASE))
        );
    }
}

#[tokio::test]
async fn a_key_that_is_not_rsa_is_refused_up_front() {
    let config = GitHubConfig::new(GitHubAuth::App {
        app_id: 1,
        private_key_pem: "not a key".into(),
    });
    assert!(matches!(
        GitHubHost::new(config),
        Err(HostError::Invalid(_))
    ));
}

#[tokio::test]
async fn a_primary_rate_limit_far_from_reset_fails_at_once_with_the_wait() {
    let server = MockServer::start().await;
    let reset = now() + 3600;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/pulls/7")))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-limit", "5000")
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-used", "5000")
                .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                .set_body_json(message("API rate limit exceeded for installation ID 42.")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let error = with_token(&server)
        .await
        .pull_request(&repo(), 7, "main")
        .await
        .unwrap_err();
    let HostError::Transient {
        retry_after: Some(wait),
        message,
    } = &error
    else {
        panic!("expected a transient error, got {error:?}");
    };
    assert!((3590..=3600).contains(&wait.as_secs()), "{wait:?}");
    assert!(message.contains("rate limit"), "{message}");
    assert!(error.is_retryable());
}

/// GitHub asks clients to stop calling while rate-limited: after a refusal, the token's next
/// calls to the REST API are not sent before the reset, and fail at once with what is left of
/// the wait.
#[tokio::test]
async fn calls_after_a_rate_limit_refusal_are_not_sent_before_the_reset() {
    let server = MockServer::start().await;
    let reset = now() + 3600;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/git/ref/heads/main")))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                .set_body_json(message("API rate limit exceeded for installation ID 42.")),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/pulls/7")))
        .respond_with(ResponseTemplate::new(200).set_body_json(pull_json(
            7,
            HEAD1,
            "open",
            false,
            json!(true),
        )))
        .expect(0)
        .mount(&server)
        .await;
    let host = with_token(&server).await;
    host.branch_head(&repo(), "main").await.unwrap_err();
    for _ in 0..3 {
        let error = host.pull_request(&repo(), 7, "main").await.unwrap_err();
        let HostError::Transient {
            retry_after: Some(wait),
            message,
        } = &error
        else {
            panic!("expected a transient error, got {error:?}");
        };
        assert!((3590..=3600).contains(&wait.as_secs()), "{wait:?}");
        assert!(message.contains("rate limit"), "{message}");
    }
}

/// The App's own calls are signed each with a fresh JWT: after GitHub refuses one for a rate
/// limit, the App's next calls are held back all the same, not sent with a new JWT.
#[tokio::test]
async fn the_app_s_calls_after_a_rate_limit_refusal_are_not_sent_before_the_reset() {
    let server = MockServer::start().await;
    let reset = now() + 3600;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/installation")))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                .set_body_json(message("API rate limit exceeded for app ID 123.")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let host = with_app(&server).await;
    for _ in 0..3 {
        let error = host.pull_request(&repo(), 7, "main").await.unwrap_err();
        let HostError::Transient {
            retry_after: Some(wait),
            ..
        } = &error
        else {
            panic!("expected a transient error, got {error:?}");
        };
        assert!((3590..=3600).contains(&wait.as_secs()), "{wait:?}");
        // A JWT's time of issue is in seconds: the next calls are signed anew.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
}

/// Requests on a repository the App is not installed on ask GitHub once a minute, not each
/// time: those calls are the App's own, which every installation's tokens depend on. The
/// first says it is not installed; the next fail for now, as the App may have been installed
/// since.
#[tokio::test]
async fn a_repository_the_app_is_not_installed_on_is_remembered_for_a_while() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/installation")))
        .respond_with(ResponseTemplate::new(404).set_body_json(message("Not Found")))
        .expect(1)
        .mount(&server)
        .await;
    let host = with_app(&server).await;
    let error = host.pull_request(&repo(), 7, "main").await.unwrap_err();
    assert!(matches!(error, HostError::NotFound(_)), "{error:?}");
    for _ in 0..2 {
        let error = host.pull_request(&repo(), 7, "main").await.unwrap_err();
        let HostError::Transient {
            retry_after: Some(wait),
            ..
        } = &error
        else {
            panic!("expected a transient error, got {error:?}");
        };
        assert!((59..=60).contains(&wait.as_secs()), "{wait:?}");
    }
}

/// GraphQL answers its rate limit 200, with an error and no data: the review read fails for
/// now with the wait (a submission answers 503, to be retried), not as a refusal.
#[tokio::test]
async fn a_graphql_rate_limit_answered_200_fails_for_now_with_the_wait() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/7"),
        200,
        pull_json(7, HEAD1, "open", false, json!(true)),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/compare/main...{HEAD1}"),
        200,
        json!({ "status": "ahead", "ahead_by": 3, "behind_by": 0, "total_commits": 3 }),
    )
    .await;
    let reset = now() + 1800;
    let limited = json!({ "errors": [{
        "type": "RATE_LIMITED",
        "message": "API rate limit already exceeded for installation ID 42."
    }] });
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                .set_body_json(limited),
        )
        .expect(1)
        .mount(&server)
        .await;
    let host = with_token(&server).await;
    for _ in 0..2 {
        // The second read is not sent to GraphQL (`expect(1)`) before the reset.
        let error = host.pull_request(&repo(), 7, "main").await.unwrap_err();
        let HostError::Transient {
            retry_after: Some(wait),
            ..
        } = &error
        else {
            panic!("expected a transient error, got {error:?}");
        };
        assert!((1790..=1800).contains(&wait.as_secs()), "{wait:?}");
    }
    // GitHub counts the REST API's limit apart: its calls are still sent.
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    assert_eq!(
        host.branch_head(&repo(), "main").await.unwrap(),
        Some(Sha::new(BASE))
    );
}

#[tokio::test]
async fn a_primary_rate_limit_that_resets_now_is_waited_out() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/git/ref/heads/main")))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", now().to_string().as_str())
                .set_body_json(message("API rate limit exceeded")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    let head = with_token(&server)
        .await
        .branch_head(&repo(), "main")
        .await
        .unwrap();
    assert_eq!(head, Some(Sha::new(BASE)));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_secondary_rate_limit_waits_retry_after_then_retries() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/git/ref/heads/main")))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("retry-after", "1")
                .set_body_json(message("You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    let started = Instant::now();
    let head = with_token(&server)
        .await
        .branch_head(&repo(), "main")
        .await
        .unwrap();
    assert_eq!(head, Some(Sha::new(BASE)));
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn server_errors_are_retried_then_transient() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/git/ref/heads/main")))
        .respond_with(ResponseTemplate::new(502).set_body_json(message("Server Error")))
        .expect(3)
        .mount(&server)
        .await;
    let error = with_token(&server)
        .await
        .branch_head(&repo(), "main")
        .await
        .unwrap_err();
    assert!(matches!(error, HostError::Transient { .. }), "{error:?}");
}

#[tokio::test]
async fn client_errors_are_typed() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/404"),
        404,
        message("Not Found"),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/403"),
        403,
        message("Resource not accessible by integration"),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/401"),
        401,
        message("Bad credentials"),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/409"),
        409,
        message("Git Repository is empty."),
    )
    .await;
    mock(&server, "GET", &format!("{REPO}/pulls/422"), 422, json!({ "message": "Validation Failed", "errors": [{ "resource": "Issue", "field": "number", "code": "invalid" }] })).await;
    let host = with_token(&server).await;
    let error = |n| {
        let host = &host;
        async move { host.pull_request(&repo(), n, "main").await.unwrap_err() }
    };
    assert!(matches!(error(404).await, HostError::NotFound(m) if m.contains("Not Found")));
    assert!(matches!(error(403).await, HostError::Forbidden(m) if m.contains("not accessible")));
    assert!(
        matches!(error(401).await, HostError::Transient { message, .. } if message.contains("Bad credentials"))
    );
    assert!(matches!(error(409).await, HostError::Conflict(_)));
    assert!(matches!(error(422).await, HostError::Invalid(m) if m.contains("invalid")));

    let elsewhere = RepoRef::new("gitlab.com", "acme", "rocket").unwrap();
    assert!(matches!(
        host.branch_head(&elsewhere, "main").await,
        Err(HostError::Invalid(_))
    ));
    assert!(matches!(
        host.branch_head(&repo(), "bad..name").await,
        Err(HostError::Invalid(_))
    ));
}

/// The merges are made on the test branch's building branch, and the test branch is created
/// once, at the last merge: CI that runs on pushes to test branches runs once per build.
#[tokio::test]
async fn a_test_branch_is_the_base_plus_one_merge_per_pull_request() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    let building = "mq-build/mq/main/run-1";
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/git/refs")))
        .and(body_partial_json(
            json!({ "ref": format!("refs/heads/{building}"), "sha": BASE }),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(ref_json(building, BASE)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/git/refs")))
        .and(body_partial_json(
            json!({ "ref": "refs/heads/mq/main/run-1", "sha": "c2c2" }),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(ref_json("mq/main/run-1", "c2c2")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path(format!("{REPO}/git/refs/heads/{building}")))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let mut tip = BASE;
    for (head, made) in [(HEAD1, "c1c1"), (HEAD2, "c2c2")] {
        Mock::given(method("POST"))
            .and(path(format!("{REPO}/merges")))
            .and(body_partial_json(json!({ "base": building, "head": head })))
            .respond_with(ResponseTemplate::new(201).set_body_json(merge_json(
                made,
                "t",
                &[tip, head],
                "Merge",
            )))
            .expect(1)
            .mount(&server)
            .await;
        tip = made;
    }
    // Without stamps, GitHub's merge commits are kept as they are; no branch is moved.
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/git/commits")))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    let request = TestBranchRequest {
        branch: "mq/main/run-1".into(),
        target: "main".into(),
        base: None,
        prs: vec![pr(1, HEAD1, "One"), pr(2, HEAD2, "Two")],
    };
    let outcome = with_token(&server)
        .await
        .create_test_branch(&repo(), &request)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        TestBranchOutcome::Created {
            sha: Sha::new("c2c2"),
            base_sha: Sha::new(BASE)
        }
    );
}

#[tokio::test]
async fn a_conflicting_merge_names_the_pull_request_and_deletes_the_branch() {
    let server = MockServer::start().await;
    // The branch is left over from an earlier attempt: it is reset to the base.
    mock(
        &server,
        "POST",
        &format!("{REPO}/git/refs"),
        422,
        message("Reference already exists"),
    )
    .await;
    Mock::given(method("PATCH"))
        .and(path(format!(
            "{REPO}/git/refs/heads/mq-build/mq/main/run-2"
        )))
        .and(body_partial_json(json!({ "sha": BASE, "force": true })))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(ref_json("mq-build/mq/main/run-2", BASE)),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/merges")))
        .and(body_partial_json(json!({ "head": HEAD1 })))
        .respond_with(ResponseTemplate::new(201).set_body_json(merge_json(
            "c1c1",
            "t",
            &[BASE, HEAD1],
            "Merge",
        )))
        .mount(&server)
        .await;
    mock(
        &server,
        "POST",
        &format!("{REPO}/merges"),
        409,
        message("Merge conflict"),
    )
    .await;
    // The building branch, and the test branch an earlier build left.
    for branch in ["mq-build/mq/main/run-2", "mq/main/run-2"] {
        Mock::given(method("DELETE"))
            .and(path(format!("{REPO}/git/refs/heads/{branch}")))
            .respond_with(ResponseTemplate::new(204))
            .expect(1)
            .mount(&server)
            .await;
    }
    let request = TestBranchRequest {
        branch: "mq/main/run-2".into(),
        target: "main".into(),
        base: Some(Sha::new(BASE)),
        prs: vec![pr(1, HEAD1, "One"), pr(2, HEAD2, "Two")],
    };
    let outcome = with_token(&server)
        .await
        .create_test_branch(&repo(), &request)
        .await
        .unwrap();
    assert_eq!(outcome, TestBranchOutcome::Conflict { pr: 2 });
}

const TARGET_TIP: &str = "1111000000000000000000000000000000000000";
const OLDER: &str = "0000111100000000000000000000000000000000";
const HEAD_ON_ONE: &str = "0000000000000000000000000000000000004444";

/// A repository whose `main` is at `TARGET_TIP` (on `OLDER`), with pull request heads `HEAD1`
/// and `HEAD2` on it.
fn fake_repository() -> FakeGitHub {
    let github = FakeGitHub::default();
    github.commit(OLDER, "tree-older", &[]);
    github.commit(TARGET_TIP, "tree-main", &[OLDER]);
    github.commit(HEAD1, "tree-one", &[TARGET_TIP]);
    github.commit(HEAD2, "tree-two", &[TARGET_TIP]);
    github.set_branch("main", TARGET_TIP);
    github
}

fn stamped(pr: BranchPr, run_id: &str, millis: i64) -> BranchPr {
    pr.stamped(MergeStamp {
        run_id: run_id.into(),
        at: Timestamp::from_millis(millis),
    })
}

fn test_branch(branch: &str, prs: Vec<BranchPr>) -> TestBranchRequest {
    TestBranchRequest {
        branch: branch.into(),
        target: "main".into(),
        base: None,
        prs,
    }
}

fn created_sha(outcome: TestBranchOutcome) -> String {
    match outcome {
        TestBranchOutcome::Created { sha, base_sha } => {
            assert_eq!(base_sha, Sha::new(TARGET_TIP));
            sha.as_str().to_owned()
        }
        other => panic!("expected a test branch, got {other:?}"),
    }
}

/// Two runs whose test branches share a stamped pull request hold the very same merge commit
/// for it, so the second run's tested commit descends from the first's: the target can be
/// fast-forwarded from one to the next.
#[tokio::test]
async fn a_stamped_merge_commit_is_the_same_commit_in_every_test_branch() {
    let server = MockServer::start().await;
    let committer = mount_token_user(&server).await;
    let github = fake_repository();
    github.mount(&server).await;
    let host = with_token(&server).await;
    let one = stamped(pr(1, HEAD1, "One"), "run-1", 1_795_621_562_345);
    let two = stamped(pr(2, HEAD2, "Two"), "run-2", 1_795_621_563_000);

    let first = host
        .create_test_branch(&repo(), &test_branch("mq/main/run-1", vec![one.clone()]))
        .await
        .unwrap();
    let second = host
        .create_test_branch(&repo(), &test_branch("mq/main/run-2", vec![one, two]))
        .await
        .unwrap();

    let (first, second) = (created_sha(first), created_sha(second));
    let tip = github.get_commit(&second);
    assert_eq!(tip.parents, vec![first.clone(), HEAD2.to_owned()]);
    assert_eq!(github.branch("mq/main/run-1"), Some(first.clone()));
    assert_eq!(github.branch("mq/main/run-2"), Some(second));
    let merged = github.get_commit(&first);
    assert_eq!(merged.parents, vec![TARGET_TIP, HEAD1]);
    assert_eq!(
        merged.message,
        "Merge pull request #1: One\n\nMerge-Queue-Run: run-1"
    );
    let mut signature = committer;
    signature["date"] = json!("2026-11-25T15:46:02Z");
    assert_eq!(
        (&merged.author, &merged.committer),
        (&signature, &signature)
    );
}

/// A stamped merge commit keeps the tree GitHub's merge gave, and the test branch is written
/// once, at the rewritten tip.
#[tokio::test]
async fn a_stamped_test_branch_keeps_the_merged_trees() {
    let server = MockServer::start().await;
    mount_token_user(&server).await;
    let github = fake_repository();
    github.mount(&server).await;
    let prs = vec![pr(1, HEAD1, "One"), pr(2, HEAD2, "Two")];
    let unstamped = with_token(&server)
        .await
        .create_test_branch(&repo(), &test_branch("mq/main/plain", prs.clone()))
        .await
        .unwrap();
    let prs = prs
        .into_iter()
        .map(|p| stamped(p, "run-3", 1_795_621_562_345))
        .collect();
    let stamped = with_token(&server)
        .await
        .create_test_branch(&repo(), &test_branch("mq/main/run-3", prs))
        .await
        .unwrap();
    let (unstamped, stamped) = (created_sha(unstamped), created_sha(stamped));
    assert_ne!(unstamped, stamped);
    assert_eq!(
        github.get_commit(&unstamped).tree,
        github.get_commit(&stamped).tree
    );
    let requests = server.received_requests().await.unwrap();
    let writes: Vec<Value> = requests
        .iter()
        .filter(|r| matches!(r.method.as_str(), "POST" | "PATCH"))
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
        .filter(|body| body["ref"] == "refs/heads/mq/main/run-3" || body.get("force").is_some())
        .collect();
    assert_eq!(
        writes,
        vec![json!({ "ref": "refs/heads/mq/main/run-3", "sha": stamped })]
    );
    assert_eq!(github.branch("mq/main/run-3"), Some(stamped));
    assert_eq!(github.branch("mq-build/mq/main/run-3"), None);
}

/// A build stopped halfway (its time was up while GitHub had yet to merge the third head)
/// leaves its building branch as far as it got: the next attempt goes on from there, each head
/// merged once, and writes the test branch a build in one go writes.
#[tokio::test]
async fn a_build_stopped_halfway_goes_on_from_where_it_stopped() {
    let server = MockServer::start().await;
    mount_token_user(&server).await;
    let github = fake_repository();
    let more = [
        "cccc333333333333333333333333333333333333",
        "dddd444444444444444444444444444444444444",
        "eeee555555555555555555555555555555555555",
    ];
    for (i, head) in more.iter().enumerate() {
        github.commit(head, &format!("tree-{i}"), &[TARGET_TIP]);
    }
    github.mount(&server).await;
    let mut prs = vec![pr(1, HEAD1, "One"), pr(2, HEAD2, "Two")];
    prs.extend((3..).zip(more).map(|(n, head)| pr(n, head, "More")));
    let prs: Vec<BranchPr> = prs
        .into_iter()
        .map(|p| stamped(p, "run-4", 1_795_621_562_345))
        .collect();
    let host = with_token(&server).await;

    github.hang_after("POST", "/merges", 2);
    let request = test_branch("mq/main/run-4", prs.clone());
    let stopped = tokio::time::timeout(
        Duration::from_secs(2),
        host.create_test_branch(&repo(), &request),
    )
    .await;
    assert!(stopped.is_err(), "{stopped:?}");
    assert_eq!(github.merges_made(), 2);
    github.stop_hanging();
    let built = created_sha(host.create_test_branch(&repo(), &request).await.unwrap());
    assert_eq!(github.merges_made(), 5, "each head merged once");
    assert_eq!(github.branch("mq-build/mq/main/run-4"), None);

    let mut heads = Vec::new();
    let mut at = built.clone();
    while at != TARGET_TIP {
        let commit = github.get_commit(&at);
        heads.push(commit.parents[1].clone());
        at = commit.parents[0].clone();
    }
    heads.reverse();
    let expected: Vec<String> = prs.iter().map(|p| p.head_sha.as_str().to_owned()).collect();
    assert_eq!(heads, expected);
    let in_one_go = host
        .create_test_branch(&repo(), &test_branch("mq/main/run-4-again", prs))
        .await
        .unwrap();
    assert_eq!(created_sha(in_one_go), built);
}

/// The merges API answers 204 to a retried merge whose first attempt merged the head: the
/// branch's tip is that merge, and it is the test branch's tip.
#[tokio::test]
async fn a_merge_whose_answer_was_lost_is_read_back_from_the_branch() {
    let server = MockServer::start().await;
    let github = fake_repository();
    github.mount(&server).await;
    github.lose_answer("POST", "/merges", 1);
    let outcome = with_token(&server)
        .await
        .create_test_branch(
            &repo(),
            &test_branch(
                "mq/main/run-4",
                vec![pr(1, HEAD1, "One"), pr(2, HEAD2, "Two")],
            ),
        )
        .await
        .unwrap();
    let sha = created_sha(outcome);
    let tip = github.get_commit(&sha);
    assert_eq!(tip.parents[1], HEAD2);
    assert_eq!(
        github.get_commit(&tip.parents[0]).parents,
        vec![TARGET_TIP, HEAD1]
    );
    assert_eq!(github.branch("mq/main/run-4"), Some(sha));
}

/// A head already in the base (the pull request was merged outside the queue) leaves nothing
/// for the merges API to do, and no merge commit to test: the branch is not built, and the
/// pull request is named as merged outside.
#[tokio::test]
async fn a_head_already_in_the_base_is_named_as_merged_outside() {
    let server = MockServer::start().await;
    let github = fake_repository();
    github.mount(&server).await;
    let outcome = with_token(&server)
        .await
        .create_test_branch(
            &repo(),
            &test_branch(
                "mq/main/run-5",
                vec![pr(1, HEAD1, "One"), pr(3, OLDER, "Old")],
            ),
        )
        .await
        .unwrap();
    assert_eq!(outcome, TestBranchOutcome::MergedOutside { pr: 3 });
    assert_eq!(github.branch("mq/main/run-5"), None);
}

/// A head already in the branch but not in its base (a stacked pull request queued ahead of
/// the one it is built on holds it) was not merged outside: it gets a merge commit of its own,
/// changing nothing, so the chain still has one merge commit per pull request (as the local
/// host builds it) and a squash or rebase can read it back.
#[tokio::test]
async fn a_head_another_pull_request_of_the_chain_holds_gets_an_empty_merge_commit() {
    let server = MockServer::start().await;
    let github = fake_repository();
    github.commit(HEAD_ON_ONE, "tree-on-one", &[HEAD1]);
    github.mount(&server).await;
    let outcome = with_token(&server)
        .await
        .create_test_branch(
            &repo(),
            &test_branch(
                "mq/main/run-6",
                vec![pr(4, HEAD_ON_ONE, "On one"), pr(1, HEAD1, "One")],
            ),
        )
        .await
        .unwrap();

    let tip = github.get_commit(&created_sha(outcome));
    let child = github.get_commit(&tip.parents[0]);
    assert_eq!(child.parents, vec![TARGET_TIP, HEAD_ON_ONE]);
    assert_eq!(tip.parents, vec![child.sha.clone(), HEAD1.to_owned()]);
    assert_eq!(tip.tree, child.tree);
    assert_eq!(
        tip.message,
        "Merge pull request #1: One\n\nTest-Branch: mq/main/run-6"
    );
    assert_eq!(github.branch("mq/main/run-6"), Some(tip.sha));
    assert_eq!(github.branch("mq-build/main/run-6"), None);
}

#[tokio::test]
async fn deleting_a_missing_branch_succeeds() {
    let server = MockServer::start().await;
    mock(
        &server,
        "DELETE",
        &format!("{REPO}/git/refs/heads/mq/main/gone"),
        422,
        message("Reference does not exist"),
    )
    .await;
    with_token(&server)
        .await
        .delete_branch(&repo(), "mq/main/gone")
        .await
        .unwrap();
}

fn merge_request(method: MergeMethod) -> MergeRequest {
    MergeRequest {
        target: "main".into(),
        prs: vec![pr(1, HEAD1, "One"), pr(2, HEAD2, "Two")],
        method,
        expected_target_sha: Some(Sha::new(BASE)),
        tested_sha: Some(Sha::new("c2c2")),
        tested_status: None,
    }
}

/// A server where `main` is at `BASE` and pull requests #1 and #2 are open at `HEAD1`, `HEAD2`.
async fn main_at_base_with_open_pulls() -> MockServer {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    open_pulls(&server).await;
    server
}

async fn open_pulls(server: &MockServer) {
    for (n, head) in [(1, HEAD1), (2, HEAD2)] {
        mock(
            server,
            "GET",
            &format!("{REPO}/pulls/{n}"),
            200,
            pull_json(n, head, "open", false, json!(true)),
        )
        .await;
    }
}

#[tokio::test]
async fn merge_commit_fast_forwards_the_target_to_the_tested_commit() {
    let server = main_at_base_with_open_pulls().await;
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/git/refs/heads/main")))
        .and(body_partial_json(json!({ "sha": "c2c2", "force": false })))
        .respond_with(ResponseTemplate::new(200).set_body_json(ref_json("main", "c2c2")))
        .expect(1)
        .mount(&server)
        .await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Merged {
            target_sha: Sha::new("c2c2")
        }
    );
}

/// The status the request carries (the queue's own, for a branch that requires it) is set on
/// the tested commit once the checks passed, before the target moves there; a refused merge
/// sets none.
#[tokio::test]
async fn merge_commit_sets_the_requested_status_on_the_tested_commit_before_moving_the_target() {
    let status = StatusUpdate {
        context: "merge-queue".into(),
        state: StatusState::Success,
        description: "Tested by the merge queue".into(),
        target_url: None,
    };
    let request = MergeRequest {
        tested_status: Some(status),
        ..merge_request(MergeMethod::MergeCommit)
    };
    let server = main_at_base_with_open_pulls().await;
    mock(
        &server,
        "POST",
        &format!("{REPO}/statuses/c2c2"),
        201,
        json!({}),
    )
    .await;
    let moved = ref_json("main", "c2c2");
    mock(
        &server,
        "PATCH",
        &format!("{REPO}/git/refs/heads/main"),
        200,
        moved,
    )
    .await;
    let outcome = with_token(&server).await.merge(&repo(), &request).await;
    assert!(
        matches!(outcome, Ok(MergeOutcome::Merged { .. })),
        "{outcome:?}"
    );
    let calls = server.received_requests().await.unwrap();
    let at = |part: &str| calls.iter().position(|r| r.url.path().contains(part));
    let (set, moved) = (
        at("/statuses/").expect("status set"),
        at("/git/refs/").expect("moved"),
    );
    assert!(set < moved, "the status comes first");
    let body: Value = serde_json::from_slice(&calls[set].body).unwrap();
    assert_eq!(
        (body["context"].as_str(), body["state"].as_str()),
        (Some("merge-queue"), Some("success"))
    );

    let refused = main_at_base_with_open_pulls().await;
    review_rules_say(&refused, json!("CHANGES_REQUESTED")).await;
    let outcome = with_token(&refused).await.merge(&repo(), &request).await;
    assert!(
        matches!(outcome, Ok(MergeOutcome::Rejected { .. })),
        "{outcome:?}"
    );
    let calls = refused.received_requests().await.unwrap();
    assert!(
        calls.iter().all(|r| !r.url.path().contains("/statuses/")),
        "no status"
    );
}

#[tokio::test]
async fn a_merge_is_refused_when_the_target_moved() {
    let server = MockServer::start().await;
    let moved = "9999999999999999999999999999999999999999";
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", moved),
    )
    .await;
    for (sha, tree) in [("c2c2", "tested-tree"), (moved, "another-tree")] {
        let commit = commit_json(sha, tree, &[BASE], "Elsewhere");
        mock(
            &server,
            "GET",
            &format!("{REPO}/git/commits/{sha}"),
            200,
            commit,
        )
        .await;
    }
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::Squash))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::TargetMoved {
            actual: Sha::new(moved)
        }
    );
}

/// A merge repeated after its answer was lost finds the target already moved on from the
/// expected commit to the tested tree: it is reported merged, not as a moved target.
#[tokio::test]
async fn a_repeated_merge_that_already_happened_is_reported_merged() {
    let server = MockServer::start().await;
    let merged = squash_merged_with_its_answer_lost(&server).await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::Squash))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Merged {
            target_sha: Sha::new(merged)
        }
    );
}

/// The tick asks whether a merge it did not hear back from landed: it did. Its pull requests,
/// still open, are not closed by the question: their close is an effect of its own.
#[tokio::test]
async fn a_landed_squash_merge_is_found_by_the_tick() {
    let server = MockServer::start().await;
    let merged = squash_merged_with_its_answer_lost(&server).await;
    let landed = with_token(&server)
        .await
        .merge_landed(&repo(), &merge_request(MergeMethod::Squash))
        .await
        .unwrap();
    assert_eq!(landed, Some(Sha::new(merged)));
}

/// Someone pushed to the target after the merge whose answer was lost: the merge is found
/// under the push, at the commit it wrote, and neither made again nor taken for a moved target.
#[tokio::test]
async fn a_landed_squash_merge_under_a_later_push_is_found() {
    let pushed = Some("7777777777777777777777777777777777777777");
    let request = merge_request(MergeMethod::Squash);
    let server = MockServer::start().await;
    let merged = squash_landed(&server, pushed).await;
    let landed = with_token(&server)
        .await
        .merge_landed(&repo(), &request)
        .await
        .unwrap();
    assert_eq!(landed, Some(Sha::new(merged)));

    let server = MockServer::start().await;
    let merged = squash_landed(&server, pushed).await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &request)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Merged {
            target_sha: Sha::new(merged)
        }
    );
}

/// A server where the squash merge of #1 and #2 on `BASE` (tested as `c2c2`) landed, and
/// its answer was lost before the pull requests were closed: `main` is at a commit with the
/// tested tree, ahead of `BASE`. The target must not move again, and no pull request is
/// closed (that is `close_landed_pull_request`'s, once the merge is recorded). Returns the
/// merged commit.
async fn squash_merged_with_its_answer_lost(server: &MockServer) -> &'static str {
    squash_landed(server, None).await
}

/// As [`squash_merged_with_its_answer_lost`], with `main` at `pushed` (a commit of other
/// content on top of the merge) if given.
async fn squash_landed(server: &MockServer, pushed: Option<&'static str>) -> &'static str {
    let merged = "8888888888888888888888888888888888888888";
    let tip = pushed.unwrap_or(merged);
    mock(
        server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", tip),
    )
    .await;
    if let Some(pushed) = pushed {
        let commit = commit_json(pushed, "pushed-tree", &[merged], "Someone's push");
        mock(
            server,
            "GET",
            &format!("{REPO}/git/commits/{pushed}"),
            200,
            commit,
        )
        .await;
    }
    for (sha, tree) in [("c2c2", "tested-tree"), (merged, "tested-tree")] {
        let commit = commit_json(sha, tree, &[BASE], "Two (#2)");
        mock(
            server,
            "GET",
            &format!("{REPO}/git/commits/{sha}"),
            200,
            commit,
        )
        .await;
    }
    let compare = json!({"status": "ahead", "ahead_by": 2, "behind_by": 0, "total_commits": 2});
    for at in [tip, merged] {
        let path = format!("{REPO}/compare/{BASE}...{at}");
        mock(server, "GET", &path, 200, compare.clone()).await;
    }
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/git/refs/heads/main")))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(server)
        .await;
    open_pulls(server).await;
    for pr in [1, 2] {
        Mock::given(method("PATCH"))
            .and(path(format!("{REPO}/pulls/{pr}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
            .expect(0)
            .mount(server)
            .await;
    }
    merged
}

/// Closing the pull requests of a squash merge that landed: #1, open at the head that landed,
/// is closed; #2's author pushed since, so it is left open, its new commits not merged; #3 is
/// closed already, and nothing is sent for it. A close the host fails for now is an error
/// (the effect is retried), not a success.
#[tokio::test]
async fn closing_a_landed_pull_request_closes_it_only_open_at_the_head_that_landed() {
    let server = MockServer::start().await;
    let pushed = "cccc333333333333333333333333333333333333";
    let pulls = [
        (1, HEAD1, "open"),
        (2, pushed, "open"),
        (3, HEAD1, "closed"),
    ];
    for (n, head, state) in pulls {
        mock(
            &server,
            "GET",
            &format!("{REPO}/pulls/{n}"),
            200,
            pull_json(n, head, state, false, json!(true)),
        )
        .await;
    }
    for (n, closes) in [(1, 1), (2, 0), (3, 0)] {
        Mock::given(method("PATCH"))
            .and(path(format!("{REPO}/pulls/{n}")))
            .and(wiremock::matchers::body_json(json!({"state": "closed"})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
            .expect(closes)
            .mount(&server)
            .await;
    }
    let host = with_token(&server).await;
    for (n, _, _) in pulls {
        let landed = pr(n, HEAD1, "One");
        host.close_landed_pull_request(&repo(), &landed)
            .await
            .unwrap();
    }

    let failing = MockServer::start().await;
    mock(
        &failing,
        "GET",
        &format!("{REPO}/pulls/1"),
        502,
        message("Server Error"),
    )
    .await;
    let error = with_token(&failing)
        .await
        .close_landed_pull_request(&repo(), &pr(1, HEAD1, "One"))
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
}

#[tokio::test]
async fn a_target_that_moves_during_the_merge_is_reported() {
    let server = MockServer::start().await;
    let moved = "9999999999999999999999999999999999999999";
    // Read before the checks and again just before the update: then someone pushes.
    main_reads(&server, BASE, 2, moved).await;
    open_pulls(&server).await;
    mock(
        &server,
        "PATCH",
        &format!("{REPO}/git/refs/heads/main"),
        422,
        message("Update is not a fast forward"),
    )
    .await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::TargetMoved {
            actual: Sha::new(moved)
        }
    );
}

/// `main` answers `first` to its first `n` reads, then `then`.
async fn main_reads(server: &MockServer, first: &str, n: u64, then: &str) {
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/git/ref/heads/main")))
        .respond_with(ResponseTemplate::new(200).set_body_json(ref_json("main", first)))
        .up_to_n_times(n)
        .with_priority(1)
        .mount(server)
        .await;
    mock(
        server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", then),
    )
    .await;
}

/// Someone force-pushes `main` back to an ancestor while the merge is being prepared: GitHub
/// would take the tested commit as a fast-forward from there, bringing back what was rewound.
/// The target is read again just before the update, and the merge is not sent.
#[tokio::test]
async fn a_target_rewound_during_the_merge_is_not_fast_forwarded() {
    let server = MockServer::start().await;
    let rewound = "0000000000000000000000000000000000000001";
    main_reads(&server, BASE, 1, rewound).await;
    open_pulls(&server).await;
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/git/refs/heads/main")))
        .respond_with(ResponseTemplate::new(200).set_body_json(ref_json("main", "c2c2")))
        .expect(0)
        .mount(&server)
        .await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::TargetMoved {
            actual: Sha::new(rewound)
        }
    );
}

/// The update's answer is lost (502) and the target does not hold the tested commit: it is not
/// sent again blindly (someone may have pushed or rewound the target meanwhile). The merge
/// fails for now; its retry looks first (`a_landed_squash_merge_under_a_later_push_is_found`).
#[tokio::test]
async fn an_update_whose_answer_is_lost_is_not_sent_again() {
    let server = MockServer::start().await;
    main_reads(&server, BASE, 2, BASE).await;
    open_pulls(&server).await;
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/git/refs/heads/main")))
        .respond_with(ResponseTemplate::new(502).set_body_json(message("Server Error")))
        .expect(1)
        .mount(&server)
        .await;
    let error = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
}

/// The update lands but its answer is lost (502), and someone pushes a merge commit on top
/// (its first parent their own work): the tested commit is found on the target, under the
/// push, and the merge is done.
#[tokio::test]
async fn an_update_whose_lost_answer_landed_under_a_push_is_a_merge() {
    let server = MockServer::start().await;
    let on_top = "7777777777777777777777777777777777777777";
    main_reads(&server, BASE, 2, on_top).await;
    open_pulls(&server).await;
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/git/refs/heads/main")))
        .respond_with(ResponseTemplate::new(502).set_body_json(message("Server Error")))
        .expect(1)
        .mount(&server)
        .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/compare/c2c2...{on_top}"),
        200,
        json!({ "status": "ahead", "ahead_by": 2, "behind_by": 0, "total_commits": 2 }),
    )
    .await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Merged {
            target_sha: Sha::new("c2c2")
        }
    );
}

/// A merge of the tested commit whose fast-forward GitHub refuses with `status` and `refusal`;
/// the branch's rules are `rules` and its classic protection's signature setting answers
/// `protection` (status, body).
async fn refused_fast_forward(
    refusal: &str,
    rules: Value,
    protection: (u16, Value),
) -> MergeOutcome {
    let server = main_at_base_with_open_pulls().await;
    mock(
        &server,
        "PATCH",
        &format!("{REPO}/git/refs/heads/main"),
        422,
        message(refusal),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/rules/branches/main"),
        200,
        rules,
    )
    .await;
    let (status, body) = protection;
    mock(
        &server,
        "GET",
        &format!("{REPO}/branches/main/protection/required_signatures"),
        status,
        body,
    )
    .await;
    with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap()
}

fn rejected_detail(outcome: MergeOutcome) -> String {
    match outcome {
        MergeOutcome::Rejected { detail, .. } => detail,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn says_signed_commits_are_required(detail: &str) -> bool {
    detail.starts_with("main requires signed commits")
        && detail.contains("bypass")
        && detail.contains("directMergeMode: always")
}

#[tokio::test]
async fn a_ruleset_requiring_signed_commits_is_named_in_the_refusal() {
    let rules = json!([
        { "type": "required_signatures", "ruleset_source_type": "Repository", "ruleset_source": "acme/rocket", "ruleset_id": 7 },
        { "type": "deletion", "ruleset_source_type": "Repository", "ruleset_source": "acme/rocket", "ruleset_id": 7 }
    ]);
    let outcome = refused_fast_forward(
        "Repository rule violations found",
        rules,
        (404, message("Branch not protected")),
    )
    .await;
    let detail = rejected_detail(outcome);
    assert!(says_signed_commits_are_required(&detail), "{detail}");
    assert!(detail.contains("(a repository ruleset)"), "{detail}");
    assert!(
        detail.ends_with("GitHub said: Repository rule violations found"),
        "{detail}"
    );
}

#[tokio::test]
async fn branch_protection_requiring_signed_commits_is_named_in_the_refusal() {
    let enabled = json!({
        "url": "https://api.github.com/repos/acme/rocket/branches/main/protection/required_signatures",
        "enabled": true
    });
    let outcome = refused_fast_forward(
        "Protected branch update failed for refs/heads/main.",
        json!([]),
        (200, enabled),
    )
    .await;
    let detail = rejected_detail(outcome);
    assert!(says_signed_commits_are_required(&detail), "{detail}");
    assert!(detail.contains("(branch protection)"), "{detail}");
}

/// Without admin rights the classic protection cannot be read; GitHub's own message still
/// tells a signature refusal from another one.
#[tokio::test]
async fn an_unreadable_protection_leaves_it_to_githubs_message() {
    let forbidden = (403, message("Resource not accessible by integration"));
    let signatures = refused_fast_forward(
        "Protected branch update failed for refs/heads/main.\n\nCommits must have verified signatures.",
        json!([]),
        forbidden.clone(),
    )
    .await;
    let detail = rejected_detail(signatures);
    assert!(says_signed_commits_are_required(&detail), "{detail}");
    let other = refused_fast_forward("Update is not a fast forward", json!([]), forbidden).await;
    assert_eq!(rejected_detail(other), "Update is not a fast forward");
}

/// GitHub signs the merges of its pull request merge API, except rebased commits: a direct
/// rebase merge onto a branch that requires signed commits is refused with what to do.
#[tokio::test]
async fn a_direct_rebase_merge_refused_for_signatures_says_what_to_do() {
    let server = main_at_base_with_open_pulls().await;
    let refusal = "Base branch requires signed commits. Rebase merges cannot be automatically signed by GitHub";
    Mock::given(method("PUT"))
        .and(path(format!("{REPO}/pulls/1/merge")))
        .and(body_partial_json(
            json!({ "merge_method": "rebase", "sha": HEAD1 }),
        ))
        .respond_with(ResponseTemplate::new(405).set_body_json(message(refusal)))
        .expect(1)
        .mount(&server)
        .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/rules/branches/main"),
        200,
        json!([]),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/branches/main/protection/required_signatures"),
        404,
        message("Not Found"),
    )
    .await;
    let request = MergeRequest {
        prs: vec![pr(1, HEAD1, "One")],
        tested_sha: None,
        ..merge_request(MergeMethod::Rebase)
    };
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &request)
        .await
        .unwrap();
    let MergeOutcome::Rejected {
        pr: Some(1),
        detail,
    } = outcome
    else {
        panic!("expected #1 refused, got {outcome:?}");
    };
    assert!(says_signed_commits_are_required(&detail), "{detail}");
    assert!(detail.contains(refusal), "{detail}");
}

#[tokio::test]
async fn a_merge_is_refused_when_a_pull_request_has_new_commits() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/1"),
        200,
        pull_json(1, HEAD1, "open", false, json!(true)),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/pulls/2"),
        200,
        pull_json(2, "cccc", "open", false, json!(true)),
    )
    .await;
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::Squash))
        .await
        .unwrap();
    assert_eq!(outcome, MergeOutcome::PrChanged { pr: 2 });
}

/// A pull request turned back into a draft, or retargeted, since it was tested is not merged:
/// a webhook delivery saying so may have been lost.
#[tokio::test]
async fn a_merge_is_refused_when_a_pull_request_became_a_draft_or_changed_its_base() {
    let changes: [(&str, Value, &str); 2] = [
        ("draft", json!(true), "turned back into a draft"),
        (
            "base",
            json!({ "ref": "release", "sha": BASE }),
            "into release instead of main",
        ),
    ];
    for (field, value, says) in changes {
        let server = MockServer::start().await;
        let main = ref_json("main", BASE);
        mock(
            &server,
            "GET",
            &format!("{REPO}/git/ref/heads/main"),
            200,
            main,
        )
        .await;
        let first = pull_json(1, HEAD1, "open", false, json!(true));
        mock(&server, "GET", &format!("{REPO}/pulls/1"), 200, first).await;
        let mut second = pull_json(2, HEAD2, "open", false, json!(true));
        second[field] = value;
        mock(&server, "GET", &format!("{REPO}/pulls/2"), 200, second).await;
        let outcome = with_token(&server)
            .await
            .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
            .await
            .unwrap();
        let MergeOutcome::Rejected { pr, detail } = outcome else {
            panic!("{field}: {outcome:?}");
        };
        assert_eq!(pr, Some(2), "{field}");
        assert!(detail.contains(says), "{field}: {detail}");
        let moved = server.received_requests().await.unwrap();
        assert!(
            moved
                .iter()
                .all(|r| r.method.as_str() == "GET" || r.url.path() == "/graphql"),
            "{field}: nothing written"
        );
    }
}

/// The queue moves the target itself, bypassing the rule that changes arrive through reviewed
/// pull requests: a pull request whose reviews no longer approve it (changes requested, or a
/// required review dismissed) is not merged, and a query GitHub answers with errors is an
/// error, never an approval.
#[tokio::test]
async fn a_merge_is_refused_when_the_review_rules_no_longer_approve_a_pull_request() {
    let decisions = [
        ("CHANGES_REQUESTED", "asked for changes on #1"),
        ("REVIEW_REQUIRED", "#1 lacks the reviews"),
    ];
    for (decision, says) in decisions {
        let server = main_at_base_with_open_pulls().await;
        review_rules_say(&server, json!(decision)).await;
        let outcome = with_token(&server)
            .await
            .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
            .await
            .unwrap();
        let MergeOutcome::Rejected { pr, detail } = outcome else {
            panic!("{decision}: {outcome:?}");
        };
        assert_eq!(pr, Some(1), "{decision}");
        assert!(detail.contains(says), "{decision}: {detail}");
    }
    let server = main_at_base_with_open_pulls().await;
    let failed = json!({ "data": null, "errors": [{ "message": "Resource not accessible by integration" }] });
    mock(&server, "POST", "/graphql", 200, failed).await;
    let error = with_token(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::MergeCommit))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not accessible"), "{error}");
}

/// A repository renamed or transferred: GitHub redirects its calls to the new place. They are
/// not followed (the repository may now belong to another organisation, and a queue acts only
/// on the one it was created for): the call fails as not found, saying the repository moved.
#[tokio::test]
async fn a_repository_that_moved_is_not_followed() {
    let server = MockServer::start().await;
    let moved = format!("{}/repositories/1296269", server.uri());
    let redirect = |status: u16, to: String| {
        ResponseTemplate::new(status)
            .insert_header("location", to.as_str())
            .set_body_json(json!({ "message": "Moved Permanently", "url": to }))
    };
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/pulls/7")))
        .respond_with(redirect(301, format!("{moved}/pulls/7")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/statuses/{HEAD1}")))
        .respond_with(redirect(307, format!("{moved}/statuses/{HEAD1}")))
        .mount(&server)
        .await;
    let host = with_token(&server).await;
    let read = host.pull_request(&repo(), 7, "main").await.unwrap_err();
    let status = StatusUpdate {
        context: "merge-queue".into(),
        state: StatusState::Success,
        description: "Tested".into(),
        target_url: None,
    };
    let write = host
        .set_status(&repo(), &Sha::new(HEAD1), &status)
        .await
        .unwrap_err();
    for error in [read, write] {
        assert!(
            matches!(&error, HostError::NotFound(m) if m.contains("redirects to")),
            "{error}"
        );
    }
    let calls = server.received_requests().await.unwrap();
    assert!(
        calls.iter().all(|r| r.url.path().starts_with(REPO)),
        "the new place is never called: {:?}",
        calls
            .iter()
            .map(|r| r.url.path().to_owned())
            .collect::<Vec<_>>()
    );
}

/// The tested commit `c2c2` = merge of #2 onto `c1c1` = merge of #1 onto the target.
async fn tested_chain(server: &MockServer) {
    let commits = [
        commit_json(
            "c2c2",
            "tree2",
            &["c1c1", HEAD2],
            "Merge pull request #2: Two",
        ),
        commit_json(
            "c1c1",
            "tree1",
            &[BASE, HEAD1],
            "Merge pull request #1: One",
        ),
        commit_json(BASE, "tree0", &["0000"], "Initial"),
        commit_json(HEAD1, "h1", &[BASE], "Make it faster\n\nDetails."),
        commit_json(HEAD2, "h2", &[BASE], "Make it safer"),
    ];
    for commit in commits {
        let sha = commit["sha"].as_str().unwrap().to_owned();
        mock(
            server,
            "GET",
            &format!("{REPO}/git/commits/{sha}"),
            200,
            commit,
        )
        .await;
    }
}

/// The messages of the squash commits of #1 and #2 ([`mount_pull_commits`]), as GitHub's
/// squash button writes them by default: #1 has one commit, which gives the title and the
/// body; #2 has two, listed under its title, the other author credited.
const SQUASHED: [&str; 2] = [
    "Make it faster (#1)\n\nDetails.",
    "Amazing new feature (#2)\n\n* Fix a typo\n\n* Make it safer\n\nCo-authored-by: Hubot <hubot@github.com>",
];

/// A squash commit's author: the pull requests' author (`octocat`, id 1), by name and no-reply
/// address.
fn squash_author() -> Value {
    json!({ "name": "The Octocat", "email": "1+octocat@users.noreply.github.com" })
}

/// A rebase commit's author: the head commit's.
fn head_author() -> Value {
    json!({ "name": "Monalisa Octocat", "email": "octocat@github.com" })
}

/// The commits of #1 (one) and #2 (two, the first by another author), the pull requests'
/// author, and the repository's squash settings (GitHub's defaults).
async fn mount_pull_commits(server: &MockServer) {
    let commit = |sha: &str, message: &str, (name, email, login): (&str, &str, &str)| {
        json!({ "sha": sha, "commit": { "message": message,
            "author": { "name": name, "email": email, "date": "2011-04-14T16:00:49Z" } },
            "author": { "login": login, "id": 7 } })
    };
    let octocat = ("Monalisa Octocat", "octocat@github.com", "octocat");
    let hubot = ("Hubot", "hubot@github.com", "hubot");
    let listed = [
        (
            1,
            json!([commit(HEAD1, "Make it faster\n\nDetails.", octocat)]),
        ),
        (
            2,
            json!([
                commit("a2a2", "Fix a typo", hubot),
                commit(HEAD2, "Make it safer", octocat),
            ]),
        ),
    ];
    for (n, commits) in listed {
        mock(
            server,
            "GET",
            &format!("{REPO}/pulls/{n}/commits"),
            200,
            commits,
        )
        .await;
    }
    let settings = json!({ "id": 1296269, "name": "rocket", "full_name": "acme/rocket",
        "squash_merge_commit_title": "COMMIT_OR_PR_TITLE", "squash_merge_commit_message": "COMMIT_MESSAGES" });
    mock(server, "GET", REPO, 200, settings).await;
    let octocat = json!({ "login": "octocat", "id": 1, "type": "User", "name": "The Octocat" });
    mock(server, "GET", "/users/octocat", 200, octocat).await;
}

/// A squash or rebase merge of `tested_chain` onto the target at `BASE`: the two commits it
/// must write with the tested trees (authored by `author`, committed by `committer`), the
/// target's fast-forward to the second; the pull requests are not closed by the merge (the
/// engine has them closed next, `close_landed_pull_request`).
async fn mount_rewrite(
    server: &MockServer,
    messages: [&str; 2],
    author: &Value,
    committer: &Value,
) {
    mock(
        server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        ref_json("main", BASE),
    )
    .await;
    open_pulls(server).await;
    tested_chain(server).await;
    mount_pull_commits(server).await;
    for (tree, parent, message, made) in [
        ("tree1", BASE, messages[0], "s1s1"),
        ("tree2", "s1s1", messages[1], "s2s2"),
    ] {
        Mock::given(method("POST"))
            .and(path(format!("{REPO}/git/commits")))
            .and(body_partial_json(json!({
                "tree": tree, "parents": [parent], "message": message,
                "author": author, "committer": committer
            })))
            .respond_with(ResponseTemplate::new(201).set_body_json(commit_json(
                made,
                tree,
                &[parent],
                message,
            )))
            .expect(1)
            .mount(server)
            .await;
    }
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/git/refs/heads/main")))
        .and(body_partial_json(json!({ "sha": "s2s2", "force": false })))
        .respond_with(ResponseTemplate::new(200).set_body_json(ref_json("main", "s2s2")))
        .expect(1)
        .mount(server)
        .await;
    for n in [1, 2] {
        Mock::given(method("PATCH"))
            .and(path(format!("{REPO}/pulls/{n}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
            .expect(0)
            .mount(server)
            .await;
    }
}

/// The user a token belongs to, as `GET /user` documents it (abridged).
async fn mount_token_user(server: &MockServer) -> Value {
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "login": "queue-keeper", "id": 583231, "type": "User", "site_admin": false,
            "name": "Queue Keeper", "email": null
        })))
        .expect(1)
        .mount(server)
        .await;
    json!({ "name": "Queue Keeper", "email": "583231+queue-keeper@users.noreply.github.com" })
}

/// Each pull request lands as one commit with the tree tested after it: a squash written as
/// GitHub's squash button writes it (`SQUASHED`, by the pull request's author), a rebase with
/// its head commit's message and author.
#[tokio::test]
async fn squash_and_rebase_write_one_commit_per_pull_request_with_the_tested_trees() {
    for (method, messages, author) in [
        (MergeMethod::Squash, SQUASHED, squash_author()),
        (
            MergeMethod::Rebase,
            ["Make it faster\n\nDetails.", "Make it safer"],
            head_author(),
        ),
    ] {
        let server = MockServer::start().await;
        let committer = mount_token_user(&server).await;
        mount_rewrite(&server, messages, &author, &committer).await;
        let outcome = with_token(&server)
            .await
            .merge(&repo(), &merge_request(method))
            .await
            .unwrap();
        assert_eq!(
            outcome,
            MergeOutcome::Merged {
                target_sha: Sha::new("s2s2")
            },
            "{method:?}"
        );
    }
}

/// With an App, the commits are committed by its bot user, looked up once: the App's slug
/// with the App's JWT, then the bot user's id.
#[tokio::test]
async fn an_app_commits_as_its_bot_user() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/installation"),
        200,
        json!({ "id": 42 }),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/42/access_tokens"))
        .respond_with(ResponseTemplate::new(201).set_body_json(
            json!({ "token": "ghs_installation", "expires_at": rfc3339(now() + 3600) }),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/app"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": 123, "slug": "rocket-queue", "name": "Rocket Queue",
            "owner": { "login": "acme", "id": 2 }, "permissions": { "contents": "write" }
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/users/rocket-queue[bot]"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "login": "rocket-queue[bot]", "id": 41898282, "type": "Bot", "site_admin": false }),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let committer = json!({
        "name": "rocket-queue[bot]",
        "email": "41898282+rocket-queue[bot]@users.noreply.github.com"
    });
    mount_rewrite(&server, SQUASHED, &squash_author(), &committer).await;
    let outcome = with_app(&server)
        .await
        .merge(&repo(), &merge_request(MergeMethod::Squash))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Merged {
            target_sha: Sha::new("s2s2")
        }
    );
    let requests = server.received_requests().await.unwrap();
    let to_app = requests.iter().find(|r| r.url.path() == "/app").unwrap();
    let bearer = to_app
        .headers
        .get("authorization")
        .unwrap()
        .to_str()
        .unwrap();
    assert_ne!(
        bearer, "Bearer ghs_installation",
        "GET /app is made as the App"
    );
}

#[tokio::test]
async fn a_tested_commit_that_is_not_a_test_branch_of_the_pull_requests_is_refused() {
    let server = main_at_base_with_open_pulls().await;
    tested_chain(&server).await;
    let mut request = merge_request(MergeMethod::Squash);
    request.prs.reverse();
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &request)
        .await
        .unwrap();
    assert!(
        matches!(outcome, MergeOutcome::Rejected { pr: None, .. }),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn the_queue_comment_is_found_across_pages_and_updated_in_place() {
    let server = MockServer::start().await;
    let next = format!(
        "<{}/repositories/1/issues/7/comments?page=2>; rel=\"next\", <{}/repositories/1/issues/7/comments?page=2>; rel=\"last\"",
        server.uri(),
        server.uri()
    );
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/issues/7/comments")))
        .and(query_param("per_page", "100"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("link", next.as_str())
                .set_body_json(
                    json!([{ "id": 1, "body": "Me too", "user": { "login": "octocat" } }]),
                ),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repositories/1/issues/7/comments"))
        .and(query_param("page", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            { "id": 99, "body": mq_githost::comment::marked("Queued."), "user": { "login": "queue-keeper" } }
        ])))
        .mount(&server)
        .await;
    mount_token_user(&server).await;
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/issues/comments/99")))
        .and(body_partial_json(
            json!({ "body": mq_githost::comment::marked("Testing.") }),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "id": 99 })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    with_token(&server)
        .await
        .upsert_comment(&repo(), 7, "Testing.")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_first_comment_is_posted_with_the_marker() {
    let server = MockServer::start().await;
    mount_token_user(&server).await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/issues/7/comments"),
        200,
        json!([]),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/issues/7/comments")))
        .and(body_partial_json(
            json!({ "body": mq_githost::comment::marked("Queued.") }),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({ "id": 100 })))
        .expect(1)
        .mount(&server)
        .await;
    with_token(&server)
        .await
        .upsert_comment(&repo(), 7, "Queued.")
        .await
        .unwrap();
}

/// A read made again asks whether the answer changed (`If-None-Match`): GitHub's `304 Not
/// Modified`, which costs nothing against the rate limit, gives the answer read before; a
/// changed answer replaces it.
#[tokio::test]
async fn a_read_made_again_is_conditional() {
    use wiremock::matchers::header;
    let server = MockServer::start().await;
    let at = format!("{REPO}/git/ref/heads/main");
    let answer = |sha: &str, etag: &str| {
        ResponseTemplate::new(200)
            .set_body_json(ref_json("main", sha))
            .insert_header("ETag", etag)
    };
    Mock::given(method("GET"))
        .and(path(&at))
        .and(header("If-None-Match", "\"v1\""))
        .respond_with(ResponseTemplate::new(304))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(&at))
        .and(header("If-None-Match", "\"v1\""))
        .respond_with(answer(HEAD1, "\"v2\""))
        .with_priority(2)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(&at))
        .respond_with(answer(BASE, "\"v1\""))
        .with_priority(3)
        .expect(1)
        .mount(&server)
        .await;
    let host = with_token(&server).await;
    let mut heads = Vec::new();
    for _ in 0..3 {
        heads.push(host.branch_head(&repo(), "main").await.unwrap().unwrap());
    }
    assert_eq!(heads, [BASE, BASE, HEAD1].map(Sha::new));
}

/// A page whose body did not change may have a new `Link` (a new last page): the `304`'s own
/// is followed, and the queue's comment on the new page is found, not posted again.
#[tokio::test]
async fn an_unchanged_page_follows_the_link_its_304_gives() {
    use wiremock::matchers::header;
    let server = MockServer::start().await;
    let listing = format!("{REPO}/issues/7/comments");
    let next = format!(
        "<{}/repositories/1/issues/7/comments?page=2>; rel=\"next\"",
        server.uri()
    );
    Mock::given(method("GET"))
        .and(path(&listing))
        .and(header("If-None-Match", "\"c1\""))
        .respond_with(ResponseTemplate::new(304).insert_header("Link", next.as_str()))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(&listing))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([]))
                .insert_header("ETag", "\"c1\""),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    let ours = json!([{
        "id": 99, "body": mq_githost::comment::marked("Queued."),
        "user": { "login": "queue-keeper" }
    }]);
    mount_token_user(&server).await;
    mock(
        &server,
        "GET",
        "/repositories/1/issues/7/comments",
        200,
        ours,
    )
    .await;
    Mock::given(method("POST"))
        .and(path(&listing))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({ "id": 99 })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path(format!("{REPO}/issues/comments/99")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "id": 99 })))
        .expect(1)
        .mount(&server)
        .await;
    let host = with_token(&server).await;
    for body in ["Queued.", "Testing."] {
        host.upsert_comment(&repo(), 7, body).await.unwrap();
    }
}

/// A comment post whose answer is lost (GitHub posted it, then answered 502) is not posted a
/// second time: the comments are listed again and the one found is updated.
#[tokio::test]
async fn a_comment_post_whose_answer_was_lost_leaves_one_comment() {
    let server = MockServer::start().await;
    let github = fake_repository();
    github.mount(&server).await;
    mount_token_user(&server).await;
    github.lose_answer("POST", "/issues/7/comments", 0);
    with_token(&server)
        .await
        .upsert_comment(&repo(), 7, "Queued.")
        .await
        .unwrap();
    let bodies: Vec<String> = github.comments().into_iter().map(|c| c.body).collect();
    assert_eq!(bodies, vec![mq_githost::comment::marked("Queued.")]);
}

/// A reply to a comment command is a comment of its own, one per command however often it is
/// sent, beside the queue's status comment, which it leaves as it was.
#[tokio::test]
async fn a_reply_to_a_command_is_a_comment_of_its_own() {
    use mq_githost::comment::{marked, marked_with, reply_marker};
    let server = MockServer::start().await;
    let github = fake_repository();
    github.mount(&server).await;
    mount_token_user(&server).await;
    let host = with_token(&server).await;
    host.upsert_comment(&repo(), 7, "Failed.").await.unwrap();
    for (comment_id, reply) in [(55, "No."), (55, "No."), (56, "Done.")] {
        let to = mq_githost::CommandComment {
            pr: 7,
            id: comment_id,
        };
        host.reply(&repo(), to, reply).await.unwrap();
    }
    host.upsert_comment(&repo(), 7, "Queued.").await.unwrap();
    let bodies: Vec<String> = github.comments().into_iter().map(|c| c.body).collect();
    assert_eq!(
        bodies,
        vec![
            marked("Queued."),
            marked_with("No.", &reply_marker(55)),
            marked_with("Done.", &reply_marker(56)),
        ]
    );
}

/// Someone else's comment holding the queue's markers (pasted, or quoted from the queue's) is
/// not taken for the queue's: the queue posts its own comments and never writes in theirs,
/// which they could edit afterwards.
#[tokio::test]
async fn a_marker_in_someone_elses_comment_is_not_the_queues_comment() {
    use fake_github::TOKEN_USER;
    use mq_githost::comment::{marked, marked_with, reply_marker};
    let server = MockServer::start().await;
    let github = fake_repository();
    github.mount(&server).await;
    mount_token_user(&server).await;
    let forged = [
        marked("Merged."),
        marked_with("You may.", &reply_marker(55)),
    ];
    for body in &forged {
        github.comment_by("mallory", body);
    }
    let host = with_token(&server).await;
    host.upsert_comment(&repo(), 7, "Failed.").await.unwrap();
    let to = mq_githost::CommandComment { pr: 7, id: 55 };
    host.reply(&repo(), to, "No.").await.unwrap();
    host.upsert_comment(&repo(), 7, "Queued.").await.unwrap();
    let comments: Vec<(String, String)> = github
        .comments()
        .into_iter()
        .map(|c| (c.author, c.body))
        .collect();
    let by = |author: &str, body: String| (author.to_owned(), body);
    assert_eq!(
        comments,
        vec![
            by("mallory", forged[0].clone()),
            by("mallory", forged[1].clone()),
            by(TOKEN_USER, marked("Queued.")),
            by(TOKEN_USER, marked_with("No.", &reply_marker(55))),
        ]
    );
}

/// A comment post that fails every time ends in a transient error after the retry policy's
/// attempts, with no comment posted twice.
#[tokio::test]
async fn a_comment_post_that_keeps_failing_is_transient() {
    let server = MockServer::start().await;
    mount_token_user(&server).await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/issues/7/comments"),
        200,
        json!([]),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/issues/7/comments")))
        .respond_with(ResponseTemplate::new(503).set_body_json(message("Service Unavailable")))
        .expect(3)
        .mount(&server)
        .await;
    let error = with_token(&server)
        .await
        .upsert_comment(&repo(), 7, "Queued.")
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    let listings = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "GET" && r.url.path().ends_with("/comments"))
        .count();
    assert_eq!(listings, 3, "the comments are listed before every post");
}

#[tokio::test]
async fn statuses_are_posted_and_checks_read_back_across_pages() {
    let server = MockServer::start().await;
    let sha = "c2c2c2c2";
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/statuses/{sha}")))
        .and(body_partial_json(json!({ "state": "pending", "context": "merge-queue", "description": "Testing", "target_url": "https://queue.example.com/1" })))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({ "id": 1, "state": "pending" })))
        .expect(1)
        .mount(&server)
        .await;
    mock(&server, "GET", &format!("{REPO}/commits/{sha}/status"), 200, json!({
        "state": "failure", "sha": sha, "total_count": 2,
        "statuses": [
            { "id": 1, "state": "success", "context": "build", "description": "Build passed", "target_url": "https://ci.example.com/1", "created_at": "2012-07-20T01:19:13Z", "updated_at": "2012-07-20T01:19:13Z" },
            { "id": 2, "state": "failure", "context": "test", "description": null, "target_url": null, "created_at": "2012-07-20T01:19:13Z", "updated_at": "2012-07-20T01:20:13Z" }
        ]
    })).await;
    let next = format!(
        "<{}/repos/acme/rocket/commits/{sha}/check-runs?per_page=100&page=2>; rel=\"next\"",
        server.uri()
    );
    let run = |id: u64, name: &str, conclusion: Value| {
        json!({
            "id": id, "head_sha": sha, "node_id": "MDg6Q2hlY2tSdW40", "external_id": "", "name": name,
            "url": "https://api.github.com/repos/acme/rocket/check-runs/4", "html_url": "https://github.com/acme/rocket/runs/4",
            "details_url": "https://example.com", "status": "completed", "conclusion": conclusion,
            "started_at": "2018-05-04T01:14:52Z", "completed_at": "2018-05-04T01:14:52Z",
            "check_suite": { "id": 5 }, "app": { "id": 1, "slug": "octoapp" }, "pull_requests": []
        })
    };
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/commits/{sha}/check-runs")))
        .and(query_param("page", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "total_count": 2, "check_runs": [run(5, "lint", json!("failure"))] }),
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/commits/{sha}/check-runs")))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("link", next.as_str())
                .set_body_json(
                    json!({ "total_count": 2, "check_runs": [run(4, "unit", json!("success"))] }),
                ),
        )
        .mount(&server)
        .await;

    let host = with_token(&server).await;
    let status = StatusUpdate {
        context: "merge-queue".into(),
        state: StatusState::Pending,
        description: "Testing".into(),
        target_url: Some("https://queue.example.com/1".into()),
    };
    host.set_status(&repo(), &Sha::new(sha), &status)
        .await
        .unwrap();
    let checks = host.commit_checks(&repo(), &Sha::new(sha)).await.unwrap();
    let statuses: Vec<_> = checks
        .statuses
        .iter()
        .map(|s| (s.context.as_str(), s.state))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("build", StatusState::Success),
            ("test", StatusState::Failure)
        ]
    );
    let runs: Vec<_> = checks
        .check_runs
        .iter()
        .map(|r| (r.name.as_str(), r.conclusion, r.suite_id))
        .collect();
    assert_eq!(
        runs,
        vec![
            ("unit", Some(CheckConclusion::Success), 5),
            ("lint", Some(CheckConclusion::Failure), 5)
        ]
    );
}

#[tokio::test]
async fn required_statuses_come_from_the_config_file_first() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/contents/.merge-queue.yaml")))
        .and(query_param("ref", "main"))
        .and(header("accept", "application/vnd.github.raw+json"))
        .respond_with(
            ResponseTemplate::new(200).set_body_string("required_statuses:\n  - build\n  - test\n"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/branches/main")))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let required = with_token(&server)
        .await
        .required_statuses(&repo(), "main")
        .await
        .unwrap();
    assert_eq!(required.contexts, vec!["build", "test"]);
    assert_eq!(required.source, Some(RequiredStatusesSource::ServiceConfig));
}

#[tokio::test]
async fn required_statuses_fall_back_to_branch_protection_and_rulesets() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/contents/.merge-queue.yaml"),
        404,
        message("Not Found"),
    )
    .await;
    mock(&server, "GET", &format!("{REPO}/branches/release/1.x"), 200, json!({
        "name": "release/1.x", "commit": { "sha": BASE }, "protected": true,
        "protection": { "enabled": true, "required_status_checks": {
            "enforcement_level": "non_admins", "contexts": ["ci/build"],
            "checks": [{ "context": "ci/build", "app_id": null }, { "context": "ci/lint", "app_id": 15368 }] } },
        "protection_url": "https://api.github.com/repos/acme/rocket/branches/release/1.x/protection"
    })).await;
    mock(&server, "GET", &format!("{REPO}/rules/branches/release/1.x"), 200, json!([
        { "type": "deletion", "ruleset_source_type": "Repository", "ruleset_source": "acme/rocket", "ruleset_id": 1 },
        { "type": "required_status_checks", "ruleset_source_type": "Organization", "ruleset_source": "acme", "ruleset_id": 2,
          "parameters": { "strict_required_status_checks_policy": false,
                          "required_status_checks": [{ "context": "security/scan", "integration_id": 1 }] } }
    ])).await;
    let required = with_token(&server)
        .await
        .required_statuses(&repo(), "release/1.x")
        .await
        .unwrap();
    assert_eq!(
        required.contexts,
        vec!["ci/build", "ci/lint", "security/scan"]
    );
    assert_eq!(
        required.source,
        Some(RequiredStatusesSource::RepoProviderBranchProtection)
    );
}

#[tokio::test]
async fn no_source_means_no_required_statuses() {
    let server = MockServer::start().await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/contents/.merge-queue.yaml"),
        404,
        message("Not Found"),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/branches/main"),
        200,
        json!({ "name": "main", "protected": false }),
    )
    .await;
    mock(
        &server,
        "GET",
        &format!("{REPO}/rules/branches/main"),
        200,
        json!([]),
    )
    .await;
    let required = with_token(&server)
        .await
        .required_statuses(&repo(), "main")
        .await
        .unwrap();
    assert_eq!((required.contexts.len(), required.source), (0, None));
}

fn test_pull() -> TestPullRequest {
    TestPullRequest {
        branch: "mq/main/run-1".into(),
        target: "main".into(),
        title: "Merge queue: testing #1, #2".into(),
        body: "Run run-1 tests #1 and #2 on main.".into(),
    }
}

/// `POST /repos/{owner}/{repo}/pulls` answering 201 with a pull request numbered `number`.
fn created_pull(number: u32) -> ResponseTemplate {
    ResponseTemplate::new(201).set_body_json(pull_json(number, HEAD1, "open", false, Value::Null))
}

#[tokio::test]
async fn a_test_pull_request_is_opened_as_a_draft_from_the_test_branch() {
    let server = MockServer::start().await;
    let request = test_pull();
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/pulls")))
        .and(body_partial_json(json!({
            "head": request.branch, "base": request.target, "title": request.title,
            "body": request.body, "draft": true
        })))
        .respond_with(created_pull(12))
        .expect(1)
        .mount(&server)
        .await;
    with_token(&server)
        .await
        .open_test_pull_request(&repo(), &request)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_repository_without_drafts_gets_a_ready_test_pull_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/pulls")))
        .and(body_partial_json(json!({ "draft": true })))
        .respond_with(ResponseTemplate::new(422).set_body_json(message(
            "Draft pull requests are not supported in this repository.",
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/pulls")))
        .and(body_partial_json(
            json!({ "head": "mq/main/run-1", "draft": false }),
        ))
        .respond_with(created_pull(12))
        .expect(1)
        .mount(&server)
        .await;
    with_token(&server)
        .await
        .open_test_pull_request(&repo(), &test_pull())
        .await
        .unwrap();
}

fn already_open(branch: &str) -> Value {
    json!({
        "message": "Validation Failed",
        "errors": [{ "resource": "PullRequest", "code": "custom",
                     "message": format!("A pull request already exists for acme:{branch}.") }],
        "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
    })
}

/// One already open from the branch is kept, even when the target's name mentions drafts.
#[tokio::test]
async fn a_test_pull_request_already_open_is_kept() {
    let server = MockServer::start().await;
    let request = TestPullRequest {
        branch: "mq/draft-release/run-1".into(),
        target: "draft-release".into(),
        ..test_pull()
    };
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/pulls")))
        .respond_with(ResponseTemplate::new(422).set_body_json(already_open(&request.branch)))
        .expect(1)
        .mount(&server)
        .await;
    with_token(&server)
        .await
        .open_test_pull_request(&repo(), &request)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_test_pull_request_from_a_missing_branch_is_not_found() {
    let server = MockServer::start().await;
    let invalid_head = json!({
        "message": "Validation Failed",
        "errors": [{ "resource": "PullRequest", "field": "head", "code": "invalid" }],
        "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
    });
    mock(&server, "POST", &format!("{REPO}/pulls"), 422, invalid_head).await;
    let error = with_token(&server)
        .await
        .open_test_pull_request(&repo(), &test_pull())
        .await
        .unwrap_err();
    assert!(matches!(error, HostError::NotFound(_)), "{error:?}");
}

/// GitHub answers a branch pushed moments before as an invalid head for a while: the branch
/// exists, so the refusal is for now, and the pull request is opened when tried again.
#[tokio::test]
async fn a_test_pull_request_from_a_branch_github_does_not_see_yet_is_tried_again() {
    let server = MockServer::start().await;
    let invalid_head = json!({
        "message": "Validation Failed",
        "errors": [{ "resource": "PullRequest", "field": "head", "code": "invalid" }],
    });
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/pulls")))
        .respond_with(ResponseTemplate::new(422).set_body_json(invalid_head))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!("{REPO}/pulls")))
        .respond_with(created_pull(7))
        .expect(1)
        .mount(&server)
        .await;
    let branch = test_pull().branch;
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/{branch}"),
        200,
        ref_json(&branch, BASE),
    )
    .await;
    let host = with_token(&server).await;
    let error = host
        .open_test_pull_request(&repo(), &test_pull())
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    host.open_test_pull_request(&repo(), &test_pull())
        .await
        .unwrap();
}

#[tokio::test]
async fn closing_a_test_branch_closes_every_pull_request_open_from_it() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/pulls")))
        .and(query_param("state", "open"))
        .and(query_param("head", "acme:mq/main/run-1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            pull_json(12, HEAD1, "open", false, Value::Null),
            pull_json(13, HEAD1, "open", false, Value::Null)
        ])))
        .expect(1)
        .mount(&server)
        .await;
    for n in [12, 13] {
        Mock::given(method("PATCH"))
            .and(path(format!("{REPO}/pulls/{n}")))
            .and(body_partial_json(json!({ "state": "closed" })))
            .respond_with(ResponseTemplate::new(200).set_body_json(pull_json(
                n,
                HEAD1,
                "closed",
                false,
                Value::Null,
            )))
            .expect(1)
            .mount(&server)
            .await;
    }
    with_token(&server)
        .await
        .close_test_pull_request(&repo(), "mq/main/run-1")
        .await
        .unwrap();
}

#[tokio::test]
async fn closing_a_test_branch_with_no_pull_request_open_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("{REPO}/pulls")))
        .and(query_param("head", "acme:mq/main/run-9"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    with_token(&server)
        .await
        .close_test_pull_request(&repo(), "mq/main/run-9")
        .await
        .unwrap();
}

/// A direct merge that GitHub refuses because the target moved while it merged (405, "Base
/// branch was modified") is reported as the target moving, to be tried again on the new
/// target, not as a refusal that would fail the pull request.
#[tokio::test]
async fn a_direct_merge_that_races_a_push_to_the_target_reports_the_target_moved() {
    let server = main_at_base_with_open_pulls().await;
    let moved = "Base branch was modified. Review and try the merge again.";
    mock(
        &server,
        "PUT",
        &format!("{REPO}/pulls/1/merge"),
        405,
        message(moved),
    )
    .await;
    let request = MergeRequest {
        prs: vec![pr(1, HEAD1, "One")],
        tested_sha: None,
        ..merge_request(MergeMethod::Squash)
    };
    let outcome = with_token(&server)
        .await
        .merge(&repo(), &request)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::TargetMoved {
            actual: Sha::new(BASE)
        }
    );
}

/// A direct merge whose answer is a server error may have happened: it is not sent again
/// (a second one would be refused as "not mergeable"), and the error leaves it to the queue
/// to ask whether it landed.
#[tokio::test]
async fn a_direct_merge_without_an_answer_is_not_sent_again() {
    let server = main_at_base_with_open_pulls().await;
    Mock::given(method("PUT"))
        .and(path(format!("{REPO}/pulls/1/merge")))
        .respond_with(ResponseTemplate::new(502).set_body_json(message("Server Error")))
        .expect(1)
        .mount(&server)
        .await;
    let request = MergeRequest {
        prs: vec![pr(1, HEAD1, "One")],
        tested_sha: None,
        ..merge_request(MergeMethod::MergeCommit)
    };
    let error = with_token(&server)
        .await
        .merge(&repo(), &request)
        .await
        .unwrap_err();
    assert!(matches!(error, HostError::Transient { .. }), "{error:?}");
}

/// A direct merge repeated after its answer was lost: #1 is merged and `main` moved on. It
/// is reported merged and not sent again, also as the queue's first direct merge, which
/// expected no commit of the target.
#[tokio::test]
async fn a_repeated_direct_merge_that_already_happened_is_reported_merged() {
    let server = MockServer::start().await;
    let merged = "7777777777777777777777777777777777777777";
    let main = ref_json("main", merged);
    mock(
        &server,
        "GET",
        &format!("{REPO}/git/ref/heads/main"),
        200,
        main,
    )
    .await;
    let pull = pull_json(1, HEAD1, "closed", true, Value::Null);
    mock(&server, "GET", &format!("{REPO}/pulls/1"), 200, pull).await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let request = MergeRequest {
        prs: vec![pr(1, HEAD1, "One")],
        tested_sha: None,
        ..merge_request(MergeMethod::MergeCommit)
    };
    let first = MergeRequest {
        expected_target_sha: None,
        ..request.clone()
    };
    for request in [request, first] {
        let outcome = with_token(&server).await.merge(&repo(), &request).await;
        assert_eq!(
            outcome.unwrap(),
            MergeOutcome::Merged {
                target_sha: Sha::new(merged)
            }
        );
    }
}

/// Who may write: the legacy `permission` GitHub answers is `write` (also for `maintain`) or
/// `admin`; `read` (also for `triage`) and `none` may not, nor an account GitHub does not know.
#[tokio::test]
async fn an_account_may_write_with_the_write_maintain_or_admin_role() {
    let server = MockServer::start().await;
    let roles = [
        ("writer", "write", "write", true),
        ("maintainer", "write", "maintain", true),
        ("owner", "admin", "admin", true),
        ("triager", "read", "triage", false),
        ("reader", "read", "read", false),
        ("outsider", "none", "none", false),
    ];
    for (login, permission, role_name, _) in roles {
        mock(
            &server,
            "GET",
            &format!("{REPO}/collaborators/{login}/permission"),
            200,
            json!({
                "permission": permission,
                "role_name": role_name,
                "user": { "login": login, "id": 7, "type": "User", "site_admin": false },
            }),
        )
        .await;
    }
    mock(
        &server,
        "GET",
        &format!("{REPO}/collaborators/ghost/permission"),
        404,
        message("Not Found"),
    )
    .await;
    let host = with_token(&server).await;
    for (login, _, role_name, may) in roles {
        assert_eq!(
            host.may_write(&repo(), login).await.unwrap(),
            may,
            "{login} ({role_name})"
        );
    }
    assert!(!host.may_write(&repo(), "ghost").await.unwrap());
}
