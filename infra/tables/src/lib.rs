//! Tables as the template declares them: reading the definitions, creating them on an endpoint,
//! and the moto server the tests run against.

pub mod create;
pub mod moto;
pub mod schema;

pub use create::{create_missing_tables, local_client, local_config};
