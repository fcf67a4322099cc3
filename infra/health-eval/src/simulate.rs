//! Labelled histories: simulated repositories whose tests' truth is known, judged upload by
//! upload with the service's own rules.

use mq_core::health::upload::is_infrastructure_failure;
use mq_core::health::{
    NewResult, Outcome, ResultRecord, StatusKind, TestCase, TestIdentity, Thresholds,
};
use mq_core::ids::{OrgId, RepoRef};
use mq_core::time::Timestamp;

const TESTS_PER_REPO: usize = 40;
const UPLOADS_PER_REPO: usize = 120;
/// Uploads are two hours apart: 10 days of CI per repository.
const UPLOAD_EVERY_MS: i64 = 2 * 3_600_000;
const START_MS: i64 = 1_795_000_000_000;
/// A share of runs on `main`; the rest are pull requests.
const MAIN_SHARE: f64 = 0.4;
/// A share of runs that re-run the previous commit.
const RERUN_SHARE: f64 = 0.1;
/// A share of uploads where the runner broke and every test failed.
const INFRA_SHARE: f64 = 0.03;
/// The checkpoint of the FLAKY targets.
const RESULTS_FOR_FLAKY: usize = 30;
/// The checkpoint of the BROKEN targets: stable results after breaking.
const STABLE_RESULTS_FOR_BROKEN: usize = 3;

/// The truth about a test at a moment (and what the rules predicted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truth {
    Healthy,
    Flaky,
    Broken,
}

impl From<StatusKind> for Truth {
    fn from(k: StatusKind) -> Self {
        match k {
            StatusKind::Healthy => Truth::Healthy,
            StatusKind::Flaky => Truth::Flaky,
            StatusKind::Broken => Truth::Broken,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Checkpoint {
    pub truth: Truth,
    pub predicted: Truth,
}

#[derive(Debug, Default)]
pub struct Run {
    pub tests: usize,
    pub uploads: usize,
    pub infrastructure_uploads: usize,
    pub checkpoints: Vec<Checkpoint>,
}

/// What a test really is.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Healthy,
    /// Each attempt fails with this probability.
    Flaky(f64),
    /// Fails from this upload on.
    Broken {
        from: usize,
    },
    /// Fails from `from` until `until`.
    Fixed {
        from: usize,
        until: usize,
    },
}

impl Kind {
    fn draw(rng: &mut fastrand::Rng) -> Self {
        match rng.f64() {
            x if x < 0.55 => Kind::Healthy,
            x if x < 0.80 => Kind::Flaky(0.05 + 0.45 * rng.f64()),
            x if x < 0.92 => Kind::Broken {
                from: rng.usize(40..90),
            },
            _ => {
                let from = rng.usize(40..80);
                Kind::Fixed {
                    from,
                    until: from + rng.usize(8..16),
                }
            }
        }
    }

    fn failing(self, upload: usize) -> bool {
        match self {
            Kind::Broken { from } => upload >= from,
            Kind::Fixed { from, until } => (from..until).contains(&upload),
            _ => false,
        }
    }

    fn truth(self, upload: usize) -> Truth {
        match self {
            Kind::Flaky(_) => Truth::Flaky,
            k if k.failing(upload) => Truth::Broken,
            _ => Truth::Healthy,
        }
    }
}

/// One simulated test and how far it is along.
struct Test {
    kind: Kind,
    case: TestCase,
    results: usize,
    stable_since_break: usize,
    stable_since_fix: usize,
}

/// Runs every repository.
pub fn simulate(seed: u64, repos: usize) -> Run {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut run = Run::default();
    for r in 0..repos {
        simulate_repo(&mut rng, r, &mut run);
    }
    run
}

fn simulate_repo(rng: &mut fastrand::Rng, r: usize, run: &mut Run) {
    let repo =
        RepoRef::new("github.com", "sim", &format!("repo{r}")).unwrap_or_else(|_| unreachable!());
    let org = OrgId::parse("sim").unwrap_or_else(|_| unreachable!());
    let retries = if r.is_multiple_of(2) { 2 } else { 0 };
    let t = Thresholds::default();
    let mut tests: Vec<Test> = (0..TESTS_PER_REPO)
        .map(|i| {
            let identity = TestIdentity {
                name: format!("test_{i}"),
                ..TestIdentity::default()
            };
            let id = mq_core::health::test_case_id(&repo, &identity);
            Test {
                kind: Kind::draw(rng),
                case: TestCase::new(id, org.clone(), repo.clone(), identity, Timestamp(START_MS)),
                results: 0,
                stable_since_break: 0,
                stable_since_fix: 0,
            }
        })
        .collect();
    run.tests += tests.len();
    let (mut commit, mut on_main, mut pr) = (0u32, true, 0u32);
    for u in 0..UPLOADS_PER_REPO {
        if u == 0 || rng.f64() >= RERUN_SHARE {
            commit += 1;
            on_main = rng.f64() < MAIN_SHARE;
            pr += u32::from(!on_main);
        }
        let infra = rng.f64() < INFRA_SHARE;
        let outcomes: Vec<Outcome> = tests
            .iter()
            .map(|test| run_once(rng, test.kind, u, retries, infra))
            .collect();
        run.uploads += 1;
        let failed = outcomes.iter().filter(|o| o.failed()).count();
        if is_infrastructure_failure(outcomes.len(), failed, &t) {
            run.infrastructure_uploads += 1;
            continue;
        }
        let now = Timestamp(START_MS + u as i64 * UPLOAD_EVERY_MS);
        for (test, outcome) in tests.iter_mut().zip(outcomes) {
            let record = ResultRecord {
                commit: format!("{commit:012x}"),
                stable: on_main,
                outcome,
                at: now,
                upload: format!("u{u}"),
            };
            let pr = (!on_main).then_some(pr);
            test.case.record(NewResult { record, pr }, &t, now);
            checkpoints(test, u, on_main, run);
        }
    }
}

/// One test's outcome in one run: attempts until one passes or the retries are spent.
fn run_once(
    rng: &mut fastrand::Rng,
    kind: Kind,
    upload: usize,
    retries: usize,
    infra: bool,
) -> Outcome {
    for failed in 0..=retries {
        let fails =
            infra || kind.failing(upload) || matches!(kind, Kind::Flaky(p) if rng.f64() < p);
        if !fails {
            return Outcome::from_attempts(1, failed, true).unwrap_or(Outcome::Passed);
        }
    }
    Outcome::Failed
}

/// Records the checkpoints a new result reaches.
fn checkpoints(test: &mut Test, u: usize, stable: bool, run: &mut Run) {
    test.results += 1;
    let predicted = Truth::from(test.case.status.kind);
    let breaking = test.kind.failing(u);
    if stable && breaking {
        test.stable_since_break += 1;
        if test.stable_since_break == STABLE_RESULTS_FOR_BROKEN {
            run.checkpoints.push(Checkpoint {
                truth: Truth::Broken,
                predicted,
            });
        }
    }
    if let Kind::Fixed { until, .. } = test.kind
        && stable
        && u >= until
    {
        test.stable_since_fix += 1;
    }
    if test.results == RESULTS_FOR_FLAKY && settled(test) {
        run.checkpoints.push(Checkpoint {
            truth: test.kind.truth(u),
            predicted,
        });
    }
}

/// Outside the windows the rules need to notice a change: 3 stable results after breaking,
/// 2 after a fix.
fn settled(test: &Test) -> bool {
    match test.kind {
        Kind::Broken { .. } | Kind::Fixed { .. } if test.stable_since_break > 0 => {
            let broken_seen = test.stable_since_break >= STABLE_RESULTS_FOR_BROKEN;
            let fix_seen = test.stable_since_fix == 0 || test.stable_since_fix >= 2;
            broken_seen && fix_seen
        }
        _ => true,
    }
}
