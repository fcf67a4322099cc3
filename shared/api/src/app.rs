//! The application: the store and the clock every handler works with.

use mq_core::time::Timestamp;
use mq_store::{DynamoStore, Store, TableNames};
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
    /// The bucket of large test reports (presigned uploads), when configured.
    pub uploads: Option<Arc<crate::uploads::UploadBucket>>,
}

impl App {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            uploads: None,
        }
    }

    /// The same application with a bucket for large test reports.
    pub fn with_uploads(mut self, bucket: crate::uploads::UploadBucket) -> Self {
        self.uploads = Some(Arc::new(bucket));
        self
    }

    /// The deployed application: DynamoDB tables named by the environment
    /// (`MQ_QUEUES_TABLE`, ...), AWS settings from the standard chain. `MQ_DYNAMODB_ENDPOINT`
    /// points the client at another endpoint (a local DynamoDB-compatible server).
    pub async fn from_env() -> Self {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Ok(endpoint) = std::env::var("MQ_DYNAMODB_ENDPOINT") {
            loader = loader.endpoint_url(endpoint);
        }
        let config = loader.load().await;
        let client = aws_sdk_dynamodb::Client::new(&config);
        let store = DynamoStore::new(client, TableNames::from_env());
        let app = Self::new(Arc::new(store), Arc::new(SystemClock));
        match std::env::var("MQ_UPLOADS_BUCKET") {
            Ok(bucket) => app.with_uploads(crate::uploads::UploadBucket::new(
                aws_sdk_s3::Client::new(&config),
                bucket,
            )),
            Err(_) => app,
        }
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}
