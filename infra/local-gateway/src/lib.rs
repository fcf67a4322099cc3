//! The local gateway: every endpoint on one port, served by the same handler functions the
//! Lambda functions run, over the in-memory store or a DynamoDB endpoint; with the tick and
//! the local CI's results delivered in process.

pub mod background;
pub mod example;
pub mod host;
pub mod owners;
pub mod server;
pub mod tokens;

pub use server::{Gateway, router};
