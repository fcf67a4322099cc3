//! The Prometheus text format (0.0.4) of a set of queues' figures, rendered by the
//! `prometheus` crate from a registry built for the one response.

use crate::names::{self, BRANCH, CONCLUSION, Metric, QUEUE_TYPE, REPO, STATE, STATUS};
use mq_core::metrics::{FINISHED_STATUSES, LaneFigures, Outcome, QueueFigures};
use mq_core::run::RunKind;
use mq_core::settings::QueueState;
use prometheus::{Encoder, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry, TextEncoder};

/// The response's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The text format of every queue's figures (no queues: an empty document).
pub fn render(queues: &[QueueFigures]) -> Result<String, prometheus::Error> {
    let registry = Registry::new();
    let families = Families::register(&registry)?;
    for figures in queues {
        families.record(figures);
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut out)?;
    String::from_utf8(out).map_err(|e| prometheus::Error::Msg(e.to_string()))
}

/// Every metric family of the response.
struct Families {
    depth: GaugeVec,
    awaiting: GaugeVec,
    state: GaugeVec,
    effects: GaugeVec,
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

    fn record(&self, f: &QueueFigures) {
        let main = [f.repo.as_str(), f.branch.as_str(), RunKind::Main.as_str()];
        self.depth.with_label_values(&main).set(f.depth as f64);
        self.awaiting
            .with_label_values(&main)
            .set(f.awaiting_mergeability as f64);
        self.effects
            .with_label_values(&main)
            .set(f.effects_pending as f64);
        self.restarts
            .with_label_values(&main)
            .set(f.restarts as f64);
        for state in QueueState::ALL {
            let value = if *state == f.state { 1.0 } else { 0.0 };
            self.state
                .with_label_values(&with(main, state.as_str()))
                .set(value);
        }
        let wait = self.wait.with_label_values(&main);
        f.wait_seconds.iter().for_each(|s| wait.observe(*s));
        self.record_outcomes(f, main);
        for kind in RunKind::ALL {
            let labels = [f.repo.as_str(), f.branch.as_str(), kind.as_str()];
            self.record_lane(f.lane(*kind), labels);
        }
    }

    fn record_outcomes(&self, f: &QueueFigures, main: [&str; 3]) {
        for outcome in Outcome::ALL {
            let labels = with(main, outcome.as_str());
            let figures = f.outcome(*outcome);
            self.conclusions
                .with_label_values(&labels)
                .set(figures.count as f64);
            let time = self.time_in_queue.with_label_values(&labels);
            figures
                .time_in_queue_seconds
                .iter()
                .for_each(|s| time.observe(*s));
            let runs = self.ci_runs.with_label_values(&labels);
            figures
                .ci_runs
                .iter()
                .for_each(|n| runs.observe(f64::from(*n)));
        }
    }

    fn record_lane(&self, lane: &LaneFigures, labels: [&str; 3]) {
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
            let n = lane.runs_finished.get(&status).copied().unwrap_or(0);
            self.runs_finished
                .with_label_values(&with(labels, status.as_str()))
                .set(n as f64);
        }
        let test = self.test.with_label_values(&labels);
        lane.test_seconds.iter().for_each(|s| test.observe(*s));
    }
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

#[cfg(test)]
pub(crate) mod tests;
