//! Webhook deliveries: the example payloads of `@octokit/webhooks-examples` (see
//! `fixtures/webhooks/README.md`), signed as GitHub signs them.

use mq_core::git::{CheckConclusion, CheckStatus, Mergeability, PrState, Review, StatusState};
use mq_core::ids::{RepoRef, Sha};
use mq_core::priority::Priority;
use mq_githost::webhook::{
    CommentCommand, HostFact, PrChange, WebhookError, WebhookReceiver, sign,
};
use serde_json::{Value, json};

const SECRET: &[u8] = b"webhook secret for tests";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/webhooks/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn receiver() -> WebhookReceiver {
    WebhookReceiver::new(SECRET, "github.com")
}

/// Delivers `body` as event `event`, correctly signed.
fn deliver(event: &str, body: &[u8]) -> HostFact {
    receiver()
        .receive(event, Some(&sign(SECRET, body)), body)
        .unwrap_or_else(|e| panic!("{event}: {e}"))
}

/// A fixture with some fields changed, as JSON bytes.
fn edited(name: &str, change: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut payload: Value = serde_json::from_slice(&fixture(name)).unwrap();
    change(&mut payload);
    serde_json::to_vec(&payload).unwrap()
}

fn hello_world() -> RepoRef {
    RepoRef::new("github.com", "Codertocat", "Hello-World").unwrap()
}

#[test]
fn a_correct_signature_is_accepted_and_any_other_refused_with_401() {
    let body = fixture("push.branch");
    let good = sign(SECRET, &body);
    assert!(receiver().receive("push", Some(&good), &body).is_ok());

    let mut tampered = body.clone();
    let at = tampered.iter().position(|b| *b == b'm').unwrap();
    tampered[at] = b'M';
    let refused = [
        receiver().receive("push", Some(&good), &tampered),
        receiver().receive("push", None, &body),
        receiver().receive("push", Some(&sign(b"another secret", &body)), &body),
        receiver().receive("push", Some(good.trim_start_matches("sha256=")), &body),
    ];
    for result in refused {
        let error = result.unwrap_err();
        assert_eq!(error.http_status(), 401, "{error}");
    }
}

/// While the webhook's secret changes, the value kept holds the new and the old one, a line
/// each: a delivery signed with either is accepted, and one signed with the whole value is not.
#[test]
fn while_the_secret_changes_a_delivery_signed_with_either_line_is_accepted() {
    let receiver = WebhookReceiver::new(b"new secret\r\nold secret\n".to_vec(), "github.com");
    let body = fixture("push.branch");
    for secret in [b"new secret".as_slice(), b"old secret"] {
        let signature = sign(secret, &body);
        assert!(receiver.receive("push", Some(&signature), &body).is_ok());
    }
    let whole = sign(b"new secret\r\nold secret\n", &body);
    assert_eq!(
        receiver.receive("push", Some(&whole), &body),
        Err(WebhookError::BadSignature)
    );
    let empty = WebhookReceiver::new(b"\n".to_vec(), "github.com");
    assert_eq!(
        empty.receive("push", Some(&whole), &body),
        Err(WebhookError::NoSecret)
    );
}

/// A secret source that counts its reads.
#[derive(Debug)]
struct CountedSecret {
    value: &'static str,
    reads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl mq_githost::SecretSource for CountedSecret {
    async fn read(&self) -> Result<String, String> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.value.to_owned())
    }
}

/// The secret changed where it is kept (and on GitHub) after the process read it: a delivery
/// signed with the new one has the secret read again, and is accepted. A signature that still
/// matches nothing (an attacker's) reads it again at most once a minute.
#[tokio::test]
async fn a_secret_changed_where_it_is_kept_is_read_again_at_most_once_a_minute() {
    let source = std::sync::Arc::new(CountedSecret {
        value: "new secret",
        reads: 0.into(),
    });
    let receiver = WebhookReceiver::new(SECRET, "github.com").with_source(source.clone());
    let body = fixture("push.branch");
    let signature = sign(b"new secret", &body);
    let reads = || source.reads.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        receiver
            .receive_or_read_again("push", Some(&signature), &body)
            .await
            .is_ok()
    );
    assert_eq!(reads(), 1);
    let forged = sign(b"a guess", &body);
    for _ in 0..3 {
        let refused = receiver
            .receive_or_read_again("push", Some(&forged), &body)
            .await;
        assert_eq!(refused, Err(WebhookError::BadSignature));
    }
    assert_eq!(reads(), 1);
}

#[test]
fn the_signature_is_checked_before_the_body_is_read() {
    let garbage = b"not json at all";
    let unsigned = receiver().receive("push", Some("sha256=00"), garbage);
    assert_eq!(unsigned, Err(WebhookError::BadSignature));
    let signed = receiver().receive("push", Some(&sign(SECRET, garbage)), garbage);
    assert!(matches!(&signed, Err(WebhookError::Malformed(_))));
    assert_eq!(signed.unwrap_err().http_status(), 400);
}

#[test]
fn ping_is_acknowledged_with_its_repository_when_it_has_one() {
    let HostFact::Ping { repo, hook_id, zen } = deliver("ping", &fixture("ping")) else {
        panic!("not a ping");
    };
    assert_eq!(
        repo,
        Some(RepoRef::new("github.com", "Octocoders", "Hello-World").unwrap())
    );
    assert_eq!(hook_id, Some(109948940));
    assert_eq!(zen, "Anything added dilutes everything else.");
    let HostFact::Ping { repo, .. } = deliver("ping", &fixture("ping.organization")) else {
        panic!("not a ping");
    };
    assert_eq!(repo, None);
}

#[test]
fn status_becomes_a_status_report_on_its_commit() {
    let fact = deliver("status", &fixture("status"));
    let HostFact::Status {
        repo,
        sha,
        status,
        branches,
    } = fact
    else {
        panic!("not a status: {fact:?}");
    };
    assert_eq!(repo, hello_world());
    assert_eq!(sha, Sha::new("6113728f27ae82c7b1a177c8d03f9e96e0adf246"));
    assert_eq!(
        (status.context.as_str(), status.state),
        ("default", StatusState::Success)
    );
    assert_eq!(status.updated_at.to_rfc3339(), "2019-05-15T15:20:55.000Z");
    assert_eq!(branches, vec!["master", "changes", "gh-pages"]);
}

#[test]
fn check_runs_created_and_completed_become_check_reports() {
    let created = deliver("check_run", &fixture("check_run.created"));
    let HostFact::CheckRun { sha, check, .. } = created else {
        panic!("not a check run: {created:?}");
    };
    assert_eq!(sha, Sha::new("ec26c3e57ca3a959ca5aad62de7213c562f8c821"));
    assert_eq!(
        (check.name.as_str(), check.status, check.conclusion),
        ("Octocoders-linter", CheckStatus::Queued, None)
    );
    assert_eq!(check.suite_id, 118578147);

    let completed = deliver("check_run", &fixture("check_run.completed"));
    let HostFact::CheckRun { repo, check, .. } = completed else {
        panic!("not a check run: {completed:?}");
    };
    assert_eq!(repo, hello_world());
    assert_eq!(
        (check.status, check.conclusion),
        (CheckStatus::Completed, Some(CheckConclusion::Failure))
    );
    assert_eq!(check.id, 128620228);

    let other = deliver("check_run", &fixture("check_run.requested_action"));
    assert_eq!(
        other,
        HostFact::Ignored {
            event: "check_run".into(),
            action: Some("requested_action".into())
        }
    );
}

#[test]
fn a_completed_check_suite_is_reported_and_a_requested_one_ignored() {
    let fact = deliver("check_suite", &fixture("check_suite.completed"));
    let HostFact::CheckSuiteCompleted {
        sha,
        suite_id,
        branch,
        conclusion,
        ..
    } = fact
    else {
        panic!("not a suite: {fact:?}");
    };
    assert_eq!(sha, Sha::new("ec26c3e57ca3a959ca5aad62de7213c562f8c821"));
    assert_eq!(
        (suite_id, branch.as_deref(), conclusion),
        (118578147, Some("changes"), Some(CheckConclusion::Success))
    );
    assert!(matches!(
        deliver("check_suite", &fixture("check_suite.requested")),
        HostFact::Ignored { .. }
    ));
}

fn pr_fact(name: &str, body: &[u8]) -> (PrChange, mq_core::git::PrFacts) {
    match deliver("pull_request", body) {
        HostFact::PullRequest { repo, change, pr } => {
            assert_eq!(repo, hello_world(), "{name}");
            (change, pr)
        }
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn pull_request_actions_become_pull_request_facts() {
    let (change, pr) = pr_fact("opened", &fixture("pull_request.opened"));
    assert_eq!(change, PrChange::Opened);
    assert_eq!(pr.number, 2);
    assert_eq!(pr.title, "Update the README with new information.");
    assert_eq!(pr.author, "Codertocat");
    assert_eq!(
        pr.head_sha,
        Sha::new("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    );
    assert_eq!(pr.base_branch, "master");
    assert_eq!(
        (pr.state, pr.mergeability, pr.draft),
        (PrState::Open, Mergeability::InProgress, false)
    );

    let expected = [
        ("pull_request.synchronize", PrChange::Synchronized),
        ("pull_request.reopened", PrChange::Reopened),
        (
            "pull_request.converted_to_draft",
            PrChange::ConvertedToDraft,
        ),
        ("pull_request.ready_for_review", PrChange::ReadyForReview),
    ];
    for (name, change) in expected {
        assert_eq!(pr_fact(name, &fixture(name)).0, change, "{name}");
    }
    let (_, draft) = pr_fact("draft", &fixture("pull_request.converted_to_draft"));
    assert!(draft.draft);

    let (change, closed) = pr_fact("closed", &fixture("pull_request.closed"));
    assert_eq!((change, closed.state), (PrChange::Closed, PrState::Closed));
    let merged = edited("pull_request.closed", |p| {
        p["pull_request"]["merged"] = json!(true)
    });
    assert_eq!(pr_fact("merged", &merged).1.state, PrState::Merged);
}

/// A review submitted or dismissed may change what the review rules decide: the queue hears
/// of the pull request, taken as not approved until read from the host. An edited review
/// changes nothing.
#[test]
fn a_submitted_or_dismissed_review_is_a_pull_request_fact() {
    for name in [
        "pull_request_review.submitted",
        "pull_request_review.dismissed",
    ] {
        match deliver("pull_request_review", &fixture(name)) {
            HostFact::PullRequest { repo, change, pr } => {
                assert_eq!(repo, hello_world(), "{name}");
                assert_eq!(change, PrChange::Reviewed, "{name}");
                assert_eq!((pr.number, pr.state), (2, PrState::Open), "{name}");
                assert_eq!(pr.review, Review::Required, "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let edited = edited("pull_request_review.submitted", |p| {
        p["action"] = json!("edited")
    });
    assert!(matches!(
        deliver("pull_request_review", &edited),
        HostFact::Ignored { .. }
    ));
}

#[test]
fn an_edit_that_changes_the_base_names_the_previous_base() {
    let retargeted = edited("pull_request.opened", |p| {
        p["action"] = json!("edited");
        p["pull_request"]["base"]["ref"] = json!("release");
        p["changes"] = json!({ "base": { "ref": { "from": "master" }, "sha": { "from": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e" } } });
    });
    let (change, pr) = pr_fact("edited base", &retargeted);
    assert_eq!(
        change,
        PrChange::BaseChanged {
            from: "master".into()
        }
    );
    assert_eq!(pr.base_branch, "release");

    let retitled = edited("pull_request.opened", |p| {
        p["action"] = json!("edited");
        p["changes"] = json!({ "title": { "from": "Old title" } });
    });
    assert_eq!(pr_fact("edited title", &retitled).0, PrChange::Edited);
}

#[test]
fn other_pull_request_actions_and_unknown_events_are_ignored() {
    assert_eq!(
        deliver("pull_request", &fixture("pull_request.labeled")),
        HostFact::Ignored {
            event: "pull_request".into(),
            action: Some("labeled".into())
        }
    );
    let body = br#"{"action":"created","starred_at":"2019-05-15T15:20:40Z"}"#;
    assert_eq!(
        deliver("star", body),
        HostFact::Ignored {
            event: "star".into(),
            action: Some("created".into())
        }
    );
}

/// The package's comment is on an issue; GitHub marks comments on pull requests with
/// `issue.pull_request`.
fn comment_on_pr(body: &str) -> Vec<u8> {
    edited("issue_comment.created", |p| {
        p["comment"]["body"] = json!(body);
        p["issue"]["pull_request"] = json!({
            "url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1",
            "html_url": "https://github.com/Codertocat/Hello-World/pull/1",
            "diff_url": "https://github.com/Codertocat/Hello-World/pull/1.diff",
            "patch_url": "https://github.com/Codertocat/Hello-World/pull/1.patch",
        });
    })
}

#[test]
fn comment_commands_on_pull_requests_become_commands() {
    let fact = deliver(
        "issue_comment",
        &comment_on_pr("Ready.\n/service merge --priority high --no-batch"),
    );
    let HostFact::Command {
        repo,
        pr,
        author,
        author_association,
        comment_id,
        command,
    } = fact
    else {
        panic!("not a command: {fact:?}");
    };
    assert_eq!(comment_id, 492700400);
    assert_eq!(
        (repo, pr, author.as_str()),
        (hello_world(), 1, "Codertocat")
    );
    assert_eq!(author_association, "OWNER");
    assert_eq!(
        command,
        Ok(CommentCommand::Merge {
            priority: Some(Priority::of(10)),
            no_batch: true
        })
    );

    let cancel = deliver("issue_comment", &comment_on_pr("/service cancel"));
    assert!(matches!(
        cancel,
        HostFact::Command {
            command: Ok(CommentCommand::Cancel),
            ..
        }
    ));

    let wrong = deliver(
        "issue_comment",
        &comment_on_pr("/service merge --priority soon"),
    );
    let HostFact::Command {
        command: Err(error),
        ..
    } = wrong
    else {
        panic!("expected a refused command: {wrong:?}");
    };
    assert!(error.to_string().contains("priority"), "{error}");
}

#[test]
fn comments_without_commands_on_issues_edited_or_by_the_queue_are_ignored() {
    let plain = deliver("issue_comment", &comment_on_pr("Looks good"));
    assert!(matches!(plain, HostFact::Ignored { .. }));
    let on_issue = edited("issue_comment.created", |p| {
        p["comment"]["body"] = json!("/service merge")
    });
    assert!(matches!(
        deliver("issue_comment", &on_issue),
        HostFact::Ignored { .. }
    ));
    let edit = edited("issue_comment.edited", |p| {
        p["comment"]["body"] = json!("/service merge");
        p["issue"]["pull_request"] =
            json!({ "url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1" });
    });
    assert!(matches!(
        deliver("issue_comment", &edit),
        HostFact::Ignored { .. }
    ));
    let ours = mq_githost::comment::marked(
        "Failed. Comment `/service merge` to try again.\n/service merge",
    );
    assert!(matches!(
        deliver("issue_comment", &comment_on_pr(&ours)),
        HostFact::Ignored { .. }
    ));
    let reply = mq_githost::comment::marked_with(
        "unknown option;\n/service merge",
        &mq_githost::comment::reply_marker(9),
    );
    assert!(matches!(
        deliver("issue_comment", &comment_on_pr(&reply)),
        HostFact::Ignored { .. }
    ));
}

#[test]
fn a_push_to_a_branch_names_the_branch_and_its_new_head() {
    let fact = deliver("push", &fixture("push.branch"));
    let HostFact::Push {
        repo,
        branch,
        before,
        after,
        created,
        deleted,
        forced,
    } = fact
    else {
        panic!("not a push: {fact:?}");
    };
    assert_eq!((repo, branch.as_str()), (hello_world(), "master"));
    assert_eq!(before, Sha::new("0000000000000000000000000000000000000000"));
    assert_eq!(after, Sha::new("6113728f27ae82c7b1a177c8d03f9e96e0adf246"));
    assert_eq!((created, deleted, forced), (true, false, false));
    assert!(matches!(
        deliver("push", &fixture("push.tag")),
        HostFact::Ignored { .. }
    ));
}

#[test]
fn repositories_carry_the_configured_host() {
    let enterprise = WebhookReceiver::new(SECRET, "git.example.com");
    let body = fixture("status");
    let fact = enterprise
        .receive("status", Some(&sign(SECRET, &body)), &body)
        .unwrap();
    assert_eq!(fact.repo().unwrap().host, "git.example.com");
}
