//! The commands, by what they work on.

pub mod advice;
pub mod health;
pub mod pull_request;
pub mod queue;
