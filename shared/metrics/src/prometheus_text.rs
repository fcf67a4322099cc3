//! The Prometheus text format (0.0.4) of a set of queues' figures: metric families built from
//! the figures and encoded by the `prometheus` crate's `TextEncoder`.
//!
//! Every queue has a series in every family of [`crate::names`], labelled `branch`, `repo`
//! and `queue_type` (`main` for the queue's own figures, `main` or `bisection` for a lane's),
//! plus `conclusion` for the figures of an outcome, `state` for `mq_queue_state` and `status`
//! for `mq_test_runs_finished_1h`. A queue that could not be read has only its
//! `mq_queue_read_failed` series (1; every other queue's is 0). Families are listed by name; a series' labels are written
//! in the order of their names; a family's series are sorted by their label values, compared
//! in that order. A histogram series has one `_bucket` line per upper bound (the observations
//! at or below it), then `le="+Inf"` (every observation), `_sum` and `_count`. Numbers are
//! written as Rust displays an `f64`; label values and help texts have `\`, `"` (label values
//! only) and newline escaped.
//!
//! Queues with the same repository and branch (the same `owner/name` on two Git hosts) share
//! their series: the gauges show the last such queue's figures, the histograms every such
//! queue's observations (their buckets, counts and sums added).

use crate::names::{self, BRANCH, CONCLUSION, Metric, QUEUE_TYPE, REPO, STATE, STATUS};
use mq_core::metrics::{
    FINISHED_STATUSES, Histogram, LaneFigures, Outcome, OutcomeFigures, QueueFigures, QueueName,
};
use mq_core::run::{RunKind, RunStatus};
use mq_core::settings::QueueState;
use prometheus::TextEncoder;
use prometheus::proto::{self, LabelPair, MetricFamily, MetricType};
use std::collections::BTreeMap;

/// The response's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The text format of every queue's figures, and of the queues that could not be read (no
/// queues: an empty document).
pub fn render(queues: &[QueueFigures], unreadable: &[QueueName]) -> prometheus::Result<String> {
    if queues.is_empty() && unreadable.is_empty() {
        return Ok(String::new());
    }
    let groups = groups(queues);
    let mut families = families(&groups);
    families.retain(|family| !family.get_metric().is_empty());
    families.push(read_failed(&groups, unreadable));
    families.sort_by(|a, b| a.name().cmp(b.name()));
    TextEncoder::new().encode_to_string(&families)
}

/// `mq_queue_read_failed`: 1 for each queue not read, 0 for each read (1 for a repository and
/// branch shared by a queue read and one not).
fn read_failed(groups: &[Group], unreadable: &[QueueName]) -> MetricFamily {
    let mut failed: BTreeMap<(&str, &str), bool> = BTreeMap::new();
    for group in groups {
        let last = group.last();
        failed.insert((&last.repo, &last.branch), false);
    }
    for name in unreadable {
        failed.insert((&name.repo, &name.branch), true);
    }
    let series = failed.into_iter().map(|((repo, branch), failed)| {
        let labels = vec![
            label(BRANCH, branch),
            label(QUEUE_TYPE, RunKind::Main.as_str()),
            label(REPO, repo),
        ];
        gauge_series(labels, u64::from(failed))
    });
    family(names::READ_FAILED, MetricType::GAUGE, series.collect())
}

/// Every family of the queues read.
fn families(groups: &[Group]) -> Vec<MetricFamily> {
    let queues: Vec<At> = groups.iter().map(|g| g.at(RunKind::Main, None)).collect();
    let lanes: Vec<At> = groups
        .iter()
        .flat_map(|g| RunKind::ALL.iter().map(|k| g.at(*k, None)))
        .collect();
    let outcomes: Vec<At> = groups
        .iter()
        .flat_map(|g| Outcome::ALL.iter().map(|o| g.at(RunKind::Main, Some(*o))))
        .collect();
    vec![
        gauge(names::QUEUE_DEPTH, &queues, |at| at.last().depth),
        gauge(names::AWAITING_MERGEABILITY, &queues, |at| {
            at.last().awaiting_mergeability
        }),
        gauge(names::EFFECTS_PENDING, &queues, |at| {
            at.last().effects_pending
        }),
        gauge(names::ENTRIES_STUCK, &queues, |at| at.last().entries_stuck),
        gauge(names::RESTARTS, &queues, |at| at.last().restarts),
        gauges(
            names::QUEUE_STATE,
            &queues,
            STATE,
            QueueState::ALL,
            QueueState::as_str,
            |at, state| u64::from(at.last().state == state),
        ),
        gauge(names::TESTING_SLOTS_ACTIVE, &lanes, |at| {
            at.lane().prs_testing
        }),
        gauge(names::TEST_RUNS_ACTIVE, &lanes, |at| at.lane().runs_active),
        gauge(names::TEST_RUNS_LIMIT, &lanes, |at| at.lane().runs_limit),
        gauges(
            names::TEST_RUNS_FINISHED,
            &lanes,
            STATUS,
            &FINISHED_STATUSES,
            RunStatus::as_str,
            |at, status| at.lane().finished(status),
        ),
        gauge(names::CONCLUSIONS, &outcomes, |at| {
            at.outcome_figures().count
        }),
        histogram(names::WAIT_DURATION, &queues, |_, f| &f.wait_seconds),
        histogram(names::TEST_DURATION, &lanes, |at, f| {
            &f.lane(at.kind).test_seconds
        }),
        histogram(names::TIME_IN_QUEUE, &outcomes, |at, f| {
            &f.outcome(at.outcome()).time_in_queue_seconds
        }),
        histogram(names::CI_RUNS, &outcomes, |at, f| {
            &f.outcome(at.outcome()).ci_runs
        }),
    ]
}

/// The queues that share a repository and branch.
struct Group<'a> {
    all: Vec<&'a QueueFigures>,
}

/// The queues grouped by repository and branch, each group in the order the queues were
/// given.
fn groups(queues: &[QueueFigures]) -> Vec<Group<'_>> {
    let mut sorted: Vec<&QueueFigures> = queues.iter().collect();
    sorted.sort_by(|a, b| (&a.repo, &a.branch).cmp(&(&b.repo, &b.branch)));
    sorted
        .chunk_by(|a, b| (&a.repo, &a.branch) == (&b.repo, &b.branch))
        .map(|all| Group { all: all.to_vec() })
        .collect()
}

impl Group<'_> {
    /// The queue whose gauges are shown.
    fn last(&self) -> &QueueFigures {
        self.all[self.all.len() - 1]
    }

    fn at(&self, kind: RunKind, conclusion: Option<Outcome>) -> At<'_> {
        At {
            group: self,
            kind,
            conclusion,
        }
    }
}

/// What a series is of: a group's queue (its `main` lane), one of its lanes, or one of its
/// outcomes (`main`).
struct At<'a> {
    group: &'a Group<'a>,
    kind: RunKind,
    conclusion: Option<Outcome>,
}

impl At<'_> {
    /// The queue whose gauges are shown.
    fn last(&self) -> &QueueFigures {
        self.group.last()
    }

    fn lane(&self) -> &LaneFigures {
        self.last().lane(self.kind)
    }

    /// The outcome of an outcome's series (asked of no other).
    fn outcome(&self) -> Outcome {
        self.conclusion.unwrap_or(Outcome::Merged)
    }

    fn outcome_figures(&self) -> &OutcomeFigures {
        self.last().outcome(self.outcome())
    }

    /// The series' labels, and `extra`, sorted by name.
    fn labels(&self, extra: Option<(&str, &str)>) -> Vec<LabelPair> {
        let last = self.last();
        let mut labels = vec![
            label(BRANCH, &last.branch),
            label(QUEUE_TYPE, self.kind.as_str()),
            label(REPO, &last.repo),
        ];
        labels.extend(self.conclusion.map(|c| label(CONCLUSION, c.as_str())));
        labels.extend(extra.map(|(name, value)| label(name, value)));
        labels.sort_by(|a, b| a.name().cmp(b.name()));
        labels
    }
}

fn label(name: &str, value: &str) -> LabelPair {
    let mut label = LabelPair::default();
    label.set_name(name.to_owned());
    label.set_value(value.to_owned());
    label
}

/// A gauge family: one series per `at`.
fn gauge(metric: Metric, at: &[At], value: impl Fn(&At) -> u64) -> MetricFamily {
    let series = at.iter().map(|at| gauge_series(at.labels(None), value(at)));
    family(metric, MetricType::GAUGE, series.collect())
}

/// A gauge family with one more label: one series per `at` and value of `label`.
fn gauges<T: Copy>(
    metric: Metric,
    at: &[At],
    label: &str,
    values: &[T],
    name: fn(T) -> &'static str,
    value: impl Fn(&At, T) -> u64,
) -> MetricFamily {
    let value = &value;
    let series = at.iter().flat_map(|at| {
        values
            .iter()
            .map(move |v| gauge_series(at.labels(Some((label, name(*v)))), value(at, *v)))
    });
    family(metric, MetricType::GAUGE, series.collect())
}

fn gauge_series(labels: Vec<LabelPair>, value: u64) -> proto::Metric {
    let mut gauge = proto::Gauge::default();
    gauge.set_value(value as f64);
    let mut series = proto::Metric::from_label(labels);
    series.set_gauge(gauge);
    series
}

/// A histogram family: per `at`, the histogram `of` its group's queues, added up.
fn histogram<const N: usize>(
    metric: Metric,
    at: &[At],
    of: impl for<'f> Fn(&At, &'f QueueFigures) -> &'f Histogram<N>,
) -> MetricFamily {
    let series = at.iter().map(|at| {
        let mut queues = at.group.all.iter().map(|f| of(at, f));
        let mut sum = *queues.next().unwrap_or(of(at, at.last()));
        queues.for_each(|h| sum.add(h));
        histogram_series(at.labels(None), &sum)
    });
    family(metric, MetricType::HISTOGRAM, series.collect())
}

fn histogram_series<const N: usize>(labels: Vec<LabelPair>, of: &Histogram<N>) -> proto::Metric {
    let buckets = of
        .bounds()
        .iter()
        .zip(of.cumulative())
        .map(|(bound, below)| {
            let mut bucket = proto::Bucket::default();
            bucket.set_upper_bound(*bound);
            bucket.set_cumulative_count(below);
            bucket
        });
    let mut histogram = proto::Histogram::default();
    histogram.set_bucket(buckets.collect());
    histogram.set_sample_count(of.count());
    histogram.set_sample_sum(of.sum());
    let mut series = proto::Metric::from_label(labels);
    series.set_histogram(histogram);
    series
}

/// A family of `series`, sorted by their label values.
fn family(metric: Metric, kind: MetricType, mut series: Vec<proto::Metric>) -> MetricFamily {
    series.sort_by(|a, b| label_values(a).cmp(label_values(b)));
    let mut family = MetricFamily::default();
    family.set_name(metric.name.to_owned());
    family.set_help(metric.help.to_owned());
    family.set_field_type(kind);
    family.set_metric(series);
    family
}

fn label_values(series: &proto::Metric) -> impl Iterator<Item = &str> {
    series.get_label().iter().map(LabelPair::value)
}

#[cfg(test)]
pub(crate) mod tests;
