//! The domain of the merge queue, free of I/O: identifiers, queue settings, entries and test
//! runs, the queue engine, and test-health classification.
//!
//! Nothing here reads a clock, draws random numbers or touches the network: time and ids are
//! arguments, so every behaviour is reproducible in tests and simulations.

pub mod effects;
pub mod engine;
pub mod entry;
pub mod enums;
pub mod error;
pub mod estimate;
pub mod git;
pub mod health;
pub mod history;
pub mod ids;
pub mod metrics;
pub mod priority;
pub mod readable;
pub mod run;
pub mod settings;
pub mod snapshot;
pub mod time;
pub mod timeline;
pub mod tuning;

pub use error::{DomainError, ErrorCode, ErrorKind};
pub use time::Timestamp;
