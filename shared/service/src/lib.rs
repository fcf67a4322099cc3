//! The application service: what each use of the merge queue does, between a request parsed
//! at the edge and its answer: submit, cancel and restart pull requests, manage queues, the
//! tick, Git host webhooks, test health and metrics. It works through the storage port and
//! the Git host port and knows nothing of HTTP or AWS; its errors are [`ServiceError`].
//! docs/architecture.md draws the crates around it.

pub mod advice;
pub mod app;
pub mod dashboard;
pub mod drive;
pub mod effects;
pub mod error;
pub mod line;
pub mod metrics;
pub mod owners;
pub mod pull_requests;
pub mod queues;
pub mod request_log;
pub mod shell;
pub mod test_health;
#[cfg(test)]
mod test_queue;
pub mod tick;
pub mod uploads;
pub mod webhook;

pub use app::{App, Clock, ManualClock, SystemClock};
pub use error::{ServiceError, ServiceResult};
