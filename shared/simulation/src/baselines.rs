//! The two baselines, simulated on the same workload and CI model as the engine:
//!
//! - `bors`: one pull request at a time, tested alone on the target, merged when it passes,
//!   rejected when it fails;
//! - `github`: predictive testing — up to `concurrency` pull requests test at once, each on
//!   the target plus every pull request ahead of it; a failing pull request is ejected as
//!   soon as everything ahead of it finished, and everything behind it restarts (no
//!   batching, no bisection, no optimistic merge).
//!
//! As for the engine, a pull request that failed without being broken is submitted again.
//! A saturated workload keeps its backlog full once tests started, as the engine's simulation
//! does: the pull requests a test takes are replaced at once, not at the next CI answer.

use crate::tally::{Bound, Figures, Tally};
use crate::workload::{CiDraws, Feed, Workload};
use std::collections::{BTreeSet, VecDeque};

/// One pull request under test: what its branch holds, when CI answers, what it says.
#[derive(Debug, Clone)]
struct Test {
    pr: u32,
    finish_ms: i64,
    verdict: Option<bool>,
    pass: bool,
}

/// Shared by both baselines: arrivals, the waiting line, CI.
struct Line<'a> {
    w: &'a Workload,
    feed: Feed,
    bad: BTreeSet<u32>,
    /// CI's answers, drawn as tests start.
    ci: CiDraws,
    waiting: VecDeque<u32>,
    /// Resubmissions due: (time, pr).
    resubmit: Vec<(i64, u32)>,
    now: i64,
    tally: Tally,
}

impl<'a> Line<'a> {
    fn new(w: &'a Workload) -> Self {
        Self {
            w,
            feed: Feed::new(w),
            bad: w.bad(),
            ci: CiDraws::default(),
            waiting: VecDeque::new(),
            resubmit: Vec::new(),
            now: 0,
            tally: Tally::default(),
        }
    }

    fn arrivals(&mut self) {
        for spec in self.feed.due(self.now, self.waiting.len()) {
            self.tally.arrived(spec.number, self.now);
            self.waiting.push_back(spec.number);
        }
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) = self.resubmit.drain(..).partition(|(t, _)| *t <= now);
        self.resubmit = later;
        self.waiting.extend(due.into_iter().map(|(_, pr)| pr));
    }

    /// Starts a test of `pr` on a branch holding `ahead` and `pr`.
    fn test(&mut self, pr: u32, ahead: &[u32]) -> Test {
        self.tally.run_started(self.now);
        let broken = self.bad.contains(&pr) || ahead.iter().any(|p| self.bad.contains(p));
        let (duration, flaked) = self.ci.next(self.w, pr);
        let pass = !broken && !flaked;
        Test {
            pr,
            finish_ms: self.now + duration,
            verdict: None,
            pass,
        }
    }

    fn failed(&mut self, pr: u32) {
        if self.bad.contains(&pr) {
            self.tally.rejected(self.now);
        } else {
            self.resubmit.push((self.now, pr));
        }
    }

    fn next_time(&self, tests: &[Test]) -> Option<i64> {
        let finish = tests
            .iter()
            .filter(|t| t.verdict.is_none())
            .map(|t| t.finish_ms)
            .min();
        let arrival = self.feed.next_arrival();
        [finish, arrival].into_iter().flatten().min()
    }
}

/// One pull request at a time.
pub fn bors(w: &Workload, bound: Option<Bound>) -> Figures {
    let mut line = Line::new(w);
    let mut testing: Vec<Test> = Vec::new();
    while line.tally.done() < w.prs {
        line.arrivals();
        if testing.is_empty()
            && let Some(pr) = line.waiting.pop_front()
        {
            let t = line.test(pr, &[]);
            testing.push(t);
        }
        line.arrivals();
        let Some(next) = line.next_time(&testing) else {
            break;
        };
        line.now = next;
        if testing.first().is_some_and(|t| t.finish_ms <= line.now) {
            let t = testing.remove(0);
            if t.pass {
                line.tally.merged(t.pr, line.now);
            } else {
                line.failed(t.pr);
            }
        }
    }
    line.tally.figures("baseline: bors (one at a time)", bound)
}

/// Predictive testing that ejects failures, without bisection or optimistic merge.
pub fn github(w: &Workload, concurrency: u32, bound: Option<Bound>) -> Figures {
    let mut line = Line::new(w);
    let mut tests: Vec<Test> = Vec::new();
    let limit = concurrency as usize;
    while line.tally.done() < w.prs {
        line.arrivals();
        while tests.iter().filter(|t| t.verdict.is_none()).count() < limit {
            let Some(pr) = line.waiting.pop_front() else {
                break;
            };
            let ahead: Vec<u32> = tests.iter().map(|t| t.pr).collect();
            let t = line.test(pr, &ahead);
            tests.push(t);
        }
        line.arrivals();
        let Some(next) = line.next_time(&tests) else {
            break;
        };
        line.now = next;
        for t in tests.iter_mut() {
            if t.verdict.is_none() && t.finish_ms <= line.now {
                t.verdict = Some(t.pass);
            }
        }
        settle_front(&mut line, &mut tests, limit);
    }
    line.tally.figures(
        &format!("baseline: github (predictive, concurrency {concurrency})"),
        bound,
    )
}

/// Merges passed tests at the front; ejects a failed front test and restarts the rest.
fn settle_front(line: &mut Line<'_>, tests: &mut Vec<Test>, limit: usize) {
    while let Some(front) = tests.first() {
        match front.verdict {
            None => return,
            Some(true) => {
                let t = tests.remove(0);
                line.tally.merged(t.pr, line.now);
            }
            Some(false) => {
                let t = tests.remove(0);
                line.failed(t.pr);
                let behind: Vec<u32> = tests.drain(..).map(|t| t.pr).collect();
                for (i, pr) in behind.iter().enumerate().take(limit) {
                    let t = line.test(*pr, &behind[..i]);
                    tests.push(t);
                }
                for pr in behind.iter().skip(limit).rev() {
                    line.waiting.push_front(*pr);
                }
            }
        }
    }
}
