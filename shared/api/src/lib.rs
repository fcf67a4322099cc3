//! What every handler shares: the application (store, clock), authentication, request body
//! parsing with limits, the error type, the wire format, and the application service.

pub mod app;
pub mod auth;
pub mod body;
pub mod endpoint;
pub mod error;
pub mod http;
pub mod https;
pub mod idempotency;
pub mod lambda;
pub mod logging;
pub mod openapi;
pub mod routes;
pub mod secrets;
pub mod service;
pub mod wire;
// test health: upload bodies and the bucket of large reports
pub mod multipart;
pub mod uploads;

pub use app::{App, Clock, ManualClock, SystemClock};
pub use auth::Caller;
pub use endpoint::serve;
pub use error::ApiError;
