//! The simulated Git host: the target branch as the sequence of merged pull requests, test
//! branches as a base plus pull requests, and the check that every move of the target lands
//! on a state that passed CI.

use mq_core::ids::Sha;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A commit: the first `base_len` changes of the target, then `prs`.
#[derive(Debug, Clone)]
pub struct State {
    pub base_len: usize,
    pub prs: Vec<u32>,
}

#[derive(Debug, Default)]
pub struct Host {
    /// Merged pull requests, in order.
    pub target: Vec<u32>,
    pub states: HashMap<Sha, State>,
    /// Test branch tips whose required statuses passed.
    pub passed: HashSet<Sha>,
    next_branch: u64,
}

impl Host {
    pub fn target_sha(&self) -> Sha {
        Sha::new(format!("t{}", self.target.len()))
    }

    /// Creates a test branch on `base` (a target sha; `None`: the current head).
    pub fn create_branch(&mut self, base: Option<&Sha>, prs: Vec<u32>) -> (Sha, Sha) {
        let base_len = base
            .and_then(|s| s.as_str().strip_prefix('t'))
            .and_then(|n| n.parse().ok())
            .unwrap_or(self.target.len());
        self.next_branch += 1;
        let sha = Sha::new(format!("b{}", self.next_branch));
        self.states.insert(sha.clone(), State { base_len, prs });
        (sha, Sha::new(format!("t{base_len}")))
    }

    /// Whether the content of a test branch holds a broken pull request.
    pub fn holds_any(&self, sha: &Sha, bad: &BTreeSet<u32>) -> bool {
        self.states.get(sha).is_some_and(|s| {
            s.prs.iter().any(|p| bad.contains(p))
                || self.target[..s.base_len.min(self.target.len())]
                    .iter()
                    .any(|p| bad.contains(p))
        })
    }

    /// Single mode: the target plus `prs` must be the state `tested` passed, or a prefix of
    /// it (docs/queue-semantics.md §5).
    pub fn exact_move_is_green(&self, tested: Option<&Sha>, prs: &[u32]) -> bool {
        let Some(state) = tested
            .filter(|t| self.passed.contains(*t))
            .and_then(|t| self.states.get(t))
        else {
            return false;
        };
        if state.base_len > self.target.len() {
            return false;
        }
        let next: Vec<u32> = self.target[state.base_len..]
            .iter()
            .chain(prs)
            .copied()
            .collect();
        state.prs.len() >= next.len() && state.prs[..next.len()] == next[..]
    }

    /// Parallel mode: the merged pull requests end a branch that passed.
    pub fn lane_move_is_green(&self, tested: Option<&Sha>, prs: &[u32]) -> bool {
        tested
            .filter(|t| self.passed.contains(*t))
            .and_then(|t| self.states.get(t))
            .is_some_and(|s| s.prs.ends_with(prs))
    }

    /// Parallel mode, a merge with no tested commit (its branch's lanes merged out of its
    /// order), which lands one pull request at a time: `pr` is in a branch that passed, and
    /// every pull request before it there has landed.
    pub fn lane_step_is_green(&self, tested: Option<&Sha>, pr: u32) -> bool {
        let Some(state) = tested
            .filter(|t| self.passed.contains(*t))
            .and_then(|t| self.states.get(t))
        else {
            return false;
        };
        let Some(at) = state.prs.iter().position(|&p| p == pr) else {
            return false;
        };
        state.prs[..at].iter().all(|p| self.target.contains(p))
    }
}
