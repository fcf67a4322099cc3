//! CloudWatch Embedded Metric Format: the gauges of one queue as JSON log lines.
//!
//! The tick writes these lines to its log for every queue it visits; CloudWatch Logs turns
//! them into metrics in namespace [`NAMESPACE`], with the Prometheus metric names and labels
//! as metric names and dimensions:
//!
//! - `{repo, branch, queue_type="main"}`: depth, awaiting mergeability, pull requests under
//!   test, runs in flight, restarts in the last hour, pending Git host actions;
//! - `{repo, branch, queue_type="bisection"}`: pull requests under test, runs in flight;
//! - `{repo, branch, queue_type="main", conclusion}`: conclusions in the last hour.
//!
//! Durations are left to Prometheus: a rolling histogram logged every minute would count each
//! pull request sixty times.

use crate::names::{self, BRANCH, CONCLUSION, QUEUE_TYPE, REPO};
use metrique_writer::format::Format;
use metrique_writer::unit::AsCount;
use metrique_writer::{Entry, EntryWriter};
use metrique_writer_format_emf::Emf;
use mq_core::metrics::{Outcome, QueueFigures};
use mq_core::run::RunKind;
use mq_core::time::Timestamp;
use percent_encoding::{CONTROLS, utf8_percent_encode};
use std::borrow::Cow;
use std::time::{Duration, SystemTime};

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "MergeQueue";

/// The EMF lines of one queue's figures at `now`, one JSON object per line (no newline).
///
/// Print each one on its own line to standard output as it is (`println!`), not through the
/// JSON logger, which would wrap it in a log object that CloudWatch does not read as EMF.
pub fn emf_lines(figures: &QueueFigures, now: Timestamp) -> Vec<String> {
    lines_of(figures, now)
        .iter()
        .filter_map(|line| match line.render() {
            Ok(text) => Some(text),
            // A bad metric name or value is a bug; it must not stop the tick.
            Err(error) => {
                tracing::error!(%error, "cannot format an EMF line");
                None
            }
        })
        .collect()
}

/// One EMF line: a timestamp, dimension values, and counts.
struct Line<'a> {
    at: SystemTime,
    dimensions: Vec<(&'static str, Cow<'a, str>)>,
    counts: Vec<(&'static str, u64)>,
}

impl Entry for Line<'_> {
    fn write<'b>(&'b self, writer: &mut impl EntryWriter<'b>) {
        writer.timestamp(self.at);
        for (name, value) in &self.dimensions {
            writer.value(*name, &**value);
        }
        for (name, count) in &self.counts {
            writer.value(*name, &AsCount::from(*count));
        }
    }
}

impl Line<'_> {
    fn render(&self) -> Result<String, String> {
        let dimension_set = self.dimensions.iter().map(|(k, _)| (*k).to_owned());
        let mut emf = Emf::builder(NAMESPACE.to_owned(), vec![dimension_set.collect()]).build();
        let mut out = Vec::new();
        emf.format(self, &mut out).map_err(|e| e.to_string())?;
        let text = String::from_utf8(out).map_err(|e| e.to_string())?;
        Ok(text.trim_end().to_owned())
    }
}

/// A dimension value as CloudWatch takes it: ASCII only, so every other character (a branch
/// may be named in any script), and any control character, is written as the
/// percent-encoding of its UTF-8 bytes.
fn ascii_dimension(value: &str) -> Cow<'_, str> {
    utf8_percent_encode(value, CONTROLS).into()
}

fn lines_of(f: &QueueFigures, now: Timestamp) -> Vec<Line<'_>> {
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(now.millis().max(0) as u64);
    let queue = |kind: RunKind| {
        vec![
            (REPO, ascii_dimension(&f.repo)),
            (BRANCH, ascii_dimension(&f.branch)),
            (QUEUE_TYPE, Cow::Borrowed(kind.as_str())),
        ]
    };
    let mut lines = vec![
        Line {
            at,
            dimensions: queue(RunKind::Main),
            counts: vec![
                (names::QUEUE_DEPTH.name, f.depth),
                (names::AWAITING_MERGEABILITY.name, f.awaiting_mergeability),
                (names::TESTING_SLOTS_ACTIVE.name, f.main.prs_testing),
                (names::TEST_RUNS_ACTIVE.name, f.main.runs_active),
                (names::RESTARTS.name, f.restarts),
                (names::EFFECTS_PENDING.name, f.effects_pending),
                (names::ENTRIES_STUCK.name, f.entries_stuck),
            ],
        },
        Line {
            at,
            dimensions: queue(RunKind::Bisection),
            counts: vec![
                (names::TESTING_SLOTS_ACTIVE.name, f.bisection.prs_testing),
                (names::TEST_RUNS_ACTIVE.name, f.bisection.runs_active),
            ],
        },
    ];
    for outcome in Outcome::ALL {
        let mut dimensions = queue(RunKind::Main);
        dimensions.push((CONCLUSION, Cow::Borrowed(outcome.as_str())));
        lines.push(Line {
            at,
            dimensions,
            counts: vec![(names::CONCLUSIONS.name, f.outcome(*outcome).count)],
        });
    }
    lines
}

#[cfg(test)]
mod tests;
