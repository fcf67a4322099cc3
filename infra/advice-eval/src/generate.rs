//! Histories whose truth is known: the simulator runs the engine on a workload with known
//! parameters, keeps what a store would keep, and a window is cut out of the middle of the
//! run, where the queue is neither filling up nor draining.

use mq_advisor::Past;
use mq_core::entry::{Entry, EntryState};
use mq_core::history::History;
use mq_core::metrics::Window;
use mq_core::settings::{QueueConfig, SettingsPatch};
use mq_core::time::Timestamp;
use mq_simulation::workload::{Arrivals, Workload};
use mq_simulation::{Options, Trace, simulate};

/// A queue: its workload and its current settings.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: &'static str,
    pub about: &'static str,
    pub workload: Workload,
    pub settings: SettingsPatch,
    /// The CI budget (runs per hour) of the third goal.
    pub ci_budget: f64,
}

/// What the window really held.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truth {
    pub arrivals_per_hour: f64,
    pub ci_minutes: f64,
    pub broken_rate: f64,
    pub flake_rate: f64,
    pub conflict_rate: f64,
    /// The workload's backlog, when saturated.
    pub backlog: Option<f64>,
}

/// A generated history and its truth.
pub struct Generated {
    pub past: Past,
    pub truth: Truth,
    pub config: QueueConfig,
    /// Pull requests first submitted in the window.
    pub prs: u32,
}

/// Pull requests simulated before the window (the queue fills up), and after it (so that it
/// ends mid-flow), as shares of the window's.
const BEFORE: f64 = 0.3;
const AFTER: f64 = 0.5;

/// Simulates `case` with its settings and cuts a window holding `prs` first submissions.
pub fn generate(case: &Case, prs: u32, seed: u64) -> Generated {
    let before = (f64::from(prs) * BEFORE) as u32;
    let workload = Workload {
        prs: before + prs + (f64::from(prs) * AFTER) as u32,
        seed,
        ..case.workload.clone()
    };
    let options = Options {
        trace: true,
        ..Options::default()
    };
    let run = simulate(&workload, &case.settings, options);
    let trace = run.trace.expect("a trace");
    let mut arrivals: Vec<(i64, u32)> = run
        .tally
        .first_arrivals()
        .iter()
        .map(|(&pr, &at)| (at, pr))
        .collect();
    arrivals.sort_unstable();
    // The window opens at the first submission of its first pull request and closes at the
    // first submission of the next after its last (saturated arrivals come in bursts: the
    // window holds every pull request of a burst or none).
    let from = arrivals[before as usize].0;
    let last = arrivals[(before + prs - 1) as usize].0;
    let to = arrivals
        .iter()
        .find(|(at, _)| *at > last)
        .map_or(trace.end_ms, |(at, _)| *at);
    let window = Window {
        from: Timestamp(from),
        to: Timestamp(to),
    };
    let in_window: Vec<u32> = arrivals
        .iter()
        .filter(|(at, _)| window.contains(Timestamp(*at)))
        .map(|(_, pr)| *pr)
        .collect();
    let (config, _) = case.settings.initial_config().expect("valid settings");
    Generated {
        past: cut(&trace, window),
        truth: truth(case, &trace, window, &in_window),
        config,
        prs: in_window.len() as u32,
    }
}

/// The past a store would hold at the window's end.
fn cut(trace: &Trace, window: Window) -> Past {
    let all = &trace.kept;
    let in_window = |t: Option<Timestamp>| t.is_some_and(|t| window.contains(t));
    let kept = History {
        concluded: all
            .concluded
            .iter()
            .filter(|e| in_window(e.concluded_at))
            .cloned()
            .collect(),
        finished_runs: all
            .finished_runs
            .iter()
            .filter(|r| in_window(r.finished_at))
            .cloned()
            .collect(),
        restarts: all
            .restarts
            .iter()
            .filter(|r| window.contains(r.at))
            .cloned()
            .collect(),
    };
    let active = all
        .concluded
        .iter()
        .chain(&trace.active)
        .filter(|e| e.submitted_at < window.to)
        .filter(|e| e.concluded_at.is_none_or(|t| t >= window.to))
        .map(|e| as_it_was(e, window.to))
        .collect();
    Past {
        window,
        kept,
        active,
    }
}

/// An entry as the snapshot showed it at `at`, before it concluded.
fn as_it_was(entry: &Entry, at: Timestamp) -> Entry {
    let before = |t: Option<Timestamp>| t.filter(|t| *t < at);
    let first_tested_at = before(entry.first_tested_at);
    Entry {
        state: if first_tested_at.is_some() {
            EntryState::Testing
        } else {
            EntryState::Pending
        },
        ready_at: before(entry.ready_at),
        first_tested_at,
        concluded_at: None,
        conclusion: None,
        ..entry.clone()
    }
}

fn truth(case: &Case, trace: &Trace, window: Window, prs: &[u32]) -> Truth {
    let answers: Vec<_> = trace
        .ci_answers
        .iter()
        .filter(|a| window.contains(Timestamp(a.finished_ms)))
        .collect();
    let minutes: Vec<f64> = answers
        .iter()
        .map(|a| (a.finished_ms - a.started_ms) as f64 / 60_000.0)
        .collect();
    let clean: Vec<_> = answers.iter().filter(|a| !a.broken).collect();
    let share = |hits: usize, of: usize| hits as f64 / of.max(1) as f64;
    let hours = window.hours();
    Truth {
        arrivals_per_hour: prs.len() as f64 / hours,
        ci_minutes: minutes.iter().sum::<f64>() / minutes.len().max(1) as f64,
        broken_rate: share(
            prs.iter().filter(|p| trace.bad.contains(p)).count(),
            prs.len(),
        ),
        flake_rate: share(clean.iter().filter(|a| a.flaked).count(), clean.len()),
        conflict_rate: share(
            prs.iter().filter(|p| trace.conflicting.contains(p)).count(),
            prs.len(),
        ),
        backlog: match case.workload.arrivals {
            Arrivals::Saturated { backlog } => Some(backlog as f64),
            Arrivals::PerHour(_) => None,
        },
    }
}
