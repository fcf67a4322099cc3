//! The application: the store, the Git host and the clock every handler works with.

use crate::error::ServiceError;
use crate::line::CommitLines;
use crate::uploads::ReportBucket;
use mq_core::ids::OrgId;
use mq_core::time::Timestamp;
use mq_githost::GitHost;
use mq_githost::webhook::WebhookReceiver;
use mq_store::Store;
use std::sync::Arc;

/// Where time comes from. The core never reads a clock; the shell asks this.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default();
        Timestamp(ms)
    }
}

/// A clock that says what it is told: for tests, replays and reproducible figures.
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    pub fn new(at: Timestamp) -> Self {
        Self(std::sync::atomic::AtomicI64::new(at.millis()))
    }

    pub fn set(&self, at: Timestamp) {
        self.0
            .store(at.millis(), std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// Everything a handler needs, built once per process and shared across invocations.
#[derive(Clone)]
pub struct App {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// The Git host of the queues' repositories; `None` where only administration runs.
    pub githost: Option<Arc<dyn GitHost>>,
    /// Verifies and reads the Git host's webhook deliveries; `None` without a secret.
    pub webhook: Option<WebhookReceiver>,
    /// The bucket of large test reports (presigned uploads), when configured.
    pub uploads: Option<Arc<dyn ReportBucket>>,
    /// The organisation owning the repositories of every owner linked to none: the local
    /// gateway's one organisation. `None` (a deployment): such repositories belong to no one.
    pub default_owner: Option<OrgId>,
    /// The turns this process's requests take to commit on each queue.
    pub lines: Arc<CommitLines>,
    /// The simulator's work one advice may spend (`mq_advisor::Budget::work`).
    pub advice_work: u64,
}

impl App {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            githost: None,
            webhook: None,
            uploads: None,
            default_owner: None,
            lines: Arc::default(),
            advice_work: mq_advisor::Budget::default().work,
        }
    }

    /// The same application, with `org` owning the repositories of owners linked to none.
    pub fn with_default_owner(mut self, org: OrgId) -> Self {
        self.default_owner = Some(org);
        self
    }

    /// The same application, acting on repositories through `host`.
    pub fn with_githost(mut self, host: Arc<dyn GitHost>) -> Self {
        self.githost = Some(host);
        self
    }

    /// The same application, accepting webhook deliveries signed for `receiver`.
    pub fn with_webhook(mut self, receiver: WebhookReceiver) -> Self {
        self.webhook = Some(receiver);
        self
    }

    /// The same application with a bucket for large test reports.
    pub fn with_uploads(mut self, bucket: Arc<dyn ReportBucket>) -> Self {
        self.uploads = Some(bucket);
        self
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The Git host; an internal error when this deployment has none configured.
    pub fn host(&self) -> Result<&dyn GitHost, ServiceError> {
        self.githost
            .as_deref()
            .ok_or_else(|| ServiceError::internal("no Git host is configured"))
    }
}
