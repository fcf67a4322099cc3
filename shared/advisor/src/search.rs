//! Goals, and the search for the settings that serve one best.
//!
//! The search is a fixed sequence of simulations, so the same estimates always give the same
//! advice, and its cost is an amount of the simulator's work ([`Budget`]), whatever the
//! machine:
//!
//! 1. *Screen* (until a quarter of the budget is spent): a coarse grid (concurrency 1, 2, 4,
//!    8, 16; no batching, batches of 2, 4, 8 or 16 with as many bisection slots as testing
//!    slots; optimistic merge with adaptive pending failure) at low fidelity.
//! 2. *Compare* (until 40%): the best few of the screen again, at medium fidelity.
//! 3. *Refine* (until 65%): from the best three, every setting one step away in one
//!    dimension (concurrency, batching and its size, bisection concurrency, the way failures
//!    are handled) or in concurrency and batch size together, at medium fidelity, moving to
//!    a better one.
//! 4. *Decide* (the rest): the current settings and the best ones at high fidelity, several
//!    runs on the same seeds, averaged. A projection that would not fit what is left of a
//!    phase is passed over.

use crate::project::{Model, Projection};
use crate::settings::{FAILURE, Failure, Settings, Space};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the advice optimises.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "goal")]
pub enum Goal {
    /// The most merges per hour. A queue that keeps up with its arrivals merges them all
    /// however it is set: among settings within [`TIE`] of the most, the shortest mean time
    /// to merge wins.
    MostMerges,
    /// The fewest CI runs per merge, among settings that keep [`KEEP_UP`] of the most merges
    /// per hour (fewer runs is no help if the queue falls behind); within [`TIE`] of the
    /// fewest, the shortest mean time to merge.
    FewestCiRuns,
    /// The shortest mean time to merge, among settings using at most `ci_runs_per_hour`;
    /// within [`TIE`] of the shortest, the fewest runs per hour.
    #[serde(rename_all = "camelCase")]
    FastestWithinBudget { ci_runs_per_hour: f64 },
}

/// Figures this close (2%) to the best count as as good: the simulator's noise is larger.
pub const TIE: f64 = 0.02;
/// The share of the most merges per hour a setting must keep to be among the cheapest.
pub const KEEP_UP: f64 = 0.95;

/// What the search may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The simulator's work over every projection (`Simulated::work`: units of what each
    /// engine step copies and looks through). It does not depend on the
    /// machine, so the search makes the same projections everywhere; its time does.
    pub work: u64,
    /// The seed of the simulated workloads.
    pub seed: u64,
}

impl Default for Budget {
    /// 300 million units (BENCHMARKS.md gives the time it takes).
    fn default() -> Self {
        Self {
            work: 300_000_000,
            seed: 1,
        }
    }
}

/// Pull requests per run, and runs, at each fidelity.
pub const SCREEN: (u32, usize) = (200, 1);
pub const COMPARE: (u32, usize) = (500, 1);
pub const DECIDE: (u32, usize) = (1_000, 2);
/// Settings taken from the screen to the comparison, from the comparison to refinement,
/// and to the decision.
const COMPARED: usize = 8;
const REFINED: usize = 3;
const DECIDED: usize = 5;
/// The shares of the budget (percent) spent once the screen, the comparison and the
/// refinement are over: the rest is for the decision.
const SCREEN_UNTIL: u64 = 25;
const COMPARE_UNTIL: u64 = 40;
const REFINE_UNTIL: u64 = 65;

/// A setting with its projection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub settings: Settings,
    pub projection: Projection,
}

/// Orders candidates for `goal`, best first: those that meet the goal's constraint (and keep
/// up with their arrivals, unless none does), within [`TIE`] of the best figure, by the
/// second figure; then the others that meet it, by the first figure; then those that do not,
/// closest first.
pub fn rank(goal: Goal, candidates: &mut [Candidate]) {
    // A setting that falls behind its arrivals only competes when every one does.
    let any_keeps_up = candidates.iter().any(|c| c.projection.keeps_up);
    let most = candidates
        .iter()
        .filter(|c| c.projection.keeps_up || !any_keeps_up)
        .map(|c| c.projection.merges_per_hour)
        .fold(0.0, f64::max);
    // Lower is better for every figure below.
    let eligible = |p: &Projection| {
        let constraint = match goal {
            Goal::MostMerges => true,
            Goal::FewestCiRuns => p.merges_per_hour >= KEEP_UP * most,
            Goal::FastestWithinBudget { ci_runs_per_hour } => {
                p.ci_runs_per_hour <= ci_runs_per_hour
            }
        };
        constraint && (p.keeps_up || !any_keeps_up)
    };
    // When every setting falls behind, their times to merge only grow with the length of
    // the run: the one that merges most is the fastest.
    let time = |p: &Projection| {
        if any_keeps_up {
            p.mean_minutes_to_merge
        } else {
            -p.merges_per_hour
        }
    };
    let primary = |p: &Projection| match goal {
        Goal::MostMerges => -p.merges_per_hour,
        Goal::FewestCiRuns => p.ci_runs_per_merge,
        Goal::FastestWithinBudget { .. } => time(p),
    };
    let secondary = |p: &Projection| match goal {
        Goal::MostMerges | Goal::FewestCiRuns => time(p),
        Goal::FastestWithinBudget { .. } => p.ci_runs_per_hour,
    };
    let outside = |p: &Projection| match goal {
        Goal::MostMerges | Goal::FewestCiRuns => -p.merges_per_hour,
        Goal::FastestWithinBudget { .. } => p.ci_runs_per_hour,
    };
    let best = candidates
        .iter()
        .map(|c| &c.projection)
        .filter(|p| eligible(p))
        .map(primary)
        .fold(f64::INFINITY, f64::min);
    let close = |x: f64| x <= best + TIE * best.abs();
    let key = |c: &Candidate| -> (u8, f64, f64) {
        let p = &c.projection;
        if !eligible(p) {
            (2, outside(p), primary(p))
        } else if close(primary(p)) {
            (0, secondary(p), primary(p))
        } else {
            (1, primary(p), secondary(p))
        }
    };
    candidates.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(ka.2.total_cmp(&kb.2))
            .then(a.settings.cmp(&b.settings))
    });
}

/// Whether a candidate meets the goal's constraint (always, for [`Goal::MostMerges`]).
pub fn within(goal: Goal, projection: &Projection) -> bool {
    match goal {
        Goal::FastestWithinBudget { ci_runs_per_hour } => {
            projection.ci_runs_per_hour <= ci_runs_per_hour
        }
        _ => true,
    }
}

/// The search's bookkeeping: projections made so far, per fidelity, and what they cost.
pub struct Search<'a> {
    model: &'a Model,
    base: Settings,
    budget: Budget,
    /// Work spent, projections made and pull requests simulated.
    pub spent: u64,
    pub evaluations: u32,
    pub simulated_prs: u64,
    cache: BTreeMap<((u32, usize), Settings), Projection>,
    /// Work per simulated pull request, per setting projected.
    work_per_pr: BTreeMap<Settings, f64>,
}

/// Work per simulated pull request assumed of a setting before anything is known.
const FIRST_GUESS: f64 = 3_000.0;

impl<'a> Search<'a> {
    pub fn new(model: &'a Model, base: Settings, budget: Budget) -> Self {
        Self {
            model,
            base,
            budget,
            spent: 0,
            evaluations: 0,
            simulated_prs: 0,
            cache: BTreeMap::new(),
            work_per_pr: BTreeMap::new(),
        }
    }

    fn left(&self) -> u64 {
        self.budget.work.saturating_sub(self.spent)
    }

    /// The work a projection of `settings` at `fidelity` is expected to take: as much per
    /// pull request as it took before, or as the projections so far took on average.
    fn cost_of(&self, settings: &Settings, (prs, runs): (u32, usize)) -> u64 {
        let per_pr = self.work_per_pr.get(settings).copied().unwrap_or_else(|| {
            let n = self.work_per_pr.len();
            if n == 0 {
                FIRST_GUESS
            } else {
                self.work_per_pr.values().sum::<f64>() / n as f64
            }
        });
        let prs = f64::from(self.model.prs_for(settings, prs)) * runs as f64;
        (prs * per_pr) as u64
    }

    /// Every projection made so far: (fidelity, settings, projection), in no set order.
    pub fn projections(&self) -> impl Iterator<Item = ((u32, usize), Settings, Projection)> + '_ {
        self.cache.iter().map(|((f, s), p)| (*f, *s, *p))
    }

    /// Projects a setting at a fidelity (once: a repeat is remembered).
    pub fn project(&mut self, settings: Settings, fidelity: (u32, usize)) -> Candidate {
        if let Some(p) = self.cache.get(&(fidelity, settings)) {
            return Candidate {
                settings,
                projection: *p,
            };
        }
        let seeds: Vec<u64> = (0..fidelity.1 as u64)
            .map(|i| self.budget.seed.wrapping_add(i))
            .collect();
        let prs = self.model.prs_for(&settings, fidelity.0);
        let (projection, work) = self.model.project_costed(&settings, prs, &seeds);
        let simulated = u64::from(prs) * seeds.len() as u64;
        self.spent += work;
        self.simulated_prs += simulated;
        self.evaluations += 1;
        self.work_per_pr
            .insert(settings, work as f64 / simulated.max(1) as f64);
        self.cache.insert((fidelity, settings), projection);
        Candidate {
            settings,
            projection,
        }
    }

    /// Projects settings at a fidelity, in order, while the work spent stays below `until`;
    /// one that would not fit is passed over for the next.
    fn project_all(
        &mut self,
        settings: &[Settings],
        fidelity: (u32, usize),
        until: u64,
    ) -> Vec<Candidate> {
        let mut out = Vec::new();
        for &s in settings {
            let cached = self.cache.contains_key(&(fidelity, s));
            if cached || self.spent + self.cost_of(&s, fidelity) <= until {
                out.push(self.project(s, fidelity));
            }
        }
        out
    }

    /// The screen's grid.
    fn screen_grid(&self) -> Vec<Settings> {
        let failure = Failure {
            optimistic: true,
            depth: 1,
            adaptive: true,
        };
        debug_assert!(FAILURE.contains(&failure));
        let mut grid = Vec::new();
        for concurrency in [1, 2, 4, 8, 16] {
            for batch in [
                None,
                Some((2, 1)),
                Some((4, 1)),
                Some((8, 1)),
                Some((16, 1)),
            ] {
                grid.push(Settings::candidate(&self.base, concurrency, batch, failure));
            }
        }
        grid
    }

    /// Runs the search for `goal`; the decided candidates, best first, and the current
    /// settings' projection at the same fidelity. `also` are projected and decided too,
    /// whatever the search finds (a proposal to confirm).
    pub fn run(
        &mut self,
        goal: Goal,
        current: Settings,
        also: &[Settings],
    ) -> (Vec<Candidate>, Candidate) {
        let total = self.budget.work;
        let share = |percent: u64| total / 100 * percent;
        let current = self.project(current, DECIDE);

        let mut screened = self.project_all(&self.screen_grid(), SCREEN, share(SCREEN_UNTIL));
        rank(goal, &mut screened);
        let shortlist: Vec<Settings> = screened.iter().take(COMPARED).map(|c| c.settings).collect();
        let mut compared = self.project_all(&shortlist, COMPARE, share(COMPARE_UNTIL));
        rank(goal, &mut compared);

        // Hill-climbing from the best few: every neighbour at once, then move to the best.
        let mut frontier: Vec<Settings> =
            compared.iter().take(REFINED).map(|c| c.settings).collect();
        let mut visited: Vec<Settings> = Vec::new();
        while !frontier.is_empty() && self.spent < share(REFINE_UNTIL) {
            let at = frontier.remove(0);
            if visited.contains(&at) {
                continue;
            }
            visited.push(at);
            let near = at.neighbours(&self.base);
            let projected = self.project_all(&near, COMPARE, share(REFINE_UNTIL));
            compared.extend(projected);
            rank(goal, &mut compared);
            compared.dedup_by_key(|c| c.settings);
            let best = compared[0].settings;
            if !visited.contains(&best) && !frontier.contains(&best) {
                frontier.push(best);
            }
        }

        // Settings projected exactly alike behave alike (a window that never opens, a
        // bisection concurrency no batch needs): one of them is enough among the finalists.
        // A finalist may fall behind once it runs longer: finalists are decided, best first,
        // until there are enough and two of them keep up, while the budget lasts.
        let mut decided: Vec<Candidate> = Vec::new();
        let mut seen: Vec<Projection> = Vec::new();
        for c in &compared {
            let keeping_up = decided.iter().filter(|d| d.projection.keeps_up).count();
            if decided.len() >= DECIDED && keeping_up >= 2 {
                break;
            }
            if seen.contains(&c.projection) {
                continue;
            }
            seen.push(c.projection);
            if self.left() >= self.cost_of(&c.settings, DECIDE) {
                decided.push(self.project(c.settings, DECIDE));
            }
        }
        decided.push(current);
        for &s in also {
            decided.push(self.project(s, DECIDE));
        }
        rank(goal, &mut decided);
        decided.dedup_by_key(|c| c.settings);
        (decided, current)
    }
}
