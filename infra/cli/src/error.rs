//! What can go wrong, said so that the user knows what to do; every error exits with 4.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// Bad input or missing configuration; the message says what to give.
    Input(String),
    /// The API answered with an error.
    Api {
        operation: String,
        status: u16,
        code: String,
        message: String,
    },
    /// The API could not be reached, or did not answer in time, after every retry.
    Network { operation: String, detail: String },
}

impl Error {
    pub fn input(message: impl Into<String>) -> Self {
        Error::Input(message.into())
    }

    /// The API's error code (`QUEUE_NOT_FOUND`), when the API answered with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(message) => f.write_str(message),
            Error::Api {
                operation,
                status,
                code,
                message,
            } => write!(f, "{operation}: {status} {code}: {message}"),
            Error::Network { operation, detail } => write!(f, "{operation}: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
