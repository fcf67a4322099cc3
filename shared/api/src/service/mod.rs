//! The application service: what an endpoint does, between parsing and rendering.

pub mod drive;
pub mod effects;
pub mod line;
pub mod metrics;
pub mod owners;
pub mod pull_requests;
pub mod queues;
pub mod shell;
pub mod test_health;
pub mod tick;
pub mod webhook;
