//! The application: the store, the Git host and the clock every handler works with.

use crate::error::ApiError;
use crate::service::line::CommitLines;
use aws_config::environment::EnvironmentVariableCredentialsProvider;
use mq_core::ids::OrgId;
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
    /// The organisation owning the repositories of every owner linked to none: the local
    /// gateway's one organisation. `None` (a deployment): such repositories belong to no one.
    pub default_owner: Option<OrgId>,
    /// The turns this process's requests take to commit on each queue.
    pub lines: Arc<CommitLines>,
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
    pub fn with_uploads(mut self, bucket: crate::uploads::UploadBucket) -> Self {
        self.uploads = Some(Arc::new(bucket));
        self
    }

    /// The AWS configuration of a deployed function: the region from Lambda's environment,
    /// its credentials from the environment variables Lambda sets (the standard chain when
    /// they are missing), and an HTTPS client that trusts the system's bundle of root
    /// certificates, read once ([`crate::https`]). `MQ_DYNAMODB_ENDPOINT` points DynamoDB at
    /// another endpoint (a local DynamoDB-compatible server).
    ///
    /// The standard chain would find the same credentials first, but building it builds its
    /// other providers too, among them an STS client for web identity tokens, whose HTTPS
    /// client loads the root certificates once more at every cold start.
    pub async fn aws_config_from_env() -> aws_config::SdkConfig {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Some(bundle) = crate::https::system_bundle() {
            match crate::https::client_trusting(&bundle) {
                Ok(client) => loader = loader.http_client(client),
                Err(e) => tracing::warn!(error = %e, "the SDK loads the root certificates"),
            }
        }
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
            loader = loader.credentials_provider(EnvironmentVariableCredentialsProvider::new());
        }
        if let Ok(endpoint) = std::env::var("MQ_DYNAMODB_ENDPOINT") {
            loader = loader.endpoint_url(endpoint);
        }
        loader.load().await
    }

    /// The deployed application's store and clock: DynamoDB tables named by the environment
    /// (`MQ_QUEUES_TABLE`, ...). A function that acts on repositories or reads uploaded
    /// reports adds them with [`App::attach_github`] and [`App::attach_uploads`], so only
    /// those functions link the GitHub client and the S3 SDK.
    pub fn from_config(config: &aws_config::SdkConfig) -> Self {
        let client = aws_sdk_dynamodb::Client::new(config);
        let store = DynamoStore::new(client, TableNames::from_env());
        Self::new(Arc::new(store), Arc::new(SystemClock))
    }

    /// With `MQ_GITHUB_APP_ID` and `MQ_GITHUB_PRIVATE_KEY_SECRET_ARN`, acts on GitHub as that
    /// App; with `MQ_WEBHOOK_SECRET_ARN`, accepts GitHub's deliveries. The secrets are read
    /// from Secrets Manager, once per process.
    pub async fn attach_github(mut self, config: &aws_config::SdkConfig) -> Self {
        let secrets = crate::secrets::Secrets::new(config);
        match crate::secrets::github_from_env(&secrets).await {
            Ok(Some((host, webhook))) => {
                self = self.with_githost(host);
                if let Some(receiver) = webhook {
                    self = self.with_webhook(receiver);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "GitHub is not configured"),
        }
        self
    }

    /// With `MQ_UPLOADS_BUCKET`, takes large reports through that S3 bucket.
    pub fn attach_uploads(self, config: &aws_config::SdkConfig) -> Self {
        match std::env::var("MQ_UPLOADS_BUCKET") {
            Ok(bucket) => self.with_uploads(crate::uploads::UploadBucket::new(
                aws_sdk_s3::Client::new(config),
                bucket,
            )),
            Err(_) => self,
        }
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
