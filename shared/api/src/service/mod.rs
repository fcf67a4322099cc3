//! The application service: what an endpoint does, between parsing and rendering.

pub mod metrics;
pub mod queues;
pub mod shell;
pub mod test_health;
