//! Who the adapter is on GitHub: a token, or a GitHub App. An App signs a short-lived JWT
//! (RS256; `iat` 60 s in the past against clock drift, `exp` 9 minutes ahead, `iss` the App
//! id), looks up its installation on each repository, and trades the JWT for an installation
//! token, kept until five minutes before it expires. An installation that no longer exists (the
//! App was reinstalled) is looked up again. A JWT GitHub refuses (401: the key was rotated) has
//! the key read again from its source, if it has one (at most once a minute), and the call sent
//! once more, signed with the key read.

use super::transport::{Call, JSON, Reply, Transport, escape, repo_path};
use super::wire::{AccessToken, AppWire, Installation};
use crate::clock::unix_seconds;
use crate::error::{HostError, HostResult};
use crate::pins::{AccountPins, account_may_act};
use crate::secret::{ReadAgain, SecretSource};
use crate::sync::lock;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mq_core::Timestamp;
use mq_core::ids::RepoRef;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// A token is renewed when it has less than this left.
const RENEW_BEFORE_SECS: u64 = 300;
/// `iat` is backdated by this much, as GitHub recommends against clock drift.
const JWT_BACKDATE_SECS: u64 = 60;
/// How long an App JWT lives (GitHub allows at most 10 minutes).
const JWT_LIFETIME_SECS: u64 = 540;
/// How long the App's absence from a repository is remembered (seconds): every request on
/// such a repository would otherwise ask GitHub again, as the App, whose calls every
/// installation's tokens depend on. Meanwhile a call on it fails for now (to be retried,
/// as GitHub is asked again once this is over): the App may have been installed since.
const NOT_INSTALLED_SECS: u64 = 60;

/// The App's private key given by `--github-private-key` (`MQ_GITHUB_PRIVATE_KEY`): the value
/// itself when it is a PEM, else the contents of the file it names. An error never shows the
/// value: it may be the key.
pub fn private_key_pem(value: &str) -> Result<String, String> {
    if value.trim_start().starts_with("-----BEGIN") {
        return Ok(value.to_owned());
    }
    std::fs::read_to_string(value).map_err(|e| {
        format!(
            "--github-private-key (MQ_GITHUB_PRIVATE_KEY) is neither a PEM nor a file that can \
             be read: {e}"
        )
    })
}

/// How the adapter authenticates.
#[derive(Clone)]
pub enum GitHubAuth {
    /// A personal access token or any other bearer token, for every repository.
    Token(String),
    /// A GitHub App: its id and its private key (PEM, PKCS#1 or PKCS#8).
    App {
        app_id: u64,
        private_key_pem: String,
    },
}

impl std::fmt::Debug for GitHubAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitHubAuth::Token(_) => f.write_str("Token(..)"),
            GitHubAuth::App { app_id, .. } => write!(f, "App {{ app_id: {app_id}, .. }}"),
        }
    }
}

/// The claims of an App JWT.
#[derive(Debug, Serialize)]
struct Claims {
    iat: u64,
    exp: u64,
    iss: String,
}

#[derive(Debug, Clone)]
struct CachedToken {
    token: String,
    /// Unix seconds.
    expires_at: u64,
}

pub(crate) enum Auth {
    Token(String),
    App(Box<AppAuth>),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::Token(_) => "Auth::Token",
            Auth::App(_) => "Auth::App",
        })
    }
}

impl Auth {
    /// `key_source`: where an App's key is read again (a token is never); `pins`: the
    /// accounts owners were linked as, which an App's installations must belong to.
    pub fn new(
        config: &GitHubAuth,
        key_source: Option<Arc<dyn SecretSource>>,
        pins: Option<Arc<dyn AccountPins>>,
    ) -> HostResult<Self> {
        Ok(match config {
            GitHubAuth::Token(token) => Auth::Token(token.clone()),
            GitHubAuth::App {
                app_id,
                private_key_pem,
            } => {
                let mut app = AppAuth::new(*app_id, private_key_pem, key_source)?;
                app.pins = pins;
                Auth::App(Box::new(app))
            }
        })
    }

    /// The bearer token for calls on `repo`.
    pub async fn token(&self, transport: &Transport, repo: &RepoRef) -> HostResult<String> {
        match self {
            Auth::Token(token) => Ok(token.clone()),
            Auth::App(app) => app.installation_token(transport, repo).await,
        }
    }

    /// The id of the account `owner` when the GitHub App is installed on it; `Invalid` with a
    /// token.
    pub async fn installed_on(
        &self,
        transport: &Transport,
        owner: &str,
    ) -> HostResult<Option<u64>> {
        match self {
            Auth::Token(_) => Err(HostError::Invalid(
                "installations are a GitHub App's; this adapter uses a token".to_owned(),
            )),
            Auth::App(app) => app.installed_on(transport, owner).await,
        }
    }

    /// Drops the cached token for `repo`; whether there was one to drop.
    pub fn forget(&self, repo: &RepoRef) -> bool {
        match self {
            Auth::Token(_) => false,
            Auth::App(app) => app.forget(repo),
        }
    }
}

/// A repository the App has no installation it may use on, since when (Unix seconds), and
/// why: not installed, or installed on another account than its owner was linked as.
struct Absence {
    since: u64,
    why: String,
}

pub(crate) struct AppAuth {
    app_id: u64,
    key: RwLock<EncodingKey>,
    key_again: Option<ReadAgain>,
    installations: Mutex<HashMap<String, u64>>,
    /// Repositories the App has no installation it may use on, each with when and why that
    /// was found, for [`NOT_INSTALLED_SECS`].
    not_installed: Mutex<HashMap<String, Absence>>,
    tokens: Mutex<HashMap<u64, CachedToken>>,
    /// The accounts owners were linked as (see [`crate::pins`]); `None`: any account.
    pins: Option<Arc<dyn AccountPins>>,
}

impl AppAuth {
    fn new(
        app_id: u64,
        private_key_pem: &str,
        key_source: Option<Arc<dyn SecretSource>>,
    ) -> HostResult<Self> {
        Ok(Self {
            app_id,
            key: RwLock::new(rsa_key(private_key_pem)?),
            key_again: key_source.map(ReadAgain::new),
            installations: Mutex::new(HashMap::new()),
            not_installed: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            pins: None,
        })
    }

    /// A fresh JWT for the App itself.
    fn jwt(&self) -> HostResult<String> {
        let now = unix_seconds();
        let claims = Claims {
            iat: now - JWT_BACKDATE_SECS,
            exp: now + JWT_LIFETIME_SECS,
            iss: self.app_id.to_string(),
        };
        let key = self.key.read().unwrap_or_else(|e| e.into_inner());
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key)
            .map_err(|e| HostError::Other(format!("cannot sign the GitHub App JWT: {e}")))
    }

    /// Sends a call without a body to `path`, authenticated as the App (with its JWT). Refused
    /// (401), it is sent once more when the key could be read again ([`Self::read_key_again`]).
    async fn send_as_app(
        &self,
        transport: &Transport,
        method: Method,
        path: &str,
    ) -> HostResult<Reply> {
        let call = Call {
            method,
            url: transport.url(path),
            body: None,
            accept: JSON,
        };
        let holder = format!("the GitHub App {}", self.app_id);
        let reply = transport.send_as(&call, &self.jwt()?, &holder).await?;
        if reply.status != StatusCode::UNAUTHORIZED || !self.read_key_again().await {
            return Ok(reply);
        }
        transport.send_as(&call, &self.jwt()?, &holder).await
    }

    /// GitHub refused a JWT: the key is read again from its source (at most once a minute), and
    /// held instead when it is a valid key; whether it was.
    async fn read_key_again(&self) -> bool {
        let Some(again) = &self.key_again else {
            return false;
        };
        let Some(pem) = again.value().await else {
            return false;
        };
        match rsa_key(&pem) {
            Ok(key) => {
                *self.key.write().unwrap_or_else(|e| e.into_inner()) = key;
                let app_id = self.app_id;
                tracing::warn!(
                    app_id,
                    "GitHub refused the App's JWT: its key was read again"
                );
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "the App's key read again is not one");
                false
            }
        }
    }

    /// A token for the App's installation on `repo`. When the cached installation is gone
    /// (the App was reinstalled), the installation is looked up again, once.
    async fn installation_token(
        &self,
        transport: &Transport,
        repo: &RepoRef,
    ) -> HostResult<String> {
        let installation = self.installation(transport, repo).await?;
        if let Some(token) = self.token_for(transport, installation).await? {
            return Ok(token);
        }
        lock(&self.installations).remove(&repo.key());
        let installation = self.installation(transport, repo).await?;
        self.token_for(transport, installation)
            .await?
            .ok_or_else(|| {
                HostError::NotFound(format!(
                    "the GitHub App {} has no installation {installation} on {}",
                    self.app_id,
                    repo.full_name()
                ))
            })
    }

    /// A token for `installation`, cached or fresh; `None` when GitHub has no such installation.
    async fn token_for(
        &self,
        transport: &Transport,
        installation: u64,
    ) -> HostResult<Option<String>> {
        if let Some(token) = self.cached(installation) {
            return Ok(Some(token));
        }
        let path = format!("/app/installations/{installation}/access_tokens");
        let reply = self.send_as_app(transport, Method::POST, &path).await?;
        if reply.status == StatusCode::NOT_FOUND {
            lock(&self.tokens).remove(&installation);
            return Ok(None);
        }
        let fresh: AccessToken = reply.json()?;
        let expires_at = Timestamp::parse_rfc3339(&fresh.expires_at)
            .and_then(|t| u64::try_from(t.millis() / 1000).ok())
            .unwrap_or_else(|| unix_seconds() + 3600);
        lock(&self.tokens).insert(
            installation,
            CachedToken {
                token: fresh.token.clone(),
                expires_at,
            },
        );
        Ok(Some(fresh.token))
    }

    fn cached(&self, installation: u64) -> Option<String> {
        let tokens = lock(&self.tokens);
        let token = tokens.get(&installation)?;
        (token.expires_at > unix_seconds() + RENEW_BEFORE_SECS).then(|| token.token.clone())
    }

    /// The App's installation on `repo`, looked up once; its absence (or an installation of
    /// another account than the owner was linked as) is remembered for [`NOT_INSTALLED_SECS`]
    /// (a `NotFound` when found, a `Transient` error with the rest of that wait while
    /// remembered).
    async fn installation(&self, transport: &Transport, repo: &RepoRef) -> HostResult<u64> {
        let key = repo.key();
        if let Some(id) = lock(&self.installations).get(&key) {
            return Ok(*id);
        }
        let now = unix_seconds();
        let absence = || {
            format!(
                "the GitHub App {} is not installed on {}",
                self.app_id,
                repo.full_name()
            )
        };
        {
            let mut absent = lock(&self.not_installed);
            absent.retain(|_, a| now < a.since + NOT_INSTALLED_SECS);
            if let Some(a) = absent.get(&key) {
                let wait = a.since + NOT_INSTALLED_SECS - now;
                return Err(HostError::Transient {
                    message: format!("{} (GitHub is asked again in {wait} s)", a.why),
                    retry_after: Some(std::time::Duration::from_secs(wait)),
                });
            }
        }
        let path = format!("{}/installation", repo_path(repo));
        let reply = self.send_as_app(transport, Method::GET, &path).await?;
        let found = match reply.status {
            StatusCode::NOT_FOUND => Err(absence()),
            _ => {
                let installation: Installation = reply.json()?;
                let account = installation.account.map(|a| a.id);
                let refused = self.refusal_of(repo, account).await?;
                refused.map_or(Ok(installation.id), Err)
            }
        };
        match found {
            Ok(id) => {
                lock(&self.installations).insert(key, id);
                Ok(id)
            }
            Err(why) => {
                let absence = Absence {
                    since: now,
                    why: why.clone(),
                };
                lock(&self.not_installed).insert(key, absence);
                Err(HostError::NotFound(why))
            }
        }
    }

    /// Why the App may not use its installation on `repo`, of account `account`: `repo`'s
    /// owner was linked as another account, and its login was taken over (see
    /// [`crate::pins`]); `None` when it may.
    async fn refusal_of(&self, repo: &RepoRef, account: Option<u64>) -> HostResult<Option<String>> {
        let Some(pins) = &self.pins else {
            return Ok(None);
        };
        let owner = repo.owner_ref();
        let linked = pins.linked_account(&owner.key()).await?;
        let found = account.unwrap_or_default();
        if account_may_act(linked, account) {
            return Ok(None);
        }
        tracing::error!(
            %owner,
            linked = linked.unwrap_or_default(),
            found,
            "a repository under a linked owner's name belongs to another GitHub account"
        );
        Ok(Some(format!(
            "{} belongs to GitHub account {found}, not to account {}, the one {owner} was \
             linked as: the login was renamed or deleted, and taken since; link the owner's \
             new name",
            repo.full_name(),
            linked.unwrap_or_default()
        )))
    }

    /// The App's slug (`GET /app`, authenticated as the App).
    pub async fn slug(&self, transport: &Transport) -> HostResult<String> {
        let app: AppWire = self
            .send_as_app(transport, Method::GET, "/app")
            .await?
            .json()?;
        Ok(app.slug)
    }

    /// The id of the account `owner` (an organisation, else a user) when the App is installed
    /// on it.
    pub async fn installed_on(
        &self,
        transport: &Transport,
        owner: &str,
    ) -> HostResult<Option<u64>> {
        let owner = escape(owner).replace('/', "%2F");
        for account in ["orgs", "users"] {
            let path = format!("/{account}/{owner}/installation");
            let reply = self.send_as_app(transport, Method::GET, &path).await?;
            match reply.status.as_u16() {
                404 => continue,
                _ => {
                    let installation: Installation = reply.json()?;
                    let account = installation.account.ok_or_else(|| {
                        HostError::Other(format!("GitHub named no account for {path}"))
                    })?;
                    return Ok(Some(account.id));
                }
            }
        }
        Ok(None)
    }

    fn forget(&self, repo: &RepoRef) -> bool {
        let installation = lock(&self.installations).remove(&repo.key());
        installation.is_some_and(|id| lock(&self.tokens).remove(&id).is_some())
    }
}

fn rsa_key(pem: &str) -> HostResult<EncodingKey> {
    EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|e| {
        HostError::Invalid(format!(
            "the GitHub App private key is not an RSA PEM key: {e}"
        ))
    })
}
