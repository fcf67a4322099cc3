//! The pull request endpoints: submit, cancel, restart, read, impacted targets, test runs.

use super::drive::{self, Actor, Start, apply_in_order};
use super::effects;
use super::shell::{contention_deadline, read_by};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::engine::{CancelReason, Event, checks_verdict};
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::error::{DomainError, ErrorCode};
use mq_core::git::{PrFacts, PrState, Verdict};
use mq_core::ids::{OrgId, PrNumber, QueueId, Sha};
use mq_core::settings::{DirectMergeMode, QueueMode};
use mq_core::snapshot::{Queue, QueueSnapshot, Transition};
use mq_githost::{GitHost, HostError};
use mq_wire::testing::TestingDetails;
use mq_wire::{QueueTarget, Submission, SubmittedPullRequest, TargetsUpload};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Submits a pull request (or updates the priority of its active entry).
pub async fn submit(app: &App, org: &OrgId, s: &Submission) -> Result<(), ServiceError> {
    let id = s.target.id();
    let events_for =
        move |queue: Queue| -> EventsFuture<'_> { Box::pin(submission_events(app, queue, s)) };
    submit_with(app, org, &id, s.pr, contention_deadline(), events_for).await
}

/// The events of a submission, built from the queue as it is.
pub type EventsFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<Event>, ServiceError>> + Send + 'a>>;

/// Applies the submission events `events_for` builds from what the Git host says now, and
/// executes their effects. The Git host is asked first, against the queue's settings and the
/// pull request's latest entry (one small read); then the commit loop reads the snapshot,
/// steps and commits, with no Git host call in between, and retries with the same events
/// while they still hold (see `SubmissionBasis`). When they may not, the pull request is
/// read anew.
pub async fn submit_with<'a>(
    app: &'a App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
    deadline: Instant,
    events_for: impl Fn(Queue) -> EventsFuture<'a> + Send + Sync,
) -> Result<(), ServiceError> {
    loop {
        let (queue, latest) = queue_and_entry(app, org, id, pr).await?;
        let seen = SubmissionBasis::of(&queue, latest.as_ref());
        // The Git host's answers count against the request's time, as its commits do.
        let events = read_by(deadline, events_for(queue.clone())).await?;
        if let Some(facts) = not_open(&events) {
            if end_entry_not_open(app, org, id, facts, latest.as_ref(), deadline).await? {
                return Err(not_open_refusal(facts.number).into());
            }
            continue;
        }
        let stale = AtomicBool::new(false);
        let step = |now: &QueueSnapshot, at| {
            if !seen.holds_in(now, pr) {
                stale.store(true, Ordering::Relaxed);
                return Err(basis_changed());
            }
            apply_in_order(now, &events, at, true)
        };
        // Ownership was checked with the queue item just above.
        let owner = Actor::ServiceFor(org);
        match drive::apply_step(app, owner, id, step, Start::fresh().until(deadline)).await {
            Ok(()) => {
                return targets_uploaded_meanwhile(app, org, &queue, &events, deadline).await;
            }
            Err(_) if stale.load(Ordering::Relaxed) && Instant::now() < deadline => {}
            Err(_) if stale.load(Ordering::Relaxed) => {
                return Err(ServiceError::Unavailable {
                    retry_after: Duration::from_secs(1),
                });
            }
            Err(e) => return Err(e),
        }
    }
}

/// The pull request of a submission's events, when the Git host says it is not open.
fn not_open(events: &[Event]) -> Option<&PrFacts> {
    match events.first() {
        Some(Event::Submit { pr, .. }) if pr.state != PrState::Open => Some(pr),
        _ => None,
    }
}

/// A submission of a pull request the Git host says is closed or merged (`facts`) is refused,
/// and its active entry, if any, ends as the tick would end it once it read the same
/// (`pr_closed`, `pr_merged`), rather than testing on until then. Only while the entry is as
/// the read found it (`latest`): an entry submitted since, or one a delivery changed since (the
/// pull request reopened), is newer than the read, and `false` says to read again; `true`
/// says to refuse.
async fn end_entry_not_open(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    facts: &PrFacts,
    latest: Option<&Entry>,
    deadline: Instant,
) -> Result<bool, ServiceError> {
    let Some(read_for) = latest.filter(|e| e.state.is_active()) else {
        return Ok(true);
    };
    let event = Event::PrUpdated { pr: facts.clone() };
    let newer = AtomicBool::new(false);
    let step = |now: &QueueSnapshot, at| match now.entry_for_pr(facts.number) {
        Some(e) if e.id == read_for.id && e.pr_facts == read_for.pr_facts => {
            apply_in_order(now, std::slice::from_ref(&event), at, true)
        }
        Some(_) => {
            newer.store(true, Ordering::Relaxed);
            Ok(Transition::unchanged(now))
        }
        None => Ok(Transition::unchanged(now)),
    };
    let start = Start::fresh().until(deadline);
    drive::apply_step(app, Actor::ServiceFor(org), id, step, start).await?;
    Ok(!newer.load(Ordering::Relaxed))
}

fn not_open_refusal(pr: PrNumber) -> DomainError {
    DomainError::conflict(
        ErrorCode::PullRequestNotOpen,
        format!("pull request {pr} is not open"),
    )
}

/// Impacted targets uploaded for a pull request while it was being submitted, which neither
/// request would otherwise give to its entry: the upload found no entry and only stored
/// them, and the submission had read the store before they were there. Each request writes,
/// then reads what the other writes (the submission its entry, then the stored targets; the
/// upload its targets, then the entry: see [`set_impacted_targets`]), so at least one of them
/// sees the other and applies the targets (twice changes nothing). Only parallel mode uses
/// targets, and a submission that found them has nothing to look for.
async fn targets_uploaded_meanwhile(
    app: &App,
    org: &OrgId,
    queue: &Queue,
    events: &[Event],
    deadline: Instant,
) -> Result<(), ServiceError> {
    let Some(Event::Submit { pr, .. }) = events.first() else {
        return Ok(());
    };
    let found = events
        .iter()
        .any(|e| matches!(e, Event::SetImpactedTargets { .. }));
    if queue.config.mode != QueueMode::Parallel || found {
        return Ok(());
    }
    apply_uploaded_targets(app, org, queue, std::slice::from_ref(pr), deadline).await
}

/// Gives the entries of `prs` the impacted targets stored for their heads, if any (facts: an
/// entry gone, or at another head, meanwhile takes nothing), committing until the request's
/// `deadline`.
pub async fn apply_uploaded_targets(
    app: &App,
    org: &OrgId,
    queue: &Queue,
    prs: &[PrFacts],
    deadline: Instant,
) -> Result<(), ServiceError> {
    let late = uploaded_targets_events(app, queue, prs).await?;
    if !late.is_empty() {
        let owner = Actor::ServiceFor(org);
        let start = Start::fresh().until(deadline);
        drive::apply(app, owner, &queue.id, &late, start).await?;
    }
    Ok(())
}

/// The caller's queue item and the latest entry of `pr` in it, active or concluded; 404 when
/// the queue does not exist or belongs to someone else, or its repository is not the
/// caller's (checked before any Git host call is made for it).
async fn queue_and_entry(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
) -> Result<(Queue, Option<Entry>), ServiceError> {
    crate::request_log::record_queue(id);
    let (owned, loaded) = tokio::join!(
        super::owners::check_queue(app, org, id),
        app.store.load_entry(id, pr)
    );
    owned?;
    match loaded? {
        Some((queue, entry)) if &queue.org == org => Ok((queue, entry)),
        _ => Err(DomainError::queue_not_found().into()),
    }
}

fn basis_changed() -> DomainError {
    DomainError::conflict(
        ErrorCode::PullRequestNotActive,
        "the pull request changed while it was being submitted",
    )
}

/// What a submission's events were built on: the pull request's active entry as it was (a
/// resubmission gives it the facts read: facts a webhook recorded meanwhile are newer, and
/// the pull request is read again), or (with none) the entries submitted since, and the
/// settings that decide what is read from the Git host
/// and the store. When they changed before the commit, the pull request may have been merged,
/// closed or submitted meanwhile, and its facts are read again (a submission racing with the
/// merge of the same pull request must not enqueue it again). Other pull requests submitted
/// meanwhile change nothing, whether still in the queue or concluded since. With direct merges
/// on, the target's head is part of it too: whether the pull request is based on the target's
/// head, read from the Git host, decides whether it merges untested.
#[derive(Debug, PartialEq, Eq)]
struct SubmissionBasis {
    entry: EntryBasis,
    settings: (QueueMode, DirectMergeMode, Vec<String>),
    target_head: Option<Sha>,
}

#[derive(Debug, PartialEq, Eq)]
enum EntryBasis {
    Active { id: String, facts: PrFacts },
    Inactive { next_seq: u64 },
}

impl SubmissionBasis {
    /// The basis of events built from `queue` and the pull request's `latest` entry.
    fn of(queue: &Queue, latest: Option<&Entry>) -> Self {
        let entry = match latest {
            Some(entry) if entry.state.is_active() => EntryBasis::Active {
                id: entry.id.clone(),
                facts: entry.pr_facts.clone(),
            },
            _ => EntryBasis::Inactive {
                next_seq: queue.engine.next_seq,
            },
        };
        Self {
            entry,
            settings: settings_read(queue),
            target_head: target_head_read(queue),
        }
    }

    /// Whether the events built on this basis still hold in `now`: the same active entry, with
    /// the same facts; or still none, and no entry of `pr` submitted since (by another
    /// request) concluded meanwhile; and the same settings.
    fn holds_in(&self, now: &QueueSnapshot, pr: PrNumber) -> bool {
        let entry_holds = match (&self.entry, now.entry_for_pr(pr)) {
            (EntryBasis::Active { id, facts }, Some(entry)) => {
                &entry.id == id && &entry.pr_facts == facts
            }
            (EntryBasis::Inactive { next_seq }, None) => none_concluded_since(now, *next_seq, pr),
            _ => false,
        };
        entry_holds
            && settings_read(&now.queue) == self.settings
            && target_head_read(&now.queue) == self.target_head
    }
}

/// The target's head as a submission's events depend on it: with direct merges on, the Git
/// host's word that the pull request is based on it; otherwise nothing.
fn target_head_read(queue: &Queue) -> Option<Sha> {
    match queue.config.direct_merge_mode {
        DirectMergeMode::Off => None,
        _ => queue.engine.target_head.clone(),
    }
}

/// Whether every entry submitted to the queue from sequence number `next_seq` on is still in
/// `now`, or left it as one the queue remembers concluding (its `recently_concluded`) of a
/// pull request other than `pr`. Other pull requests merging meanwhile change nothing; when
/// the queue no longer remembers every entry that left, the answer is no.
fn none_concluded_since(now: &QueueSnapshot, next_seq: u64, pr: PrNumber) -> bool {
    let Some(submitted) = now.queue.engine.next_seq.checked_sub(next_seq) else {
        return false;
    };
    let still_active = now.entries.iter().filter(|e| e.seq >= next_seq).count() as u64;
    let concluded: Vec<_> = (now.queue.engine.recently_concluded.iter())
        .filter(|c| c.seq >= next_seq)
        .collect();
    submitted == still_active + concluded.len() as u64 && concluded.iter().all(|c| c.pr != pr)
}

/// The settings that decide what a submission reads: uploaded targets in parallel mode, the
/// head's checks with direct merges, against the queue's own required statuses if any.
fn settings_read(queue: &Queue) -> (QueueMode, DirectMergeMode, Vec<String>) {
    let config = &queue.config;
    (
        config.mode,
        config.direct_merge_mode,
        config.required_statuses.clone(),
    )
}

/// The events of a submission: the pull request as the Git host describes it now, and the
/// impacted targets uploaded for its head.
async fn submission_events(
    app: &App,
    queue: Queue,
    s: &Submission,
) -> Result<Vec<Event>, ServiceError> {
    let host = app.host()?;
    let facts = pr_facts(host, &queue, s.pr).await?;
    let mut events = vec![Event::Submit {
        head_checks_passed: head_checks_passed(host, &queue, &facts).await?,
        pr: facts.clone(),
        priority: s.priority,
        no_batch: s.no_batch,
        force: false,
    }];
    if queue.config.mode == QueueMode::Parallel {
        events.extend(uploaded_targets_events(app, &queue, &[facts]).await?);
    }
    Ok(events)
}

/// The impacted targets uploaded before submission for the heads of `prs`, as events. Only
/// parallel mode uses them: a single-mode queue reads them when it switches to parallel.
/// Targets uploaded before `queue` was created were uploaded to a queue of the same name that
/// was deleted since: they do not count.
pub async fn uploaded_targets_events(
    app: &App,
    queue: &Queue,
    prs: &[PrFacts],
) -> Result<Vec<Event>, ServiceError> {
    let mut events = Vec::new();
    for pr in prs {
        if let Some(uploaded) = app.store.uploaded_targets(&queue.id, pr.number).await?
            && uploaded.head_sha == pr.head_sha
            && uploaded.uploaded_at >= queue.created_at
        {
            events.push(Event::SetImpactedTargets {
                pr: pr.number,
                head_sha: uploaded.head_sha,
                targets: uploaded.targets,
            });
        }
    }
    Ok(events)
}

/// Removes a pull request from the queue; 409 when it is not active, 404 when it was never
/// submitted.
pub async fn cancel(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
) -> Result<(), ServiceError> {
    let event = Event::Cancel {
        pr,
        reason: CancelReason::Api,
    };
    let applied = drive::apply(app, Actor::Org(org), id, &[event], Start::fresh()).await;
    not_found_if_never_submitted(app, id, pr, applied).await
}

/// Re-runs the tests of a pull request's group in place; 409 when it is not testing, 404 when
/// it was never submitted.
pub async fn restart(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
) -> Result<(), ServiceError> {
    let restart = [Event::Restart { pr }];
    let applied = drive::apply(app, Actor::Org(org), id, &restart, Start::fresh()).await;
    not_found_if_never_submitted(app, id, pr, applied).await
}

/// The engine refuses a pull request without an active entry with 409; one that has no entry
/// at all, not even a concluded one, was never submitted: 404 (docs/queue-semantics.md §1).
async fn not_found_if_never_submitted(
    app: &App,
    id: &QueueId,
    pr: PrNumber,
    applied: Result<Queue, ServiceError>,
) -> Result<(), ServiceError> {
    match applied {
        Ok(_) => Ok(()),
        Err(e) if e.is(ErrorCode::PullRequestNotActive) => {
            match app.store.load_entry(id, pr).await? {
                Some((_, None)) => Err(never_submitted(pr)),
                _ => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The latest entry of a pull request in the queue, active or concluded.
pub async fn submitted(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
) -> Result<SubmittedPullRequest, ServiceError> {
    crate::request_log::record_queue(id);
    let (owned, loaded) = tokio::join!(
        super::owners::check_queue(app, org, id),
        app.store.load_entry(id, pr)
    );
    owned?;
    let (queue, entry) = match loaded? {
        Some((queue, entry)) if &queue.org == org => (queue, entry),
        _ => return Err(DomainError::queue_not_found().into()),
    };
    let entry = entry.ok_or_else(|| never_submitted(pr))?;
    Ok(SubmittedPullRequest::of(&queue, &entry))
}

/// Records impacted targets for a pull request's head. An active entry takes them at once when
/// `sha` is the head it is queued with; otherwise `sha` must be the head the Git host reports
/// (else 409), and the targets wait for that head's submission (an entry queued with an
/// older head is cancelled for its new commits).
pub async fn set_impacted_targets(
    app: &App,
    org: &OrgId,
    upload: &TargetsUpload,
) -> Result<(), ServiceError> {
    let id = upload.target.id();
    let deadline = contention_deadline();
    let snapshot = drive::read(app, org, &id).await?;
    let active_head = snapshot
        .entry_for_pr(upload.pr)
        .map(|e| e.pr_facts.head_sha.clone());
    let mut moved_on = None;
    let head_sha = match (&upload.head_sha, &active_head) {
        (Some(given), Some(head)) if given.abbreviates(head) => head.clone(),
        (None, Some(head)) => head.clone(),
        (given, _) => {
            // No entry, or not the head its entry holds: the Git host says which head the
            // pull request has.
            let read = pr_facts(app.host()?, &snapshot.queue, upload.pr);
            let facts = read_by(deadline, read).await?;
            if let Some(given) = given.as_ref().filter(|g| !g.abbreviates(&facts.head_sha)) {
                return Err(sha_mismatch(upload.pr, given, &facts).into());
            }
            let head = facts.head_sha.clone();
            if active_head.is_some() {
                moved_on = Some(facts);
            }
            head
        }
    };
    let uploaded = UploadedTargets {
        head_sha: head_sha.clone(),
        targets: upload.targets.clone(),
        uploaded_at: app.now(),
    };
    if let Some(facts) = moved_on {
        // CI computed these targets for a head pushed after the one queued, whose push the
        // queue has not heard of (a delivery late or lost): the entry is cancelled for its
        // new commits, as that delivery would have, and the targets wait for the head's
        // submission.
        let start = Start::from(snapshot)
            .recording(vec![(upload.pr, uploaded)])
            .until(deadline);
        let update = [Event::PrUpdated { pr: facts }];
        drive::apply(app, Actor::ServiceFor(org), &id, &update, start).await?;
        return Ok(());
    }
    let event = Event::SetImpactedTargets {
        pr: upload.pr,
        head_sha: head_sha.clone(),
        targets: upload.targets.clone(),
    };
    if let Some(queue) = snapshot
        .entry_for_pr(upload.pr)
        .map(|_| snapshot.queue.clone())
    {
        // The entry and the record change together, or neither does.
        let start = Start::from(snapshot)
            .recording(vec![(upload.pr, uploaded.clone())])
            .until(deadline);
        let events = [event.clone()];
        match drive::apply(app, Actor::Org(org), &id, &events, start).await {
            // The entry ended meanwhile (cancelled, merged, failed): the targets are kept for
            // their head all the same, as for a pull request not in the queue, if it is still
            // the pull request's (a push may have ended the entry, its new head's targets
            // recorded since, which these must not replace).
            Err(e) if e.is(ErrorCode::PullRequestNotActive) => {
                let facts = read_by(deadline, pr_facts(app.host()?, &queue, upload.pr)).await?;
                if facts.head_sha != head_sha {
                    return Err(sha_mismatch(upload.pr, &head_sha, &facts).into());
                }
            }
            done => return done.map(|_| ()),
        }
    }
    keep_for_its_head(app, org, &id, upload.pr, &uploaded, event, deadline).await
}

/// Records targets uploaded for a pull request without an active entry, for its head's
/// submission. A submission committed meanwhile may have read the store before these targets
/// were there: its entry, if there is one now, is given them (see
/// `targets_uploaded_meanwhile`).
async fn keep_for_its_head(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    pr: PrNumber,
    uploaded: &UploadedTargets,
    event: Event,
    deadline: Instant,
) -> Result<(), ServiceError> {
    app.store.put_uploaded_targets(id, pr, uploaded).await?;
    let submitted = app.store.load_entry(id, pr).await?;
    if submitted.is_some_and(|(_, entry)| entry.is_some_and(|e| e.state.is_active())) {
        let start = Start::fresh().until(deadline);
        drive::apply(app, Actor::ServiceFor(org), id, &[event], start).await?;
    }
    Ok(())
}

/// A test run of the queue, active or finished.
pub async fn testing_details(
    app: &App,
    org: &OrgId,
    target: &QueueTarget,
    run_id: &str,
) -> Result<TestingDetails, ServiceError> {
    let id = target.id();
    crate::request_log::record_queue(&id);
    let (owned, loaded) = tokio::join!(
        super::owners::check_queue(app, org, &id),
        app.store.load_run(&id, run_id)
    );
    owned?;
    let (queue, run) = match loaded? {
        Some((queue, run)) if &queue.org == org => (queue, run),
        _ => return Err(DomainError::queue_not_found().into()),
    };
    let run = run.ok_or_else(|| {
        DomainError::not_found(
            ErrorCode::TestRunNotFound,
            format!("test run {run_id} not found in this queue"),
        )
    })?;
    Ok(TestingDetails::of(&queue, &run))
}

/// Whether every required status passed on the pull request's own head; read only where
/// direct merge may use it (`directMergeMode: always`).
pub async fn head_checks_passed(
    host: &dyn GitHost,
    queue: &Queue,
    pr: &PrFacts,
) -> Result<bool, ServiceError> {
    if queue.config.direct_merge_mode != DirectMergeMode::Always {
        return Ok(false);
    }
    let required = if queue.config.required_statuses.is_empty() {
        effects::without_own_status(host.required_statuses(&queue.repo, &queue.branch).await?)
            .contexts
    } else {
        queue.config.required_statuses.clone()
    };
    let checks = host.commit_checks(&queue.repo, &pr.head_sha).await?;
    let passed = |name: &String| {
        checks_verdict(&checks.statuses, &checks.check_runs, name) == Verdict::Passed
    };
    Ok(!required.is_empty() && required.iter().all(passed))
}

/// What the Git host says about a pull request now; 404 when it has no such pull request.
pub async fn pr_facts(
    host: &dyn GitHost,
    queue: &Queue,
    pr: PrNumber,
) -> Result<PrFacts, ServiceError> {
    match host.pull_request(&queue.repo, pr, &queue.branch).await {
        Ok(facts) => Ok(facts),
        Err(HostError::NotFound(_)) => Err(DomainError::not_found(
            ErrorCode::PullRequestNotFound,
            format!("pull request #{pr} not found in {}", queue.repo),
        )
        .into()),
        Err(e) => Err(e.into()),
    }
}

fn never_submitted(pr: PrNumber) -> ServiceError {
    DomainError::not_found(
        ErrorCode::PullRequestNotFound,
        format!("pull request #{pr} was never submitted to this queue"),
    )
    .into()
}

fn sha_mismatch(pr: PrNumber, given: &Sha, facts: &PrFacts) -> DomainError {
    DomainError::conflict(
        ErrorCode::ShaMismatch,
        format!(
            "pr.sha {given} is not the head of pull request #{pr} ({})",
            facts.head_sha.short()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{Clock, SystemClock};
    use mq_core::engine::CancelReason;
    use mq_core::priority::Priority;
    use mq_core::snapshot::MAX_RECENTLY_CONCLUDED;

    /// An empty running queue, as a submission reads it.
    async fn empty_queue() -> QueueSnapshot {
        let (_, queue) = crate::test_queue::acme_queue_in_memory().await;
        QueueSnapshot::new(queue)
    }

    fn submitted(pr: PrNumber) -> Event {
        Event::Submit {
            pr: PrFacts::sample(pr),
            priority: Priority::default_priority(),
            no_batch: None,
            force: false,
            head_checks_passed: false,
        }
    }

    fn cancelled(pr: PrNumber) -> Event {
        Event::Cancel {
            pr,
            reason: CancelReason::Api,
        }
    }

    /// `snapshot` after `events`, as other requests commit them.
    fn after(snapshot: &QueueSnapshot, events: &[Event]) -> QueueSnapshot {
        let now = SystemClock.now();
        apply_in_order(snapshot, events, now, false)
            .unwrap()
            .snapshot
    }

    /// Other pull requests submitted and concluded while a submission of #1 read the Git host
    /// leave its events valid: in a busy queue, a submission that had to read everything
    /// again whenever another pull request merged could keep doing so until its time ran out.
    #[tokio::test]
    async fn other_pull_requests_concluding_meanwhile_keep_a_submission_valid() {
        let read = after(&empty_queue().await, &[submitted(2)]);
        let seen = SubmissionBasis::of(&read.queue, None);
        let now = after(
            &read,
            &[submitted(3), cancelled(2), cancelled(3), submitted(4)],
        );
        assert!(seen.holds_in(&now, 1));
    }

    /// #1 itself submitted and concluded (merged, failed or cancelled) by another request
    /// meanwhile: the facts are read again.
    #[tokio::test]
    async fn the_same_pull_request_concluding_meanwhile_voids_a_submission() {
        let read = empty_queue().await;
        let seen = SubmissionBasis::of(&read.queue, None);
        let now = after(&read, &[submitted(2), submitted(1), cancelled(1)]);
        assert!(!seen.holds_in(&now, 1));
        let active = after(&read, &[submitted(1)]);
        assert!(!seen.holds_in(&active, 1), "now active");
    }

    /// With direct merges on, the target moving meanwhile voids a submission: whether the pull
    /// request is based on the target's head (and merges untested) was read for the old head.
    #[tokio::test]
    async fn with_direct_merges_the_target_moving_voids_a_submission() {
        let mut read = empty_queue().await;
        read.queue.config.direct_merge_mode = DirectMergeMode::Always;
        read.queue.engine.target_head = Some(Sha::new("a".repeat(40)));
        let seen = SubmissionBasis::of(&read.queue, None);
        let mut now = read.clone();
        assert!(seen.holds_in(&now, 1));
        now.queue.engine.target_head = Some(Sha::new("b".repeat(40)));
        assert!(!seen.holds_in(&now, 1));
        now.queue.config.direct_merge_mode = DirectMergeMode::Off;
        let off = SubmissionBasis::of(&now.queue, None);
        now.queue.engine.target_head = Some(Sha::new("c".repeat(40)));
        assert!(
            off.holds_in(&now, 1),
            "without direct merges the head is not read"
        );
    }

    /// More entries concluded meanwhile than the queue remembers: which pull requests they
    /// were is unknown, so the facts are read again.
    #[tokio::test]
    async fn more_conclusions_than_the_queue_remembers_void_a_submission() {
        let read = empty_queue().await;
        let seen = SubmissionBasis::of(&read.queue, None);
        let many = MAX_RECENTLY_CONCLUDED as PrNumber + 1;
        let events: Vec<Event> = (2..2 + many)
            .flat_map(|pr| [submitted(pr), cancelled(pr)])
            .collect();
        let now = after(&read, &events);
        assert_eq!(
            now.queue.engine.recently_concluded.len(),
            MAX_RECENTLY_CONCLUDED
        );
        assert!(!seen.holds_in(&now, 1));
        let fewer = after(&read, &events[2..]);
        assert!(seen.holds_in(&fewer, 1), "all remembered");
    }
}
