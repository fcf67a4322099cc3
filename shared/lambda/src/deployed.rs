//! The deployed application, put together from the environment a function runs in: the AWS
//! configuration, the store chosen by `MQ_STORE`, and, for the functions that need them, the
//! GitHub App and the uploads bucket.

use crate::s3::UploadBucket;
use aws_config::environment::EnvironmentVariableCredentialsProvider;
use mq_service::{App, SystemClock};
use mq_store::{DynamoStore, MemoryStore, Store, TableNames};
use std::sync::Arc;
use std::time::Duration;

/// The longest a deployed function waits for one attempt of a DynamoDB call: a transaction
/// of 3 MB or a query page of 1 MB takes well under a second.
pub const DYNAMODB_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);

/// The longest a deployed function waits for a DynamoDB call, its retries included; then the
/// store answers `Unavailable` (a retryable 503), well before an API function's 29 s end.
pub const DYNAMODB_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The AWS configuration of a deployed function: the region from Lambda's environment, its
/// credentials from the environment variables Lambda sets (the standard chain when they are
/// missing), and an HTTPS client that trusts the system's bundle of root certificates, read
/// once ([`crate::https`]). `MQ_DYNAMODB_ENDPOINT` points DynamoDB at another endpoint (a
/// local DynamoDB-compatible server).
///
/// The standard chain would find the same credentials first, but building it builds its
/// other providers too, among them an STS client for web identity tokens, whose HTTPS client
/// loads the root certificates once more at every cold start.
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

/// Which store a function uses, from `MQ_STORE`: `dynamodb` (the default; tables named by
/// `MQ_QUEUES_TABLE`, ...) or `memory` (a store that lives as long as the process: for
/// running a function by hand without AWS). Anything else is refused.
pub fn store_from_env(config: &aws_config::SdkConfig) -> Result<Arc<dyn Store>, String> {
    match std::env::var("MQ_STORE").as_deref() {
        Ok("dynamodb") | Err(_) => {
            let client = dynamodb_client(config);
            Ok(Arc::new(DynamoStore::new(client, TableNames::from_env())))
        }
        Ok("memory") => Ok(Arc::new(MemoryStore::new())),
        Ok(other) => Err(format!(
            "MQ_STORE is {other:?}; it must be dynamodb or memory"
        )),
    }
}

/// A DynamoDB client that gives up on a call after [`DYNAMODB_ATTEMPT_TIMEOUT`] per attempt
/// and [`DYNAMODB_CALL_TIMEOUT`] in all: the SDK sets no such limit, and a call whose answer
/// never came would wait until Lambda ended the function, its request unanswered.
pub fn dynamodb_client(config: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_millis(3100))
        .operation_attempt_timeout(DYNAMODB_ATTEMPT_TIMEOUT)
        .operation_timeout(DYNAMODB_CALL_TIMEOUT)
        .build();
    let dynamodb = aws_sdk_dynamodb::config::Builder::from(config)
        .timeout_config(timeouts)
        .build();
    aws_sdk_dynamodb::Client::from_conf(dynamodb)
}

/// The deployed application's store and clock. A function that acts on repositories or reads
/// uploaded reports adds them with [`attach_github`] and [`attach_uploads`], so only those
/// functions link the GitHub client and the S3 SDK.
pub fn app_from_env(config: &aws_config::SdkConfig) -> Result<App, String> {
    Ok(App::new(store_from_env(config)?, Arc::new(SystemClock)))
}

/// With `MQ_GITHUB_APP_ID` and `MQ_GITHUB_PRIVATE_KEY_SECRET_ARN`, acts on GitHub as that
/// App; with `MQ_WEBHOOK_SECRET_ARN`, accepts GitHub's deliveries. The secrets are read from
/// Secrets Manager, once per process. A secret that cannot be read, or GitHub configured in
/// part, stops the function's start (as a wrong store does): no process runs without the
/// GitHub it was configured for, and Lambda starts it afresh for the next invocation.
pub async fn attach_github(mut app: App, config: &aws_config::SdkConfig) -> App {
    let secrets = crate::secrets::Secrets::new(config);
    let pins = Arc::new(mq_service::owners::LinkedAccounts::new(app.store.clone()));
    match crate::secrets::github_from_env(&secrets, pins).await {
        Ok(Some((host, webhook))) => {
            app = app.with_githost(host);
            if let Some(receiver) = webhook {
                app = app.with_webhook(receiver);
            }
        }
        Ok(None) => {}
        Err(e) => panic!("the function's GitHub configuration is wrong: {e}"),
    }
    app
}

/// With `MQ_UPLOADS_BUCKET`, takes large reports through that S3 bucket.
pub fn attach_uploads(app: App, config: &aws_config::SdkConfig) -> App {
    match std::env::var("MQ_UPLOADS_BUCKET") {
        Ok(bucket) => app.with_uploads(Arc::new(UploadBucket::new(
            aws_sdk_s3::Client::new(config),
            bucket,
        ))),
        Err(_) => app,
    }
}
