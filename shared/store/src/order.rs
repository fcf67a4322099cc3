//! Rules both adapters share when they read: which stored record is current. (The order of a
//! snapshot's items is [`QueueSnapshot::sort`](mq_core::snapshot::QueueSnapshot::sort).)

use mq_core::entry::Entry;
use mq_core::run::TestRun;
use mq_core::snapshot::Queue;

/// The active entry if there is one, else the latest concluded entry of this incarnation of
/// the queue (a queue deleted and created again does not inherit its predecessor's history).
pub fn latest_entry(
    queue: &Queue,
    active: Option<&Entry>,
    concluded: Option<&Entry>,
) -> Option<Entry> {
    active
        .or_else(|| concluded.filter(|e| e.submitted_at >= queue.created_at))
        .cloned()
}

/// The active run if there is one, else the finished run of this incarnation of the queue.
pub fn current_run(
    queue: &Queue,
    active: Option<&TestRun>,
    finished: Option<&TestRun>,
) -> Option<TestRun> {
    active
        .or_else(|| finished.filter(|r| r.created_at >= queue.created_at))
        .cloned()
}
