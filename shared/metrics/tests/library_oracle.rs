//! The Prometheus text of [`render`] is the `prometheus` crate's rendering of the same figures,
//! byte for byte, on generated figures.
//!
//! The reference is the crate's rendering: a `Registry` built for the one response, the
//! figures recorded into its `GaugeVec`s and `HistogramVec`s, encoded by `TextEncoder` (the
//! code that served `getMergeQueueMetrics` until the text was written directly). The one
//! input where the two differ on purpose is left out: the crate's families key a series by
//! a hash of its label values run together, so label sets that run together alike are one
//! series there and two in [`render`]. And where several queues share a series (the same
//! repository and branch on two Git hosts), the crate adds their observations to the sum one
//! by one and [`render`] adds the queues' sums: the `_sum` lines of such a series are
//! compared as numbers, equal but for the rounding of the additions.

use mq_core::metrics::{
    CiRuns, Durations, FINISHED_STATUSES, LaneFigures, Outcome, OutcomeFigures, QueueFigures,
};
use mq_core::run::{RunKind, RunStatus};
use mq_core::settings::QueueState;
use mq_metrics::names::{self, BRANCH, CONCLUSION, Metric, QUEUE_TYPE, REPO, STATE, STATUS};
use mq_metrics::prometheus_text::render;
use prometheus::{Encoder, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry, TextEncoder};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use std::collections::{BTreeMap, HashMap};

// ---------------------------------------------------------------------------------------------
// The reference: the prometheus crate's rendering.
// ---------------------------------------------------------------------------------------------

/// A queue's figures, and the observations its histograms were made of (which the crate's
/// histograms are given).
#[derive(Debug, Clone)]
struct Observed {
    figures: QueueFigures,
    wait: Vec<f64>,
    /// Per lane: main, bisection.
    test: [Vec<f64>; 2],
    /// Per outcome, in the order of `Outcome::ALL`.
    time_in_queue: [Vec<f64>; 3],
    ci_runs: [Vec<u32>; 3],
}

fn figures_of(queues: &[Observed]) -> Vec<QueueFigures> {
    queues.iter().map(|q| q.figures.clone()).collect()
}

/// The prometheus crate's rendering of every queue's figures, the reference.
fn reference(queues: &[Observed]) -> Result<String, prometheus::Error> {
    let registry = Registry::new();
    let families = Families::register(&registry)?;
    for queue in queues {
        families.record(queue);
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut out)?;
    String::from_utf8(out).map_err(|e| prometheus::Error::Msg(e.to_string()))
}

/// The text of [`render`] (which never fails).
fn written(queues: &[QueueFigures]) -> String {
    render(queues).unwrap_or_else(|never| match never {})
}

/// Every metric family of the response, as the crate's vectors.
struct Families {
    depth: GaugeVec,
    awaiting: GaugeVec,
    state: GaugeVec,
    effects: GaugeVec,
    stuck: GaugeVec,
    testing_slots: GaugeVec,
    runs_active: GaugeVec,
    runs_limit: GaugeVec,
    runs_finished: GaugeVec,
    conclusions: GaugeVec,
    restarts: GaugeVec,
    wait: HistogramVec,
    test: HistogramVec,
    time_in_queue: HistogramVec,
    ci_runs: HistogramVec,
}

/// The labels of every family, in the order their values are given; some families have one
/// more.
const QUEUE_LABELS: [&str; 3] = [REPO, BRANCH, QUEUE_TYPE];

impl Families {
    fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let gauge = |m: Metric, extra: Option<&'static str>| gauge(registry, m, extra);
        let duration = |m: Metric, extra: Option<&'static str>| {
            histogram(registry, m, extra, &names::DURATION_BUCKETS)
        };
        Ok(Self {
            depth: gauge(names::QUEUE_DEPTH, None)?,
            awaiting: gauge(names::AWAITING_MERGEABILITY, None)?,
            state: gauge(names::QUEUE_STATE, Some(STATE))?,
            effects: gauge(names::EFFECTS_PENDING, None)?,
            stuck: gauge(names::ENTRIES_STUCK, None)?,
            testing_slots: gauge(names::TESTING_SLOTS_ACTIVE, None)?,
            runs_active: gauge(names::TEST_RUNS_ACTIVE, None)?,
            runs_limit: gauge(names::TEST_RUNS_LIMIT, None)?,
            runs_finished: gauge(names::TEST_RUNS_FINISHED, Some(STATUS))?,
            conclusions: gauge(names::CONCLUSIONS, Some(CONCLUSION))?,
            restarts: gauge(names::RESTARTS, None)?,
            wait: duration(names::WAIT_DURATION, None)?,
            test: duration(names::TEST_DURATION, None)?,
            time_in_queue: duration(names::TIME_IN_QUEUE, Some(CONCLUSION))?,
            ci_runs: histogram(
                registry,
                names::CI_RUNS,
                Some(CONCLUSION),
                &names::CI_RUNS_BUCKETS,
            )?,
        })
    }

    /// One queue's figures: gauges set (a later queue with the same labels overwrites them),
    /// observations added.
    fn record(&self, queue: &Observed) {
        let f = &queue.figures;
        let main = queue_labels(f, RunKind::Main);
        self.depth.with_label_values(&main).set(f.depth as f64);
        self.awaiting
            .with_label_values(&main)
            .set(f.awaiting_mergeability as f64);
        self.effects
            .with_label_values(&main)
            .set(f.effects_pending as f64);
        self.stuck
            .with_label_values(&main)
            .set(f.entries_stuck as f64);
        self.restarts
            .with_label_values(&main)
            .set(f.restarts as f64);
        self.record_state(f, main);
        let wait = self.wait.with_label_values(&main);
        queue.wait.iter().for_each(|s| wait.observe(*s));
        self.record_outcomes(queue, main);
        for (kind, test) in [RunKind::Main, RunKind::Bisection].iter().zip(&queue.test) {
            self.record_lane(f.lane(*kind), test, queue_labels(f, *kind));
        }
    }

    fn record_state(&self, f: &QueueFigures, main: [&str; 3]) {
        for state in QueueState::ALL {
            let value = if *state == f.state { 1.0 } else { 0.0 };
            self.state
                .with_label_values(&with(main, state.as_str()))
                .set(value);
        }
    }

    fn record_outcomes(&self, queue: &Observed, main: [&str; 3]) {
        for (i, outcome) in Outcome::ALL.iter().enumerate() {
            let labels = with(main, outcome.as_str());
            let figures = queue.figures.outcome(*outcome);
            self.conclusions
                .with_label_values(&labels)
                .set(figures.count as f64);
            let time = self.time_in_queue.with_label_values(&labels);
            queue.time_in_queue[i].iter().for_each(|s| time.observe(*s));
            let runs = self.ci_runs.with_label_values(&labels);
            queue.ci_runs[i]
                .iter()
                .for_each(|n| runs.observe(f64::from(*n)));
        }
    }

    fn record_lane(&self, lane: &LaneFigures, test_seconds: &[f64], labels: [&str; 3]) {
        self.testing_slots
            .with_label_values(&labels)
            .set(lane.prs_testing as f64);
        self.runs_active
            .with_label_values(&labels)
            .set(lane.runs_active as f64);
        self.runs_limit
            .with_label_values(&labels)
            .set(lane.runs_limit as f64);
        for status in FINISHED_STATUSES {
            self.runs_finished
                .with_label_values(&with(labels, status.as_str()))
                .set(lane.finished(status) as f64);
        }
        let test = self.test.with_label_values(&labels);
        test_seconds.iter().for_each(|s| test.observe(*s));
    }
}

/// The values of [`QUEUE_LABELS`] of a queue's lane (`main` for the queue's own figures).
fn queue_labels(f: &QueueFigures, kind: RunKind) -> [&str; 3] {
    [f.repo.as_str(), f.branch.as_str(), kind.as_str()]
}

/// The queue labels and one more.
fn with<'a>(labels: [&'a str; 3], extra: &'a str) -> [&'a str; 4] {
    [labels[0], labels[1], labels[2], extra]
}

fn label_names(extra: Option<&'static str>) -> Vec<&'static str> {
    QUEUE_LABELS.iter().copied().chain(extra).collect()
}

fn gauge(
    registry: &Registry,
    metric: Metric,
    extra: Option<&'static str>,
) -> Result<GaugeVec, prometheus::Error> {
    let family = GaugeVec::new(Opts::new(metric.name, metric.help), &label_names(extra))?;
    registry.register(Box::new(family.clone()))?;
    Ok(family)
}

fn histogram(
    registry: &Registry,
    metric: Metric,
    extra: Option<&'static str>,
    buckets: &[f64],
) -> Result<HistogramVec, prometheus::Error> {
    let opts = HistogramOpts::new(metric.name, metric.help).buckets(buckets.to_vec());
    let family = HistogramVec::new(opts, &label_names(extra))?;
    registry.register(Box::new(family.clone()))?;
    Ok(family)
}

// ---------------------------------------------------------------------------------------------
// The one difference on purpose: series the crate takes for one.
// ---------------------------------------------------------------------------------------------

/// Whether one of the crate's families would take two different label sets for one series.
/// A family (`MetricVec`) keys its series by an FNV-1a hash of their label values written one
/// after the other, with nothing between them (`hash_label_values`), and never compares the
/// values: `a/b` + `cmain` + `main` and `a/bc` + `main` + `main` are one series there. The
/// writer keeps them apart.
fn the_crate_merges_series(queues: &[QueueFigures]) -> bool {
    let mut series: HashMap<(LabelSet, u64), Vec<&str>> = HashMap::new();
    for (set, values) in queues.iter().flat_map(label_values) {
        let first = series
            .entry((set, fnv1a(&values)))
            .or_insert(values.clone());
        if *first != values {
            return true;
        }
    }
    false
}

/// The label names of a family: the families with the same names are asked for the same
/// series, so a merge in one is a merge in all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LabelSet {
    /// Repository, branch, `main`: depth, awaiting, effects, restarts, wait.
    Queue,
    /// With `state`.
    State,
    /// Repository, branch, lane: testing slots, runs active and limit, test durations.
    Lane,
    /// With `status`.
    Status,
    /// Repository, branch, `main`, `conclusion`: conclusions, time in queue, CI runs.
    Outcome,
}

/// The label values [`Families::record`] asks each family for, for one queue.
fn label_values(f: &QueueFigures) -> Vec<(LabelSet, Vec<&str>)> {
    let main = queue_labels(f, RunKind::Main);
    let mut all = vec![(LabelSet::Queue, main.to_vec())];
    let states = QueueState::ALL.iter().map(|s| with(main, s.as_str()));
    all.extend(states.map(|v| (LabelSet::State, v.to_vec())));
    let outcomes = Outcome::ALL.iter().map(|o| with(main, o.as_str()));
    all.extend(outcomes.map(|v| (LabelSet::Outcome, v.to_vec())));
    for kind in RunKind::ALL {
        let lane = queue_labels(f, *kind);
        all.push((LabelSet::Lane, lane.to_vec()));
        let statuses = FINISHED_STATUSES.iter().map(|s| with(lane, s.as_str()));
        all.extend(statuses.map(|v| (LabelSet::Status, v.to_vec())));
    }
    all
}

/// The crate's key of a series: FNV-1a (64 bits) of the values' bytes, one value after the
/// other.
fn fnv1a(values: &[&str]) -> u64 {
    let bytes = values.iter().flat_map(|v| v.bytes());
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---------------------------------------------------------------------------------------------
// Generated figures.
// ---------------------------------------------------------------------------------------------

/// Repositories: plain, with `.` and `-`, with `"`, `\` and a newline (escaped in the text),
/// non-ASCII; and `a/b`, `a/bc`, which run together with the branches `cmain` and `main`
/// alike.
const REPOS: [&str; 8] = [
    "acme/rocket",
    "acme/rocket.rs",
    "acme-corp/re-entry",
    "we\"ird\\org/na\nme",
    "café/crème-brûlée",
    "日本/リポジトリ",
    "a/b",
    "a/bc",
];

const BRANCHES: [&str; 8] = [
    "main",
    "cmain",
    "release/1.x",
    "feat/\"quoted\"\\back\nline-café",
    "a-branch",
    "v1.2.3",
    "ünïcode/straße",
    "\\\n\"",
];

/// Seconds: fractional and whole ones across the buckets, exactly on a bound and next to one,
/// zero, very large ones; now and then not a number, infinite or negative.
fn seconds() -> impl Strategy<Value = f64> {
    let bound = || select(&names::DURATION_BUCKETS[..]);
    prop_oneof![
        4 => 0.0..8_000.0f64,
        2 => bound(),
        1 => bound().prop_flat_map(|b| select(vec![b.next_down(), b.next_up()])),
        1 => (0u32..8_000).prop_map(f64::from),
        1 => (1.0..10.0f64, 6..300i32).prop_map(|(m, e)| m * 10f64.powi(e)),
        1 => select(vec![0.0, 1e-7, 0.1, 1e16, 9_007_199_254_740_993.0, f64::MAX]),
        1 => select(vec![-0.0, -1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]),
    ]
}

/// CI runs per pull request, around the buckets (1 to 5, 10) and the largest.
fn ci_runs() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 0u32..13, 1 => select(vec![1 << 20, u32::MAX])]
}

/// A gauge's count: small, about 2^53 (the last integers an `f64` holds exactly), any, the
/// largest.
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0u64..20,
        1 => (1u64 << 53) - 2..=(1u64 << 53) + 2,
        2 => any::<u64>(),
        1 => Just(u64::MAX),
    ]
}

/// A histogram's observations, empty a third of the time.
fn observations<T: Clone + std::fmt::Debug>(
    value: impl Strategy<Value = T>,
) -> impl Strategy<Value = Vec<T>> {
    prop_oneof![1 => Just(Vec::new()), 2 => prop::collection::vec(value, 1..8)]
}

fn durations(seconds: &[f64]) -> Durations {
    Durations::of(&names::DURATION_BUCKETS, seconds.iter().copied())
}

/// Runs finished by status: some statuses missing (0).
fn runs_finished() -> impl Strategy<Value = [u64; 3]> {
    let by_status = prop::collection::btree_map(select(&FINISHED_STATUSES[..]), count(), 0..=3);
    by_status.prop_map(|by_status: BTreeMap<RunStatus, u64>| {
        FINISHED_STATUSES.map(|s| by_status.get(&s).copied().unwrap_or(0))
    })
}

/// A lane's figures and its test times.
fn lane() -> impl Strategy<Value = (LaneFigures, Vec<f64>)> {
    let gauges = (count(), count(), count());
    (gauges, runs_finished(), observations(seconds())).prop_map(
        |((prs_testing, runs_active, runs_limit), runs_finished, test_seconds)| {
            let figures = LaneFigures {
                prs_testing,
                runs_active,
                runs_limit,
                runs_finished,
                test_seconds: durations(&test_seconds),
            };
            (figures, test_seconds)
        },
    )
}

/// An outcome's count, times in the queue and CI runs.
type OutcomeObserved = (u64, Vec<f64>, Vec<u32>);

/// Per outcome (in the order of `Outcome::ALL`), some missing (0 and empty).
fn outcomes() -> impl Strategy<Value = [OutcomeObserved; 3]> {
    let figures = (count(), observations(seconds()), observations(ci_runs()));
    let some = prop::collection::btree_map(select(Outcome::ALL), figures, 0..=3);
    some.prop_map(|mut some| {
        [Outcome::Merged, Outcome::Failed, Outcome::Cancelled]
            .map(|o| some.remove(&o).unwrap_or_default())
    })
}

fn outcome_figures((count, time_in_queue, ci_runs): &OutcomeObserved) -> OutcomeFigures {
    let runs = ci_runs.iter().map(|n| f64::from(*n));
    OutcomeFigures {
        count: *count,
        time_in_queue_seconds: durations(time_in_queue),
        ci_runs: CiRuns::of(&names::CI_RUNS_BUCKETS, runs),
    }
}

fn queue() -> impl Strategy<Value = Observed> {
    let labels = (
        select(&REPOS[..]),
        select(&BRANCHES[..]),
        select(QueueState::ALL),
    );
    let gauges = (count(), count(), count(), count(), count());
    let histograms = (observations(seconds()), lane(), lane(), outcomes());
    (labels, gauges, histograms).prop_map(|(labels, gauges, histograms)| {
        let (repo, branch, state) = labels;
        let (depth, awaiting_mergeability, effects_pending, entries_stuck, restarts) = gauges;
        let (wait, (main, main_test), (bisection, bisection_test), outcomes) = histograms;
        let figures = QueueFigures {
            repo: repo.into(),
            branch: branch.into(),
            state,
            depth,
            awaiting_mergeability,
            effects_pending,
            entries_stuck,
            restarts,
            wait_seconds: durations(&wait),
            main,
            bisection,
            outcomes: outcomes.each_ref().map(outcome_figures),
        };
        Observed {
            figures,
            wait,
            test: [main_test, bisection_test],
            time_in_queue: outcomes.each_ref().map(|o| o.1.clone()),
            ci_runs: outcomes.map(|o| o.2),
        }
    })
}

/// 0 to 8 queues in no particular order; up to two of them given the repository and branch
/// of another (the same `owner/name` on two Git hosts), besides those drawn alike.
fn queues() -> impl Strategy<Value = Vec<Observed>> {
    let alike = prop::collection::vec((any::<Index>(), any::<Index>()), 0..=2);
    (prop::collection::vec(queue(), 0..=8), alike).prop_map(|(mut queues, alike)| {
        for (from, to) in alike {
            if queues.is_empty() {
                break;
            }
            let from = &from.get(&queues).figures;
            let labels = (from.repo.clone(), from.branch.clone());
            let to = to.index(queues.len());
            let to = &mut queues[to].figures;
            (to.repo, to.branch) = labels;
        }
        queues
    })
}

/// 256 cases, or `PROPTEST_CASES` for a longer search.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

/// Whether two of the queues have the same repository and branch, and so share series.
fn some_share_series(queues: &[QueueFigures]) -> bool {
    let mut labels: Vec<(&str, &str)> = queues.iter().map(|f| (&*f.repo, &*f.branch)).collect();
    labels.sort_unstable();
    labels.windows(2).any(|w| w[0] == w[1])
}

/// Where the written text parts from the reference: the first line that differs in each,
/// with its number; `None` when they are the same. With `shared_sums`, a `_sum` line may
/// differ in its number by the rounding of additions made in another order.
fn difference(text: &str, reference: &str, shared_sums: bool) -> Option<String> {
    if text == reference {
        return None;
    }
    let (mut ours, mut theirs) = (text.lines(), reference.lines());
    for n in 1.. {
        let (a, b) = (ours.next(), theirs.next());
        let same = match (a, b) {
            (Some(a), Some(b)) => a == b || (shared_sums && same_sum(a, b)),
            (None, None) => return line_endings_differ(text, reference),
            _ => false,
        };
        if !same {
            return Some(format!("line {n}:\n  written:   {a:?}\n  reference: {b:?}"));
        }
    }
    None
}

fn line_endings_differ(text: &str, reference: &str) -> Option<String> {
    let endings = |t: &str| (t.matches('\n').count(), t.matches('\r').count());
    (endings(text) != endings(reference)).then(|| "the same lines; the line endings differ".into())
}

/// Two `_sum` lines of the same series whose numbers are the same sum added in two orders:
/// equal to 1e-9 of their size, or both not finite (an addition overflowed, or met an
/// infinity, in one order or the other).
fn same_sum(line: &str, reference: &str) -> bool {
    let (Some((series, a)), Some((theirs, b))) =
        (line.rsplit_once(' '), reference.rsplit_once(' '))
    else {
        return false;
    };
    let number = |n: &str| n.replace("inf", "Infinity").parse::<f64>().ok();
    let (Some(a), Some(b)) = (number(a), number(b)) else {
        return false;
    };
    let finite = a.is_finite() && b.is_finite();
    let close = finite && (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    let both_not_finite = !a.is_finite() && !b.is_finite();
    series == theirs && series.contains("_sum{") && (close || both_not_finite)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// The written text is the crate's, byte for byte, unless the crate would take two
    /// label sets for one series.
    #[test]
    fn the_text_is_the_prometheus_crates(queues in queues()) {
        let figures = figures_of(&queues);
        prop_assume!(!the_crate_merges_series(&figures));
        let expected = reference(&queues).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let text = written(&figures);
        let difference = difference(&text, &expected, some_share_series(&figures));
        prop_assert!(difference.is_none(), "{}", difference.unwrap_or_default());
    }
}

// ---------------------------------------------------------------------------------------------
// The inputs left out.
// ---------------------------------------------------------------------------------------------

fn queue_of(repo: &str, branch: &str, depth: u64) -> Observed {
    let figures = QueueFigures {
        repo: repo.into(),
        branch: branch.into(),
        state: QueueState::Running,
        depth,
        awaiting_mergeability: 0,
        effects_pending: 0,
        entries_stuck: 0,
        restarts: 0,
        wait_seconds: durations(&[30.0]),
        main: LaneFigures::default(),
        bisection: LaneFigures::default(),
        outcomes: Default::default(),
    };
    Observed {
        figures,
        wait: vec![30.0],
        test: Default::default(),
        time_in_queue: Default::default(),
        ci_runs: Default::default(),
    }
}

fn depths(text: &str) -> Vec<&str> {
    let depth = |l: &&str| l.starts_with("mq_queue_depth_current{");
    text.lines().filter(depth).collect()
}

/// The inputs the property leaves out are those where the crate renders label sets that run
/// together alike as one series, and only those.
#[test]
fn the_crate_merges_label_sets_that_run_together_alike() {
    let queues = [queue_of("a/bc", "main", 1), queue_of("a/b", "cmain", 2)];
    assert!(the_crate_merges_series(&figures_of(&queues)));
    let merged = reference(&queues).unwrap();
    assert_eq!(
        depths(&merged),
        [r#"mq_queue_depth_current{branch="main",queue_type="main",repo="a/bc"} 2"#]
    );
    assert_eq!(depths(&written(&figures_of(&queues))).len(), 2);

    let same = [queue_of("a/b", "cmain", 1), queue_of("a/b", "cmain", 2)];
    assert!(!the_crate_merges_series(&figures_of(&same)));
    assert_eq!(written(&figures_of(&same)), reference(&same).unwrap());
    let apart = [queue_of("a/b", "main", 1), queue_of("a/bc", "cmain", 2)];
    assert!(!the_crate_merges_series(&figures_of(&apart)));
}

/// Sums of a shared series may differ from the crate's in the rounding of their additions,
/// and in nothing else.
#[test]
fn shared_sums_are_compared_as_numbers() {
    let sum = |n: &str| format!(r#"mq_pr_wait_duration_1h_seconds_sum{{branch="main"}} {n}"#);
    assert!(same_sum(&sum("0.30000000000000004"), &sum("0.3")));
    assert!(same_sum(&sum("inf"), &sum("NaN")));
    assert!(!same_sum(&sum("0.31"), &sum("0.3")));
    assert!(!same_sum(&sum("1e300"), &sum("inf")));
    let count = |n: &str| format!(r#"mq_pr_wait_duration_1h_seconds_count{{branch="main"}} {n}"#);
    assert!(!same_sum(&count("3"), &count("3.0000000000001")));
    assert_eq!(difference(&sum("0.3"), &sum("0.3"), false), None);
    assert!(difference(&sum("0.30000000000000004"), &sum("0.3"), false).is_some());
    assert_eq!(
        difference(&sum("0.30000000000000004"), &sum("0.3"), true),
        None
    );
}

/// [`fnv1a`] is FNV-1a: the `fnv` crate's own test values.
#[test]
fn the_crates_key_is_fnv1a() {
    assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(&["a"]), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a(&["fo", "obar"]), fnv1a(&["foobar"]));
    assert_eq!(fnv1a(&["foobar"]), 0x8594_4171_f739_67e8);
}
