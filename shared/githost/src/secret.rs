//! Secrets the adapter holds (a GitHub App's private key, a webhook's secret) and reads again
//! when the host refuses what they sign: rotated where they are kept, they take effect in a
//! running process without a restart.

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

/// A secret's source and when it was last read again.
pub(crate) struct ReadAgain {
    source: Arc<dyn SecretSource>,
    last: Mutex<Option<Instant>>,
}

impl ReadAgain {
    pub fn new(source: Arc<dyn SecretSource>) -> Self {
        Self {
            source,
            last: Mutex::new(None),
        }
    }

    /// The secret's value now, unless it was read again less than [`READ_AGAIN_AFTER`] ago
    /// (or cannot be read: logged).
    pub async fn value(&self) -> Option<String> {
        {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < READ_AGAIN_AFTER) {
                return None;
            }
            *last = Some(Instant::now());
        }
        match self.source.read().await {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!(error = %e, "a secret could not be read again");
                None
            }
        }
    }
}
