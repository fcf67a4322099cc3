//! What the queue tells a pull request: its comment (when `commentsEnabled`) and its status
//! check (when `statusCheckEnabled`), on submission, when testing starts, and at the end. The
//! comment is one per pull request, updated in place, so each of these replaces the last.

use super::Effect;
use super::work::Work;
use crate::entry::{Entry, EntryState};
use crate::git::StatusState;
use crate::ids::PrNumber;

impl Work {
    pub fn notify_submitted(&mut self, pr: PrNumber) {
        let Some(e) = self.entry(pr) else { return };
        let body = format!(
            "Queued for merging into `{}` (priority {}).",
            self.s.queue.branch,
            e.priority.name()
        );
        let sha = e.pr_facts.head_sha.clone();
        self.comment(pr, body);
        self.status(pr, sha, StatusState::Pending, "Queued".to_owned());
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
        self.status(
            pr,
            sha,
            StatusState::Pending,
            format!("Testing in run {run}"),
        );
    }

    pub fn notify_concluded(&mut self, e: &Entry) {
        let branch = self.s.queue.branch.clone();
        let detail = e
            .conclusion
            .as_ref()
            .map(|c| c.detail.clone())
            .unwrap_or_default();
        let (state, words) = match e.state {
            EntryState::Merged => (StatusState::Success, format!("Merged into `{branch}`.")),
            EntryState::Failed => (
                StatusState::Failure,
                format!("Removed from the queue for `{branch}`: {detail}."),
            ),
            _ => (
                StatusState::Error,
                format!("Cancelled in the queue for `{branch}`: {detail}."),
            ),
        };
        let short = match e.state {
            EntryState::Merged => "Merged".to_owned(),
            EntryState::Failed => "Failed".to_owned(),
            _ => "Cancelled".to_owned(),
        };
        self.comment(e.pr, words);
        self.status(e.pr, e.pr_facts.head_sha.clone(), state, short);
    }

    fn comment(&mut self, pr: PrNumber, body: String) {
        if self.cfg().comments_enabled {
            self.emit(Effect::PostComment { pr, body });
        }
    }

    fn status(
        &mut self,
        pr: PrNumber,
        sha: crate::ids::Sha,
        state: StatusState,
        description: String,
    ) {
        if self.cfg().status_check_enabled {
            self.emit(Effect::SetStatusCheck {
                pr,
                sha,
                state,
                description,
            });
        }
    }
}
