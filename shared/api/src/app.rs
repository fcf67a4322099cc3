//! The application: the store, the Git host and the clock every handler works with.

use crate::error::ApiError;
use mq_core::time::Timestamp;
use mq_githost::GitHost;
use mq_githost::webhook::WebhookReceiver;
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
    /// The Git host of the queues' repositories; `None` where only administration runs.
    pub githost: Option<Arc<dyn GitHost>>,
    /// Verifies and reads the Git host's webhook deliveries; `None` without a secret.
    pub webhook: Option<WebhookReceiver>,
    /// The bucket of large test reports (presigned uploads), when configured.
    pub uploads: Option<Arc<crate::uploads::UploadBucket>>,
}

impl App {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            githost: None,
            webhook: None,
            uploads: None,
        }
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
    pub fn with_uploads(mut self, bucket: crate::uploads::UploadBucket) -> Self {
        self.uploads = Some(Arc::new(bucket));
        self
    }

    /// The deployed application: DynamoDB tables named by the environment
    /// (`MQ_QUEUES_TABLE`, ...), AWS settings from the standard chain. `MQ_DYNAMODB_ENDPOINT`
    /// points the client at another endpoint (a local DynamoDB-compatible server). With
    /// `MQ_GITHUB_APP_ID` and `MQ_GITHUB_PRIVATE_KEY_SECRET_ARN` it acts on GitHub as that App;
    /// with `MQ_WEBHOOK_SECRET_ARN` it accepts GitHub's deliveries. Secrets are read from
    /// Secrets Manager, once per process.
    pub async fn from_env() -> Self {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Ok(endpoint) = std::env::var("MQ_DYNAMODB_ENDPOINT") {
            loader = loader.endpoint_url(endpoint);
        }
        let config = loader.load().await;
        let client = aws_sdk_dynamodb::Client::new(&config);
        let store = DynamoStore::new(client, TableNames::from_env());
        let mut app = Self::new(Arc::new(store), Arc::new(SystemClock));
        if let Ok(bucket) = std::env::var("MQ_UPLOADS_BUCKET") {
            app = app.with_uploads(crate::uploads::UploadBucket::new(
                aws_sdk_s3::Client::new(&config),
                bucket,
            ));
        }
        let secrets = crate::secrets::Secrets::new(&config);
        match crate::secrets::github_from_env(&secrets).await {
            Ok(Some((host, webhook))) => {
                app = app.with_githost(host);
                if let Some(receiver) = webhook {
                    app = app.with_webhook(receiver);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "GitHub is not configured"),
        }
        app
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The Git host, or a 500 when this deployment has none configured.
    pub fn host(&self) -> Result<&dyn GitHost, ApiError> {
        self.githost
            .as_deref()
            .ok_or_else(|| ApiError::internal("no Git host is configured"))
    }
}
