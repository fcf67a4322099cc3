//! Promises every queue snapshot keeps, whatever sequence of events led to it. The engine's
//! property tests check them after every step; the end-to-end stress tests check them on what
//! the store holds.

use crate::run::{RunKind, RunStatus};
use crate::snapshot::QueueSnapshot;
use std::collections::BTreeSet;

/// The promises `snapshot` breaks, each described (empty when it keeps them all):
///
/// - at most `concurrency` main runs (not held) and `bisectionConcurrency` bisection runs in
///   flight;
/// - at most one active entry per pull request;
/// - no terminal entry among the active ones.
pub fn violations(snapshot: &QueueSnapshot) -> Vec<String> {
    let mut found = Vec::new();
    let cfg = &snapshot.queue.config;
    let in_flight = |kind: RunKind| {
        snapshot
            .runs
            .iter()
            .filter(move |r| r.kind == kind && r.status == RunStatus::InProgress)
    };
    let main = in_flight(RunKind::Main).filter(|r| !r.held).count();
    if main > cfg.concurrency as usize {
        found.push(format!(
            "{main} runs in flight, concurrency {}",
            cfg.concurrency
        ));
    }
    let bisecting = in_flight(RunKind::Bisection).count();
    if bisecting > cfg.bisection_concurrency as usize {
        found.push(format!(
            "{bisecting} bisection runs in flight, bisectionConcurrency {}",
            cfg.bisection_concurrency
        ));
    }
    let mut seen = BTreeSet::new();
    for e in &snapshot.entries {
        if !seen.insert(e.pr) {
            found.push(format!("PR {} has two active entries", e.pr));
        }
        if e.state.is_terminal() {
            found.push(format!("PR {} is terminal but still active", e.pr));
        }
    }
    found
}
