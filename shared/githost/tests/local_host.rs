//! The local Git host on real git repositories made in temporary directories.

mod support;

use mq_core::engine::BranchPr;
use mq_core::git::{Mergeability, PrState, RequiredStatusesSource, StatusState};
use mq_core::ids::{RepoRef, Sha};
use mq_core::run::MergeStamp;
use mq_core::settings::MergeMethod;
use mq_githost::local::{CiConfig, LocalGitHost};
use mq_githost::{
    GitHost, HostError, MergeOutcome, MergeRequest, StatusUpdate, TestBranchOutcome,
    TestBranchRequest, TestPullRequest,
};
use std::time::Duration;
use support::{Fixture, git};

fn request(branch: &str, prs: Vec<mq_core::engine::BranchPr>) -> TestBranchRequest {
    TestBranchRequest {
        branch: branch.to_owned(),
        target: "main".to_owned(),
        base: None,
        prs,
    }
}

async fn created(host: &LocalGitHost, f: &Fixture, request: &TestBranchRequest) -> (Sha, Sha) {
    match host.create_test_branch(&f.repo, request).await.unwrap() {
        TestBranchOutcome::Created { sha, base_sha } => (sha, base_sha),
        other => panic!("expected a branch, got {other:?}"),
    }
}

#[tokio::test]
async fn reads_pull_request_metadata_from_refs_config_and_the_head_commit() {
    let f = Fixture::new();
    let host = f.host();
    let pr = f.pr_writing(7, &[("c.txt", "c\n")]);
    let facts = host.pull_request(&f.repo, 7, "main").await.unwrap();
    assert_eq!(facts.number, 7);
    assert_eq!(facts.title, "Change for #7");
    assert_eq!(facts.author, "Ada Lovelace");
    assert_eq!(facts.head_sha, pr.head_sha);
    assert_eq!(facts.base_branch, "main");
    assert_eq!(facts.state, PrState::Open);
    assert_eq!(facts.mergeability, Mergeability::Mergeable);
    assert!(facts.based_on_target_head);
    assert!(!facts.draft);

    f.config("pr.7.title", "Add the c file");
    f.config("pr.7.base", "release");
    f.config("pr.7.draft", "true");
    f.config("pr.7.state", "closed");
    let facts = host.pull_request(&f.repo, 7, "main").await.unwrap();
    assert_eq!(facts.title, "Add the c file");
    assert_eq!(facts.base_branch, "release");
    assert!(facts.draft);
    assert_eq!(facts.state, PrState::Closed);

    // The target moved past the pull request's base: no longer based on its head.
    let moved = f.commit("origin/main", &[("d.txt", "d\n")], "Unrelated");
    f.push(moved.as_str(), "refs/heads/main");
    let facts = host.pull_request(&f.repo, 7, "main").await.unwrap();
    assert!(!facts.based_on_target_head);
}

#[tokio::test]
async fn trial_merges_tell_clean_from_conflicting_pull_requests() {
    let f = Fixture::new();
    let host = f.host();
    let one = f.pr_writing(1, &[("a.txt", "1\n2\nthree\n4\n5\n")]);
    f.pr_writing(2, &[("a.txt", "1\n2\nTHREE\n4\n5\n")]);
    assert_eq!(
        host.pull_request(&f.repo, 1, "main")
            .await
            .unwrap()
            .mergeability,
        Mergeability::Mergeable
    );
    // Merge #1 into main by hand: #2 now conflicts with its base.
    f.push(one.head_sha.as_str(), "refs/heads/main");
    let facts = host.pull_request(&f.repo, 2, "main").await.unwrap();
    assert_eq!(facts.mergeability, Mergeability::NotMergeable);
}

#[tokio::test]
async fn unknown_repositories_pull_requests_and_bad_names_are_typed_errors() {
    let f = Fixture::new();
    let host = f.host();
    let missing = RepoRef::new("git.local", "acme", "nope").unwrap();
    assert!(matches!(
        host.pull_request(&missing, 1, "main").await,
        Err(HostError::NotFound(_))
    ));
    assert!(matches!(
        host.pull_request(&f.repo, 99, "main").await,
        Err(HostError::NotFound(_))
    ));
    let before = f.bare_git(&["for-each-ref"]);
    let bad = request("mq/main/../x", vec![]);
    assert!(matches!(
        host.create_test_branch(&f.repo, &bad).await,
        Err(HostError::Invalid(_))
    ));
    let bad_sha = TestBranchRequest {
        base: Some(Sha::new("--output=/tmp/x")),
        ..request("mq/main/1", vec![])
    };
    assert!(matches!(
        host.create_test_branch(&f.repo, &bad_sha).await,
        Err(HostError::Invalid(_))
    ));
    let escape = RepoRef {
        host: "git.local".into(),
        owner: "..".into(),
        name: "x".into(),
    };
    assert!(matches!(
        host.branch_head(&escape, "main").await,
        Err(HostError::Invalid(_))
    ));
    assert_eq!(f.bare_git(&["for-each-ref"]), before, "nothing changed");
}

#[tokio::test]
async fn a_test_branch_of_three_pull_requests_equals_merging_them_by_hand() {
    let f = Fixture::new();
    let host = f.host();
    let prs = vec![
        f.pr_writing(1, &[("a.txt", "one\n2\n3\n4\n5\n")]),
        f.pr_writing(2, &[("a.txt", "1\n2\n3\n4\nfive\n")]),
        f.pr_writing(3, &[("c.txt", "c\n")]),
    ];
    let main = f.head("main");
    let (sha, base_sha) = created(&host, &f, &request("mq/main/run-1", prs.clone())).await;
    assert_eq!(base_sha, main);
    assert_eq!(f.head("mq/main/run-1"), sha);

    // The same merges, by hand, in the working clone.
    git(&f.work, &["checkout", "--quiet", "--detach", main.as_str()]);
    for pr in &prs {
        git(
            &f.work,
            &[
                "merge",
                "--quiet",
                "--no-ff",
                "-m",
                "by hand",
                pr.head_sha.as_str(),
            ],
        );
    }
    let by_hand = git(&f.work, &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(f.tree(sha.as_str()), by_hand);
    assert_eq!(f.file(sha.as_str(), "a.txt"), "one\n2\n3\n4\nfive");

    // One merge commit per pull request, in order, each with the head as second parent.
    let parents = f.bare_git(&[
        "log",
        "--first-parent",
        "--format=%P",
        &format!("{main}..{sha}"),
    ]);
    let second: Vec<&str> = parents
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    let heads: Vec<&str> = prs.iter().rev().map(|p| p.head_sha.as_str()).collect();
    assert_eq!(second, heads);
    let subject = f.bare_git(&["log", "-1", "--format=%s", sha.as_str()]);
    assert_eq!(subject, "Merge pull request #3: PR 3");
}

#[tokio::test]
async fn a_conflicting_pull_request_is_named_and_leaves_no_branch() {
    let f = Fixture::new();
    let host = f.host();
    let prs = vec![
        f.pr_writing(1, &[("a.txt", "1\n2\nthree\n4\n5\n")]),
        f.pr_writing(2, &[("c.txt", "c\n")]),
        f.pr_writing(3, &[("a.txt", "1\n2\nTHREE\n4\n5\n")]),
    ];
    let outcome = host
        .create_test_branch(&f.repo, &request("mq/main/run-2", prs))
        .await
        .unwrap();
    assert_eq!(outcome, TestBranchOutcome::Conflict { pr: 3 });
    assert_eq!(
        host.branch_head(&f.repo, "mq/main/run-2").await.unwrap(),
        None
    );
}

/// A pull request merged into the target by hand (its head is in the base) is named as
/// merged outside, and no branch is left.
#[tokio::test]
async fn a_pull_request_already_in_the_base_is_named_as_merged_outside() {
    let f = Fixture::new();
    let host = f.host();
    let prs = vec![
        f.pr_writing(1, &[("a.txt", "a\n")]),
        f.pr_writing(2, &[("b.txt", "b\n")]),
    ];
    f.bare_git(&["update-ref", "refs/heads/main", prs[1].head_sha.as_str()]);
    let outcome = host
        .create_test_branch(&f.repo, &request("mq/main/run-3", prs))
        .await
        .unwrap();
    assert_eq!(outcome, TestBranchOutcome::MergedOutside { pr: 2 });
    assert_eq!(
        host.branch_head(&f.repo, "mq/main/run-3").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_test_branch_can_start_from_a_given_base_and_be_rebuilt_and_deleted() {
    let f = Fixture::new();
    let host = f.host();
    let first = f.head("main");
    let moved = f.commit("origin/main", &[("d.txt", "d\n")], "Later");
    f.push(moved.as_str(), "refs/heads/main");
    let pr = f.pr_writing(1, &[("c.txt", "c\n")]);
    let on_first = TestBranchRequest {
        base: Some(first.clone()),
        ..request("mq/main/run-3", vec![pr.clone()])
    };
    let (sha, base_sha) = created(&host, &f, &on_first).await;
    assert_eq!(base_sha, first);
    assert_eq!(
        f.bare_git(&["rev-parse", &format!("{sha}^1")]),
        first.as_str()
    );

    // The same name again, on the target's head: rebuilt there.
    let (again, base_sha) = created(&host, &f, &request("mq/main/run-3", vec![pr])).await;
    assert_eq!(base_sha, moved);
    assert_eq!(f.head("mq/main/run-3"), again);

    host.delete_branch(&f.repo, "mq/main/run-3").await.unwrap();
    assert_eq!(
        host.branch_head(&f.repo, "mq/main/run-3").await.unwrap(),
        None
    );
    host.delete_branch(&f.repo, "mq/main/run-3").await.unwrap();
}

/// Two pull requests, the second of two commits, tested together.
async fn tested_pair(f: &Fixture, host: &LocalGitHost) -> (Vec<mq_core::engine::BranchPr>, Sha) {
    let one = f.pr_writing(1, &[("a.txt", "one\n2\n3\n4\n5\n")]);
    let first = f.commit("origin/main", &[("c.txt", "c\n")], "Add c");
    let second = f.commit(
        first.as_str(),
        &[("a.txt", "1\n2\n3\n4\nfive\n")],
        "Change a",
    );
    let two = f.open_pr(2, &second);
    let prs = vec![one, two];
    let (tested, _) = created(host, f, &request("mq/main/run-9", prs.clone())).await;
    (prs, tested)
}

fn merge_request(
    prs: &[mq_core::engine::BranchPr],
    method: MergeMethod,
    expected: &Sha,
    tested: &Sha,
) -> MergeRequest {
    MergeRequest {
        target: "main".to_owned(),
        prs: prs.to_vec(),
        method,
        expected_target_sha: Some(expected.clone()),
        tested_sha: Some(tested.clone()),
        tested_status: None,
    }
}

#[tokio::test]
async fn every_merge_method_produces_the_tested_tree() {
    for method in [
        MergeMethod::MergeCommit,
        MergeMethod::Squash,
        MergeMethod::Rebase,
    ] {
        let f = Fixture::new();
        let host = f.host();
        let main = f.head("main");
        let (prs, tested) = tested_pair(&f, &host).await;
        let outcome = host
            .merge(&f.repo, &merge_request(&prs, method, &main, &tested))
            .await
            .unwrap();
        let MergeOutcome::Merged { target_sha } = outcome else {
            panic!("{method:?}: expected a merge, got {outcome:?}");
        };
        assert_eq!(f.head("main"), target_sha, "{method:?}");
        assert_eq!(
            f.tree(target_sha.as_str()),
            f.tree(tested.as_str()),
            "{method:?}"
        );
        let range = format!("{main}..{target_sha}");
        let subjects = f.bare_git(&["log", "--first-parent", "--reverse", "--format=%s", &range]);
        let expected = match method {
            MergeMethod::MergeCommit => {
                assert_eq!(target_sha, tested);
                "Merge pull request #1: PR 1\nMerge pull request #2: PR 2"
            }
            MergeMethod::Squash => "PR 1 (#1)\nPR 2 (#2)",
            MergeMethod::Rebase => "Change for #1\nAdd c\nChange a",
        };
        assert_eq!(subjects, expected, "{method:?}");
        if method != MergeMethod::MergeCommit {
            let parents = f.bare_git(&["log", "--format=%P", &range]);
            assert!(
                parents.lines().all(|p| !p.contains(' ')),
                "{method:?}: linear history"
            );
            let authors = f.bare_git(&["log", "--format=%an|%cn", &range]);
            assert!(
                authors.lines().all(|a| a == "Ada Lovelace|Merge Queue"),
                "{authors}"
            );
        }
        let facts = host.pull_request(&f.repo, 2, "main").await.unwrap();
        assert_eq!(facts.state, PrState::Merged, "{method:?}");
    }
}

/// A pull request changed line 2, then merged `main` into itself (GitHub's "Update branch")
/// after `main` changed the same line, keeping its own: its first commit does not apply when
/// replayed on `main`. A rebase lands the tested tree in one commit with the head commit's
/// message, as the GitHub host writes, instead of failing a pull request CI passed.
#[tokio::test]
async fn a_rebase_whose_commits_do_not_replay_lands_the_tested_tree_in_one_commit() {
    let f = Fixture::new();
    let host = f.host();
    let own = f.commit(
        "origin/main",
        &[("a.txt", "1\nx\n3\n4\n5\n")],
        "Change line 2",
    );
    let main = f.commit(
        "origin/main",
        &[("a.txt", "1\nm\n3\n4\n5\n")],
        "Main's line 2",
    );
    f.push(main.as_str(), "refs/heads/main");
    git(&f.work, &["checkout", "--quiet", "--detach", own.as_str()]);
    git(
        &f.work,
        &[
            "merge",
            "--quiet",
            "-s",
            "ours",
            "-m",
            "Update branch",
            main.as_str(),
        ],
    );
    let updated = Sha::new(git(&f.work, &["rev-parse", "HEAD"]));
    let head = f.commit(updated.as_str(), &[("d.txt", "d\n")], "Add d");
    let prs = vec![f.open_pr(1, &head)];
    let (tested, _) = created(&host, &f, &request("mq/main/run-7", prs.clone())).await;
    let request = merge_request(&prs, MergeMethod::Rebase, &main, &tested);
    let outcome = host.merge(&f.repo, &request).await.unwrap();
    let MergeOutcome::Merged { target_sha } = outcome else {
        panic!("expected a merge, got {outcome:?}");
    };
    assert_eq!(f.tree(target_sha.as_str()), f.tree(tested.as_str()));
    let range = format!("{main}..{target_sha}");
    let subjects = f.bare_git(&["log", "--format=%s", &range]);
    assert_eq!(subjects, "Add d");
}

fn stamped(pr: &BranchPr, run_id: &str, at_ms: i64) -> BranchPr {
    pr.clone().stamped(MergeStamp {
        run_id: run_id.to_owned(),
        at: mq_core::Timestamp::from_millis(at_ms),
    })
}

/// Two groups tested at once: the second group's branch holds the first group's stamped merge
/// commit itself, so the target is fast-forwarded to one tested commit, then to the next.
#[tokio::test]
async fn stamped_merge_commits_are_the_same_in_every_branch_that_holds_them() {
    let f = Fixture::new();
    let host = f.host();
    let main = f.head("main");
    let one = stamped(
        &f.pr_writing(1, &[("one.txt", "1\n")]),
        "1-aa",
        1_800_000_000_000,
    );
    let two = stamped(
        &f.pr_writing(2, &[("two.txt", "2\n")]),
        "2-bb",
        1_800_000_001_000,
    );
    let (front, _) = created(&host, &f, &request("mq-test/main/1-aa", vec![one.clone()])).await;
    let behind = request("mq-test/main/2-bb", vec![one.clone(), two.clone()]);
    let (back, _) = created(&host, &f, &behind).await;
    assert_eq!(
        f.bare_git(&["rev-parse", &format!("{back}^1")]),
        front.as_str()
    );
    // Rebuilt later, the branch is the same commit: nothing in it depends on when it is built.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(created(&host, &f, &behind).await.0, back);
    let message = f.bare_git(&["log", "-1", "--format=%B", front.as_str()]);
    assert_eq!(
        message.trim(),
        "Merge pull request #1: PR 1\n\nMerge-Queue-Run: 1-aa"
    );
    let identity = f.bare_git(&["log", "-1", "--format=%an|%cn|%at|%ct", front.as_str()]);
    assert_eq!(identity, "Merge Queue|Merge Queue|1800000000|1800000000");

    let first = merge_request(&[one], MergeMethod::MergeCommit, &main, &front);
    let merged = host.merge(&f.repo, &first).await.unwrap();
    assert_eq!(
        merged,
        MergeOutcome::Merged {
            target_sha: front.clone()
        }
    );
    let second = merge_request(&[two], MergeMethod::MergeCommit, &front, &back);
    let merged = host.merge(&f.repo, &second).await.unwrap();
    assert_eq!(
        merged,
        MergeOutcome::Merged {
            target_sha: back.clone()
        }
    );
    assert_eq!(f.head("main"), back);
}

#[tokio::test]
async fn a_test_branch_gets_a_draft_pull_request_recorded_open_then_closed() {
    // A long branch name is recorded under its digest (a ref name is a file name).
    let long = format!("mq-test/{}/7-ab", "x".repeat(200));
    for branch in ["mq-test/main/7-ab".to_owned(), long] {
        let f = Fixture::new();
        let host = f.host();
        let one = f.pr_writing(1, &[("one.txt", "1\n")]);
        let draft = TestPullRequest {
            branch: branch.clone(),
            target: "main".to_owned(),
            title: "[merge queue] #1 into main (run 7-ab)".to_owned(),
            body: "tests #1".to_owned(),
        };
        let missing = host.open_test_pull_request(&f.repo, &draft).await;
        assert!(
            matches!(missing, Err(HostError::NotFound(_))),
            "{missing:?}"
        );
        created(&host, &f, &request(&branch, vec![one])).await;
        host.open_test_pull_request(&f.repo, &draft).await.unwrap();
        host.open_test_pull_request(&f.repo, &draft).await.unwrap();
        let record = host
            .test_pull_request(&f.repo, &branch)
            .await
            .unwrap()
            .unwrap();
        assert!(record.open);
        assert_eq!(record.request, draft);
        host.close_test_pull_request(&f.repo, &branch)
            .await
            .unwrap();
        host.close_test_pull_request(&f.repo, &branch)
            .await
            .unwrap();
        host.close_test_pull_request(&f.repo, "mq-test/main/none")
            .await
            .unwrap();
        let record = host
            .test_pull_request(&f.repo, &branch)
            .await
            .unwrap()
            .unwrap();
        assert!(!record.open);
    }
}

#[tokio::test]
async fn every_merge_method_refuses_when_the_target_moved() {
    for method in [
        MergeMethod::MergeCommit,
        MergeMethod::Squash,
        MergeMethod::Rebase,
    ] {
        let f = Fixture::new();
        let host = f.host();
        let main = f.head("main");
        let (prs, tested) = tested_pair(&f, &host).await;
        let moved = f.commit("origin/main", &[("d.txt", "d\n")], "Someone else's push");
        f.push(moved.as_str(), "refs/heads/main");
        let outcome = host
            .merge(&f.repo, &merge_request(&prs, method, &main, &tested))
            .await
            .unwrap();
        assert_eq!(
            outcome,
            MergeOutcome::TargetMoved {
                actual: moved.clone()
            },
            "{method:?}"
        );
        assert_eq!(f.head("main"), moved, "{method:?}: target untouched");
        let facts = host.pull_request(&f.repo, 1, "main").await.unwrap();
        assert_eq!(facts.state, PrState::Open);
    }
}

#[tokio::test]
async fn a_merge_is_refused_when_a_pull_request_changed_since_it_was_tested() {
    let f = Fixture::new();
    let host = f.host();
    let main = f.head("main");
    let (prs, tested) = tested_pair(&f, &host).await;
    let newer = f.commit(prs[1].head_sha.as_str(), &[("e.txt", "e\n")], "More");
    f.open_pr(2, &newer);
    let outcome = host
        .merge(
            &f.repo,
            &merge_request(&prs, MergeMethod::Squash, &main, &tested),
        )
        .await
        .unwrap();
    assert_eq!(outcome, MergeOutcome::PrChanged { pr: 2 });
    assert_eq!(f.head("main"), main);
}

/// A pull request turned back into a draft, or retargeted, since it was tested is not merged.
#[tokio::test]
async fn a_merge_is_refused_when_a_pull_request_became_a_draft_or_changed_its_base() {
    for (key, value, says) in [
        ("pr.2.draft", "true", "turned back into a draft"),
        ("pr.2.base", "release", "into release instead of main"),
    ] {
        let f = Fixture::new();
        let host = f.host();
        let main = f.head("main");
        let (prs, tested) = tested_pair(&f, &host).await;
        f.config(key, value);
        let outcome = host
            .merge(
                &f.repo,
                &merge_request(&prs, MergeMethod::MergeCommit, &main, &tested),
            )
            .await
            .unwrap();
        let MergeOutcome::Rejected { pr, detail } = outcome else {
            panic!("{key}: {outcome:?}");
        };
        assert_eq!(pr, Some(2), "{key}");
        assert!(detail.contains(says), "{key}: {detail}");
        assert_eq!(f.head("main"), main, "{key}: target untouched");
    }
}

#[tokio::test]
async fn a_direct_merge_of_an_up_to_date_pull_request_needs_no_tested_commit() {
    let f = Fixture::new();
    let host = f.host();
    let main = f.head("main");
    let pr = f.pr_writing(4, &[("c.txt", "c\n")]);
    let request = MergeRequest {
        tested_sha: None,
        ..merge_request(std::slice::from_ref(&pr), MergeMethod::Squash, &main, &main)
    };
    let MergeOutcome::Merged { target_sha } = host.merge(&f.repo, &request).await.unwrap() else {
        panic!("expected a merge");
    };
    assert_eq!(f.tree(target_sha.as_str()), f.tree(pr.head_sha.as_str()));
    assert_eq!(
        f.bare_git(&["rev-parse", &format!("{target_sha}^")]),
        main.as_str()
    );
}

/// A direct merge whose answer never came, and a pull request someone then merged at a newer
/// head: that is not the queue's merge (the host refuses a merge once the head moved), so the
/// tick does not record it as landed; merged at the head the merge names, it is.
#[tokio::test]
async fn a_pull_request_merged_at_another_head_is_not_a_direct_merge_that_landed() {
    let f = Fixture::new();
    let host = f.host();
    let main = f.head("main");
    let pr = f.pr_writing(4, &[("c.txt", "c\n")]);
    let request = MergeRequest {
        tested_sha: None,
        ..merge_request(std::slice::from_ref(&pr), MergeMethod::Squash, &main, &main)
    };
    let newer = f.commit(pr.head_sha.as_str(), &[("c.txt", "c2\n")], "Fix #4");
    f.push(newer.as_str(), "refs/pull/4/head");
    f.push(newer.as_str(), "refs/heads/main");
    f.config("pr.4.state", "merged");
    assert_eq!(host.merge_landed(&f.repo, &request).await.unwrap(), None);

    f.push(pr.head_sha.as_str(), "refs/pull/4/head");
    assert_eq!(
        host.merge_landed(&f.repo, &request).await.unwrap(),
        Some(newer)
    );
}

#[tokio::test]
async fn concurrent_merges_from_the_same_target_merge_exactly_once() {
    let f = Fixture::new();
    let host = f.host();
    let main = f.head("main");
    let (prs, tested) = tested_pair(&f, &host).await;
    let request = merge_request(&prs, MergeMethod::Squash, &main, &tested);
    let attempts = (0..6).map(|_| {
        let (host, repo, request) = (host.clone(), f.repo.clone(), request.clone());
        tokio::spawn(async move { host.merge(&repo, &request).await.unwrap() })
    });
    let mut merged = std::collections::BTreeSet::new();
    for attempt in attempts {
        match attempt.await.unwrap() {
            MergeOutcome::Merged { target_sha } => {
                merged.insert(target_sha);
            }
            MergeOutcome::TargetMoved { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        merged.into_iter().collect::<Vec<_>>(),
        [f.head("main")],
        "every attempt that reports a merge reports the one that happened"
    );
    let count = f.bare_git(&["rev-list", "--count", &format!("{main}..main")]);
    assert_eq!(count, "2", "one squash commit per pull request, once");
}

/// The first attempt landed the merge; its pull requests are then marked merged, also when
/// that attempt stopped before marking them (here their state is set back to open).
#[tokio::test]
async fn a_repeated_merge_that_already_happened_is_reported_merged() {
    for method in [
        MergeMethod::MergeCommit,
        MergeMethod::Squash,
        MergeMethod::Rebase,
    ] {
        let f = Fixture::new();
        let host = f.host();
        let main = f.head("main");
        let (prs, tested) = tested_pair(&f, &host).await;
        let request = merge_request(&prs, method, &main, &tested);
        let range = format!("{main}..main");
        let first = host.merge(&f.repo, &request).await.unwrap();
        let commits = f.bare_git(&["rev-list", &range]);
        for pr in &prs {
            f.config(&format!("pr.{}.state", pr.pr), "open");
        }
        let again = host.merge(&f.repo, &request).await.unwrap();
        assert_eq!(again, first, "{method:?}");
        for pr in &prs {
            let now = host.pull_request(&f.repo, pr.pr, "main").await.unwrap();
            assert_eq!(now.state, PrState::Merged, "{method:?}: #{}", pr.pr);
        }
        assert_eq!(
            f.bare_git(&["rev-list", &range]),
            commits,
            "{method:?}: merged once"
        );
    }
}

/// A merge whose answer was lost, with someone's push on top of it before the merge is repeated
/// or the tick asks after it: the merge is found at the commit it wrote, and not made again;
/// the tick's finding marks its pull requests merged (the attempt may have stopped before).
#[tokio::test]
async fn a_merge_found_under_a_later_push_is_reported_merged_at_its_commit() {
    for method in [
        MergeMethod::MergeCommit,
        MergeMethod::Squash,
        MergeMethod::Rebase,
    ] {
        let f = Fixture::new();
        let host = f.host();
        let main = f.head("main");
        let (prs, tested) = tested_pair(&f, &host).await;
        let request = merge_request(&prs, method, &main, &tested);
        let first = host.merge(&f.repo, &request).await.unwrap();
        let MergeOutcome::Merged { target_sha: merged } = &first else {
            panic!("{method:?}: {first:?}");
        };
        f.fetch();
        let pushed = f.commit("origin/main", &[("d.txt", "d\n")], "Someone's push");
        f.push(pushed.as_str(), "refs/heads/main");
        let range = format!("{main}..main");
        let commits = f.bare_git(&["rev-list", &range]);
        for pr in &prs {
            f.config(&format!("pr.{}.state", pr.pr), "open");
        }

        let landed = host.merge_landed(&f.repo, &request).await.unwrap();
        assert_eq!(landed.as_ref(), Some(merged), "{method:?}");
        for pr in &prs {
            let now = host.pull_request(&f.repo, pr.pr, "main").await.unwrap();
            assert_eq!(now.state, PrState::Merged, "{method:?}: #{}", pr.pr);
        }
        let again = host.merge(&f.repo, &request).await.unwrap();
        assert_eq!(again, first, "{method:?}");
        assert_eq!(
            f.bare_git(&["rev-list", &range]),
            commits,
            "{method:?}: merged once, the push kept"
        );
        assert_eq!(f.head("main"), pushed, "{method:?}");
    }
}

/// Someone else's commit with other content on the target is not taken for the merge.
#[tokio::test]
async fn a_push_instead_of_the_merge_is_not_taken_for_it() {
    let f = Fixture::new();
    let host = f.host();
    let main = f.head("main");
    let (prs, tested) = tested_pair(&f, &host).await;
    let request = merge_request(&prs, MergeMethod::Squash, &main, &tested);
    let pushed = f.commit("origin/main", &[("d.txt", "d\n")], "Someone's push");
    f.push(pushed.as_str(), "refs/heads/main");

    assert_eq!(host.merge_landed(&f.repo, &request).await.unwrap(), None);
    assert_eq!(
        host.merge(&f.repo, &request).await.unwrap(),
        MergeOutcome::TargetMoved { actual: pushed }
    );
}

/// An older commit with the tested tree, reached through a merge whose first parent is another
/// line (a `git pull` pushed from a stale branch), is not taken for the merge: here #9 reverts
/// `main`'s last commit, so its tested tree is that of the commit before.
#[tokio::test]
async fn an_older_commit_with_the_tested_tree_is_not_taken_for_the_merge() {
    let f = Fixture::new();
    let host = f.host();
    let before = f.head("main");
    let bad = f.commit("origin/main", &[("a.txt", "bad\n")], "Break a");
    f.push(bad.as_str(), "refs/heads/main");
    let revert = f.commit(bad.as_str(), &[("a.txt", "1\n2\n3\n4\n5\n")], "Revert");
    let prs = vec![f.open_pr(9, &revert)];
    let (tested, _) = created(&host, &f, &request("mq/main/run-9", prs.clone())).await;
    assert_eq!(f.tree(tested.as_str()), f.tree(before.as_str()));
    // Someone's stale line, merged with `main` (first parent: their line) and pushed.
    let theirs = f.commit(before.as_str(), &[("c.txt", "c\n")], "Their change");
    git(&f.work, &["merge", "--quiet", "--no-edit", bad.as_str()]);
    let pulled = Sha::new(git(&f.work, &["rev-parse", "HEAD"]));
    let first_parent = git(&f.work, &["rev-parse", &format!("{pulled}^1")]);
    assert_eq!(first_parent, theirs.as_str());
    f.push(pulled.as_str(), "refs/heads/main");

    let request = merge_request(&prs, MergeMethod::Squash, &bad, &tested);
    assert_eq!(host.merge_landed(&f.repo, &request).await.unwrap(), None);
    assert_eq!(
        host.merge(&f.repo, &request).await.unwrap(),
        MergeOutcome::TargetMoved { actual: pulled }
    );
}

#[tokio::test]
async fn statuses_are_stored_per_context_and_read_back() {
    let f = Fixture::new();
    let host = f.host();
    let mut events = host.subscribe();
    let sha = f.head("main");
    let writes = (0..8).map(|i| {
        let (host, repo, sha) = (host.clone(), f.repo.clone(), sha.clone());
        tokio::spawn(async move {
            let status = StatusUpdate {
                context: format!("ci/job: {i}"),
                state: StatusState::Success,
                description: "ok".into(),
                target_url: None,
            };
            host.set_status(&repo, &sha, &status).await.unwrap();
        })
    });
    for write in writes {
        write.await.unwrap();
    }
    let overwrite = StatusUpdate {
        context: "ci/job: 0".into(),
        state: StatusState::Failure,
        description: "flaked".into(),
        target_url: Some("https://ci.example.com/1".into()),
    };
    host.set_status(&f.repo, &sha, &overwrite).await.unwrap();
    let checks = host.commit_checks(&f.repo, &sha).await.unwrap();
    assert_eq!(checks.statuses.len(), 8);
    let first = &checks.statuses[0];
    assert_eq!(
        (first.context.as_str(), first.state),
        ("ci/job: 0", StatusState::Failure)
    );
    assert_eq!(first.url, "https://ci.example.com/1");
    let mut announced = 0;
    while let Ok(event) = events.try_recv() {
        assert_eq!(event.sha, sha);
        announced += 1;
    }
    assert_eq!(announced, 9);
    let unknown = Sha::new("0123456789012345678901234567890123456789");
    assert!(matches!(
        host.set_status(&f.repo, &unknown, &overwrite).await,
        Err(HostError::NotFound(_))
    ));
}

#[tokio::test]
async fn the_queue_comment_is_updated_in_place() {
    let f = Fixture::new();
    let host = f.host();
    f.pr_writing(5, &[("c.txt", "c\n")]);
    host.upsert_comment(&f.repo, 5, "Queued.").await.unwrap();
    host.upsert_comment(&f.repo, 5, "Testing.").await.unwrap();
    assert_eq!(
        host.comment(&f.repo, 5).await.unwrap().as_deref(),
        Some("Testing.")
    );
    assert_eq!(host.comment(&f.repo, 6).await.unwrap(), None);
    assert!(matches!(
        host.upsert_comment(&f.repo, 6, "x").await,
        Err(HostError::NotFound(_))
    ));
}

#[tokio::test]
async fn required_statuses_come_from_the_config_file_then_branch_protection() {
    let f = Fixture::new();
    let host = f.host();
    let none = host.required_statuses(&f.repo, "main").await.unwrap();
    assert_eq!((none.contexts.len(), none.source), (0, None));

    f.config("branch.main.requiredStatuses", "build, test");
    let protection = host.required_statuses(&f.repo, "main").await.unwrap();
    assert_eq!(protection.contexts, vec!["build", "test"]);
    assert_eq!(
        protection.source,
        Some(RequiredStatusesSource::RepoProviderBranchProtection)
    );

    let with_file = f.commit(
        "origin/main",
        &[(".merge-queue.yaml", "required_statuses:\n  - local-ci\n")],
        "Configure the queue",
    );
    f.push(with_file.as_str(), "refs/heads/main");
    let config = host.required_statuses(&f.repo, "main").await.unwrap();
    assert_eq!(config.contexts, vec!["local-ci"]);
    assert_eq!(config.source, Some(RequiredStatusesSource::ServiceConfig));

    let broken = f.commit(
        with_file.as_str(),
        &[(".merge-queue.yaml", "required_statuses: 3\n")],
        "Break it",
    );
    f.push(broken.as_str(), "refs/heads/main");
    assert!(matches!(
        host.required_statuses(&f.repo, "main").await,
        Err(HostError::Invalid(_))
    ));
}

/// Waits for the final (non-pending) status the CI records on each of `shas`, in any order.
async fn final_statuses(
    events: &mut tokio::sync::broadcast::Receiver<mq_githost::local::StatusRecorded>,
    shas: &[&Sha],
) -> Vec<mq_core::git::StatusReport> {
    let mut finals = std::collections::HashMap::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while finals.len() < shas.len() {
            let event = events.recv().await.unwrap();
            if shas.contains(&&event.sha) && event.status.state != StatusState::Pending {
                finals.insert(event.sha, event.status);
            }
        }
    })
    .await
    .expect("the CI reported in time");
    shas.iter().map(|sha| finals[*sha].clone()).collect()
}

#[tokio::test]
async fn the_local_ci_records_success_and_failure_of_a_real_command() {
    let f = Fixture::new();
    let host = f.host().with_ci(CiConfig::new(
        "grep -qx ok c.txt && test \"$MERGE_QUEUE_BRANCH\" != \"\"",
    ));
    let mut events = host.subscribe();
    let good = f.pr_writing(1, &[("c.txt", "ok\n")]);
    let bad = f.pr_writing(2, &[("c.txt", "broken\n")]);
    let (pass_sha, _) = created(&host, &f, &request("mq/main/pass", vec![good])).await;
    let (fail_sha, _) = created(&host, &f, &request("mq/main/fail", vec![bad])).await;

    let [passed, failed] =
        <[_; 2]>::try_from(final_statuses(&mut events, &[&pass_sha, &fail_sha]).await).unwrap();
    assert_eq!(
        (passed.context.as_str(), passed.state),
        ("local-ci", StatusState::Success)
    );
    assert_eq!(failed.state, StatusState::Failure);
    assert!(
        failed.description.contains("exit status: 1"),
        "{}",
        failed.description
    );
    assert!(failed.url.starts_with("file://"));

    let read_back = host.commit_checks(&f.repo, &fail_sha).await.unwrap();
    assert_eq!(read_back.statuses, vec![failed]);
    let read_back = host.commit_checks(&f.repo, &pass_sha).await.unwrap();
    assert_eq!(read_back.statuses, vec![passed]);
}

#[tokio::test]
async fn the_local_ci_runs_jobs_with_bounded_concurrency_under_its_own_context() {
    let f = Fixture::new();
    // Each job holds a lock directory while it runs: a second job at once would fail mkdir.
    let lock = f.root.join("ci-lock");
    let command = format!("mkdir {0} && sleep 0.2 && rmdir {0}", lock.display());
    let host = f.host().with_ci(
        CiConfig::new(command)
            .with_context("ci/local")
            .with_concurrency(1),
    );
    let mut events = host.subscribe();
    let mut shas = Vec::new();
    for n in 1..=3 {
        let pr = f.pr_writing(n, &[("c.txt", &format!("{n}\n"))]);
        let (sha, _) = created(&host, &f, &request(&format!("mq/main/{n}"), vec![pr])).await;
        shas.push(sha);
    }
    let shas: Vec<&Sha> = shas.iter().collect();
    for status in final_statuses(&mut events, &shas).await {
        assert_eq!(
            (status.context.as_str(), status.state),
            ("ci/local", StatusState::Success)
        );
    }
}

/// Whether a process with this id is alive.
fn alive(pid: &str) -> bool {
    std::process::Command::new("kill")
        .args(["-0", pid])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test]
async fn deleting_a_test_branch_stops_its_ci_command_and_what_it_started() {
    let f = Fixture::new();
    // The command starts a long child and waits for it, as a build tool starts its jobs.
    let pid_file = f.root.join("child.pid");
    let command = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
    let host = f.host().with_ci(CiConfig::new(command));
    let pr = f.pr_writing(1, &[("c.txt", "1\n")]);
    created(&host, &f, &request("mq/main/long", vec![pr])).await;
    let child = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match std::fs::read_to_string(&pid_file) {
                Ok(pid) if !pid.trim().is_empty() => return pid.trim().to_owned(),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .expect("the command started");
    assert!(alive(&child));

    host.delete_branch(&f.repo, "mq/main/long").await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while alive(&child) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command's child was killed with it");
}

/// The checkout directories left in `dir`.
fn checkouts_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A run that passes, one that fails, one stopped while its command and a child it started
/// keep writing files into the checkout, and runs stopped while their checkout is being made:
/// no checkout is left behind.
#[tokio::test]
async fn checkouts_are_removed_however_a_run_ends() {
    let f = Fixture::new();
    let work = f.root.join("checkouts");
    let started = f.root.join("started");
    let command = format!(
        "case \"$MERGE_QUEUE_BRANCH\" in *pass) true;; *fail) false;; \
         *) (while :; do touch \"f$RANDOM\"; done) & touch {}; wait;; esac",
        started.display()
    );
    let host = f
        .host()
        .with_ci(CiConfig::new(command).with_work_dir(&work));
    let mut events = host.subscribe();
    let mut shas = Vec::new();
    for (n, outcome) in [(1, "pass"), (2, "fail")] {
        let pr = f.pr_writing(n, &[("c.txt", &format!("{n}\n"))]);
        let branch = format!("mq/main/{outcome}");
        shas.push(created(&host, &f, &request(&branch, vec![pr])).await.0);
    }
    let states: Vec<StatusState> = final_statuses(&mut events, &shas.iter().collect::<Vec<_>>())
        .await
        .into_iter()
        .map(|s| s.state)
        .collect();
    assert_eq!(states, [StatusState::Success, StatusState::Failure]);
    let pr = f.pr_writing(3, &[("c.txt", "3\n")]);
    created(&host, &f, &request("mq/main/stopped", vec![pr])).await;
    tokio::time::timeout(Duration::from_secs(60), async {
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command started");
    assert_eq!(checkouts_in(&work).len(), 1, "the running job's checkout");
    host.delete_branch(&f.repo, "mq/main/stopped")
        .await
        .unwrap();
    let files: Vec<(String, String)> = (0..1500)
        .map(|i| (format!("many/file-{i}.txt"), format!("{i}\n")))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let many = f.pr_writing(4, &files);
    for i in 0..6u64 {
        let branch = format!("mq/main/early-{i}");
        created(&host, &f, &request(&branch, vec![many.clone()])).await;
        tokio::time::sleep(Duration::from_millis(i * 15)).await;
        host.delete_branch(&f.repo, &branch).await.unwrap();
    }
    tokio::time::timeout(Duration::from_secs(15), async {
        while !checkouts_in(&work).is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("checkouts left behind: {:?}", checkouts_in(&work)));
}
