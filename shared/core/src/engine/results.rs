//! What CI says about a run: the branch's creation, required statuses and where they come
//! from (docs/queue-semantics.md §8), statuses and check runs folded into pass, fail or pending,
//! timeouts.

use super::reason;
use super::work::Work;
use crate::entry::EntryState;
use crate::git::{
    CheckRunReport, CheckStatus, RequiredStatuses, RequiredStatusesSource, StatusReport,
    StatusState, Verdict,
};
use crate::ids::{PrNumber, Sha};
use crate::run::{RunKind, RunStatus, TestRun};
use std::collections::BTreeMap;

/// Pushes by someone else found on one run's branch: the last fails the run, the ones before
/// are discarded by building the branch again.
pub const MAX_PUSHES_DISCARDED: u32 = 3;

impl Work {
    /// Main runs whose branch conflicted and whose failure is not decided yet: each keeps its
    /// testing slot, as a group built on top of it would only conflict again.
    pub fn conflicted_waiting(&self) -> usize {
        self.s
            .runs
            .iter()
            .filter(|r| {
                r.kind == RunKind::Main
                    && r.status == RunStatus::Failed
                    && r.reason.as_deref() == Some(reason::MERGE_CONFLICT)
            })
            .count()
    }

    /// The pull requests of run `run_id`, whose test branch was just pushed, take one more CI
    /// run (`ciRuns`): a run that never got its branch (a restart held for a slot and
    /// replaced, a conflict) set off no CI.
    fn count_ci_run(&mut self, run_id: &str) {
        let Some(run) = self.run(run_id) else { return };
        for pr in self.active_prs(run) {
            if let Some(e) = self.entry_mut(pr) {
                e.ci_runs += 1;
            }
        }
    }

    /// The test branch exists: record its tip and resolve the required statuses.
    pub fn branch_created(
        &mut self,
        run_id: &str,
        sha: &Sha,
        base_sha: &Sha,
        required: &RequiredStatuses,
    ) {
        let own = self.cfg().required_statuses.clone();
        if self.s.queue.engine.target_head.is_none() {
            self.s.queue.engine.target_head = Some(base_sha.clone());
        }
        let now = self.now;
        let Some(run) = self.run_mut(run_id) else {
            return;
        };
        if run.status != RunStatus::InProgress || run.sha.is_some() {
            return;
        }
        run.sha = Some(sha.clone());
        run.base_sha = Some(base_sha.clone());
        // A branch built again (someone pushed to it, or deleted it) keeps its first start:
        // the testing timeout is not put off by whoever keeps doing so.
        let first_build = run.started_at.is_none();
        run.started_at.get_or_insert(now);
        run.required = Some(if own.is_empty() {
            required.clone()
        } else {
            RequiredStatuses {
                contexts: own,
                source: Some(RequiredStatusesSource::MergeInstance),
            }
        });
        let none = run.required.as_ref().is_none_or(|r| r.contexts.is_empty());
        if first_build {
            self.count_ci_run(run_id);
        }
        if none {
            self.run_failed(run_id, reason::NO_REQUIRED_STATUSES);
            return;
        }
        self.open_test_pull_request(run_id);
        self.emit(super::Effect::FetchChecks {
            run_id: run_id.to_owned(),
            sha: sha.clone(),
        });
    }

    /// What a run's branch points at now. A run whose branch is gone, or points at a commit
    /// other than the one the run recorded (someone, a bot or a person, pushed to it), has it
    /// built again: the same commits, since merge commits are stamped. A commit the queue did
    /// not build is not what the pull requests were reviewed as, and never lands. The
    /// [`MAX_PUSHES_DISCARDED`]th push or deletion found fails the run (`test_branch_pushed`):
    /// a tool that pushes to every branch, or deletes branches it takes for stale, would
    /// otherwise keep it building until it timed out, saying nothing of why.
    pub fn branch_observed(&mut self, run_id: &str, sha: Option<&Sha>) {
        let Some(run) = self.run(run_id) else { return };
        if run.status != RunStatus::InProgress || run.held || run.sha.is_none() {
            return;
        }
        let building = self.s.outbox.iter().any(|x| {
            matches!(&x.effect, super::Effect::CreateTestBranch { run_id: id, .. } if id == run_id)
        });
        if building || sha.is_some_and(|sha| run.sha.as_ref() == Some(sha)) {
            return;
        }
        if self.push_discarded(run_id) >= MAX_PUSHES_DISCARDED {
            self.run_failed(run_id, reason::BRANCH_PUSHED);
            return;
        }
        if let Some(run) = self.run_mut(run_id) {
            run.sha = None;
            run.statuses.clear();
            run.check_runs.clear();
        }
        self.request_branch(run_id);
    }

    /// Counts a push by someone else, or a deletion, found on a run's branch; those so far.
    fn push_discarded(&mut self, run_id: &str) -> u32 {
        let Some(run) = self.run_mut(run_id) else {
            return 0;
        };
        run.pushes_discarded += 1;
        run.pushes_discarded
    }

    /// The Git host could not merge `pr` into the test branch.
    pub fn branch_conflict(&mut self, run_id: &str, _pr: PrNumber) {
        if self
            .run(run_id)
            .is_some_and(|r| r.status == RunStatus::InProgress)
        {
            self.run_failed(run_id, reason::MERGE_CONFLICT);
        }
    }

    /// Building run `run_id`'s branch found `pr`'s head already on the target: it was merged
    /// outside the queue, as the Git host says too once its delivery comes (a push to the
    /// target may be handled first, restarting the groups holding it). Its entry is cancelled
    /// (`pr_merged`), as that delivery would, and its groups restart without it, rather than
    /// the run failing for a branch that could not be built.
    pub fn merged_outside(&mut self, run_id: &str, pr: PrNumber) {
        if self.s.run_in_progress(run_id) && self.entry(pr).is_some() {
            self.cancel_as(pr, super::reason::PR_MERGED);
        }
    }

    /// A commit status arrived for `sha`.
    pub fn status_reported(&mut self, sha: &Sha, status: &StatusReport) {
        self.record_on_live_run(sha, |run| record_status(run, status));
    }

    /// A check run arrived for `sha`.
    pub fn check_reported(&mut self, sha: &Sha, check: &CheckRunReport) {
        self.record_on_live_run(sha, |run| record_check(run, check));
    }

    /// Records a report on the live run whose branch is at `sha` and evaluates the run; a
    /// report for any other commit changes nothing.
    fn record_on_live_run(&mut self, sha: &Sha, record: impl FnOnce(&mut TestRun)) {
        let Some(id) = self.live_run_with_sha(sha) else {
            return;
        };
        if let Some(run) = self.run_mut(&id) {
            record(run);
        }
        self.evaluate(&id);
    }

    /// What CI had already reported when the branch became known.
    pub fn checks_fetched(
        &mut self,
        run_id: &str,
        statuses: &[StatusReport],
        checks: &[CheckRunReport],
    ) {
        let Some(run) = self.run_mut(run_id) else {
            return;
        };
        if run.status != RunStatus::InProgress {
            return;
        }
        for s in statuses {
            record_status(run, s);
        }
        for c in checks {
            record_check(run, c);
        }
        self.evaluate(run_id);
    }

    fn live_run_with_sha(&self, sha: &Sha) -> Option<String> {
        self.s
            .runs
            .iter()
            .find(|r| r.status == RunStatus::InProgress && r.sha.as_ref() == Some(sha))
            .map(|r| r.id.clone())
    }

    /// The queue's own list of required statuses changed: every run in progress whose branch
    /// exists requires it from now on (it wins over the repository's sources, as it does for
    /// runs built later) and is decided again on the results it has, and on those CI reported
    /// that it did not keep (a run keeps a bounded number of reports of names it does not
    /// require), read again from the host. A deleted list leaves runs with what they require:
    /// the repository's sources are read when a branch is built.
    pub fn required_statuses_changed(&mut self) {
        let own = self.cfg().required_statuses.clone();
        if own.is_empty() {
            return;
        }
        let required = RequiredStatuses {
            contexts: own,
            source: Some(RequiredStatusesSource::MergeInstance),
        };
        let runs: Vec<String> = self
            .s
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::InProgress && r.required.is_some())
            .map(|r| r.id.clone())
            .collect();
        for id in &runs {
            let Some(run) = self.run_mut(id) else {
                continue;
            };
            run.required = Some(required.clone());
            let sha = run.sha.clone();
            self.evaluate(id);
            let live = self
                .run(id)
                .is_some_and(|r| r.status == RunStatus::InProgress);
            let fetch = sha.map(|sha| super::Effect::FetchChecks {
                run_id: id.clone(),
                sha,
            });
            if let Some(fetch) =
                fetch.filter(|f| live && !self.s.outbox.iter().any(|x| x.effect == *f))
            {
                self.emit(fetch);
            }
        }
    }

    /// Decides a run once every required status passed, or one failed.
    fn evaluate(&mut self, run_id: &str) {
        let verdict = match self.run(run_id) {
            Some(run) if run.status == RunStatus::InProgress => run_verdict(run),
            _ => return,
        };
        match verdict {
            Verdict::Passed => self.run_passed(run_id),
            Verdict::Failed => self.run_failed(run_id, reason::TESTS_FAILED),
            Verdict::Pending => {}
        }
    }

    fn run_passed(&mut self, run_id: &str) {
        let Some((kind, prs)) = self.finish_run(run_id, RunStatus::Succeeded, None) else {
            return;
        };
        match kind {
            RunKind::Main => {
                self.note_passed_heads(run_id);
                for pr in prs {
                    self.set_state(pr, EntryState::TestsPassed);
                }
            }
            RunKind::Bisection => self.split_passed(run_id),
        }
    }

    /// A run failed (a required status failed, the branch conflicted, no statuses are
    /// required, or it timed out): its group waits in `pending_failure`.
    pub fn run_failed(&mut self, run_id: &str, why: &str) {
        let Some((kind, prs)) = self.finish_run(run_id, RunStatus::Failed, Some(why)) else {
            return;
        };
        match kind {
            RunKind::Main => {
                for pr in prs {
                    self.set_state(pr, EntryState::PendingFailure);
                }
            }
            RunKind::Bisection => self.split_failed(run_id),
        }
    }

    /// Records a run's result (its status, end and the reason of a failure) and closes its
    /// draft pull request; the run's kind and the pull requests it tested, `None` when the
    /// run is gone.
    fn finish_run(
        &mut self,
        run_id: &str,
        status: RunStatus,
        why: Option<&str>,
    ) -> Option<(RunKind, Vec<PrNumber>)> {
        let now = self.now;
        let run = self.run_mut(run_id)?;
        run.status = status;
        run.finished_at = Some(now);
        if let Some(why) = why {
            run.reason = Some(why.to_owned());
        }
        let finished: (RunKind, Vec<PrNumber>) =
            (run.kind, run.tested.iter().map(|t| t.pr).collect());
        if finished.0 == RunKind::Main {
            // Tested again to a result: no longer only with the split they passed in.
            for &pr in &finished.1 {
                if let Some(e) = self.entry_mut(pr) {
                    e.passed_split = None;
                }
            }
        }
        self.close_test_pull_request(run_id);
        Some(finished)
    }

    /// Runs in progress `testingTimeoutMinutes` after their test branch was built (CI's time:
    /// the building of the branch, retried while the Git host fails, is bounded on its own)
    /// are cancelled and count as failures.
    pub fn expire_runs(&mut self) {
        let limit = self.cfg().testing_timeout_minutes;
        let expired: Vec<(String, String)> = self
            .s
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::InProgress && !r.held)
            .filter(|r| (r.started_at).is_some_and(|at| self.now >= at.plus_minutes(limit)))
            .map(|r| (r.id.clone(), r.branch.clone()))
            .collect();
        for (id, branch) in expired {
            self.emit(super::Effect::CancelRun {
                run_id: id.clone(),
                branch,
            });
            self.run_failed(&id, reason::TIMEOUT);
        }
    }
}

/// How many reports (statuses, or check runs) of names the run does not require it keeps, for
/// the dashboard's links: CI that reports thousands of names on a commit must not grow the
/// run past what one stored item holds. Reports of required names are always kept.
pub const MAX_OTHER_REPORTS: usize = 50;

/// Whether a first report of `name` is kept: a required name always is, another while fewer
/// than [`MAX_OTHER_REPORTS`] others are kept.
fn keeps_new<'a>(run: &TestRun, name: &str, names: impl Iterator<Item = &'a str>) -> bool {
    let required = |n: &str| {
        run.required
            .as_ref()
            .is_some_and(|r| r.contexts.iter().any(|c| c == n))
    };
    required(name) || names.filter(|n| !required(n)).count() < MAX_OTHER_REPORTS
}

/// Keeps the latest status per context. Times are whole seconds: of two reports of the same
/// second, delivered in either order, a result wins over `pending` (a bot that sets pending
/// then success within a second).
fn record_status(run: &mut TestRun, status: &StatusReport) {
    let order = |s: &StatusReport| (s.updated_at, s.state != StatusState::Pending);
    match run
        .statuses
        .iter_mut()
        .find(|s| s.context == status.context)
    {
        Some(old) if order(old) <= order(status) => *old = status.clone(),
        Some(_) => {}
        None => {
            let names = run.statuses.iter().map(|s| s.context.as_str());
            if keeps_new(run, &status.context, names) {
                run.statuses.push(status.clone());
            }
        }
    }
}

/// Keeps, per check suite and name, the latest check run (by update time, then id; of the
/// same check run in the same second, a completed report wins over one delivered late that
/// says it is queued or in progress): the only one a verdict reads ([`checks_verdict`]). So a
/// run holds one report per name and suite however often its checks are re-run, and its item
/// stays within DynamoDB's size limit.
fn record_check(run: &mut TestRun, check: &CheckRunReport) {
    let same = |c: &&mut CheckRunReport| c.suite_id == check.suite_id && c.name == check.name;
    let order = |c: &CheckRunReport| (c.updated_at, c.id, c.status == CheckStatus::Completed);
    match run.check_runs.iter_mut().find(same) {
        Some(old) if order(old) <= order(check) => {
            *old = check.clone();
        }
        Some(_) => {}
        None => {
            let names = run.check_runs.iter().map(|c| c.name.as_str());
            if keeps_new(run, &check.name, names) {
                run.check_runs.push(check.clone());
            }
        }
    }
}

/// A run passes when every required status passed, fails when one failed.
pub fn run_verdict(run: &TestRun) -> Verdict {
    let Some(required) = &run.required else {
        return Verdict::Pending;
    };
    let mut pending = false;
    for name in &required.contexts {
        match required_verdict(run, name) {
            Verdict::Failed => return Verdict::Failed,
            Verdict::Pending => pending = true,
            Verdict::Passed => {}
        }
    }
    if pending {
        Verdict::Pending
    } else {
        Verdict::Passed
    }
}

/// One required name of a run: [`checks_verdict`] of its statuses and check runs.
pub fn required_verdict(run: &TestRun, name: &str) -> Verdict {
    checks_verdict(&run.statuses, &run.check_runs, name)
}

/// One required name: the latest commit status with that context, and in each check suite
/// the latest check run with that name (a re-run replaces the attempt before it in its
/// suite; two workflows, or two apps, each report their own). A failure of any fails; all of
/// them (at least one) passing passes.
pub fn checks_verdict(
    statuses: &[StatusReport],
    check_runs: &[CheckRunReport],
    name: &str,
) -> Verdict {
    let status = statuses
        .iter()
        .filter(|s| s.context == name)
        .max_by_key(|s| s.updated_at)
        .map(|s| s.state.verdict());
    let mut latest_per_suite: BTreeMap<u64, &CheckRunReport> = BTreeMap::new();
    for check in check_runs.iter().filter(|c| c.name == name) {
        let latest = latest_per_suite.entry(check.suite_id).or_insert(check);
        if (check.updated_at, check.id) > (latest.updated_at, latest.id) {
            *latest = check;
        }
    }
    let checks = latest_per_suite.into_values().map(CheckRunReport::verdict);
    let found: Vec<Verdict> = status.into_iter().chain(checks).collect();
    if found.contains(&Verdict::Failed) {
        Verdict::Failed
    } else if !found.is_empty() && found.iter().all(|v| *v == Verdict::Passed) {
        Verdict::Passed
    } else {
        Verdict::Pending
    }
}
