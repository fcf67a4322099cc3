//! The DynamoDB adapter. The layout is described in [`keys`].

mod codec;
mod expiry;
mod health;
mod history;
mod idempotency;
pub mod keys;
pub mod large_commit;
mod owners;
mod queues;
mod requests;
mod tokens;
mod transaction_limits;

pub use expiry::ExpiryBackfill;
pub use history::{ENTRY_SUMMARY, RUN_SUMMARY};
pub use transaction_limits::item_bytes;

use crate::tables::TableNames;
use aws_sdk_dynamodb::Client;

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
