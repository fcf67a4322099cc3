//! The Prometheus text format (0.0.4) of a set of queues' figures, written straight into one
//! string.
//!
//! The document is a list of metric families, sorted by name. A family opens with
//! `# HELP <name> <help>` (`\` and newline escaped) and `# TYPE <name> gauge|histogram`, then
//! has one line per sample: `<name>{<label>="<value>",...} <number>`. Label values have `\`,
//! `"` and newline escaped. A family's series are sorted by their label values, compared in
//! the order of the label names, which is also the order they are written in: `branch`,
//! `conclusion`, `queue_type`, `repo`, then `state` or `status`. So series sort by branch
//! first, and when a family has a `conclusion` or a lane's `queue_type`, by that before the
//! repository.
//!
//! A histogram series has one `_bucket` line per upper bound, its `le` label last, counting
//! the observations at or below the bound; then `le="+Inf"` (every observation), `_sum` and
//! `_count`. Numbers are written as Rust displays an `f64`: `60`, `0.5`, `4345.8`, `NaN`,
//! `inf`; counts beyond 2^53 as the `f64` nearest to them.
//!
//! Queues with the same repository and branch (the same `owner/name` on two Git hosts) share
//! their series: the gauges show the last such queue's figures, the histograms every such
//! queue's observations (their buckets and counts added, and their sums: one queue's sum is
//! added in the order of its observations, then the queues' sums in the order of the queues).
//!
//! This is the output the `prometheus` crate's registry and `TextEncoder` give for the same
//! figures, byte for byte (`tests/golden/prometheus_text.txt` was rendered by them), except
//! where that registry tells two label sets apart by a hash of their values run together
//! (repository `a/b`, branch `cmain` and repository `a/bc`, branch `main` are one series
//! there), and in the last digits of the `_sum` of a series several queues share (the crate
//! adds their observations one by one, in another order). `tests/library_oracle.rs` checks
//! it on generated figures: it renders them with the crate (a dev-dependency, the
//! reference) and compares the two texts byte for byte, leaving out only figures whose
//! label sets the crate's hash would merge, and comparing those shared sums as numbers.

use crate::names::{self, BRANCH, CONCLUSION, Metric, QUEUE_TYPE, REPO, STATE, STATUS};
use mq_core::metrics::{FINISHED_STATUSES, Histogram, LaneFigures, Outcome, QueueFigures};
use mq_core::run::{RunKind, RunStatus};
use mq_core::settings::QueueState;
use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt::Write;
use std::sync::LazyLock;

/// The response's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The text format of every queue's figures (no queues: an empty document). Never fails.
pub fn render(queues: &[QueueFigures]) -> Result<String, Infallible> {
    if queues.is_empty() {
        return Ok(String::new());
    }
    let sorted = sorted_by_labels(queues);
    let groups = groups(&sorted);
    let all = AllSeries::of(&groups);
    let mut out = Writer::with_capacity(estimated_len(&all));
    for family in &FAMILIES {
        family.write(&all, &mut out);
    }
    Ok(out.text)
}

/// A family of the response.
struct Family {
    metric: Metric,
    samples: Samples,
}

/// What a family's samples are.
#[derive(Clone, Copy)]
enum Samples {
    /// A gauge per queue.
    Queue(fn(&QueueFigures) -> u64),
    /// Per queue and state, 1 for the queue's state and 0 for the others.
    State,
    /// A gauge per lane.
    Lane(fn(&LaneFigures) -> u64),
    /// Per lane and finished status, the runs that finished so.
    Finished,
    /// Per outcome, the pull requests that left the queue so.
    Conclusions,
    /// Per queue, the waits for a first test.
    Wait,
    /// Per lane, the test times.
    Test,
    /// Per outcome, the times in the queue.
    TimeInQueue,
    /// Per outcome, the CI runs taken.
    CiRuns,
}

/// The families, sorted by name.
const FAMILIES: [Family; 15] = [
    family(
        names::AWAITING_MERGEABILITY,
        Samples::Queue(|f| f.awaiting_mergeability),
    ),
    family(
        names::EFFECTS_PENDING,
        Samples::Queue(|f| f.effects_pending),
    ),
    family(names::ENTRIES_STUCK, Samples::Queue(|f| f.entries_stuck)),
    family(names::CI_RUNS, Samples::CiRuns),
    family(names::CONCLUSIONS, Samples::Conclusions),
    family(names::RESTARTS, Samples::Queue(|f| f.restarts)),
    family(names::TEST_DURATION, Samples::Test),
    family(names::TIME_IN_QUEUE, Samples::TimeInQueue),
    family(names::WAIT_DURATION, Samples::Wait),
    family(names::QUEUE_DEPTH, Samples::Queue(|f| f.depth)),
    family(names::QUEUE_STATE, Samples::State),
    family(names::TEST_RUNS_ACTIVE, Samples::Lane(|l| l.runs_active)),
    family(names::TEST_RUNS_FINISHED, Samples::Finished),
    family(names::TEST_RUNS_LIMIT, Samples::Lane(|l| l.runs_limit)),
    family(
        names::TESTING_SLOTS_ACTIVE,
        Samples::Lane(|l| l.prs_testing),
    ),
];

const fn family(metric: Metric, samples: Samples) -> Family {
    Family { metric, samples }
}

/// Which series a family has.
#[derive(Clone, Copy)]
enum Scope {
    Queue,
    Lane,
    Outcome,
}

impl Samples {
    fn scope(self) -> Scope {
        match self {
            Samples::Queue(_) | Samples::State | Samples::Wait => Scope::Queue,
            Samples::Lane(_) | Samples::Finished | Samples::Test => Scope::Lane,
            Samples::Conclusions | Samples::TimeInQueue | Samples::CiRuns => Scope::Outcome,
        }
    }

    fn is_histogram(self) -> bool {
        matches!(
            self,
            Samples::Wait | Samples::Test | Samples::TimeInQueue | Samples::CiRuns
        )
    }

    /// The lines of one series.
    fn lines(self) -> usize {
        match self {
            Samples::Queue(_) | Samples::Lane(_) | Samples::Conclusions => 1,
            Samples::State => QueueState::ALL.len(),
            Samples::Finished => FINISHED_STATUSES.len(),
            Samples::Wait | Samples::Test | Samples::TimeInQueue => DURATIONS.lines(),
            Samples::CiRuns => CI_RUNS.lines(),
        }
    }
}

impl Family {
    fn write(&self, all: &AllSeries, out: &mut Writer) {
        let name = self.metric.name;
        out.header(self.metric, self.samples.is_histogram());
        match self.samples {
            Samples::Queue(value) => all.queues.iter().for_each(|s| {
                out.open(name, "", &s.labels);
                out.count(END, value(s.group.last));
            }),
            Samples::State => all.queues.iter().for_each(|s| states(out, name, s)),
            Samples::Lane(value) => all.lanes.iter().for_each(|s| {
                out.open(name, "", &s.labels);
                out.count(END, value(s.lane()));
            }),
            Samples::Finished => all.lanes.iter().for_each(|s| finished(out, name, s)),
            Samples::Conclusions => all.outcomes.iter().for_each(|s| {
                out.open(name, "", &s.labels);
                out.count(END, s.group.last.outcome(s.key).count);
            }),
            Samples::Wait => all.queues.iter().for_each(|s| {
                let seconds = merged(s.group, |f| &f.wait_seconds);
                DURATIONS.write(out, name, &s.labels, &seconds);
            }),
            Samples::Test => all.lanes.iter().for_each(|s| {
                let seconds = merged(s.group, |f| &f.lane(s.key).test_seconds);
                DURATIONS.write(out, name, &s.labels, &seconds);
            }),
            Samples::TimeInQueue => all.outcomes.iter().for_each(|s| {
                let seconds = merged(s.group, |f| &f.outcome(s.key).time_in_queue_seconds);
                DURATIONS.write(out, name, &s.labels, &seconds);
            }),
            Samples::CiRuns => all.outcomes.iter().for_each(|s| {
                let runs = merged(s.group, |f| &f.outcome(s.key).ci_runs);
                CI_RUNS.write(out, name, &s.labels, &runs);
            }),
        }
    }

    /// More than the family's text takes (unless a number is written with hundreds of
    /// digits), so that the string does not grow.
    fn estimated_len(&self, all: &AllSeries) -> usize {
        let (series, label_bytes) = all.size(self.samples.scope());
        let per_line = self.metric.name.len() + LINE_OVERHEAD;
        let header = 2 * self.metric.name.len() + self.metric.help.len() + 32;
        header + self.samples.lines() * (label_bytes + series * per_line)
    }
}

/// The most a sample line takes beyond its name and queue labels: a `_bucket` suffix, braces,
/// one more label, a number and the newline.
const LINE_OVERHEAD: usize = 64;

fn estimated_len(all: &AllSeries) -> usize {
    FAMILIES.iter().map(|f| f.estimated_len(all)).sum()
}

/// The text, and the start of the sample lines of the series being written.
struct Writer {
    text: String,
    /// `name_suffix{labels`, written once for the series' lines.
    head: String,
}

impl Writer {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            text: String::with_capacity(capacity),
            head: String::with_capacity(256),
        }
    }

    fn header(&mut self, metric: Metric, histogram: bool) {
        let text = &mut self.text;
        if !metric.help.is_empty() {
            text.push_str("# HELP ");
            text.push_str(metric.name);
            text.push(' ');
            push_escaped(text, metric.help, false);
            text.push('\n');
        }
        text.push_str("# TYPE ");
        text.push_str(metric.name);
        text.push_str(if histogram {
            " histogram\n"
        } else {
            " gauge\n"
        });
    }

    /// Starts the lines of a series.
    #[inline]
    fn open(&mut self, name: &str, suffix: &str, labels: &str) {
        self.head.clear();
        self.head.push_str(name);
        self.head.push_str(suffix);
        self.head.push_str(labels);
    }

    /// A line of the series: `end` closes the labels (`} `), adding one when a family has more
    /// (`,state="paused"} `).
    #[inline]
    fn count(&mut self, end: &str, count: u64) {
        self.line(end);
        push_count(&mut self.text, count);
        self.text.push('\n');
    }

    #[inline]
    fn float(&mut self, end: &str, value: f64) {
        self.line(end);
        push_float(&mut self.text, value);
        self.text.push('\n');
    }

    #[inline]
    fn line(&mut self, end: &str) {
        self.text.push_str(&self.head);
        self.text.push_str(end);
    }
}

fn states(out: &mut Writer, name: &str, series: &Series<()>) {
    out.open(name, "", &series.labels);
    for (state, end) in STATES.iter() {
        out.count(end, u64::from(*state == series.group.last.state));
    }
}

fn finished(out: &mut Writer, name: &str, series: &Series<RunKind>) {
    out.open(name, "", &series.labels);
    for (status, end) in STATUSES.iter() {
        out.count(end, series.lane().finished(*status));
    }
}

/// The end of the labels of a sample with no more.
const END: &str = "} ";

/// The end of the labels of a sample with one more: `,label="value"} `.
fn end(label: &str, value: &str) -> String {
    let mut end = String::with_capacity(label.len() + value.len() + 6);
    push_label(&mut end, ",", label, value);
    end.push_str(END);
    end
}

/// The histogram of a group's series: its one queue's, or its queues' added up.
fn merged<const N: usize>(
    group: &Group,
    histogram: impl Fn(&QueueFigures) -> &Histogram<N>,
) -> Histogram<N> {
    let mut all = group.all.iter().map(|f| histogram(f));
    let first = *all.next().unwrap_or(histogram(group.last));
    all.fold(first, |mut sum, h| {
        sum.add(h);
        sum
    })
}

/// The end of the labels of each bucket of a histogram (`,le="60"} `).
struct Buckets<const N: usize> {
    ends: [String; N],
}

static DURATIONS: LazyLock<Buckets<8>> = LazyLock::new(|| Buckets::new(&names::DURATION_BUCKETS));
static CI_RUNS: LazyLock<Buckets<6>> = LazyLock::new(|| Buckets::new(&names::CI_RUNS_BUCKETS));

impl<const N: usize> Buckets<N> {
    /// `bounds` increasing and finite.
    fn new(bounds: &[f64; N]) -> Self {
        Self {
            ends: bounds.map(|b| end("le", &b.to_string())),
        }
    }

    /// The lines of one series: a bucket per bound, `+Inf`, `_sum`, `_count`.
    fn lines(&self) -> usize {
        N + 3
    }

    /// The lines of a series whose histogram has the bounds these ends were made of.
    fn write(&self, out: &mut Writer, name: &str, labels: &str, histogram: &Histogram<N>) {
        out.open(name, "_bucket", labels);
        for (below, end) in histogram.cumulative().into_iter().zip(&self.ends) {
            out.count(end, below);
        }
        out.count(r#",le="+Inf"} "#, histogram.count());
        out.open(name, "_sum", labels);
        out.float(END, histogram.sum());
        out.open(name, "_count", labels);
        out.count(END, histogram.count());
    }
}

/// Label values sorted, as series are.
static KINDS: LazyLock<Vec<RunKind>> = LazyLock::new(|| by_name(RunKind::ALL, RunKind::as_str));
static OUTCOMES: LazyLock<Vec<Outcome>> = LazyLock::new(|| by_name(Outcome::ALL, Outcome::as_str));
/// With the end of the labels of their samples.
static STATES: LazyLock<Vec<(QueueState, String)>> = LazyLock::new(|| {
    let states = by_name(QueueState::ALL, QueueState::as_str);
    states
        .into_iter()
        .map(|s| (s, end(STATE, s.as_str())))
        .collect()
});
static STATUSES: LazyLock<Vec<(RunStatus, String)>> = LazyLock::new(|| {
    let statuses = by_name(&FINISHED_STATUSES, RunStatus::as_str);
    statuses
        .into_iter()
        .map(|s| (s, end(STATUS, s.as_str())))
        .collect()
});

fn by_name<T: Copy>(values: &[T], name: fn(T) -> &'static str) -> Vec<T> {
    let mut sorted = values.to_vec();
    sorted.sort_by_key(|v| name(*v));
    sorted
}

/// The queues sorted by branch, then repository; queues with both the same keep their order.
fn sorted_by_labels(queues: &[QueueFigures]) -> Vec<&QueueFigures> {
    let mut sorted: Vec<&QueueFigures> = queues.iter().collect();
    sorted.sort_by(|a, b| (&a.branch, &a.repo).cmp(&(&b.branch, &b.repo)));
    sorted
}

/// The queues that share a repository and branch, and their labels written out.
struct Group<'a> {
    all: &'a [&'a QueueFigures],
    /// The one whose gauges are shown.
    last: &'a QueueFigures,
    /// `{branch="…"`: the labels before a lane's or an outcome's.
    opening: String,
    /// `,repo="…"`: the label after them.
    closing: String,
}

fn groups<'a>(sorted: &'a [&'a QueueFigures]) -> Vec<Group<'a>> {
    let same = |a: &&QueueFigures, b: &&QueueFigures| a.branch == b.branch && a.repo == b.repo;
    sorted
        .chunk_by(same)
        .filter_map(|all| {
            let last = *all.last()?;
            let mut opening = String::with_capacity(last.branch.len() + 10);
            push_label(&mut opening, "{", BRANCH, &last.branch);
            let mut closing = String::with_capacity(last.repo.len() + 10);
            push_label(&mut closing, ",", REPO, &last.repo);
            Some(Group {
                all,
                last,
                opening,
                closing,
            })
        })
        .collect()
}

/// One series of a family: its queues, the lane or outcome it is of, and its labels written
/// out, up to the closing brace (`{branch="…",queue_type="…",repo="…"`, with `conclusion` for
/// an outcome).
struct Series<'a, K> {
    group: &'a Group<'a>,
    key: K,
    labels: String,
}

impl Series<'_, RunKind> {
    fn lane(&self) -> &LaneFigures {
        self.group.last.lane(self.key)
    }
}

/// Every series, in the order families list them.
struct AllSeries<'a> {
    /// Per queue (labelled `queue_type="main"`).
    queues: Vec<Series<'a, ()>>,
    /// Per queue and lane.
    lanes: Vec<Series<'a, RunKind>>,
    /// Per queue and outcome.
    outcomes: Vec<Series<'a, Outcome>>,
}

impl<'a> AllSeries<'a> {
    /// `groups` sorted by branch, then repository.
    fn of(groups: &'a [Group<'a>]) -> Self {
        // The middles of the labels, written once.
        let lanes: Vec<_> = KINDS.iter().map(|&k| (k, middle(None, k))).collect();
        let outcomes: Vec<_> = OUTCOMES
            .iter()
            .map(|&o| (o, middle(Some(o), RunKind::Main)))
            .collect();
        let queue = |group| Series {
            group,
            key: (),
            labels: labels(group, looked_up(&lanes, RunKind::Main)),
        };
        let lane = |group, kind| Series {
            group,
            key: kind,
            labels: labels(group, looked_up(&lanes, kind)),
        };
        let outcome = |group, outcome| Series {
            group,
            key: outcome,
            labels: labels(group, looked_up(&outcomes, outcome)),
        };
        Self {
            queues: groups.iter().map(queue).collect(),
            lanes: by_branch(groups, &KINDS, lane),
            outcomes: by_branch(groups, &OUTCOMES, outcome),
        }
    }

    /// The series of a scope, and the bytes of their labels.
    fn size(&self, scope: Scope) -> (usize, usize) {
        fn size<K>(series: &[Series<K>]) -> (usize, usize) {
            (series.len(), series.iter().map(|s| s.labels.len()).sum())
        }
        match scope {
            Scope::Queue => size(&self.queues),
            Scope::Lane => size(&self.lanes),
            Scope::Outcome => size(&self.outcomes),
        }
    }
}

/// The series of a label that sorts between `branch` and `repo`: per branch, per value of
/// that label (`keys`, sorted), per repository.
fn by_branch<'a, K: Copy>(
    groups: &'a [Group<'a>],
    keys: &[K],
    series: impl Fn(&'a Group<'a>, K) -> Series<'a, K>,
) -> Vec<Series<'a, K>> {
    let mut all = Vec::with_capacity(groups.len() * keys.len());
    for branch in groups.chunk_by(|a, b| a.last.branch == b.last.branch) {
        for key in keys {
            all.extend(branch.iter().map(|g| series(g, *key)));
        }
    }
    all
}

/// A series' labels, in the order of their names, from the opening brace: the group's
/// branch, `middle`, the group's repository.
fn labels(group: &Group, middle: &str) -> String {
    [group.opening.as_str(), middle, &group.closing].concat()
}

/// The text of `key` in `table` (which has every key).
fn looked_up<K: PartialEq>(table: &[(K, String)], key: K) -> &str {
    table
        .iter()
        .find(|(k, _)| *k == key)
        .map_or("", |(_, text)| text.as_str())
}

/// The labels between `branch` and `repo`: the conclusion, if any, and the lane.
fn middle(conclusion: Option<Outcome>, kind: RunKind) -> String {
    let mut middle = String::with_capacity(48);
    if let Some(conclusion) = conclusion {
        push_label(&mut middle, ",", CONCLUSION, conclusion.as_str());
    }
    push_label(&mut middle, ",", QUEUE_TYPE, kind.as_str());
    middle
}

/// `separator` then `label="value"`, the value escaped.
fn push_label(out: &mut String, separator: &str, label: &str, value: &str) {
    push_pair(out, separator, label, &escaped(value));
}

/// `separator` then `label="value"`, the value escaped already.
fn push_pair(out: &mut String, separator: &str, label: &str, value: &str) {
    out.push_str(separator);
    out.push_str(label);
    out.push_str("=\"");
    out.push_str(value);
    out.push('"');
}

/// A label value escaped; itself when it has nothing to escape.
fn escaped(value: &str) -> Cow<'_, str> {
    if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        return Cow::Borrowed(value);
    }
    let mut text = String::with_capacity(value.len() + 8);
    push_escaped(&mut text, value, true);
    Cow::Owned(text)
}

/// `text` with `\` and newline escaped by a backslash, and `"` too when `quotes`.
fn push_escaped(out: &mut String, text: &str, quotes: bool) {
    let special = |b: u8| b == b'\\' || b == b'\n' || (quotes && b == b'"');
    let mut rest = text;
    while let Some(at) = rest.bytes().position(special) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            _ => "\\n",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

/// Integers up to this are exactly an `f64`, which displays as the integer's digits.
const EXACT: u64 = 1 << 53;

/// A count as the `f64` it converts to displays. Written for every sample line, so inlined,
/// with the counts of a queue's hour (one or two digits) pushed as characters: called, and
/// with two digits copied from `itoa`'s buffer, the rendering took 79 µs instead of 67 µs
/// (`cargo bench -p mq-metrics --bench render`).
#[inline(always)]
fn push_count(out: &mut String, count: u64) {
    if count > EXACT {
        return push_float(out, count as f64);
    }
    if count < 10 {
        return out.push(digit(count));
    }
    if count < 100 {
        out.push(digit(count / 10));
        return out.push(digit(count % 10));
    }
    out.push_str(itoa::Buffer::new().format(count));
}

/// The digit of `n` (below 10).
#[inline(always)]
fn digit(n: u64) -> char {
    char::from(b'0' + n as u8)
}

/// A number as Rust displays it; whole ones from 0 to 2^53 display as their digits.
#[inline]
fn push_float(out: &mut String, value: f64) {
    if value.is_sign_positive() && value.fract() == 0.0 && value <= EXACT as f64 {
        return push_count(out, value as u64);
    }
    // Writing to a `String` does not fail.
    let _ = write!(out, "{value}");
}

#[cfg(test)]
pub(crate) mod tests;
