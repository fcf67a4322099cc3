//! Drives the queue engine (`mq_core::engine::step`) through a workload: the Git host
//! answers effects at once, CI answers each test branch after its duration, the tick runs
//! every minute. A pull request that fails without being broken (a flake the policy could
//! not absorb) is submitted again by its author; time to merge counts from the first
//! submission.

use crate::host::Host;
use crate::tally::{Bound, Figures, Tally};
use crate::workload::{Feed, Workload};
use mq_core::engine::{Ctx, Effect, EffectOutcome, Event, MergeRefusal, step};
use mq_core::entry::{Entry, EntryState, ImpactedTargets};
use mq_core::git::{
    Mergeability, PrFacts, PrState, RequiredStatuses, RequiredStatusesSource, StatusReport,
    StatusState,
};
use mq_core::ids::{OrgId, RepoRef, Sha};
use mq_core::priority::Priority;
use mq_core::settings::{QueueMode, QueueState, SettingsPatch};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

const TICK_MS: i64 = 60_000;
/// A run stops here even if pull requests remain (a stuck policy).
const MAX_SIM_MS: i64 = 10 * 365 * 24 * 3_600_000;

/// Something due at a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Ci(Sha),
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
    let mut sim = QueueSim::new(workload, patch);
    sim.run();
    sim.tally.figures(policy, bound)
}

struct QueueSim<'a> {
    w: &'a Workload,
    snap: QueueSnapshot,
    now: i64,
    seed: u64,
    rng: fastrand::Rng,
    host: Host,
    bad: BTreeSet<u32>,
    feed: Feed,
    due: BinaryHeap<Reverse<(i64, u64, Due)>>,
    order: u64,
    tally: Tally,
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
        let mut snap = QueueSnapshot::new(queue);
        let host = Host::default();
        snap.queue.engine.target_head = Some(host.target_sha());
        Self {
            w,
            snap,
            now: 0,
            seed: w.seed,
            rng: fastrand::Rng::with_seed(w.seed ^ 0x5eed),
            host,
            bad: w.bad(),
            feed: Feed::new(w),
            due: BinaryHeap::new(),
            order: 0,
            tally: Tally::default(),
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
        }
    }

    fn submit(&mut self, pr: u32) {
        let facts = PrFacts {
            number: pr,
            title: format!("Change {pr}"),
            author: "dev".into(),
            head_sha: Sha::new(format!("h{pr}")),
            base_branch: "main".into(),
            state: PrState::Open,
            mergeability: Mergeability::Mergeable,
            based_on_target_head: false,
            draft: false,
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
                head_sha: Sha::new(format!("h{pr}")),
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
            Due::Ci(sha) => {
                let broken = self.host.holds_any(&sha, &self.bad);
                let pass = !broken && !self.w.flakes(&mut self.rng);
                if pass {
                    self.host.passed.insert(sha.clone());
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
            let Ok(t) = step(&self.snap, &event, ctx) else {
                continue;
            };
            self.snap = t.snapshot;
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

    fn concluded(&mut self, entry: &Entry) {
        match entry.state {
            EntryState::Merged => self.tally.merged(entry.pr, self.now),
            _ if self.bad.contains(&entry.pr) => self.tally.rejected(self.now),
            _ => self.at(self.now, Due::Resubmit(entry.pr)),
        }
    }

    /// The Git host's answer to an effect.
    fn execute(&mut self, effect: &Effect) -> EffectOutcome {
        match effect {
            Effect::CreateTestBranch { base, prs, .. } => {
                let numbers = prs.iter().map(|p| p.pr).collect();
                let (sha, base_sha) = self.host.create_branch(base.as_ref(), numbers);
                self.tally.ci_runs += 1;
                let done = self.now + self.w.ci_duration_ms(&mut self.rng);
                self.at(done, Due::Ci(sha.clone()));
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
                    };
                }
                let numbers: Vec<u32> = prs.iter().map(|p| p.pr).collect();
                let tested = tested_sha.clone().or_else(|| {
                    run_id
                        .as_ref()
                        .and_then(|id| self.snap.runs.iter().find(|r| &r.id == id))
                        .and_then(|r| r.sha.clone())
                });
                let green = match self.snap.queue.config.mode {
                    QueueMode::Single => self.host.exact_move_is_green(tested.as_ref(), &numbers),
                    QueueMode::Parallel => self.host.lane_move_is_green(tested.as_ref(), &numbers),
                };
                if !green || numbers.iter().any(|p| self.bad.contains(p)) {
                    self.tally.violations += 1;
                }
                self.host.target.extend(numbers);
                EffectOutcome::Merged {
                    target_sha: self.host.target_sha(),
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
