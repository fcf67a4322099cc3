//! Who the adapter is on GitHub, as the author or committer of the commits it writes: a GitHub
//! App's bot user (`{slug}[bot]`), or the user a token belongs to (their name, else their
//! login). The email is the account's no-reply address, `{id}+{login}@users.noreply.{host}`.
//! Looked up on first use and kept for the life of the adapter.

use super::auth::Auth;
use super::client::{Client, escape};
use super::wire::Account;
use crate::error::HostResult;
use mq_core::ids::RepoRef;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    fn of(account: &Account, name: &str, host: &str) -> Self {
        Self {
            name: name.to_owned(),
            email: format!(
                "{}+{}@users.noreply.{}",
                account.id,
                account.login,
                host.to_ascii_lowercase()
            ),
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

/// The adapter's identity, looked up once.
pub(crate) async fn identity(client: &Client, repo: &RepoRef) -> HostResult<Identity> {
    client
        .identity
        .get_or_try_init(|| look_up(client, repo))
        .await
        .cloned()
}

async fn look_up(client: &Client, repo: &RepoRef) -> HostResult<Identity> {
    match &client.auth {
        Auth::Token(_) => {
            let user: Account = client.get(repo, "/user").await?;
            let name = user.name.clone().unwrap_or_else(|| user.login.clone());
            Ok(Identity::of(&user, &name, &repo.host))
        }
        Auth::App(app) => {
            let login = format!("{}[bot]", app.slug(&client.transport).await?);
            let path = format!("/users/{}", escape(&login));
            let bot: Account = client.get(repo, &path).await?;
            Ok(Identity::of(&bot, &login, &repo.host))
        }
    }
}
