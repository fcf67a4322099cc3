//! The local gateway: every endpoint on one port, served by the same handler functions the
//! Lambda functions run, over the in-memory store or a DynamoDB endpoint.

pub mod routes;
pub mod server;
pub mod tokens;

pub use server::{Gateway, router};
