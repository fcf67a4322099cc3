//! The DynamoDB adapter. The layout is described in [`keys`].

mod codec;
mod health;
mod idempotency;
pub mod keys;
pub mod large_commit;
mod owners;
mod queues;
mod tokens;

use crate::error::StoreError;
use crate::tables::TableNames;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use std::time::Duration;

/// The store backed by DynamoDB (or a DynamoDB-compatible server).
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    tables: TableNames,
}

impl DynamoStore {
    pub fn new(client: Client, tables: TableNames) -> Self {
        Self { client, tables }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn tables(&self) -> &TableNames {
        &self.tables
    }
}

/// Error codes DynamoDB uses for throttling and capacity.
const THROTTLING_CODES: [&str; 5] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "LimitExceededException",
    "InternalServerError",
];

/// Maps an SDK error to a store error: throttling and transport problems are retryable.
pub(crate) fn map_sdk_error<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            StoreError::Unavailable {
                message: "DynamoDB did not answer".to_owned(),
                retry_after: Some(Duration::from_secs(1)),
            }
        }
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or_default();
            if code == "ConditionalCheckFailedException" {
                StoreError::Conflict
            } else if THROTTLING_CODES.contains(&code) {
                StoreError::Unavailable {
                    message: code.to_owned(),
                    retry_after: Some(Duration::from_secs(1)),
                }
            } else {
                StoreError::Internal(format!(
                    "{code}: {}",
                    service.err().message().unwrap_or_default()
                ))
            }
        }
        _ => StoreError::Internal(err.to_string()),
    }
}
