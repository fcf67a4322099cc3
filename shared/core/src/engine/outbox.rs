//! The outbox: results of executed effects, retries with backoff, and the tick.
//!
//! An effect stays in `snapshot.outbox` until its result is fed back. A transient failure
//! is retried by the tick after a backoff (1, 2, 4, ... minutes, at most an hour); after
//! [`MAX_ATTEMPTS`] failures, or a permanent one, the effect is dropped and its intent fails
//! (a test branch that cannot be created fails its run; a merge that cannot be done fails
//! its pull requests). A merge that failed too often, but not by a refusal, and that names
//! the target commit it expects (`Effect::can_be_told_not_landed`), may still have landed
//! (an attempt's answer lost, or cut at its deadline): it is not sent again, and its pull
//! requests fail only once the tick hears from the Git host that it did not land
//! ([`Work::merge_not_landed`]), or after [`GIVEN_UP_MERGE_WAIT_MS`] without an answer. The
//! tick also emits again effects whose lease ran out without an answer, except merges while
//! the queue is paused.

use super::failure::excerpt;
use super::work::{EFFECT_LEASE_MS, Work};
use super::{Effect, EffectOutcome, PendingEffect};
use crate::entry::{Entry, EntryState};
use crate::git::Mergeability;
use crate::run::RunStatus;
use crate::settings::MergeMethod;
use crate::time::Timestamp;

/// Failed executions after which an effect is given up.
pub const MAX_ATTEMPTS: u32 = 8;

/// A merge that failed [`MAX_ATTEMPTS`] times without being refused, kept in the outbox (never
/// sent again) until the Git host says whether it landed; its `next_attempt_at` is when it was
/// given up.
fn given_up(x: &PendingEffect) -> bool {
    x.attempts >= MAX_ATTEMPTS
}

/// How long a given-up merge waits for the Git host to say whether it landed (the App
/// uninstalled, the repository gone: the read keeps failing) before its pull requests fail:
/// meanwhile it holds the line.
pub const GIVEN_UP_MERGE_WAIT_MS: i64 = 24 * 60 * 60 * 1000;

/// The longest wait asked by the Git host that is honoured: GitHub's rate limits reset
/// within the hour.
pub const MAX_RETRY_AFTER_MS: i64 = 3_600_000;

impl Work {
    fn take_effect(&mut self, id: &str) -> Option<PendingEffect> {
        let i = self.s.outbox.iter().position(|x| x.id == id)?;
        Some(self.s.outbox.remove(i))
    }

    /// An effect was executed: apply what the Git host answered.
    pub fn effect_succeeded(&mut self, id: &str, outcome: &EffectOutcome) {
        let Some(done) = self.take_effect(id) else {
            return;
        };
        self.release_held(&done.effect);
        match (&done.effect, outcome) {
            (
                Effect::CreateTestBranch { run_id, branch, .. },
                EffectOutcome::BranchCreated {
                    sha,
                    base_sha,
                    required,
                },
            ) => {
                if self.s.run_in_progress(run_id) {
                    self.branch_created(run_id, sha, base_sha, required);
                } else {
                    self.emit(Effect::DeleteBranch {
                        branch: branch.clone(),
                    });
                }
            }
            (Effect::CreateTestBranch { run_id, .. }, EffectOutcome::BranchConflict { pr }) => {
                self.branch_conflict(run_id, *pr);
            }
            (Effect::CreateTestBranch { run_id, .. }, EffectOutcome::MergedOutside { pr }) => {
                self.merged_outside(run_id, *pr);
            }
            (
                Effect::Merge {
                    run_id,
                    prs,
                    expected_target_sha,
                    method,
                    tested_sha,
                },
                EffectOutcome::Merged { target_sha, tip },
            ) => {
                match run_id {
                    Some(_) => self.merged(prs, target_sha),
                    None => {
                        if let Some(p) = prs.first() {
                            self.direct_merged(p, target_sha);
                        }
                    }
                }
                let rewritten = *method != MergeMethod::MergeCommit && tested_sha.is_some();
                for pr in prs.iter().filter(|_| rewritten) {
                    self.emit(Effect::CloseLandedPullRequest { pr: pr.clone() });
                }
                // Pushed on top of the merge while it was in flight: as any push. A tip read
                // before the merge showed (the target as it was) is not one.
                let before = expected_target_sha.as_ref();
                if let Some(tip) = tip.as_ref().filter(|&t| Some(t) != before) {
                    self.target_moved_to(tip);
                }
            }
            (Effect::Merge { run_id, prs, .. }, EffectOutcome::MergeRefused { refusal, tip })
                if !prs.is_empty() =>
            {
                self.merge_refused(run_id.as_deref(), prs, refusal);
                // Pushed to while the merge was under way: as any push, now that no merge
                // holds it back (a group the refusal restarted restarts again, on the push).
                if let Some(tip) = tip {
                    self.target_moved(tip);
                }
            }
            (Effect::RefreshPullRequest { .. }, EffectOutcome::PullRequest { pr }) => {
                // A read emitted before the pull request's entry was submitted was for an
                // earlier entry, and may be older than the submission, which read it itself:
                // it would cancel the new entry for commits it already has.
                let newer = self
                    .entry(pr.number)
                    .is_some_and(|e| e.submitted_at > done.created_at);
                if !newer {
                    self.pr_updated(pr);
                }
            }
            (
                Effect::FetchChecks { run_id, sha },
                EffectOutcome::Checks {
                    statuses,
                    check_runs,
                },
            ) if self
                .run(run_id)
                .is_some_and(|r| r.sha.as_ref() == Some(sha)) =>
            {
                self.checks_fetched(run_id, statuses, check_runs);
            }
            _ => {}
        }
    }

    /// An effect could not be executed; the Git host asked to wait `retry_after_ms`, if it
    /// said (a rate limit: retried before its reset, the attempt would fail again and bring
    /// the effect nearer to being given up).
    pub fn effect_failed(
        &mut self,
        id: &str,
        error: &str,
        permanent: bool,
        retry_after_ms: Option<i64>,
    ) {
        let Some(x) = self.s.outbox.iter_mut().find(|x| x.id == id) else {
            return;
        };
        x.attempts += 1;
        x.last_error = Some(error.chars().take(500).collect());
        if !permanent && x.attempts < MAX_ATTEMPTS {
            let asked = retry_after_ms.unwrap_or(0).clamp(0, MAX_RETRY_AFTER_MS);
            let backoff = backoff_ms(x.attempts) - RETRY_EARLY_MS;
            x.next_attempt_at = self.now.plus_millis(backoff.max(asked));
            return;
        }
        if !permanent && x.effect.can_be_told_not_landed() {
            if x.attempts == MAX_ATTEMPTS {
                x.next_attempt_at = self.now;
            }
            return;
        }
        self.give_up(id, error);
    }

    /// Takes effect `id` out of the outbox for good, its intent failing with the Git host's
    /// `error`.
    fn give_up(&mut self, id: &str, error: &str) {
        let Some(given_up) = self.take_effect(id) else {
            return;
        };
        self.release_held(&given_up.effect);
        match given_up.effect {
            Effect::CreateTestBranch { run_id, .. } => {
                self.branch_failed(&run_id, excerpt(error, MAX_HOST_ANSWER_CHARS));
            }
            // CI that runs only on pull requests would never test the branch: the run would
            // wait for the testing timeout, and fail without saying why.
            Effect::OpenTestPullRequest { run_id, .. } => {
                let answer = excerpt(error, MAX_HOST_ANSWER_CHARS);
                let why = format!(
                    "the Git host did not open its pull request (createPrsForTestingBranches): \
                     {answer}"
                );
                self.branch_failed(&run_id, why);
            }
            Effect::Merge { prs, .. } => {
                self.merge_failed(&prs, &excerpt(error, MAX_HOST_ANSWER_CHARS));
            }
            _ => {}
        }
    }

    /// A merge not sent because its queue was paused ([`super::Event::MergeWithdrawn`]) leaves
    /// the outbox, unless the queue may merge again by now, or the merge may have been sent
    /// before: handed out again after its first lease (an execution whose answer was lost,
    /// or a failed attempt), it may have landed, and its retry asks the Git host first. A
    /// group's merge is emitted again when the queue runs; a direct merge's pull request goes
    /// back to `pending`, to be tested or merged directly again then.
    pub fn merge_withdrawn(&mut self, id: &str) {
        let first_lease = |x: &PendingEffect| {
            x.attempts == 0 && x.next_attempt_at == x.created_at.plus_millis(EFFECT_LEASE_MS)
        };
        let in_first_lease = self.s.outbox.iter().any(|x| x.id == id && first_lease(x));
        if in_first_lease {
            self.withdraw_merge(id);
        }
    }

    /// The Git host said, at `read_at`, that the merge `id` had not landed
    /// ([`super::Event::MergeNotLanded`]). While the queue is paused the tick does not send
    /// merges, and one whose step came before the pause but that was never sent (the request
    /// ran out of time, or died) would otherwise hold the line for the whole pause: its pull
    /// requests could not be cancelled, pushes to the target would wait for it. Withdrawn when
    /// nothing could have been sending it at `read_at` (its lease, or its wait before a
    /// retry, was over: an execution stops before its lease ends), so it is not on the target
    /// and will not be.
    ///
    /// A merge given up after [`MAX_ATTEMPTS`] failures, never sent again, fails its pull
    /// requests then, with the Git host's last answer.
    pub fn merge_not_landed(&mut self, id: &str, read_at: Timestamp) {
        if let Some(x) = self.s.outbox.iter().find(|x| x.id == id && given_up(x)) {
            let answer = x.last_error.clone().unwrap_or_default();
            self.give_up(id, &answer);
            return;
        }
        let idle = self
            .s
            .outbox
            .iter()
            .any(|x| x.id == id && x.next_attempt_at <= read_at);
        if idle {
            self.withdraw_merge(id);
        }
    }

    /// Takes the merge `id` out of the outbox while the queue is paused: a group's merge is
    /// emitted again when the queue runs, with the merge method set then (a group sent with
    /// another is judged as a change of method judges the others: under `merge_commit`, one
    /// that may not hold the target's tip is tested again); a direct merge's pull request goes
    /// back to `pending`.
    fn withdraw_merge(&mut self, id: &str) {
        let merge = self.s.outbox.iter().find(|x| x.id == id);
        let Some(Effect::Merge {
            run_id,
            prs,
            method,
            ..
        }) = merge.map(|x| x.effect.clone())
        else {
            return;
        };
        if self.can_merge() {
            return;
        }
        self.take_effect(id);
        if run_id.is_none() {
            for pr in prs {
                self.set_state(pr.pr, EntryState::Pending);
            }
        } else if method != self.cfg().merge_method {
            self.merge_method_changed();
        }
    }

    /// A run in progress whose test branch could not be made ready for CI fails
    /// (`test_branch_error`), its pull requests told `why`.
    fn branch_failed(&mut self, run_id: &str, why: String) {
        let live = self
            .run(run_id)
            .is_some_and(|r| r.status == RunStatus::InProgress);
        if !live {
            return;
        }
        if let Some(run) = self.run_mut(run_id) {
            run.host_error = Some(why);
        }
        self.run_failed(run_id, super::reason::BRANCH_ERROR);
    }

    /// The schedule: effects due again, timeouts, refreshes of pull requests not ready yet.
    /// Batching waits end in the settling that follows.
    pub fn tick(&mut self) {
        self.fail_merges_never_found();
        self.emit_due_effects();
        self.rebuild_lost_branches();
        self.expire_runs();
        self.refresh_waiting_pull_requests();
    }

    /// Given-up merges the Git host has not said anything about for
    /// [`GIVEN_UP_MERGE_WAIT_MS`] fail their pull requests, with the host's last answer.
    fn fail_merges_never_found(&mut self) {
        let now = self.now;
        let expired: Vec<String> = (self.s.outbox.iter())
            .filter(|x| given_up(x) && x.next_attempt_at.plus_millis(GIVEN_UP_MERGE_WAIT_MS) <= now)
            .map(|x| x.id.clone())
            .collect();
        for id in expired {
            self.merge_not_landed(&id, now);
        }
    }

    /// Runs in progress that have no branch and nothing building one (its creation's intent
    /// was lost) have it built again: the same commits, their merge commits being stamped.
    fn rebuild_lost_branches(&mut self) {
        let building: Vec<String> = self
            .s
            .outbox
            .iter()
            .filter_map(|x| match &x.effect {
                Effect::CreateTestBranch { run_id, .. } => Some(run_id.clone()),
                _ => None,
            })
            .collect();
        let lost: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::InProgress && !r.held && r.sha.is_none())
            .filter(|r| !building.contains(&r.id))
            .map(|r| r.id.clone())
            .collect();
        for id in lost {
            self.request_branch(&id);
        }
    }

    fn emit_due_effects(&mut self) {
        let now = self.now;
        let paused = !self.can_merge();
        let mut stale = Vec::new();
        let mut superseded = Vec::new();
        for i in 0..self.s.outbox.len() {
            let x = &self.s.outbox[i];
            let waits =
                x.held || given_up(x) || (paused && matches!(x.effect, Effect::Merge { .. }));
            if x.next_attempt_at > now || waits {
                continue;
            }
            if let Some(run_id) = x.effect.work_of_run()
                && !self.s.run_in_progress(run_id)
            {
                stale.push(x.id.clone());
                continue;
            }
            if self.superseded(x) {
                superseded.push(x.id.clone());
                continue;
            }
            let lease = EFFECT_LEASE_MS.max(backoff_ms(x.attempts));
            let x = &mut self.s.outbox[i];
            x.next_attempt_at = now.plus_millis(lease);
            self.effects.push(x.clone());
        }
        for id in stale {
            if let Some(instead) = self
                .take_effect(&id)
                .and_then(|x| x.effect.once_its_run_is_gone())
            {
                self.emit(instead);
            }
        }
        for id in superseded {
            if let Some(done) = self.take_effect(&id) {
                self.release_held(&done.effect);
            }
        }
    }

    /// A notification whose lease ran out while a newer one of the same pull request waits
    /// behind it: executing it again could only show the pull request an older state, so it
    /// is dropped and the newer one goes instead.
    fn superseded(&self, x: &PendingEffect) -> bool {
        let key = x.effect.notice_key();
        key.is_some()
            && self
                .s
                .outbox
                .iter()
                .any(|y| y.held && y.effect.notice_key() == key)
    }

    /// Pull requests not ready are read again: the webhook delivery that says they changed
    /// (ready for review, approved, closed, pushed to, the conflict resolved) may never come,
    /// as GitHub does not send a failed delivery again. One not ready because of its own state
    /// (a draft, reviews that do not approve it, a conflict or a mergeability still unknown,
    /// another base) is read at every tick for its first [`READ_EVERY_TICK_MS`] waiting (and
    /// while its mergeability is being computed), then at one tick in
    /// [`READ_EVERY_NTH_TICK`] (spread over the ticks by pull request number): a pull request
    /// waiting days for its reviews costs a few reads an hour, not one a minute, against the
    /// Git host's rate limits. One waiting only for its impacted targets (parallel mode),
    /// which CI uploads, is read at the slower pace only, so that a close or push whose
    /// delivery was lost still takes it out of the queue.
    fn refresh_waiting_pull_requests(&mut self) {
        let branch = &self.s.queue.branch;
        let now = self.now;
        let waiting: Vec<_> = self
            .s
            .entries
            .iter()
            .filter(|e| e.state == EntryState::NotReady)
            .filter(|e| {
                let facts = &e.pr_facts;
                let on_itself = !facts.ready_to_merge()
                    || facts.mergeability != Mergeability::Mergeable
                    || &facts.base_branch != branch;
                due_for_reading(e, now, on_itself)
            })
            .map(|e| e.pr)
            .collect();
        for pr in waiting {
            let asked = self
                .s
                .outbox
                .iter()
                .any(|x| x.effect == Effect::RefreshPullRequest { pr });
            if !asked {
                self.emit(Effect::RefreshPullRequest { pr });
            }
        }
    }
}

/// How long a pull request waiting on its own state is read at every tick.
pub const READ_EVERY_TICK_MS: i64 = 10 * 60_000;

/// Past [`READ_EVERY_TICK_MS`], a waiting pull request is read at one tick (minute) in this
/// many.
pub const READ_EVERY_NTH_TICK: i64 = 10;

/// Whether the tick at `now` reads the waiting entry `e` again (waiting `on_itself`, or only
/// for its impacted targets): one waiting on itself for the Git host to compute its
/// mergeability always is.
fn due_for_reading(e: &Entry, now: Timestamp, on_itself: bool) -> bool {
    let fresh = now.millis_since(e.state_changed_at) < READ_EVERY_TICK_MS;
    let computing = e.pr_facts.mergeability == Mergeability::InProgress;
    let minute = now.millis().div_euclid(60_000);
    let its_minute = (minute + i64::from(e.pr)).rem_euclid(READ_EVERY_NTH_TICK) == 0;
    (on_itself && (fresh || computing)) || its_minute
}

/// How much before its back-off is over a failed effect is due again. The tick runs once a
/// minute and retries what is due when it starts; an effect that failed some seconds into a
/// tick (or a request) would otherwise miss the tick a minute later by those seconds, and wait
/// a minute more than its back-off. The wait the Git host asked for is never shortened.
const RETRY_EARLY_MS: i64 = 30_000;

/// 1, 2, 4, ... minutes after the n-th failure, at most an hour.
pub fn backoff_ms(attempts: u32) -> i64 {
    let minutes = 1i64 << attempts.saturating_sub(1).min(6);
    minutes.min(60) * 60_000
}

/// How much of the Git host's answer to an effect given up on a pull request is told.
const MAX_HOST_ANSWER_CHARS: usize = 300;
