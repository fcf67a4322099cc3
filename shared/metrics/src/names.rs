//! Metric names, labels, help texts and histogram buckets, shared by both renderings.

/// Labels every metric carries.
pub const REPO: &str = "repo";
pub const BRANCH: &str = "branch";
/// `main` or `bisection`: the lane of runs a figure describes (entry figures are `main`).
pub const QUEUE_TYPE: &str = "queue_type";
/// Extra labels.
pub const CONCLUSION: &str = "conclusion";
pub const STATUS: &str = "status";
pub const STATE: &str = "state";

/// A metric: its name and its `# HELP` text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
}

pub const QUEUE_DEPTH: Metric = Metric {
    name: "mq_queue_depth_current",
    help: "Pull requests in the queue, not counting those not yet ready (not_ready).",
};
pub const AWAITING_MERGEABILITY: Metric = Metric {
    name: "mq_awaiting_mergeability",
    help: "Pull requests submitted but not yet ready to test (not_ready): waiting for their base \
           branch, mergeability or impacted targets.",
};
pub const TESTING_SLOTS_ACTIVE: Metric = Metric {
    name: "mq_testing_slots_active",
    help: "Pull requests under test in runs in flight.",
};
pub const TEST_RUNS_ACTIVE: Metric = Metric {
    name: "mq_test_runs_active",
    help: "Test runs in flight.",
};
pub const TEST_RUNS_LIMIT: Metric = Metric {
    name: "mq_test_runs_limit",
    help: "Test runs allowed in flight at once: the queue's concurrency (main) or bisection \
           concurrency (bisection).",
};
pub const TEST_RUNS_FINISHED: Metric = Metric {
    name: "mq_test_runs_finished_1h",
    help: "Test runs that finished in the last hour, by status (a rolling one-hour count).",
};
pub const CONCLUSIONS: Metric = Metric {
    name: "mq_pr_conclusions_1h_total",
    help: "Pull requests that left the queue in the last hour, by conclusion (a rolling one-hour \
           count, not a counter: read the value, do not rate() it).",
};
pub const RESTARTS: Metric = Metric {
    name: "mq_pr_restarts_1h_total",
    help: "Restarts of pull requests' testing in the last hour (a rolling one-hour count, not a \
           counter: read the value, do not rate() it).",
};
pub const QUEUE_STATE: Metric = Metric {
    name: "mq_queue_state",
    help: "1 for the queue's current state (running, paused, draining, switching_modes), 0 for \
           the others.",
};
pub const EFFECTS_PENDING: Metric = Metric {
    name: "mq_effects_pending",
    help: "Git host actions (test branches, merges, comments, status checks) waiting to be \
           carried out or retried.",
};
pub const ENTRIES_STUCK: Metric = Metric {
    name: "mq_entries_stuck",
    help: "Pull requests in the queue that have not changed state for longer than the queue's \
           testing timeout (or its batching wait, when longer) while nothing in flight could \
           move them.",
};
pub const READ_FAILED: Metric = Metric {
    name: "mq_queue_read_failed",
    help: "1 when this scrape could not read the queue (its other series are missing from this \
           scrape, and the service logs why), 0 when it could.",
};
pub const WAIT_DURATION: Metric = Metric {
    name: "mq_pr_wait_duration_1h_seconds",
    help: "Time from ready to first test, of pull requests whose first test started in the last \
           hour.",
};
pub const TEST_DURATION: Metric = Metric {
    name: "mq_pr_test_duration_1h_seconds",
    help: "Test time of each pull request in the runs that passed, or whose tests failed or \
           timed out, in the last hour (from the run's start to its result).",
};
pub const TIME_IN_QUEUE: Metric = Metric {
    name: "mq_pr_time_in_queue_1h_seconds",
    help: "Time from submission to conclusion, of pull requests that left the queue in the last \
           hour.",
};
pub const CI_RUNS: Metric = Metric {
    name: "mq_pr_ci_runs_1h",
    help: "CI runs taken by each pull request that left the queue in the last hour (_sum / \
           _count is CI runs per pull request).",
};

/// Buckets of the duration histograms (seconds, 1 min to 2 h) and of the CI runs histogram.
pub use mq_core::metrics::{CI_RUNS_BUCKETS, DURATION_BUCKETS};
