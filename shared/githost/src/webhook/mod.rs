//! GitHub webhook deliveries: the signature is verified over the raw body first, then the
//! payload becomes a [`HostFact`]. Events and actions the queue has no use for become
//! [`HostFact::Ignored`], to be acknowledged.

mod command;
mod facts;
mod payloads;
mod signature;

pub use command::{CommentCommand, InvalidCommand, parse_command};
pub use facts::{HostFact, PrChange};
pub use signature::{SIGNATURE_HEADER, sign, verify_signature};

use crate::secret::{ReadAgain, SecretSource};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A webhook secret held longer is read again from its source (when a delivery comes): a
/// secret retired there (the old line of a rotation, a leaked one) is no longer accepted
/// after this long, though no delivery signed with the new one is refused to show it.
pub const HOLD_SECRET_FOR: Duration = Duration::from_secs(600);

/// The header naming a delivery's event.
pub const EVENT_HEADER: &str = "X-GitHub-Event";

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("the delivery has no X-Hub-Signature-256 header")]
    MissingSignature,
    #[error("the delivery's signature does not match its body")]
    BadSignature,
    #[error("no webhook secret is configured")]
    NoSecret,
    #[error("the delivery's payload is malformed: {0}")]
    Malformed(String),
}

impl WebhookError {
    /// The HTTP status to answer with: 401 for signatures, 400 for payloads, 500 when the
    /// service itself is not set up.
    pub fn http_status(&self) -> u16 {
        match self {
            WebhookError::MissingSignature | WebhookError::BadSignature => 401,
            WebhookError::Malformed(_) => 400,
            WebhookError::NoSecret => 500,
        }
    }
}

/// Receives the deliveries of one webhook.
#[derive(Clone)]
pub struct WebhookReceiver {
    secrets: Arc<RwLock<Vec<Vec<u8>>>>,
    again: Option<Arc<ReadAgain>>,
    hold_for: Duration,
    host: String,
}

impl std::fmt::Debug for WebhookReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WebhookReceiver {{ host: {:?}, .. }}", self.host)
    }
}

impl WebhookReceiver {
    /// `secret` is the webhook's secret: while it is changed, the old and the new one, a line
    /// each (a delivery signed with either is accepted; see [`secrets_of`]). `host` is the
    /// host of the repositories in the facts (`github.com`, or the Enterprise Server's name).
    pub fn new(secret: impl Into<Vec<u8>>, host: impl Into<String>) -> Self {
        Self {
            secrets: Arc::new(RwLock::new(secrets_of(&secret.into()))),
            again: None,
            hold_for: HOLD_SECRET_FOR,
            host: host.into(),
        }
    }

    /// Reads the secret again from `source` when a delivery's signature matches none held.
    pub fn with_source(mut self, source: Arc<dyn SecretSource>) -> Self {
        self.again = Some(Arc::new(ReadAgain::new(source)));
        self
    }

    /// Verifies a delivery (`X-GitHub-Event`, `X-Hub-Signature-256`, raw body) with the
    /// secrets held, then reads it.
    pub fn receive(
        &self,
        event: &str,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<HostFact, WebhookError> {
        self.verify(signature, body)?;
        payloads::parse(event, body, &self.host)
    }

    /// [`Self::receive`], with the secret read again from its source first when it was held
    /// [`HOLD_SECRET_FOR`], and when a signature matches no secret held (at most once a minute:
    /// it was changed where it is kept).
    pub async fn receive_or_read_again(
        &self,
        event: &str,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<HostFact, WebhookError> {
        if let Some(again) = &self.again
            && let Some(value) = again.value_if_older_than(self.hold_for).await
        {
            self.hold(&value);
        }
        match self.verify(signature, body) {
            Err(WebhookError::BadSignature) if self.read_again().await => {
                self.verify(signature, body)?;
            }
            verified => verified?,
        }
        payloads::parse(event, body, &self.host)
    }

    fn verify(&self, signature: Option<&str>, body: &[u8]) -> Result<(), WebhookError> {
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        let mut verdict = Err(WebhookError::NoSecret);
        for secret in secrets.iter() {
            verdict = verify_signature(secret, signature, body);
            if verdict != Err(WebhookError::BadSignature) {
                break;
            }
        }
        verdict
    }

    /// After a refusal: whether the secret was read again.
    async fn read_again(&self) -> bool {
        let Some(again) = &self.again else {
            return false;
        };
        let Some(value) = again.value().await else {
            return false;
        };
        self.hold(&value);
        tracing::warn!(
            "a delivery's signature matched no webhook secret: the secret was read again"
        );
        true
    }

    fn hold(&self, value: &str) {
        *self.secrets.write().unwrap_or_else(|e| e.into_inner()) = secrets_of(value.as_bytes());
    }
}

/// The GitHub id of the account owning the repository a delivery is about
/// (`repository.owner.id`), if it names one: deliveries from another account than the one
/// its owner was linked as reach nothing (see [`crate::pins`]).
pub fn owner_account(body: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Account {
        id: u64,
    }
    #[derive(serde::Deserialize)]
    struct Repository {
        owner: Account,
    }
    #[derive(serde::Deserialize)]
    struct Delivery {
        repository: Option<Repository>,
    }
    let delivery: Delivery = serde_json::from_slice(body).ok()?;
    delivery.repository.map(|r| r.owner.id)
}

/// The secrets a webhook secret's value holds: one per line (a `\r` before the `\n` is not
/// part of it; empty lines are none), so that while it is changed, on GitHub and where it is
/// kept, deliveries signed with the old and with the new one are both accepted.
pub fn secrets_of(value: &[u8]) -> Vec<Vec<u8>> {
    value
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Kept(&'static str);

    #[async_trait::async_trait]
    impl SecretSource for Kept {
        async fn read(&self) -> Result<String, String> {
            Ok(self.0.to_owned())
        }
    }

    /// The rotation's last step (only the new secret left where it is kept) reaches a receiver
    /// that holds both once it has held them its time: the old one is refused from then on,
    /// though every delivery signed with the new one was accepted.
    #[tokio::test]
    async fn a_retired_secret_is_refused_once_the_secret_held_is_read_again() {
        let mut receiver = WebhookReceiver::new(b"new\nold".to_vec(), "github.com")
            .with_source(Arc::new(Kept("new")));
        let body = br#"{"zen": "Keep it logically awesome.", "hook_id": 1}"#;
        let old = sign(b"old", body);
        assert!(
            receiver
                .receive_or_read_again("ping", Some(&old), body)
                .await
                .is_ok()
        );
        receiver.hold_for = Duration::ZERO;
        let refused = receiver
            .receive_or_read_again("ping", Some(&old), body)
            .await;
        assert_eq!(refused, Err(WebhookError::BadSignature));
        let new = sign(b"new", body);
        assert!(
            receiver
                .receive_or_read_again("ping", Some(&new), body)
                .await
                .is_ok()
        );
    }
}
