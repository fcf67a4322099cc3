//! GitHub's REST API, authenticated for each repository (a 401 renews an installation token
//! once), with pagination by `Link` headers; and who the adapter is on GitHub.

use super::auth::Auth;
use super::identity::Identity;
pub(crate) use super::transport::{
    Call, JSON, MAX_PAGES, RAW, Reply, Sent, Transport, escape, repo_path,
};
use super::wire::Account;
use crate::error::{HostError, HostResult};
use mq_core::ids::RepoRef;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::OnceCell;

/// The API, authenticated for each repository.
#[derive(Debug)]
pub(crate) struct Client {
    pub transport: Transport,
    pub auth: Auth,
    /// Who the adapter is on GitHub, once looked up.
    pub identity: OnceCell<Identity>,
}

impl Client {
    pub fn new(transport: Transport, auth: Auth) -> Self {
        Self {
            transport,
            auth,
            identity: OnceCell::new(),
        }
    }

    /// Sends a call for `repo`'s API; a 401 with an installation token drops the token and
    /// tries once more with a new one.
    pub async fn send(
        &self,
        repo: &RepoRef,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> HostResult<Reply> {
        self.send_to(repo, method, self.transport.url(path), body, JSON)
            .await
    }

    pub async fn send_to(
        &self,
        repo: &RepoRef,
        method: Method,
        url: String,
        body: Option<&Value>,
        accept: &str,
    ) -> HostResult<Reply> {
        let call = Call {
            method,
            url,
            body,
            accept,
        };
        self.exchange(repo, &call, true).await?.reply()
    }

    /// Sends a call that must not take effect twice: a server error or a lost answer is not
    /// repeated but reported as `Sent::Unknown`, for the caller to look at what is there.
    pub async fn send_unrepeated(
        &self,
        repo: &RepoRef,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> HostResult<Sent> {
        let call = Call {
            method,
            url: self.transport.url(path),
            body,
            accept: JSON,
        };
        self.exchange(repo, &call, false).await
    }

    async fn exchange(&self, repo: &RepoRef, call: &Call<'_>, repeat: bool) -> HostResult<Sent> {
        let token = self.auth.token(&self.transport, repo).await?;
        let sent = self.transport.exchange(call, &token, repeat).await?;
        let unauthorized =
            matches!(&sent, Sent::Answered(reply) if reply.status == StatusCode::UNAUTHORIZED);
        if unauthorized && self.auth.forget(repo) {
            let token = self.auth.token(&self.transport, repo).await?;
            return self.transport.exchange(call, &token, repeat).await;
        }
        Ok(sent)
    }

    pub async fn get<T: DeserializeOwned>(&self, repo: &RepoRef, path: &str) -> HostResult<T> {
        self.send(repo, Method::GET, path, None).await?.json()
    }

    /// `None` for a 404.
    pub async fn get_optional<T: DeserializeOwned>(
        &self,
        repo: &RepoRef,
        path: &str,
    ) -> HostResult<Option<T>> {
        let reply = self.send(repo, Method::GET, path, None).await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        reply.json().map(Some)
    }

    /// Every item of a listing, following `Link: rel="next"` (100 a page). `field` names the
    /// array in an object page (`check_runs`); `None` when pages are arrays.
    pub async fn get_all<T: DeserializeOwned>(
        &self,
        repo: &RepoRef,
        path: &str,
        field: Option<&str>,
    ) -> HostResult<Vec<T>> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut url = self
            .transport
            .url(&format!("{path}{separator}per_page=100"));
        let mut items = Vec::new();
        for _ in 0..MAX_PAGES {
            let reply = self.send_to(repo, Method::GET, url, None, JSON).await?;
            let mut page: Value = reply.json()?;
            let list = match field {
                Some(name) => page.get_mut(name).map(Value::take).unwrap_or_default(),
                None => page,
            };
            let parsed: Vec<T> = serde_json::from_value(list).map_err(|e| {
                HostError::Other(format!(
                    "{}: unexpected answer from GitHub: {e}",
                    reply.what
                ))
            })?;
            items.extend(parsed);
            match reply.next_page() {
                None => return Ok(items),
                Some(next) if self.transport.is_api_url(&next) => url = next,
                Some(next) => {
                    return Err(HostError::Other(format!(
                        "{}: the next page is outside the API: {next}",
                        reply.what
                    )));
                }
            }
        }
        tracing::warn!(
            path,
            pages = MAX_PAGES,
            "a listing has more pages than are read; the rest is left out"
        );
        Ok(items)
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
