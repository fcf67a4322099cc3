//! What the dashboard pages show, read-only: the organisation's queues at a glance
//! ([`list_queues`]), one queue's line, waiting pull requests with their estimated time to
//! merge, last conclusions and last hour's histograms ([`queue_activity`]), and one pull
//! request's history ([`pull_request_history`]). Only the caller's organisation's queues are
//! read: a repository it does not own is 404 `REPOSITORY_NOT_FOUND`, like every endpoint.

use crate::app::App;
use crate::error::ServiceError;
use mq_core::DomainError;
use mq_core::engine::view;
use mq_core::entry::{Entry, EntryState};
use mq_core::error::ErrorCode;
use mq_core::estimate::{LineShape, RecentTesting, seconds_to_merge};
use mq_core::ids::{OrgId, PrNumber, QueueId, RepoRef};
use mq_core::metrics::{Durations, Histogram, Outcome, QueueFacts, QueueFigures, Window, figures};
use mq_core::run::{RunKind, RunStatus, TestRun};
use mq_core::settings::QueueState;
use mq_core::snapshot::QueueSnapshot;
use mq_core::time::Timestamp;
use mq_core::timeline::{state_history, tested};
use mq_wire::dashboard::{
    CiLink, ConclusionView, EstimateBasis, GroupPullRequest, HistogramView, Histograms, LineGroup,
    PullRequestHistory, QueueActivity, QueueList, QueueSummary, RunSummary, StateChangeView,
    UnreadableQueue, WaitingPullRequest,
};
use mq_wire::{QueueView, SubmittedPullRequest};
use std::collections::HashMap;
use std::sync::Arc;

/// Conclusions `getQueueActivity` lists, newest first, at most.
pub const CONCLUSIONS_SHOWN: usize = 50;

/// Finished runs read for a pull request's history, newest first, at most: the runs that
/// finished while its latest submission was in the queue.
pub const HISTORY_RUNS_READ: usize = 1000;

/// The organisation's queues on the repositories it owns, or its queues on `repo` (404
/// `REPOSITORY_NOT_FOUND` unless it owns `repo`; an empty list when it has no queue there),
/// ordered by repository and branch.
pub async fn list_queues(
    app: &App,
    org: &OrgId,
    repo: Option<&RepoRef>,
) -> Result<QueueList, ServiceError> {
    let now = app.now();
    let facts = super::metrics::owned_queue_facts(app, org, repo, now).await?;
    let queues = facts.read.iter().map(|f| summary(f, &figures(f, now)));
    let unreadable = facts
        .unreadable
        .into_iter()
        .map(|(queue, _)| UnreadableQueue {
            repo: queue.repo,
            target_branch: queue.branch,
        });
    Ok(QueueList {
        organisation: org.as_str().to_owned(),
        queues: queues.collect(),
        unreadable_queues: unreadable.collect(),
    })
}

fn summary(facts: &QueueFacts, figures: &QueueFigures) -> QueueSummary {
    let queue = &facts.snapshot.queue;
    QueueSummary {
        repo: queue.repo.clone(),
        target_branch: queue.branch.clone(),
        state: queue.state,
        mode: queue.config.mode,
        depth: figures.depth,
        awaiting_mergeability: figures.awaiting_mergeability,
        testing: figures.main.prs_testing + figures.bisection.prs_testing,
        runs_in_flight: figures.main.runs_active + figures.bisection.runs_active,
        concurrency: queue.config.concurrency,
        merged_last_hour: figures.outcome(Outcome::Merged).count,
        failed_last_hour: figures.outcome(Outcome::Failed).count,
        cancelled_last_hour: figures.outcome(Outcome::Cancelled).count,
        stuck: figures.entries_stuck,
    }
}

/// The queue `id` as the queue page shows it at this moment.
pub async fn queue_activity(
    app: &App,
    org: &OrgId,
    id: &QueueId,
) -> Result<QueueActivity, ServiceError> {
    let snapshot = super::drive::read(app, org, id).await?;
    let now = app.now();
    let window = Window::last_hour(&snapshot.queue, now);
    let facts = QueueFacts {
        history: app.store.history(id, window).await?,
        snapshot: Arc::new(snapshot),
    };
    // The history is newest first.
    let conclusions = &facts.history.concluded;
    let shown = conclusions.len().min(CONCLUSIONS_SHOWN);
    Ok(activity(&facts, &conclusions[..shown], now))
}

/// The queue page's data, from the queue's facts and its last conclusions (newest first).
fn activity(facts: &QueueFacts, conclusions: &[Entry], now: Timestamp) -> QueueActivity {
    let snapshot = &*facts.snapshot;
    let queue = &snapshot.queue;
    let figures = figures(facts, now);
    let window = Window::last_hour(queue, now);
    let recent = RecentTesting::of(facts.runs_finished_in(window));
    let line = line(snapshot, now);
    let front_elapsed = line.first().map_or(0.0, |group| match group.status {
        RunStatus::InProgress => group.age_seconds as f64,
        _ => f64::INFINITY,
    });
    let shape = LineShape {
        groups: line.iter().filter(|g| g.kind == RunKind::Main).count(),
        front_elapsed_seconds: front_elapsed,
        concurrency: queue.config.concurrency,
        batch_size: queue.config.group_size(),
    };
    let estimate = EstimateBasis {
        runs: recent.map_or(0, |r| r.runs),
        mean_test_seconds: recent.map(|r| r.mean_test_seconds),
        failure_rate: recent.map(|r| r.failure_rate),
        concurrency: queue.config.concurrency,
        batch_size: shape.batch_size,
    };
    let stuck = view::stuck_entries(snapshot, now);
    let moving = queue.state == QueueState::Running;
    let waiting = view::queue_order(snapshot)
        .into_iter()
        .filter(|e| matches!(e.state, EntryState::Pending | EntryState::NotReady))
        .enumerate()
        .map(|(i, e)| {
            let position = i + 1;
            let seconds = recent
                .filter(|_| moving && e.state == EntryState::Pending)
                .map(|r| seconds_to_merge(&r, &shape, position).round() as u64);
            WaitingPullRequest {
                position: u32::try_from(position).unwrap_or(u32::MAX),
                pr_number: e.pr,
                pr_title: e.pr_facts.title.clone(),
                pr_url: view::pr_url(&queue.repo, e.pr),
                pr_author: e.pr_facts.author.clone(),
                state: e.state,
                priority_value: e.priority.value,
                priority_name: e.priority.name().into_owned(),
                no_batch: e.no_batch,
                submitted_at: e.submitted_at.to_rfc3339(),
                waiting_seconds: whole_seconds(e.submitted_at, now),
                stuck: stuck.contains(&e.pr),
                estimated_merge_seconds: seconds,
                estimated_merge_at: seconds.map(|s| {
                    now.plus_millis((s as i64).saturating_mul(1000))
                        .to_rfc3339()
                }),
            }
        })
        .collect();
    let mut test_seconds = figures.main.test_seconds;
    test_seconds.add(&figures.bisection.test_seconds);
    let mut in_queue = Durations::default();
    for &outcome in Outcome::ALL {
        in_queue.add(&figures.outcome(outcome).time_in_queue_seconds);
    }
    QueueActivity {
        repo: queue.repo.clone(),
        queue: QueueView::from(queue),
        generated_at: now.to_rfc3339(),
        line,
        waiting,
        estimate,
        conclusions: conclusions
            .iter()
            .map(|e| conclusion(&queue.repo, e))
            .collect(),
        histograms: Histograms {
            wait_seconds: histogram(&figures.wait_seconds),
            test_seconds: histogram(&test_seconds),
            time_in_queue_seconds: histogram(&in_queue),
        },
    }
}

/// The groups of the line front first (in the order `getQueue` lists their pull requests),
/// then bisection runs.
fn line(snapshot: &QueueSnapshot, now: Timestamp) -> Vec<LineGroup> {
    let order: HashMap<PrNumber, usize> = view::queue_order(snapshot)
        .into_iter()
        .enumerate()
        .map(|(i, e)| (e.pr, i))
        .collect();
    let rank = |run: &TestRun| {
        let first = run.tested.iter().filter_map(|t| order.get(&t.pr)).min();
        (
            run.kind == RunKind::Bisection,
            first.copied().unwrap_or(usize::MAX),
            run.created_at,
        )
    };
    let mut runs: Vec<&TestRun> = snapshot.runs.iter().collect();
    runs.sort_by_key(|r| rank(r));
    runs.into_iter()
        .map(|run| group(snapshot, run, now))
        .collect()
}

fn group(snapshot: &QueueSnapshot, run: &TestRun, now: Timestamp) -> LineGroup {
    let repo = &snapshot.queue.repo;
    LineGroup {
        test_run_id: run.id.clone(),
        kind: run.kind,
        status: run.status,
        held: run.held,
        test_branch: run.branch.clone(),
        test_branch_sha: view::test_branch_sha(run),
        pull_requests: run
            .tested
            .iter()
            .map(|t| GroupPullRequest {
                pr_number: t.pr,
                pr_title: t.title.clone(),
                pr_url: view::pr_url(repo, t.pr),
                state: snapshot
                    .entries
                    .iter()
                    .find(|e| e.id == t.entry_id)
                    .map(|e| e.state),
            })
            .collect(),
        dependent_prs: run.dependent_prs.clone(),
        created_at: run.created_at.to_rfc3339(),
        started_at: run.started_at.map(Timestamp::to_rfc3339),
        finished_at: run.finished_at.map(Timestamp::to_rfc3339),
        age_seconds: whole_seconds(run.started_at.unwrap_or(run.created_at), now),
        ci: ci_links(run),
        reason: run.reason.clone(),
        bisection_of: run.bisection_of.clone(),
    }
}

/// The commit statuses and check runs on a run's test branch.
fn ci_links(run: &TestRun) -> Vec<CiLink> {
    let statuses = run.statuses.iter().map(|s| CiLink {
        name: s.context.clone(),
        url: s.url.clone(),
        state: s.state.as_str().to_owned(),
    });
    let checks = run.check_runs.iter().map(|c| CiLink {
        name: c.name.clone(),
        url: c.url.clone(),
        state: c
            .conclusion
            .map_or_else(|| c.status.as_str(), |done| done.as_str())
            .to_owned(),
    });
    statuses.chain(checks).collect()
}

fn conclusion(repo: &RepoRef, e: &Entry) -> ConclusionView {
    let at = e.concluded_at.unwrap_or(e.state_changed_at);
    ConclusionView {
        pr_number: e.pr,
        pr_title: e.pr_facts.title.clone(),
        pr_url: view::pr_url(repo, e.pr),
        state: e.state,
        reason: e.conclusion.as_ref().map(|c| c.reason.clone()),
        detail: e.conclusion.as_ref().map(|c| c.detail.clone()),
        concluded_at: at.to_rfc3339(),
        time_in_queue_seconds: whole_seconds(e.submitted_at, at),
        test_run_id: e.last_run.clone(),
    }
}

/// Per bucket counts (not cumulative), then the count above every bound.
fn histogram<const N: usize>(h: &Histogram<N>) -> HistogramView {
    let mut counts = h.per_bucket().to_vec();
    let in_buckets: u64 = counts.iter().sum();
    counts.push(h.count().saturating_sub(in_buckets));
    HistogramView {
        bounds: h.bounds().to_vec(),
        counts,
        count: h.count(),
        sum: h.sum(),
    }
}

fn whole_seconds(from: Timestamp, to: Timestamp) -> u64 {
    u64::try_from(to.millis_since(from) / 1000).unwrap_or(0)
}

/// The latest submission of pull request `pr` to the queue `id`, with its state history
/// (rebuilt: [`mq_core::timeline`]) and the runs that tested it; 404
/// `PULL_REQUEST_NOT_FOUND` when it was never submitted.
pub async fn pull_request_history(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
) -> Result<PullRequestHistory, ServiceError> {
    let snapshot = super::drive::read(app, org, id).await?;
    let queue = &snapshot.queue;
    let entry = match snapshot.entry_for_pr(pr) {
        Some(active) => Some(active.clone()),
        None => app.store.load_entry(id, pr).await?.and_then(|(_, e)| e),
    };
    let entry = entry.ok_or_else(|| {
        DomainError::not_found(
            ErrorCode::PullRequestNotFound,
            format!("pull request #{pr} was never submitted to this queue"),
        )
    })?;
    let now = app.now();
    // Runs finish at the latest when the submission concludes (or now, while it is active).
    let end = entry.concluded_at.unwrap_or(now).plus_millis(1);
    let lifetime = Window::between(entry.submitted_at, end);
    // The queue's restarts are read only for an entry that has any: the read covers every
    // pull request of the queue over the entry's lifetime.
    let restarts = async {
        if entry.restarts == 0 {
            return Ok(Vec::new());
        }
        app.store.restarts_between(id, lifetime).await
    };
    let (finished, restarts) = tokio::join!(
        app.store
            .finished_runs_between(id, lifetime, HISTORY_RUNS_READ),
        restarts
    );
    let mut runs: Vec<TestRun> = finished?
        .into_iter()
        .filter(|r| tested(r, &entry))
        .collect();
    for active in snapshot.runs.iter().filter(|r| tested(r, &entry)) {
        if !runs.iter().any(|r| r.id == active.id) {
            runs.push(active.clone());
        }
    }
    runs.sort_by_key(|r| (r.created_at, r.id.clone()));
    let states = state_history(&entry, &runs, &restarts?)
        .into_iter()
        .map(|c| StateChangeView {
            state: c.state,
            at: c.at.to_rfc3339(),
            test_run_id: c.run,
            reason: c.reason,
        })
        .collect();
    Ok(PullRequestHistory {
        pull_request: SubmittedPullRequest::of(queue, &entry),
        pr_url: view::pr_url(&queue.repo, entry.pr),
        submitted_at: entry.submitted_at.to_rfc3339(),
        concluded_at: entry.concluded_at.map(Timestamp::to_rfc3339),
        conclusion: entry.conclusion.clone(),
        restarts: entry.restarts,
        ci_runs: entry.ci_runs,
        states,
        runs: runs.iter().map(run_summary).collect(),
    })
}

fn run_summary(run: &TestRun) -> RunSummary {
    RunSummary {
        test_run_id: run.id.clone(),
        kind: run.kind,
        status: run.status,
        reason: run.reason.clone(),
        test_branch: run.branch.clone(),
        created_at: run.created_at.to_rfc3339(),
        started_at: run.started_at.map(Timestamp::to_rfc3339),
        finished_at: run.finished_at.map(Timestamp::to_rfc3339),
        tested_prs: run.tested.iter().map(|t| t.pr).collect(),
        dependent_prs: run.dependent_prs.clone(),
        ci: ci_links(run),
    }
}
