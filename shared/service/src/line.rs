//! One line per queue in a process: the commits that requests of one process make on one
//! queue take turns instead of racing each other to the store, first come first served. A
//! turn hands the snapshot it committed to the next one, which steps from it without reading
//! the queue again. While no request of the process is on a queue, its line (and the
//! snapshot it kept) is gone, so nothing read long ago is ever used.
//!
//! This only orders the writers of one process (the local gateway serves every request in
//! one; a Lambda instance serves one request at a time, so its line is always free). Writers
//! in other processes still race; the version check of every commit, and the retries of
//! [`super::shell`], keep that correct.

use mq_core::ids::QueueId;
use mq_core::snapshot::QueueSnapshot;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

type Line = Arc<tokio::sync::Mutex<Option<QueueSnapshot>>>;

/// The lines of a process's queues.
#[derive(Debug, Default)]
pub struct CommitLines {
    lines: Mutex<HashMap<QueueId, Line>>,
}

impl CommitLines {
    /// Waits for the turn of the caller on queue `id`; `None` when `deadline` came first.
    pub async fn turn(&self, id: &QueueId, deadline: Instant) -> Option<Turn<'_>> {
        let line = self.join(id);
        let guard = tokio::time::timeout_at(deadline, line.clone().lock_owned()).await;
        let turn = Turn {
            lines: self,
            id: id.clone(),
            line,
            guard: guard.ok(),
        };
        turn.guard.is_some().then_some(turn)
    }

    fn join(&self, id: &QueueId) -> Line {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.entry(id.clone()).or_default().clone()
    }

    /// Removes the line of `id` when `line` (whose turn just ended) is its last user.
    fn leave(&self, id: &QueueId, line: &Line) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        // One reference is the map's, one the leaver's: nobody else waits.
        if Arc::strong_count(line) == 2 {
            lines.remove(id);
        }
    }

    /// Queues with a line now (some request of this process is on them).
    #[cfg(test)]
    fn queues(&self) -> usize {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A caller's turn on a queue's line; the next caller's starts when it is dropped.
pub struct Turn<'a> {
    lines: &'a CommitLines,
    id: QueueId,
    line: Line,
    guard: Option<OwnedMutexGuard<Option<QueueSnapshot>>>,
}

impl Turn<'_> {
    /// The snapshot the turn before committed (or found current), if the line kept one.
    pub fn handed_over(&mut self) -> Option<QueueSnapshot> {
        self.guard.as_mut().and_then(|g| g.take())
    }

    /// Leaves `snapshot`, the queue as this turn committed it (or found it), to the next turn
    /// if one is waiting; it is made only then. A turn that leaves nothing lets the next one
    /// read the queue.
    pub fn hand_over(&mut self, snapshot: impl FnOnce() -> QueueSnapshot) {
        // The map, this turn and its guard hold a reference each; waiting turns hold more.
        let waiting = Arc::strong_count(&self.line) > 3;
        if let Some(guard) = self.guard.as_mut().filter(|_| waiting) {
            **guard = Some(snapshot());
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.lines.leave(&self.id, &self.line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mq_core::ids::RepoRef;
    use mq_core::settings::{QueueConfig, QueueState};
    use mq_core::snapshot::Queue;
    use std::time::Duration;

    fn queue_id(name: &str) -> QueueId {
        QueueId::new(&RepoRef::new("github.com", "acme", name).unwrap(), "main")
    }

    fn snapshot(version: u64) -> QueueSnapshot {
        let mut s = QueueSnapshot::new(Queue::new(
            mq_core::ids::OrgId::parse("acme").unwrap(),
            RepoRef::new("github.com", "acme", "rocket").unwrap(),
            "main".to_owned(),
            QueueConfig::default(),
            QueueState::Running,
            mq_core::time::Timestamp(0),
        ));
        s.queue.version = version;
        s
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn turns_are_taken_in_order_of_arrival_and_the_line_goes_when_idle() {
        let lines = Arc::new(CommitLines::default());
        let id = queue_id("rocket");
        let first = lines.turn(&id, soon()).await.expect("a free line");
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for n in 0..3 {
            let (lines, id, order) = (lines.clone(), id.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let _turn = lines.turn(&id, soon()).await.expect("a turn");
                order.lock().unwrap().push(n);
            }));
            // Each waiter is in line before the next arrives.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(first);
        for w in waiting {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
        assert_eq!(lines.queues(), 0, "no line is kept for an idle queue");
    }

    #[tokio::test]
    async fn a_snapshot_is_handed_to_a_waiting_turn_only() {
        let lines = Arc::new(CommitLines::default());
        let id = queue_id("rocket");
        let mut alone = lines.turn(&id, soon()).await.unwrap();
        alone.hand_over(|| snapshot(1));
        drop(alone);
        let mut next = lines.turn(&id, soon()).await.unwrap();
        assert!(next.handed_over().is_none(), "nobody waited: nothing kept");

        let waiter = {
            let (lines, id) = (lines.clone(), id.clone());
            tokio::spawn(async move {
                let mut turn = lines.turn(&id, soon()).await.unwrap();
                turn.handed_over().map(|s| s.queue.version)
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        next.hand_over(|| snapshot(2));
        drop(next);
        assert_eq!(waiter.await.unwrap(), Some(2));
    }

    #[tokio::test]
    async fn a_turn_not_reached_by_the_deadline_is_refused() {
        let lines = CommitLines::default();
        let id = queue_id("rocket");
        let _held = lines.turn(&id, soon()).await.unwrap();
        let late = Instant::now() + Duration::from_millis(20);
        assert!(lines.turn(&id, late).await.is_none());
        assert!(lines.turn(&queue_id("other"), late).await.is_some());
    }
}
