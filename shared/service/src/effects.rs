//! Executing the engine's effects on the Git host, and turning each answer into the event
//! that reports it back to the engine.
//!
//! Every effect is safe to execute twice (branches are named by run id, merges carry the
//! expected target sha), so an effect whose answer was lost is simply executed again. One
//! cut because its time ran out is such an effect: it fails as a transient error, and the
//! tick executes it again.

use mq_core::engine::{Effect, EffectOutcome, Event, MAX_ATTEMPTS, MergeRefusal, PendingEffect};
use mq_core::git::{QUEUE_STATUS_CONTEXT, RequiredStatuses, RequiredStatusesSource, StatusState};
use mq_core::ids::Sha;
use mq_core::settings::MergeMethod;
use mq_core::snapshot::Queue;
use mq_githost::{
    GitHost, HostError, HostResult, MergeOutcome, MergeRequest, StatusUpdate, TestBranchOutcome,
    TestBranchRequest, TestPullRequest,
};
use tokio::time::Instant;

/// The statuses a test run (or a pull request's head, for a direct merge) waits for: the
/// branch's, without the queue's own. A repository that requires the queue's status to merge
/// into its branch (so that nothing merges around the queue) would otherwise have every run
/// wait for a status the queue sets on pull request heads only, and time out.
pub fn without_own_status(mut required: RequiredStatuses) -> RequiredStatuses {
    required.contexts.retain(|c| c != QUEUE_STATUS_CONTEXT);
    required
}

/// Executes one effect of `queue` and returns the event that reports its outcome; with `cut`,
/// one still unanswered then fails (transient).
pub async fn execute(
    host: &dyn GitHost,
    queue: &Queue,
    pending: &PendingEffect,
    cut: Option<Instant>,
) -> Event {
    let effect_id = pending.id.clone();
    let done = outcome(host, queue, &pending.effect);
    let answer = match cut {
        None => done.await,
        Some(at) => tokio::time::timeout_at(at, done).await.unwrap_or_else(|_| {
            Err(HostError::Transient {
                message: "the Git host did not answer within the time of the request or tick"
                    .into(),
                retry_after: None,
            })
        }),
    };
    match answer {
        Ok(outcome) => Event::EffectSucceeded { effect_id, outcome },
        Err(e) => {
            let permanent = is_permanent(&e);
            let attempt = pending.attempts + 1;
            tracing::warn!(
                queue = %queue.id,
                effect = %effect_id,
                kind = kind_of(&pending.effect),
                attempt,
                error = %e,
                "{}",
                if permanent || attempt >= MAX_ATTEMPTS {
                    "effect given up: refused by the Git host, or failed too often"
                } else {
                    "effect failed; retried later"
                }
            );
            Event::EffectFailed {
                effect_id,
                permanent,
                retry_after_ms: asked_to_wait(&e),
                error: e.to_string(),
            }
        }
    }
}

/// What an effect does, for the logs.
fn kind_of(effect: &Effect) -> &'static str {
    match effect {
        Effect::CreateTestBranch { .. } => "create_test_branch",
        Effect::CancelRun { .. } => "cancel_run",
        Effect::DeleteBranch { .. } => "delete_branch",
        Effect::Merge { .. } => "merge",
        Effect::CloseLandedPullRequest { .. } => "close_landed_pull_request",
        Effect::PostComment { .. } => "post_comment",
        Effect::SetStatusCheck { .. } => "set_status_check",
        Effect::OpenTestPullRequest { .. } => "open_test_pull_request",
        Effect::CloseTestPullRequest { .. } => "close_test_pull_request",
        Effect::RefreshPullRequest { .. } => "refresh_pull_request",
        Effect::FetchChecks { .. } => "fetch_checks",
    }
}

/// How long the Git host asked to wait before the effect is tried again, in milliseconds.
fn asked_to_wait(error: &HostError) -> Option<i64> {
    match error {
        HostError::Transient {
            retry_after: Some(wait),
            ..
        } => Some(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)),
        _ => None,
    }
}

/// The statuses a test branch must pass: the queue's own list when it has one (the
/// repository's sources are then not read, so a broken `.merge-queue.yaml` can be worked
/// around by giving the queue a list), else what the repository says; either less the queue's
/// own status (a list stored before it was refused there may hold it).
async fn required_statuses(host: &dyn GitHost, queue: &Queue) -> HostResult<RequiredStatuses> {
    let own = &queue.config.required_statuses;
    if !own.is_empty() {
        return Ok(without_own_status(RequiredStatuses {
            contexts: own.clone(),
            source: Some(RequiredStatusesSource::MergeInstance),
        }));
    }
    let repository = host.required_statuses(&queue.repo, &queue.branch).await?;
    Ok(without_own_status(repository))
}

/// Transient failures and failed local commands are retried; a refusal by the host is not.
fn is_permanent(e: &HostError) -> bool {
    matches!(
        e,
        HostError::NotFound(_)
            | HostError::Forbidden(_)
            | HostError::Invalid(_)
            | HostError::Conflict(_)
    )
}

async fn outcome(host: &dyn GitHost, queue: &Queue, effect: &Effect) -> HostResult<EffectOutcome> {
    let repo = &queue.repo;
    match effect {
        Effect::CreateTestBranch {
            branch, base, prs, ..
        } => {
            let request = TestBranchRequest {
                branch: branch.clone(),
                target: queue.branch.clone(),
                base: base.clone(),
                prs: prs.clone(),
            };
            match host.create_test_branch(repo, &request).await? {
                TestBranchOutcome::Created { sha, base_sha } => {
                    let required = required_statuses(host, queue).await?;
                    Ok(EffectOutcome::BranchCreated {
                        sha,
                        base_sha,
                        required,
                    })
                }
                TestBranchOutcome::Conflict { pr } => Ok(EffectOutcome::BranchConflict { pr }),
                TestBranchOutcome::MergedOutside { pr } => Ok(EffectOutcome::MergedOutside { pr }),
            }
        }
        Effect::CancelRun { branch, .. } | Effect::DeleteBranch { branch } => {
            host.delete_branch(repo, branch).await?;
            Ok(EffectOutcome::Done)
        }
        Effect::Merge { .. } => match merge_request(queue, effect) {
            Some(request) => {
                let outcome = merge_outcome(host.merge(repo, &request).await?);
                let expected = request.expected_target_sha.as_ref();
                Ok(with_tip(host, queue, expected, outcome).await)
            }
            None => Ok(EffectOutcome::Done),
        },
        Effect::CloseLandedPullRequest { pr } => {
            host.close_landed_pull_request(repo, pr).await?;
            Ok(EffectOutcome::Done)
        }
        Effect::PostComment { pr, body } => {
            host.upsert_comment(repo, *pr, body).await?;
            Ok(EffectOutcome::Done)
        }
        Effect::SetStatusCheck {
            sha,
            state,
            description,
            ..
        } => {
            let status = StatusUpdate {
                context: QUEUE_STATUS_CONTEXT.to_owned(),
                state: *state,
                description: description.clone(),
                target_url: None,
            };
            host.set_status(repo, sha, &status).await?;
            Ok(EffectOutcome::Done)
        }
        Effect::OpenTestPullRequest {
            branch,
            title,
            body,
            ..
        } => {
            let request = TestPullRequest {
                branch: branch.clone(),
                target: queue.branch.clone(),
                title: title.clone(),
                body: body.clone(),
            };
            host.open_test_pull_request(repo, &request).await?;
            Ok(EffectOutcome::Done)
        }
        Effect::CloseTestPullRequest { branch, .. } => {
            host.close_test_pull_request(repo, branch).await?;
            Ok(EffectOutcome::Done)
        }
        Effect::FetchChecks { sha, .. } => {
            let checks = host.commit_checks(repo, sha).await?;
            Ok(EffectOutcome::Checks {
                statuses: checks.statuses,
                check_runs: checks.check_runs,
            })
        }
        Effect::RefreshPullRequest { pr } => {
            let facts = host.pull_request(repo, *pr, &queue.branch).await?;
            Ok(EffectOutcome::PullRequest { pr: facts })
        }
    }
}

/// Whether the merge of a merge effect already happened on the Git host (its answer lost, or
/// its execution still under way): the outcome to record then. `None` for any other effect.
pub async fn landed(
    host: &dyn GitHost,
    queue: &Queue,
    effect: &Effect,
) -> HostResult<Option<EffectOutcome>> {
    let Some(request) = merge_request(queue, effect) else {
        return Ok(None);
    };
    let Some(target_sha) = host.merge_landed(&queue.repo, &request).await? else {
        return Ok(None);
    };
    let merged = EffectOutcome::Merged {
        target_sha,
        tip: None,
    };
    Ok(Some(with_tip(host, queue, None, merged).await))
}

/// A merge's outcome with the target's tip when someone pushed while the merge was in flight
/// (a push the queue does not act on until the merge's outcome is known): the Git host is
/// asked where the target is now, once the merge landed (on top of it) or was refused for
/// another reason than the target's move (where the merge expected it). Any other outcome, or
/// a tip that cannot be read, as it is: a push it misses shows when the next merge finds the
/// target moved.
async fn with_tip(
    host: &dyn GitHost,
    queue: &Queue,
    expected: Option<&Sha>,
    outcome: EffectOutcome,
) -> EffectOutcome {
    let was = match &outcome {
        EffectOutcome::Merged { target_sha, .. } => target_sha,
        EffectOutcome::MergeRefused {
            refusal: MergeRefusal::TargetMoved { .. },
            ..
        } => return outcome,
        EffectOutcome::MergeRefused { .. } => match expected {
            Some(expected) => expected,
            None => return outcome,
        },
        _ => return outcome,
    };
    let tip = match host.branch_head(&queue.repo, &queue.branch).await {
        Ok(Some(tip)) if tip != *was => tip,
        Ok(_) => return outcome,
        Err(e) => {
            tracing::warn!(error = %e, "the target's tip after a merge could not be read");
            return outcome;
        }
    };
    match outcome {
        EffectOutcome::Merged { target_sha, .. } => EffectOutcome::Merged {
            target_sha,
            tip: Some(tip),
        },
        EffectOutcome::MergeRefused { refusal, .. } => EffectOutcome::MergeRefused {
            refusal,
            tip: Some(tip),
        },
        other => other,
    }
}

/// The Git host's request for a merge effect of `queue`; `None` for any other effect.
fn merge_request(queue: &Queue, effect: &Effect) -> Option<MergeRequest> {
    let Effect::Merge {
        prs,
        method,
        expected_target_sha,
        tested_sha,
        ..
    } = effect
    else {
        return None;
    };
    Some(MergeRequest {
        target: queue.branch.clone(),
        prs: prs.clone(),
        method: *method,
        expected_target_sha: expected_target_sha.clone(),
        tested_sha: tested_sha.clone(),
        tested_status: tested_sha.as_ref().and(tested_status(queue, *method)),
    })
}

/// What a `merge_commit` merge sets on the commit the queue tested before moving the target
/// there, when the queue's status check is on: its own status (`merge-queue`), passed, so a
/// branch that requires that status (so that nothing merges around the queue) takes the
/// commit. (`squash` and `rebase` land commits of their own, which carry no status.)
fn tested_status(queue: &Queue, method: MergeMethod) -> Option<StatusUpdate> {
    let vouches = method == MergeMethod::MergeCommit && queue.config.status_check_enabled;
    vouches.then(|| StatusUpdate {
        context: QUEUE_STATUS_CONTEXT.to_owned(),
        state: StatusState::Success,
        description: "Tested by the merge queue".to_owned(),
        target_url: None,
    })
}

fn merge_outcome(outcome: MergeOutcome) -> EffectOutcome {
    let refusal = match outcome {
        MergeOutcome::Merged { target_sha } => {
            return EffectOutcome::Merged {
                target_sha,
                tip: None,
            };
        }
        MergeOutcome::TargetMoved { actual } => MergeRefusal::TargetMoved { actual },
        MergeOutcome::PrChanged { pr } => MergeRefusal::PrChanged { pr },
        MergeOutcome::PrClosed { pr } => MergeRefusal::PrClosed { pr },
        MergeOutcome::PrMerged { pr } => MergeRefusal::PrMerged { pr },
        MergeOutcome::Rejected { pr, detail } => MergeRefusal::Rejected { pr, detail },
    };
    EffectOutcome::MergeRefused { refusal, tip: None }
}
