//! Rules both adapters share when they read: which stored record is current. (The order of a
//! snapshot's items is [`QueueSnapshot::sort`](mq_core::snapshot::QueueSnapshot::sort).)

use mq_core::entry::Entry;
use mq_core::run::TestRun;
use mq_core::snapshot::Queue;
use mq_core::time::Timestamp;

/// The active entry if there is one, else the latest concluded entry of this incarnation of
/// the queue (a queue deleted and created again does not inherit its predecessor's history).
pub fn latest_entry(
    queue: &Queue,
    active: Option<&Entry>,
    concluded: Option<&Entry>,
) -> Option<Entry> {
    active_or_own(queue, active, concluded, |e| e.submitted_at)
}

/// The active run if there is one, else the finished run of this incarnation of the queue.
pub fn current_run(
    queue: &Queue,
    active: Option<&TestRun>,
    finished: Option<&TestRun>,
) -> Option<TestRun> {
    active_or_own(queue, active, finished, |r| r.created_at)
}

/// The active record if there is one, else the past one if it was made (`made_at`) since the
/// queue was created.
fn active_or_own<T: Clone>(
    queue: &Queue,
    active: Option<&T>,
    past: Option<&T>,
    made_at: impl Fn(&T) -> Timestamp,
) -> Option<T> {
    active
        .or_else(|| past.filter(|r| made_at(r) >= queue.created_at))
        .cloned()
}
