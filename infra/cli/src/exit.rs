//! The exit codes, one table for every command (`mq --help` lists them).

use std::process::ExitCode;

/// How a command ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done; `submit --wait`: merged; `check-quarantined`: nothing to fail the job for.
    Done,
    /// The verdict is no: the pull request failed, a failed test is not quarantined.
    Negative,
    /// The pull request was cancelled.
    Cancelled,
    /// `--timeout` ran out.
    TimedOut,
}

/// Bad input, configuration, the API or the network.
pub const ERROR: u8 = 4;

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(match outcome {
            Outcome::Done => 0,
            Outcome::Negative => 1,
            Outcome::Cancelled => 2,
            Outcome::TimedOut => 3,
        })
    }
}
