//! What a webhook delivery tells the queue, in the domain's words. Every fact about a
//! repository carries it, so the application can route the fact to that repository's queues.

use super::command::{CommentCommand, InvalidCommand};
use mq_core::git::{CheckConclusion, CheckRunReport, PrFacts, StatusReport};
use mq_core::ids::{PrNumber, RepoRef, Sha};

/// What happened to a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrChange {
    Opened,
    Reopened,
    /// New commits: the head moved.
    Synchronized,
    /// Closed, merged or not (see the facts' `state`).
    Closed,
    /// The base branch changed; `from` is the previous one (the queue it may leave).
    BaseChanged {
        from: String,
    },
    /// The title or body changed.
    Edited,
    ConvertedToDraft,
    ReadyForReview,
    /// A review was submitted or dismissed: what the review rules decide may have changed.
    Reviewed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostFact {
    /// The webhook was set up (an organisation's hook has no repository).
    Ping {
        repo: Option<RepoRef>,
        hook_id: Option<u64>,
        zen: String,
    },
    /// A commit status was set on `sha`; `branches` are those whose head is `sha`.
    Status {
        repo: RepoRef,
        sha: Sha,
        status: StatusReport,
        branches: Vec<String>,
    },
    /// A check run was created or completed on `sha`.
    CheckRun {
        repo: RepoRef,
        sha: Sha,
        check: CheckRunReport,
    },
    /// Every run of a check suite on `sha` finished.
    CheckSuiteCompleted {
        repo: RepoRef,
        sha: Sha,
        suite_id: u64,
        branch: Option<String>,
        conclusion: Option<CheckConclusion>,
    },
    /// A pull request changed. `pr` is the payload's view: `mergeability` is `in_progress` while
    /// GitHub computes it, and `based_on_target_head` is false and `review` required because
    /// deliveries do not say (read the pull request from the host when it matters).
    PullRequest {
        repo: RepoRef,
        change: PrChange,
        pr: PrFacts,
    },
    /// A new comment on a pull request holds a `/service` command (or a malformed one).
    Command {
        repo: RepoRef,
        pr: PrNumber,
        /// The commenter's login and association (`OWNER`, `MEMBER`, `COLLABORATOR`, ...),
        /// for the application's permission check.
        author: String,
        author_association: String,
        /// The comment's id: a comment is one command, however often it is delivered.
        comment_id: u64,
        command: Result<CommentCommand, InvalidCommand>,
    },
    /// A branch was pushed. Whether the queue made the push is for the caller to decide (for
    /// instance by comparing `after` with the commit it merged).
    Push {
        repo: RepoRef,
        branch: String,
        before: Sha,
        after: Sha,
        created: bool,
        deleted: bool,
        forced: bool,
    },
    /// A delivery the queue has no use for: acknowledged, nothing to do.
    Ignored {
        event: String,
        action: Option<String>,
    },
}

impl HostFact {
    /// The repository the fact is about.
    pub fn repo(&self) -> Option<&RepoRef> {
        match self {
            HostFact::Ping { repo, .. } => repo.as_ref(),
            HostFact::Status { repo, .. }
            | HostFact::CheckRun { repo, .. }
            | HostFact::CheckSuiteCompleted { repo, .. }
            | HostFact::PullRequest { repo, .. }
            | HostFact::Command { repo, .. }
            | HostFact::Push { repo, .. } => Some(repo),
            HostFact::Ignored { .. } => None,
        }
    }
}
