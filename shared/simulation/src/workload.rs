//! The synthetic workload: which pull requests arrive when, which are broken, how long CI
//! takes and how often it flakes. Every policy of a run sees the same pull requests.

use std::collections::{BTreeMap, BTreeSet};

/// How pull requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// The queue never runs dry: whenever fewer than `backlog` pull requests wait, more are
    /// submitted at once.
    Saturated { backlog: usize },
    /// A Poisson process with this many arrivals per hour.
    PerHour(f64),
}

/// The parameters of a simulated run.
#[derive(Debug, Clone)]
pub struct Workload {
    pub prs: u32,
    pub arrivals: Arrivals,
    /// Mean CI duration of a test run.
    pub ci_minutes: f64,
    /// CI durations are uniform in `ci_minutes × (1 ± ci_jitter)`.
    pub ci_jitter: f64,
    /// Share of pull requests that break CI (every test containing one fails).
    pub failure_rate: f64,
    /// Chance that a test run fails although nothing in it is broken.
    pub flake_rate: f64,
    /// Share of pull requests whose head conflicts when merged into a test branch: their
    /// run fails at once (`merge_conflict`) and the author pushes a fixed head.
    pub conflict_rate: f64,
    /// CI durations as a quantile function, in minutes at evenly spaced probabilities from 0
    /// to 1 (at least two), drawn from instead of `ci_minutes` and `ci_jitter` when given.
    pub ci_quantiles: Option<Vec<f64>>,
    /// Exactly `failure_rate` (and `conflict_rate`) of the pull requests are broken
    /// (conflict), rounded, at random places, instead of each one by chance: two runs on
    /// different seeds then differ in where those pull requests are, not in how many there
    /// are, which a short run would otherwise feel more than the settings it compares.
    pub exact_shares: bool,
    /// Distinct impacted targets (parallel mode): each pull request impacts one.
    pub targets: u32,
    pub seed: u64,
}

/// One pull request of the workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrSpec {
    pub number: u32,
    /// When it is submitted (milliseconds; saturated arrivals decide at run time).
    pub arrival_ms: i64,
    /// It breaks CI.
    pub bad: bool,
    /// Its impacted target (parallel mode).
    pub target: u32,
    /// Its first head conflicts in a test branch.
    pub conflicts: bool,
}

impl Workload {
    /// Every pull request, in arrival order.
    pub fn specs(&self) -> Vec<PrSpec> {
        let mut rng = fastrand::Rng::with_seed(self.seed);
        // Conflicts are drawn apart, so that a workload without them is the one it always was.
        let mut conflicts = fastrand::Rng::with_seed(self.seed ^ 0xc0_f1_1c_75);
        let mut at = 0.0f64;
        let mut specs: Vec<PrSpec> = (1..=self.prs)
            .map(|number| {
                if let Arrivals::PerHour(rate) = self.arrivals {
                    let gap_hours = -(1.0 - rng.f64()).ln() / rate;
                    at += gap_hours * 3_600_000.0;
                }
                PrSpec {
                    number,
                    arrival_ms: at as i64,
                    bad: rng.f64() < self.failure_rate,
                    target: rng.u32(0..self.targets.max(1)),
                    conflicts: self.conflict_rate > 0.0 && conflicts.f64() < self.conflict_rate,
                }
            })
            .collect();
        if self.exact_shares {
            let mut places = fastrand::Rng::with_seed(self.seed ^ 0x5ba7_e5a1);
            let mut exactly = |share: f64| -> BTreeSet<usize> {
                let mut order: Vec<usize> = (0..specs.len()).collect();
                places.shuffle(&mut order);
                let n = (share * specs.len() as f64).round() as usize;
                order.into_iter().take(n).collect()
            };
            let bad = exactly(self.failure_rate);
            let conflicting = exactly(self.conflict_rate);
            for (i, spec) in specs.iter_mut().enumerate() {
                spec.bad = bad.contains(&i);
                spec.conflicts = conflicting.contains(&i);
            }
        }
        specs
    }

    /// The broken pull requests.
    pub fn bad(&self) -> BTreeSet<u32> {
        self.numbers_where(|s| s.bad)
    }

    /// The pull requests whose first head conflicts.
    pub fn conflicting(&self) -> BTreeSet<u32> {
        self.numbers_where(|s| s.conflicts)
    }

    /// The numbers of the pull requests whose spec satisfies `pick`.
    fn numbers_where(&self, pick: impl Fn(&PrSpec) -> bool) -> BTreeSet<u32> {
        self.specs()
            .into_iter()
            .filter(|s| pick(s))
            .map(|s| s.number)
            .collect()
    }

    /// A CI duration drawn from the workload's distribution, in milliseconds.
    fn ci_duration_ms(&self, rng: &mut fastrand::Rng) -> i64 {
        let minutes = match self.ci_quantiles.as_deref() {
            Some(q) if q.len() >= 2 => {
                let x = rng.f64() * (q.len() - 1) as f64;
                let i = (x.floor() as usize).min(q.len() - 2);
                q[i] + (q[i + 1] - q[i]) * (x - i as f64)
            }
            _ => {
                let spread = (rng.f64() * 2.0 - 1.0) * self.ci_jitter;
                self.ci_minutes * (1.0 + spread)
            }
        };
        (minutes * 60_000.0).max(1.0) as i64
    }

    /// Whether a test run flakes.
    fn flakes(&self, rng: &mut fastrand::Rng) -> bool {
        rng.f64() < self.flake_rate
    }

    /// What CI answers for the `attempt`-th test (from 0) of a branch whose last pull request
    /// is `pr`: its duration in milliseconds, and whether it flakes. Drawn from the workload's
    /// seed, `pr` and `attempt` alone, so that two policies testing the same branches get the
    /// same answers (common random numbers): their figures differ by their decisions only.
    pub fn ci_answer(&self, pr: u32, attempt: u32) -> (i64, bool) {
        let key = (u64::from(pr) << 32 | u64::from(attempt)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = fastrand::Rng::with_seed(self.seed ^ key);
        let duration = self.ci_duration_ms(&mut rng);
        (duration, self.flakes(&mut rng))
    }
}

/// CI's answers to the tests of one simulated run, in the order they start: counts the tests
/// of branches topped by each pull request, so that each one draws the next attempt of
/// [`Workload::ci_answer`].
#[derive(Debug, Clone, Default)]
pub struct CiDraws {
    /// Tests started so far of branches topped by each pull request.
    attempts: BTreeMap<u32, u32>,
}

impl CiDraws {
    /// The answer to the next test of a branch topped by `pr`: its duration in milliseconds,
    /// and whether it flakes.
    pub fn next(&mut self, w: &Workload, pr: u32) -> (i64, bool) {
        let attempt = self.attempts.entry(pr).or_insert(0);
        let answer = w.ci_answer(pr, *attempt);
        *attempt += 1;
        answer
    }
}

/// Hands out pull requests as they arrive.
#[derive(Debug, Clone)]
pub struct Feed {
    specs: Vec<PrSpec>,
    next: usize,
    arrivals: Arrivals,
}

impl Feed {
    pub fn new(workload: &Workload) -> Self {
        Self {
            specs: workload.specs(),
            next: 0,
            arrivals: workload.arrivals,
        }
    }

    /// The pull requests to submit at `now`, given how many already wait.
    pub fn due(&mut self, now: i64, waiting: usize) -> Vec<PrSpec> {
        let mut out = Vec::new();
        while let Some(spec) = self.specs.get(self.next).copied() {
            let ready = match self.arrivals {
                Arrivals::Saturated { backlog } => waiting + out.len() < backlog,
                Arrivals::PerHour(_) => spec.arrival_ms <= now,
            };
            if !ready {
                break;
            }
            out.push(PrSpec {
                arrival_ms: now,
                ..spec
            });
            self.next += 1;
        }
        out
    }

    /// When the next Poisson arrival happens (none for saturated arrivals).
    pub fn next_arrival(&self) -> Option<i64> {
        match self.arrivals {
            Arrivals::PerHour(_) => self.specs.get(self.next).map(|s| s.arrival_ms),
            Arrivals::Saturated { .. } => None,
        }
    }

    pub fn spec(&self, number: u32) -> PrSpec {
        self.specs[(number - 1) as usize]
    }

    /// Whether every pull request was handed out.
    pub fn exhausted(&self) -> bool {
        self.next >= self.specs.len()
    }
}
