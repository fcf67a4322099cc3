//! Secrets the adapter holds (a GitHub App's private key, a webhook's secret) and reads again
//! when the host refuses what they sign: rotated where they are kept, they take effect in a
//! running process without a restart.

use crate::sync::lock;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A secret is read again at most this often: a refused signature may be an attacker's, or
/// the secret may be wrong where it is kept, and neither makes a read per request.
pub const READ_AGAIN_AFTER: Duration = Duration::from_secs(60);

/// Where a secret is kept (AWS Secrets Manager in a deployment).
#[async_trait]
pub trait SecretSource: Send + Sync + std::fmt::Debug {
    /// The secret's value now.
    async fn read(&self) -> Result<String, String>;
}

/// A secret's source, when it was last read again after a refusal, and when the value held
/// was read.
pub(crate) struct ReadAgain {
    source: Arc<dyn SecretSource>,
    last: Mutex<Option<Instant>>,
    held_since: Mutex<Instant>,
}

impl ReadAgain {
    /// `source` holds the value just read.
    pub fn new(source: Arc<dyn SecretSource>) -> Self {
        Self {
            source,
            last: Mutex::new(None),
            held_since: Mutex::new(Instant::now()),
        }
    }

    /// After a refusal: the secret's value now, unless it was read again less than
    /// [`READ_AGAIN_AFTER`] ago (or cannot be read: logged).
    pub async fn value(&self) -> Option<String> {
        {
            let mut last = lock(&self.last);
            if last.is_some_and(|at| at.elapsed() < READ_AGAIN_AFTER) {
                return None;
            }
            *last = Some(Instant::now());
        }
        self.read().await
    }

    /// The secret's value now when the value held was read `age` ago or more (a secret
    /// retired where it is kept, whose old value a refusal never shows, is dropped within
    /// `age`); `None` otherwise, or when it cannot be read (logged).
    pub async fn value_if_older_than(&self, age: Duration) -> Option<String> {
        if lock(&self.held_since).elapsed() < age {
            return None;
        }
        self.read().await
    }

    async fn read(&self) -> Option<String> {
        *lock(&self.held_since) = Instant::now();
        match self.source.read().await {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!(error = %e, "a secret could not be read again");
                None
            }
        }
    }
}
