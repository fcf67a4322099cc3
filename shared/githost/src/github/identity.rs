//! Who the adapter is on GitHub, as the author or committer of the commits it writes: a GitHub
//! App's bot user (`{slug}[bot]`), or the user a token belongs to (their name, else their
//! login). The email is the account's no-reply address, `{id}+{login}@users.noreply.{host}`.
//! The login also tells the queue's own comments from anyone else's. Looked up on first use
//! and kept for the life of the adapter.

use super::wire::Account;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub name: String,
    pub email: String,
    /// The account's login: the author of every comment the adapter posts.
    pub login: String,
}

impl Identity {
    pub fn of(account: &Account, name: &str, host: &str) -> Self {
        Self {
            name: name.to_owned(),
            email: format!(
                "{}+{}@users.noreply.{}",
                account.id,
                account.login,
                host.to_ascii_lowercase()
            ),
            login: account.login.clone(),
        }
    }

    /// An `author` or `committer` of the git data API; without a date GitHub uses its own.
    pub fn signature(&self, date: Option<&str>) -> Value {
        let mut signature = json!({ "name": self.name, "email": self.email });
        if let Some(date) = date {
            signature["date"] = json!(date);
        }
        signature
    }
}
