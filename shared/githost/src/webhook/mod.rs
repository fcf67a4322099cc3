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
    secret: Vec<u8>,
    host: String,
}

impl std::fmt::Debug for WebhookReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WebhookReceiver {{ host: {:?}, .. }}", self.host)
    }
}

impl WebhookReceiver {
    /// `host` is the host of the repositories in the facts (`github.com`, or the Enterprise
    /// Server's name).
    pub fn new(secret: impl Into<Vec<u8>>, host: impl Into<String>) -> Self {
        Self {
            secret: secret.into(),
            host: host.into(),
        }
    }

    /// Verifies a delivery (`X-GitHub-Event`, `X-Hub-Signature-256`, raw body), then reads it.
    pub fn receive(
        &self,
        event: &str,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<HostFact, WebhookError> {
        verify_signature(&self.secret, signature, body)?;
        payloads::parse(event, body, &self.host)
    }
}
