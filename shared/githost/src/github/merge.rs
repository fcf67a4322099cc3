//! Merging a tested set of pull requests on GitHub.
//!
//! `merge_commit` fast-forwards the target to the tested commit (`PATCH` the ref, `force:
//! false`). `squash` and `rebase` write one commit per pull request with the git data API, each
//! with the tree the tested commit had after that pull request, then fast-forward the target to
//! the last one; the engine then has each pull request closed (`close_landed`), an effect of
//! its own, since GitHub only marks a pull request merged when its own head lands: a close
//! that keeps failing does not hold up, or fail, a merge that landed. A direct merge (nothing
//! tested) uses the pull request merge API, guarded by the head sha. A refusal from a branch
//! that requires signed commits says so (see `signing`).

use super::checks;
use super::client::identity;
use super::client::{Client, Sent, escape, repo_path};
use super::identity::Identity;
use super::pulls::{self, branch_head};
use super::signing::{mentions_signatures, refusal_detail};
use super::wire::{Account, Compare, GitCommit, PullCommit, ShaOnly, SquashSettings};
use crate::error::{HostError, HostResult};
use crate::github_wire::User;
use crate::landed::{MergeSource, before_sending, landed_at};
use crate::port::{MergeOutcome, MergeRequest, PrNow};
use crate::squash::{self, Person, PrCommit, SquashStyle, Squashed};
use crate::tested_chain::{CommitInfo, CommitSource, Step, read_chain_onto};
use crate::validate;
use mq_core::engine::BranchPr;
use mq_core::git::{PrState, Review};
use mq_core::ids::{PrNumber, RepoRef, Sha};
use mq_core::settings::MergeMethod;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::future::Future;

pub(crate) async fn merge(
    client: &Client,
    repo: &RepoRef,
    request: &MergeRequest,
) -> HostResult<MergeOutcome> {
    validate::branch("target", &request.target)?;
    let actual = branch_head(client, repo, &request.target)
        .await?
        .ok_or_else(|| HostError::NotFound(format!("branch {}", request.target)))?;
    if let Some(outcome) = before_sending(&Commits { client, repo }, request, &actual).await? {
        return Ok(outcome);
    }
    if let Some(refused) = check_heads(client, repo, request).await? {
        return Ok(refused);
    }
    let Some(tested) = &request.tested_sha else {
        return direct_merge(client, repo, request).await;
    };
    validate::sha("tested_sha", tested)?;
    let new_tip = match request.method {
        MergeMethod::MergeCommit => {
            if let Some(status) = &request.tested_status {
                checks::set_status(client, repo, tested, status).await?;
            }
            tested.clone()
        }
        MergeMethod::Squash | MergeMethod::Rebase => {
            match rewrite(client, repo, &actual, tested, request).await? {
                Ok(tip) => tip,
                Err(refused) => return Ok(refused),
            }
        }
    };
    fast_forward(client, repo, &request.target, &actual, &new_tip).await
}

/// Closes `pr`, whose changes a `squash` or `rebase` merge landed (see
/// `GitHost::close_landed_pull_request`). A pull request pushed to since the head that landed
/// is left open, with a warning.
pub(crate) async fn close_landed(client: &Client, repo: &RepoRef, pr: &BranchPr) -> HostResult<()> {
    let now = pulls::pull(client, repo, pr.pr).await?;
    if now.pr_state() != PrState::Open {
        return Ok(());
    }
    if now.head.sha != pr.head_sha.as_str() {
        tracing::warn!(pr = pr.pr, "pushed to since its merge: left open");
        return Ok(());
    }
    pulls::close(client, repo, pr.pr).await
}

async fn check_heads(
    client: &Client,
    repo: &RepoRef,
    request: &MergeRequest,
) -> HostResult<Option<MergeOutcome>> {
    for pr in &request.prs {
        let wire = pulls::pull(client, repo, pr.pr).await?;
        let open = wire.pr_state() == PrState::Open;
        let now = PrNow {
            head: Sha::new(&wire.head.sha),
            state: wire.pr_state(),
            draft: wire.draft,
            base: wire.base.name.clone(),
            review: match open {
                true => pulls::review(client, repo, pr.pr).await?,
                false => Review::default(),
            },
        };
        if let Some(refused) = MergeOutcome::refusing(pr, &now, &request.target) {
            return Ok(Some(refused));
        }
    }
    Ok(None)
}

/// Moves the target from `actual` to `tip` if that is a fast-forward.
///
/// GitHub takes any fast-forward from the ref's value when the update arrives, not from
/// `actual`: a target rewound meanwhile (a force-push back to an ancestor of `actual`) would
/// take `tip` and bring back what was rewound. So the target is read again just before the
/// update, leaving a window of one round trip (GitHub's REST API has no compare-and-swap),
/// and an update whose answer is lost is not sent again blindly: the target is read, and
/// holds `tip` if it landed; else the merge fails for now, and its retry looks first
/// (`before_sending`).
async fn fast_forward(
    client: &Client,
    repo: &RepoRef,
    target: &str,
    actual: &Sha,
    tip: &Sha,
) -> HostResult<MergeOutcome> {
    match branch_head(client, repo, target).await? {
        Some(now) if now == *actual => {}
        Some(now) if now == *tip => return Ok(merged_at(tip)),
        Some(now) => return Ok(MergeOutcome::TargetMoved { actual: now }),
        None => return Err(HostError::NotFound(format!("branch {target}"))),
    }
    let path = format!("{}/git/refs/heads/{}", repo_path(repo), escape(target));
    let payload = json!({ "sha": tip.as_str(), "force": false });
    let reply = match client
        .send_unrepeated(repo, Method::PATCH, &path, Some(&payload))
        .await?
    {
        Sent::Answered(reply) => reply,
        Sent::Unknown(lost) => {
            return landed_after_all(client, repo, target, (actual, tip), lost).await;
        }
    };
    if reply.is_success() {
        return Ok(merged_at(tip));
    }
    if reply.status != StatusCode::UNPROCESSABLE_ENTITY {
        return Err(reply.error());
    }
    // Refused: the target moved, the tested commit is not on it, or a rule of the branch
    // (signed commits among them) refuses the commits.
    match branch_head(client, repo, target).await? {
        Some(now) if now == *tip => Ok(merged_at(tip)),
        Some(now) if now != *actual => Ok(MergeOutcome::TargetMoved { actual: now }),
        _ => Ok(MergeOutcome::Rejected {
            pr: None,
            detail: refusal_detail(client, repo, target, reply.message()).await,
        }),
    }
}

/// After an update from `actual` to `tip` whose answer was lost: merged if the target holds
/// `tip` now (at it, or under commits pushed since, whatever their shape), else `lost` (the
/// merge is tried again later, and looks first).
async fn landed_after_all(
    client: &Client,
    repo: &RepoRef,
    target: &str,
    (actual, tip): (&Sha, &Sha),
    lost: HostError,
) -> HostResult<MergeOutcome> {
    let Ok(Some(now)) = branch_head(client, repo, target).await else {
        return Err(lost);
    };
    if now == *tip {
        return Ok(merged_at(tip));
    }
    if now == *actual {
        return Err(lost);
    }
    match pulls::contains(client, repo, tip.as_str(), now.as_str()).await {
        Ok(true) => Ok(merged_at(tip)),
        _ => Err(lost),
    }
}

fn merged_at(tip: &Sha) -> MergeOutcome {
    MergeOutcome::Merged {
        target_sha: tip.clone(),
    }
}

/// Commits of the tested trees on top of the target, one per pull request.
async fn rewrite(
    client: &Client,
    repo: &RepoRef,
    actual: &Sha,
    tested: &Sha,
    request: &MergeRequest,
) -> HostResult<Result<Sha, MergeOutcome>> {
    let commits = Commits { client, repo };
    let chain = match read_chain_onto(&commits, actual, tested, &request.prs).await? {
        Ok(chain) => chain,
        Err(refused) => return Ok(Err(refused)),
    };
    let squash = match request.method {
        MergeMethod::Rebase => None,
        _ => Some(squash_style(client, repo).await?),
    };
    let mut tip = actual.clone();
    for step in &chain.steps {
        tip = write_commit(client, repo, &tip, step, squash).await?;
    }
    Ok(Ok(tip))
}

/// The repository's squash settings (one read per merge, whatever its pull requests).
async fn squash_style(client: &Client, repo: &RepoRef) -> HostResult<SquashStyle> {
    let settings: SquashSettings = client.get(repo, &repo_path(repo)).await?;
    Ok(SquashStyle::from_settings(
        settings.squash_merge_commit_title.as_deref(),
        settings.squash_merge_commit_message.as_deref(),
    ))
}

/// One commit with the step's tree on `parent`, committed by the adapter's identity: with the
/// repository's `squash` style, as GitHub's squash merge writes it ([`squash_commit`]); without
/// (a rebase), with the head commit's message and author.
async fn write_commit(
    client: &Client,
    repo: &RepoRef,
    parent: &Sha,
    step: &Step,
    squash: Option<SquashStyle>,
) -> HostResult<Sha> {
    let committer = identity(client, repo).await?;
    let (message, author) = match squash {
        None => {
            let head = git_commit(client, repo, &step.pr.head_sha).await?;
            let author = json!({ "name": head.author.name, "email": head.author.email, "date": head.author.date });
            (head.message, author)
        }
        Some(style) => squash_commit(client, repo, step.pr.pr, style).await?,
    };
    let payload = json!({
        "message": message,
        "tree": step.tree,
        "parents": [parent.as_str()],
        "author": author,
        "committer": committer.signature(None),
    });
    create_commit(client, repo, &payload).await
}

/// The message and author of the squash commit of pull request `pr` in `style`, read from
/// GitHub now (its title, description, author and commits): see `squash`. The author is the
/// pull request's, by the no-reply address GitHub attributes to the account.
async fn squash_commit(
    client: &Client,
    repo: &RepoRef,
    pr: PrNumber,
    style: SquashStyle,
) -> HostResult<(String, serde_json::Value)> {
    let wire = pulls::pull(client, repo, pr).await?;
    let path = format!("{}/pulls/{pr}/commits", repo_path(repo));
    let listed: Vec<PullCommit> = client.get_all(repo, &path, None).await?;
    let commits: Vec<PrCommit> = listed.into_iter().map(pr_commit).collect();
    let author = pr_author(client, repo, &wire.user).await?;
    let squashed = Squashed {
        number: pr,
        title: &wire.title,
        body: wire.body.as_deref().unwrap_or_default(),
        author: &author,
        author_account: &wire.user.login,
        commits: &commits,
    };
    let message = squash::message(&squashed, style);
    Ok((
        message,
        json!({ "name": author.name, "email": author.email }),
    ))
}

fn pr_commit(listed: PullCommit) -> PrCommit {
    let author = listed.commit.author.unwrap_or_default();
    PrCommit {
        message: listed.commit.message,
        author: Person {
            name: author.name,
            email: author.email,
        },
        account: listed.author.map(|a| a.login),
    }
}

/// A pull request's author: the account's name (its login when it has none, or is gone) and
/// its no-reply address.
async fn pr_author(client: &Client, repo: &RepoRef, user: &User) -> HostResult<Person> {
    let path = format!("/users/{}", escape(&user.login));
    let account: Account = client.get_optional(repo, &path).await?.unwrap_or(Account {
        login: user.login.clone(),
        id: user.id,
        name: None,
    });
    let name = account
        .name
        .clone()
        .unwrap_or_else(|| account.login.clone());
    let identity = Identity::of(&account, &name, &repo.host);
    Ok(Person {
        name: identity.name,
        email: identity.email,
    })
}

/// Merges each pull request with GitHub's merge button API, in order.
async fn direct_merge(
    client: &Client,
    repo: &RepoRef,
    request: &MergeRequest,
) -> HostResult<MergeOutcome> {
    let method = match request.method {
        MergeMethod::MergeCommit => "merge",
        MergeMethod::Squash => "squash",
        MergeMethod::Rebase => "rebase",
    };
    let mut target_sha = None;
    for pr in &request.prs {
        let path = format!("{}/pulls/{}/merge", repo_path(repo), pr.pr);
        let payload = json!({ "merge_method": method, "sha": pr.head_sha.as_str() });
        // Not sent again after a server error or a lost answer: the merge may have happened,
        // and a second one would be refused as "not mergeable". The error makes the queue ask
        // whether it landed (`GitHost::merge_landed`) before it tries again.
        let reply = client
            .send_unrepeated(repo, Method::PUT, &path, Some(&payload))
            .await?
            .reply()?;
        match reply.status.as_u16() {
            200 => target_sha = Some(Sha::new(reply.json::<ShaOnly>()?.sha)),
            409 => return Ok(MergeOutcome::PrChanged { pr: pr.pr }),
            405 if base_was_modified(&reply.message()) => {
                let actual = branch_head(client, repo, &request.target)
                    .await?
                    .ok_or_else(|| HostError::NotFound(format!("branch {}", request.target)))?;
                return Ok(MergeOutcome::TargetMoved { actual });
            }
            405 | 422 => {
                let mut detail = reply.message();
                if mentions_signatures(&detail) {
                    detail = refusal_detail(client, repo, &request.target, detail).await;
                }
                return Ok(MergeOutcome::Rejected {
                    pr: Some(pr.pr),
                    detail,
                });
            }
            _ => return Err(reply.error()),
        }
    }
    match target_sha {
        Some(target_sha) => Ok(MergeOutcome::Merged { target_sha }),
        None => Err(HostError::Invalid(
            "a merge needs at least one pull request".into(),
        )),
    }
}

/// Whether GitHub refused a merge because the target moved while it merged ("Base branch was
/// modified. Review and try the merge again."): a race to retry, not a refusal.
fn base_was_modified(message: &str) -> bool {
    message
        .to_ascii_lowercase()
        .contains("base branch was modified")
}

/// The target's commit if this merge already happened (see `GitHost::merge_landed`).
pub(crate) async fn landed(
    client: &Client,
    repo: &RepoRef,
    request: &MergeRequest,
) -> HostResult<Option<Sha>> {
    validate::branch("target", &request.target)?;
    let Some(expected) = &request.expected_target_sha else {
        return Ok(None);
    };
    validate::sha("expected_target_sha", expected)?;
    let actual = branch_head(client, repo, &request.target)
        .await?
        .ok_or_else(|| HostError::NotFound(format!("branch {}", request.target)))?;
    if *expected == actual {
        return Ok(None);
    }
    landed_at(&Commits { client, repo }, request, expected, actual).await
}

/// Creates a commit (git data API) from `payload`: message, tree, parents, and optionally
/// author and committer. Returns its id.
pub(crate) async fn create_commit(
    client: &Client,
    repo: &RepoRef,
    payload: &serde_json::Value,
) -> HostResult<Sha> {
    let path = format!("{}/git/commits", repo_path(repo));
    let created: ShaOnly = client
        .send(repo, Method::POST, &path, Some(payload))
        .await?
        .json()?;
    Ok(Sha::new(created.sha))
}

pub(crate) async fn git_commit(
    client: &Client,
    repo: &RepoRef,
    sha: &Sha,
) -> HostResult<GitCommit> {
    client
        .get(repo, &format!("{}/git/commits/{sha}", repo_path(repo)))
        .await
}

struct Commits<'a> {
    client: &'a Client,
    repo: &'a RepoRef,
}

impl CommitSource for Commits<'_> {
    fn commit(&self, sha: &Sha) -> impl Future<Output = HostResult<CommitInfo>> + Send {
        let sha = sha.clone();
        async move {
            let wire = git_commit(self.client, self.repo, &sha).await?;
            Ok(CommitInfo {
                sha: Sha::new(wire.sha),
                tree: wire.tree.sha,
                parents: wire.parents.into_iter().map(|p| Sha::new(p.sha)).collect(),
            })
        }
    }
}

impl MergeSource for Commits<'_> {
    async fn pr_state_and_head(&self, pr: PrNumber) -> HostResult<(PrState, Sha)> {
        let pull = pulls::pull(self.client, self.repo, pr).await?;
        Ok((pull.pr_state(), Sha::new(pull.head.sha)))
    }

    /// The target moved forward from `expected`: comparing the two, `actual` is not behind.
    fn contains(
        &self,
        expected: &Sha,
        actual: &Sha,
    ) -> impl Future<Output = HostResult<bool>> + Send {
        let path = format!(
            "{}/compare/{expected}...{actual}?per_page=1",
            repo_path(self.repo)
        );
        async move {
            let compare: Option<Compare> = self.client.get_optional(self.repo, &path).await?;
            Ok(compare.is_some_and(|c| c.behind_by == 0))
        }
    }
}
