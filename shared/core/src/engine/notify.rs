//! What the queue tells a pull request: its comment (when `commentsEnabled`) and its status
//! check (when `statusCheckEnabled`), on submission, when testing starts (in a new run, also
//! on a restart), when it goes back to waiting in line, and at the end. The comment is one per
//! pull request, updated in place, so each of these replaces the last. What the queue began
//! saying of an entry it finishes saying, whatever the settings are by its end: a status it set
//! pending is set passed, failed or cancelled, and its comment says how the entry ended.
//!
//! With `createPrsForTestingBranches`, each run's test branch also gets a draft pull request
//! into the target once the branch exists (CI systems that only run on pull requests then test
//! it), closed when the run has its result or leaves the queue.

use super::Effect;
use super::work::Work;
use crate::entry::{Entry, EntryState};
use crate::git::StatusState;
use crate::ids::PrNumber;

impl Work {
    /// Submitted, or back to waiting in line (a restart without a free slot, a split of its
    /// batch that passed).
    pub fn notify_queued(&mut self, pr: PrNumber) {
        let Some(e) = self.entry(pr) else { return };
        let body = format!(
            "Queued for merging into `{}` (priority {}).",
            self.s.queue.branch,
            e.priority.name()
        );
        let sha = e.pr_facts.head_sha.clone();
        self.comment(pr, body);
        self.pending_status(pr, sha, "Queued".to_owned());
    }

    /// `pr` stops testing and waits in line again, and is told so. Whether it is still ready is
    /// judged again: what the Git host said of it while it was tested (a draft, a conflict)
    /// was kept aside until now.
    pub fn back_in_line(&mut self, pr: PrNumber) {
        self.set_state(pr, EntryState::Pending);
        self.notify_queued(pr);
        self.readiness_stale = true;
    }

    pub fn notify_testing(&mut self, pr: PrNumber) {
        let Some(e) = self.entry(pr) else { return };
        let sha = e.pr_facts.head_sha.clone();
        let run = e.current_run.clone().unwrap_or_default();
        let body = format!(
            "Testing in run `{run}` for merging into `{}`.",
            self.s.queue.branch
        );
        self.comment(pr, body);
        self.pending_status(pr, sha, format!("Testing in run {run}"));
    }

    pub fn notify_concluded(&mut self, e: &Entry) {
        let branch = self.s.queue.branch.clone();
        // The sentences below end the detail with a full stop of their own.
        let detail = e
            .conclusion
            .as_ref()
            .map(|c| c.detail.trim_end_matches('.').to_owned())
            .unwrap_or_default();
        let merged_outside = e
            .conclusion
            .as_ref()
            .is_some_and(|c| c.reason == super::reason::PR_MERGED);
        let (state, words) = match e.state {
            EntryState::Merged => (StatusState::Success, format!("Merged into `{branch}`.")),
            // Not a failure: the pull request is merged, by someone else.
            _ if merged_outside => (
                StatusState::Success,
                format!("Left the queue for `{branch}`: {detail}."),
            ),
            EntryState::Failed => (
                StatusState::Failure,
                format!("Removed from the queue for `{branch}`: {detail}."),
            ),
            _ => (
                StatusState::Error,
                format!("Cancelled in the queue for `{branch}`: {detail}."),
            ),
        };
        let words = match &e.last_run {
            Some(run) => format!("{words} Last tested in run `{run}`."),
            None => words,
        };
        let short = match e.state {
            EntryState::Merged => "Merged".to_owned(),
            _ if merged_outside => "Merged outside the queue".to_owned(),
            EntryState::Failed => "Failed".to_owned(),
            _ => "Cancelled".to_owned(),
        };
        if self.cfg().comments_enabled || e.commented {
            self.notify(Effect::PostComment {
                pr: e.pr,
                body: words,
            });
        }
        if self.cfg().status_check_enabled || e.status_pending {
            self.notify(Effect::SetStatusCheck {
                pr: e.pr,
                sha: e.pr_facts.head_sha.clone(),
                state,
                description: short,
            });
        }
    }

    /// Opens the draft pull request of a run whose branch was just created, if the queue asks
    /// for one.
    pub fn open_test_pull_request(&mut self, run_id: &str) {
        if !self.cfg().create_prs_for_testing_branches {
            return;
        }
        let target = self.s.queue.branch.clone();
        let Some(run) = self.run(run_id) else { return };
        let list = |prs: &mut dyn Iterator<Item = PrNumber>| {
            prs.map(|pr| format!("#{pr}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let tested = list(&mut run.tested.iter().map(|t| t.pr));
        let ahead = list(&mut run.dependent_prs.iter().copied());
        let title = format!("[merge queue] {tested} into {target} (run {run_id})");
        let on_top = if ahead.is_empty() {
            format!("`{target}`")
        } else {
            format!("`{target}` with {ahead} ahead of it")
        };
        let body = format!(
            "The merge queue opened this draft pull request so that CI tests its run `{run_id}`: \
             {tested} on top of {on_top}.\n\nThe queue closes it when the run ends. \
             Do not merge it."
        );
        let effect = Effect::OpenTestPullRequest {
            run_id: run_id.to_owned(),
            branch: run.branch.clone(),
            title,
            body,
        };
        if let Some(run) = self.run_mut(run_id) {
            run.test_pull_request = true;
        }
        self.emit(effect);
    }

    /// Closes a run's draft pull request, if it has one open.
    pub fn close_test_pull_request(&mut self, run_id: &str) {
        let Some(run) = self.run_mut(run_id) else {
            return;
        };
        if !std::mem::take(&mut run.test_pull_request) {
            return;
        }
        let branch = run.branch.clone();
        self.emit(Effect::CloseTestPullRequest {
            run_id: run_id.to_owned(),
            branch,
        });
    }

    fn comment(&mut self, pr: PrNumber, body: String) {
        if self.cfg().comments_enabled {
            self.notify(Effect::PostComment { pr, body });
            if let Some(e) = self.entry_mut(pr) {
                e.commented = true;
            }
        }
    }

    fn pending_status(&mut self, pr: PrNumber, sha: crate::ids::Sha, description: String) {
        if self.cfg().status_check_enabled {
            self.notify(Effect::SetStatusCheck {
                pr,
                sha,
                state: StatusState::Pending,
                description,
            });
            if let Some(e) = self.entry_mut(pr) {
                e.status_pending = true;
            }
        }
    }
}
