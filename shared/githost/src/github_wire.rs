//! The shapes of GitHub's objects that its webhook payloads and its REST answers both carry
//! (pull requests, commit statuses, check runs), and their translation into the domain's
//! words. The REST client's own shapes are in `github::wire`.

use crate::clock::now;
use mq_core::Timestamp;
use mq_core::git::{CheckRunReport, Mergeability, PrFacts, PrState, Review, StatusReport};
use mq_core::ids::{PrNumber, Sha};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct Id {
    pub id: u64,
}

/// An installation of the GitHub App, with the account it is installed on.
#[cfg(feature = "github")]
#[derive(Debug, Deserialize)]
pub(crate) struct Installation {
    pub id: u64,
    #[serde(default)]
    pub account: Option<Id>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct User {
    pub login: String,
    /// Read by the GitHub client only (a squash's co-author noreply addresses).
    #[cfg_attr(not(feature = "github"), allow(dead_code))]
    #[serde(default)]
    pub id: u64,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BranchRef {
    #[serde(rename = "ref")]
    pub name: String,
    pub sha: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PullWire {
    pub number: u64,
    #[serde(default)]
    pub title: String,
    /// Read by the GitHub client only (a squash's message).
    #[cfg_attr(not(feature = "github"), allow(dead_code))]
    #[serde(default)]
    pub body: Option<String>,
    pub user: User,
    pub head: BranchRef,
    pub base: BranchRef,
    pub state: String,
    #[serde(default)]
    pub merged: bool,
    #[serde(default)]
    pub draft: bool,
    pub mergeable: Option<bool>,
}

impl PullWire {
    pub fn pr_state(&self) -> PrState {
        match (self.state.as_str(), self.merged) {
            (_, true) => PrState::Merged,
            ("closed", _) => PrState::Closed,
            _ => PrState::Open,
        }
    }

    /// `mergeable: null` on an open pull request means GitHub is still computing it.
    pub fn mergeability(&self) -> Mergeability {
        match (self.pr_state(), self.mergeable) {
            (PrState::Open, None) => Mergeability::InProgress,
            (PrState::Open, Some(true)) => Mergeability::Mergeable,
            (PrState::Open, Some(false)) => Mergeability::NotMergeable,
            _ => Mergeability::Unspecified,
        }
    }

    /// The pull request `number` in the domain's words; whether its head contains the
    /// target's head is for the caller to say.
    pub fn facts(self, number: PrNumber, based_on_target_head: bool, review: Review) -> PrFacts {
        let (state, mergeability) = (self.pr_state(), self.mergeability());
        PrFacts {
            number,
            title: self.title,
            author: self.user.login,
            head_sha: Sha::new(self.head.sha),
            base_branch: self.base.name,
            state,
            mergeability,
            based_on_target_head,
            draft: self.draft,
            review,
        }
    }
}

/// A commit status, in the statuses API and the `status` webhook.
#[derive(Debug, Deserialize)]
pub(crate) struct StatusWire {
    pub context: String,
    pub state: String,
    pub target_url: Option<String>,
    pub description: Option<String>,
    pub updated_at: Option<String>,
}

impl StatusWire {
    /// `None` for a state the domain does not know (logged).
    pub fn report(&self) -> Option<StatusReport> {
        let Ok(state) = self.state.parse() else {
            tracing::warn!(state = %self.state, context = %self.context, "unknown status state");
            return None;
        };
        Some(StatusReport {
            context: self.context.clone(),
            state,
            url: self.target_url.clone().unwrap_or_default(),
            description: self.description.clone().unwrap_or_default(),
            updated_at: time_or_now(self.updated_at.as_deref()),
        })
    }
}

/// A check run, in the checks API and the `check_run` webhook.
#[derive(Debug, Deserialize)]
pub(crate) struct CheckRunWire {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub html_url: Option<String>,
    pub details_url: Option<String>,
    pub check_suite: Option<Id>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
}

impl CheckRunWire {
    /// `None` for a status or conclusion the domain does not know (logged).
    pub fn report(&self) -> Option<CheckRunReport> {
        let status = self.status.parse().ok();
        let conclusion = match self.conclusion.as_deref() {
            None => Some(None),
            Some(c) => c.parse().ok().map(Some),
        };
        let (Some(status), Some(conclusion)) = (status, conclusion) else {
            tracing::warn!(status = %self.status, conclusion = ?self.conclusion, name = %self.name, "unknown check run state");
            return None;
        };
        Some(CheckRunReport {
            id: self.id,
            name: self.name.clone(),
            status,
            conclusion,
            url: self
                .html_url
                .clone()
                .or_else(|| self.details_url.clone())
                .unwrap_or_default(),
            suite_id: self.check_suite.as_ref().map_or(0, |s| s.id),
            updated_at: time_or_now(self.completed_at.as_deref().or(self.started_at.as_deref())),
        })
    }
}

fn time_or_now(text: Option<&str>) -> Timestamp {
    text.and_then(Timestamp::parse_rfc3339).unwrap_or_else(now)
}
