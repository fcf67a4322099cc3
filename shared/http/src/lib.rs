//! The HTTP edge of the API: the route table, the frame around every handler (request id,
//! log span, errors as JSON), authentication, idempotency, request bodies with their limits,
//! and the mapping of the service's errors to statuses. The handlers parse a request into
//! the wire types (`mq-wire`), call the service (`mq-service`) and render its answer.

pub mod auth;
pub mod body;
pub mod endpoint;
pub mod error;
pub mod http;
pub mod idempotency;
pub mod multipart;
pub mod openapi;
pub mod pages;
pub mod routes;

pub use auth::Caller;
pub use endpoint::serve;
pub use error::ApiError;
