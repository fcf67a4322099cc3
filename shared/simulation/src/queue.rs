//! Drives the queue engine (`mq_core::engine::step`) through a workload: the Git host
//! answers effects at once, CI answers each test branch after its duration, the tick runs
//! every minute. A pull request that fails without being broken (a flake the policy could
//! not absorb) is submitted again by its author; time to merge counts from the first
//! submission. A pull request whose head conflicts (`Workload::conflict_rate`) fails with
//! `merge_conflict` when a test branch holding it is built, and its author submits a fixed
//! head at once.
//!
//! [`simulate`] can also keep a [`Trace`]: what the store would hold of the run (concluded
//! entries, finished runs, restarts) and what the workload drew (every CI answer), so that an
//! estimate made from the history can be checked against the truth.

use crate::host::Host;
use crate::tally::{Bound, Figures, Tally};
use crate::workload::{CiDraws, Feed, Workload};
use mq_core::engine::{Ctx, Effect, EffectOutcome, Event, MergeRefusal, step_owned};
use mq_core::entry::{Entry, EntryState, ImpactedTargets};
use mq_core::git::{
    Mergeability, PrFacts, PrState, RequiredStatuses, RequiredStatusesSource, StatusReport,
    StatusState,
};
use mq_core::history::History;
use mq_core::ids::{OrgId, RepoRef, Sha};
use mq_core::priority::Priority;
use mq_core::settings::{QueueMode, QueueState, SettingsPatch};
use mq_core::snapshot::{Commit, Queue, QueueSnapshot, Transition};
use mq_core::time::Timestamp;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

const TICK_MS: i64 = 60_000;
/// A run stops here even if pull requests remain (a stuck policy).
const MAX_SIM_MS: i64 = 10 * 365 * 24 * 3_600_000;

/// Something due at a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// CI answers on a test branch; `true`: the run flakes (fails with nothing broken).
    Ci(Sha, bool),
    Resubmit(u32),
    Tick,
}

/// Runs one engine policy over the workload.
pub fn run(
    workload: &Workload,
    policy: &str,
    patch: &SettingsPatch,
    bound: Option<Bound>,
) -> Figures {
    simulate(workload, patch, Options::default())
        .tally
        .figures(policy, bound)
}

/// How [`simulate`] runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep a [`Trace`] of the run.
    pub trace: bool,
    /// Stop once every pull request of the workload was submitted, instead of when every one
    /// left the queue: enough for [`Tally::steady`], which does not count the drain.
    pub until_fed: bool,
    /// Stop once more than this many entries are in the queue (waiting, testing, failed
    /// and bisected): it cannot keep up with its arrivals, and simulating a queue that only
    /// grows costs more and more per event.
    pub max_active: Option<usize>,
}

/// What a simulated run measured, and its trace when asked for.
#[derive(Debug, Clone)]
pub struct Simulated {
    pub tally: Tally,
    pub trace: Option<Trace>,
    /// The run stopped because more than `max_active` entries were in the queue.
    pub overloaded: bool,
    /// Entries in the queue when a quarter of the pull requests had been submitted, and at
    /// the end: a queue that keeps up holds about as many at both.
    pub active_early: usize,
    pub active_at_end: usize,
    /// The engine's work, the same on any machine: [`STEP_WORK`] units per step, and one
    /// per entry and per link of a run's chain in the queue at that step (what a step copies
    /// and looks through).
    pub work: u64,
}

/// The work of a step besides its entries and chains.
pub const STEP_WORK: u64 = 100;

/// The history of a simulated run as a store keeps it, and the truth behind it.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// What the commits kept, in order: the entries that left the queue, the runs that left
    /// the line, the restarts.
    pub kept: History,
    /// Entries still active when the run stopped.
    pub active: Vec<Entry>,
    /// Every answer CI gave, in order.
    pub ci_answers: Vec<CiAnswer>,
    /// The broken pull requests and those whose first head conflicts.
    pub bad: BTreeSet<u32>,
    pub conflicting: BTreeSet<u32>,
    /// When the run stopped.
    pub end_ms: i64,
}

/// One answer of CI on a test branch, as the workload drew it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CiAnswer {
    pub started_ms: i64,
    pub finished_ms: i64,
    /// The branch held a broken pull request.
    pub broken: bool,
    /// Nothing was broken and the run failed.
    pub flaked: bool,
}

/// Runs one engine policy over the workload.
pub fn simulate(workload: &Workload, patch: &SettingsPatch, options: Options) -> Simulated {
    let mut sim = QueueSim::new(workload, patch);
    if options.trace {
        sim.trace = Some(Trace {
            bad: sim.bad.clone(),
            conflicting: sim.conflicting.clone(),
            ..Trace::default()
        });
    }
    sim.until_fed = options.until_fed;
    sim.max_active = options.max_active;
    sim.run();
    if let Some(trace) = &mut sim.trace {
        trace.active = sim.snap.entries.iter().map(|e| (**e).clone()).collect();
        trace.end_ms = sim.now;
    }
    Simulated {
        tally: sim.tally,
        trace: sim.trace,
        overloaded: sim.overloaded,
        active_early: sim.active_early,
        active_at_end: sim.snap.entries.len(),
        work: sim.work,
    }
}

struct QueueSim<'a> {
    w: &'a Workload,
    snap: QueueSnapshot,
    /// Stands in for `snap` while the engine steps it.
    spare: Option<QueueSnapshot>,
    now: i64,
    seed: u64,
    host: Host,
    /// CI's answers, drawn as tests start.
    ci: CiDraws,
    bad: BTreeSet<u32>,
    /// Pull requests whose current head conflicts.
    conflicting: BTreeSet<u32>,
    /// Heads pushed after a conflict, per pull request.
    fixes: BTreeMap<u32, u32>,
    /// When CI started on each test branch.
    ci_started: BTreeMap<Sha, i64>,
    feed: Feed,
    due: BinaryHeap<Reverse<(i64, u64, Due)>>,
    order: u64,
    tally: Tally,
    trace: Option<Trace>,
    until_fed: bool,
    max_active: Option<usize>,
    overloaded: bool,
    active_early: usize,
    work: u64,
}

impl<'a> QueueSim<'a> {
    fn new(w: &'a Workload, patch: &SettingsPatch) -> Self {
        let mut patch = patch.clone();
        patch.comments_enabled = Some(false);
        patch.status_check_enabled = Some(false);
        let (config, _) = patch.initial_config().expect("valid settings");
        let repo = RepoRef::new("github.com", "acme", "rocket").expect("valid repo");
        let org = OrgId::parse("acme").expect("valid org");
        let queue = Queue::new(
            org,
            repo,
            "main".into(),
            config,
            QueueState::Running,
            Timestamp(0),
        );
        let spare = Some(QueueSnapshot::new(queue.clone()));
        let mut snap = QueueSnapshot::new(queue);
        let host = Host::default();
        snap.queue.engine.target_head = Some(host.target_sha());
        Self {
            spare,
            w,
            snap,
            now: 0,
            seed: w.seed,
            ci: CiDraws::default(),
            host,
            bad: w.bad(),
            conflicting: w.conflicting(),
            fixes: BTreeMap::new(),
            ci_started: BTreeMap::new(),
            feed: Feed::new(w),
            due: BinaryHeap::new(),
            order: 0,
            tally: Tally::default(),
            trace: None,
            until_fed: false,
            max_active: None,
            overloaded: false,
            active_early: 0,
            work: 0,
        }
    }

    fn at(&mut self, when: i64, what: Due) {
        self.order += 1;
        self.due.push(Reverse((when, self.order, what)));
    }

    fn run(&mut self) {
        self.at(0, Due::Tick);
        while self.tally.done() < self.w.prs && self.now < MAX_SIM_MS {
            self.arrivals();
            if self.until_fed && self.feed.exhausted() {
                break;
            }
            if self
                .max_active
                .is_some_and(|cap| self.snap.entries.len() > cap)
            {
                self.overloaded = true;
                break;
            }
            let next_due = self.due.peek().map(|Reverse((t, _, _))| *t);
            let next = match (next_due, self.feed.next_arrival()) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            self.now = next.max(self.now);
            while let Some(Reverse((t, _, _))) = self.due.peek() {
                if *t > self.now {
                    break;
                }
                let Some(Reverse((_, _, what))) = self.due.pop() else {
                    break;
                };
                self.handle(what);
            }
        }
    }

    fn waiting(&self) -> usize {
        self.snap
            .entries
            .iter()
            .filter(|e| matches!(e.state, EntryState::Pending | EntryState::NotReady))
            .count()
    }

    fn arrivals(&mut self) {
        let waiting = self.waiting();
        for spec in self.feed.due(self.now, waiting) {
            self.tally.arrived(spec.number, self.now);
            self.submit(spec.number);
            if spec.number == self.w.prs / 4 {
                self.active_early = self.snap.entries.len();
            }
        }
    }

    /// The pull request's current head: `h<pr>`, then one more `f` per fix.
    fn head(&self, pr: u32) -> Sha {
        let fixes = self.fixes.get(&pr).copied().unwrap_or(0) as usize;
        Sha::new(format!("h{pr}{}", "f".repeat(fixes)))
    }

    fn submit(&mut self, pr: u32) {
        let facts = PrFacts {
            number: pr,
            title: format!("Change {pr}"),
            author: "dev".into(),
            head_sha: self.head(pr),
            base_branch: "main".into(),
            state: PrState::Open,
            mergeability: Mergeability::Mergeable,
            based_on_target_head: false,
            draft: false,
            review: mq_core::git::Review::Approved,
        };
        self.drive(Event::Submit {
            pr: facts,
            priority: Priority::default_priority(),
            no_batch: Some(false),
            force: false,
            head_checks_passed: false,
        });
        if self.snap.queue.config.mode == QueueMode::Parallel {
            let target = self.feed.spec(pr).target;
            self.drive(Event::SetImpactedTargets {
                pr,
                head_sha: self.head(pr),
                targets: ImpactedTargets::List([format!("//t{target}")].into()),
            });
        }
    }

    fn handle(&mut self, what: Due) {
        match what {
            Due::Tick => {
                self.drive(Event::Tick);
                self.at(self.now + TICK_MS, Due::Tick);
            }
            Due::Resubmit(pr) => self.submit(pr),
            Due::Ci(sha, flaked) => {
                let broken = self.host.holds_any(&sha, &self.bad);
                let pass = !broken && !flaked;
                if pass {
                    self.host.passed.insert(sha.clone());
                }
                if let Some(trace) = &mut self.trace {
                    trace.ci_answers.push(CiAnswer {
                        started_ms: self.ci_started.get(&sha).copied().unwrap_or(self.now),
                        finished_ms: self.now,
                        broken,
                        flaked: !broken && !pass,
                    });
                }
                let status = StatusReport {
                    context: "ci".into(),
                    state: if pass {
                        StatusState::Success
                    } else {
                        StatusState::Failure
                    },
                    url: String::new(),
                    description: String::new(),
                    updated_at: Timestamp(self.now),
                };
                self.drive(Event::StatusReported { sha, status });
            }
        }
    }

    /// Applies an event and every effect result it leads to, at the current time.
    fn drive(&mut self, event: Event) {
        let mut events = VecDeque::from([event]);
        while let Some(event) = events.pop_front() {
            self.seed = self.seed.wrapping_add(1);
            let ctx = Ctx {
                now: Timestamp(self.now),
                seed: self.seed,
            };
            self.work += STEP_WORK
                + self.snap.entries.len() as u64
                + self
                    .snap
                    .runs
                    .iter()
                    .map(|r| r.chain.len() as u64)
                    .sum::<u64>();
            let before = self.trace.as_ref().map(|_| self.snap.clone());
            // The engine takes the snapshot (no copy); an empty one stands in meanwhile.
            let stand_in = self.spare.take().expect("a spare snapshot");
            let snapshot = std::mem::replace(&mut self.snap, stand_in);
            let t = match step_owned(snapshot, &event, ctx) {
                Ok(t) => t,
                Err((snapshot, _)) => {
                    self.spare = Some(std::mem::replace(&mut self.snap, *snapshot));
                    continue;
                }
            };
            if let Some(before) = before {
                self.record(&before, &t);
            }
            self.spare = Some(std::mem::replace(&mut self.snap, t.snapshot));
            for entry in &t.concluded {
                self.concluded(entry);
            }
            for x in t.effects {
                let outcome = self.execute(&x.effect);
                events.push_back(Event::EffectSucceeded {
                    effect_id: x.id,
                    outcome,
                });
            }
        }
    }

    /// Keeps what a commit of `t` would store as history.
    fn record(&mut self, before: &QueueSnapshot, t: &Transition) {
        let Some(trace) = &mut self.trace else {
            return;
        };
        let commit = Commit::between(before, t, Timestamp(self.now));
        let kept = &mut trace.kept;
        kept.restarts.extend(commit.restarts);
        kept.concluded.extend(t.concluded.iter().cloned());
        kept.finished_runs.extend(t.finished_runs.iter().cloned());
    }

    fn concluded(&mut self, entry: &Entry) {
        let conflicted = entry
            .conclusion
            .as_ref()
            .is_some_and(|c| c.reason == mq_core::engine::reason::MERGE_CONFLICT);
        match entry.state {
            EntryState::Merged => self.tally.merged(entry.pr, self.now),
            EntryState::Failed if conflicted => {
                // The author resolves the conflict and pushes a new head.
                self.conflicting.remove(&entry.pr);
                *self.fixes.entry(entry.pr).or_default() += 1;
                self.at(self.now, Due::Resubmit(entry.pr));
            }
            _ if self.bad.contains(&entry.pr) => self.tally.rejected(self.now),
            _ => self.at(self.now, Due::Resubmit(entry.pr)),
        }
    }

    /// The Git host's answer to an effect.
    fn execute(&mut self, effect: &Effect) -> EffectOutcome {
        match effect {
            Effect::CreateTestBranch { base, prs, .. } => {
                let conflict = prs.iter().find(|p| self.conflicting.contains(&p.pr));
                if let Some(p) = conflict {
                    return EffectOutcome::BranchConflict { pr: p.pr };
                }
                let numbers = prs.iter().map(|p| p.pr).collect();
                let top = prs.last().map_or(0, |p| p.pr);
                let (sha, base_sha) = self.host.create_branch(base.as_ref(), numbers);
                self.tally.run_started(self.now);
                let (duration, flaked) = self.ci.next(self.w, top);
                let done = self.now + duration;
                if self.trace.is_some() {
                    self.ci_started.insert(sha.clone(), self.now);
                }
                self.at(done, Due::Ci(sha.clone(), flaked));
                EffectOutcome::BranchCreated {
                    sha,
                    base_sha,
                    required: RequiredStatuses {
                        contexts: vec!["ci".into()],
                        source: Some(RequiredStatusesSource::RepoProviderBranchProtection),
                    },
                }
            }
            Effect::Merge {
                run_id,
                prs,
                expected_target_sha,
                tested_sha,
                ..
            } => {
                let actual = self.host.target_sha();
                if expected_target_sha.as_ref().is_some_and(|e| *e != actual) {
                    return EffectOutcome::MergeRefused {
                        refusal: MergeRefusal::TargetMoved { actual },
                        tip: None,
                    };
                }
                let numbers: Vec<u32> = prs.iter().map(|p| p.pr).collect();
                let tested = tested_sha.clone().or_else(|| {
                    run_id
                        .as_ref()
                        .and_then(|id| self.snap.runs.iter().find(|r| &r.id == id))
                        .and_then(|r| r.sha.clone())
                });
                let green = match (self.snap.queue.config.mode, tested_sha, &numbers[..]) {
                    (QueueMode::Single, ..) => {
                        self.host.exact_move_is_green(tested.as_ref(), &numbers)
                    }
                    (QueueMode::Parallel, None, &[pr]) => {
                        self.host.lane_step_is_green(tested.as_ref(), pr)
                    }
                    (QueueMode::Parallel, ..) => {
                        self.host.lane_move_is_green(tested.as_ref(), &numbers)
                    }
                };
                let one_at_a_time = tested_sha.is_some() || numbers.len() == 1;
                if !green || !one_at_a_time || numbers.iter().any(|p| self.bad.contains(p)) {
                    self.tally.violations += 1;
                }
                self.host.target.extend(numbers);
                EffectOutcome::Merged {
                    target_sha: self.host.target_sha(),
                    tip: None,
                }
            }
            Effect::FetchChecks { .. } => EffectOutcome::Checks {
                statuses: vec![],
                check_runs: vec![],
            },
            _ => EffectOutcome::Done,
        }
    }
}
