//! Calls to GitHub's REST API over HTTP, before authentication: bounded retries on rate
//! limits and server errors, typed errors, and the escaping of paths.

use super::conditional::Answers;
use super::rate_limits::{Api, RateLimits};
use super::wire::Message;
use crate::clock::unix_seconds;
use crate::error::{HostError, HostResult};
use mq_core::ids::RepoRef;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, IF_NONE_MATCH, LINK, USER_AGENT};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// The media type of JSON answers.
pub(crate) const JSON: &str = "application/vnd.github+json";
/// The media type that returns a file's bytes from the contents API.
pub(crate) const RAW: &str = "application/vnd.github.raw+json";
const API_VERSION: &str = "2022-11-28";
/// Why a call was not sent.
const HELD_BACK: &str = "rate limited: not sent, GitHub refused an earlier call for its rate limit";
/// At most this many pages are followed for one listing.
pub(crate) const MAX_PAGES: usize = 50;

/// How long to keep trying when GitHub says "later".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// A rate limit that resets later than this is not waited for: the call fails at once
    /// with `HostError::Transient { retry_after }`.
    pub max_wait: Duration,
    /// The first wait after a server error or a failed connection; doubled each time.
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            max_wait: Duration::from_secs(10),
            backoff: Duration::from_millis(500),
        }
    }
}

/// One HTTP request to send, with the bearer token to send it with.
pub(crate) struct Call<'a> {
    pub method: Method,
    pub url: String,
    pub body: Option<&'a Value>,
    pub accept: &'a str,
}

/// An answer, whatever its status.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// `METHOD /path`, for error messages.
    pub what: String,
}

impl Reply {
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }

    /// The body as `T`; an error typed by the status when the call did not succeed.
    pub fn json<T: DeserializeOwned>(&self) -> HostResult<T> {
        if !self.is_success() {
            return Err(self.error());
        }
        serde_json::from_slice(&self.body).map_err(|e| {
            HostError::Other(format!("{}: unexpected answer from GitHub: {e}", self.what))
        })
    }

    /// Succeeds when the status does.
    pub fn ok(&self) -> HostResult<()> {
        if self.is_success() {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    /// GitHub's message for a failed call.
    pub fn message(&self) -> String {
        let parsed: Option<Message> = serde_json::from_slice(&self.body).ok();
        match parsed {
            Some(m) if m.errors.is_empty() => m.message,
            Some(m) => format!("{} ({})", m.message, join_errors(&m.errors)),
            None => String::from_utf8_lossy(&self.body)
                .chars()
                .take(200)
                .collect(),
        }
    }

    /// The error a failed call means.
    pub fn error(&self) -> HostError {
        let text = format!("{}: {} {}", self.what, self.status.as_u16(), self.message());
        match self.status.as_u16() {
            301 | 302 | 307 | 308 => HostError::NotFound(format!(
                "{text}: GitHub redirects to {}, as for a repository or branch renamed or \
                 transferred; a queue acts only on the repository and branch it was created \
                 for, so create one on the new name",
                self.location()
            )),
            // GitHub refused the service's own credentials (a rotated key or token, a JWT
            // signed with the key held): not the repository's answer, nor the pull request's
            // fault, and retried later, when they may be mended.
            401 => HostError::Transient {
                message: format!("{text} (GitHub refused the service's credentials)"),
                retry_after: None,
            },
            403 => HostError::Forbidden(text),
            404 => HostError::NotFound(text),
            409 => HostError::Conflict(text),
            422 => HostError::Invalid(text),
            500..=599 => HostError::Transient {
                message: text,
                retry_after: None,
            },
            _ => HostError::Other(text),
        }
    }

    /// Where a redirect points, as its `Location` header says.
    fn location(&self) -> &str {
        self.headers
            .get("location")
            .and_then(|l| l.to_str().ok())
            .unwrap_or("an address GitHub did not give")
    }

    /// The `rel="next"` address of the `Link` header.
    pub fn next_page(&self) -> Option<String> {
        let link = self.headers.get("link")?.to_str().ok()?;
        link.split(',').find_map(|part| {
            let (url, params) = part.split_once(';')?;
            let is_next = params
                .split(';')
                .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
            is_next.then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
        })
    }
}

fn join_errors(errors: &[Value]) -> String {
    errors
        .iter()
        .map(|e| match e {
            Value::String(s) => s.clone(),
            other => other
                .get("message")
                .or_else(|| other.get("code"))
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_owned),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Sends requests, retrying what GitHub asks to be retried.
#[derive(Debug)]
pub(crate) struct Transport {
    http: reqwest::Client,
    api: String,
    retry: RetryPolicy,
    user_agent: String,
    /// Answers to reads, for `304 Not Modified` (see `conditional`).
    answers: Answers,
    /// The waits GitHub asked for (see `rate_limits`).
    limits: RateLimits,
}

impl Transport {
    pub fn new(api: &str, retry: RetryPolicy, user_agent: &str) -> HostResult<Self> {
        // GitHub redirects the calls for a repository that was renamed or transferred to its
        // new place. They are not followed: a queue acts only on the repository it was created
        // for, never on one that now belongs to someone else (see `Reply::error`).
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| HostError::Other(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            http,
            api: api.trim_end_matches('/').to_owned(),
            retry,
            user_agent: user_agent.to_owned(),
            answers: Answers::default(),
            limits: RateLimits::default(),
        })
    }

    /// The address of an API path (`/repos/...`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.api)
    }

    /// The address of the GraphQL API: `<api>/graphql`, or `https://HOST/api/graphql` on
    /// GitHub Enterprise Server, whose REST API is `https://HOST/api/v3`.
    pub fn graphql_url(&self) -> String {
        match self.api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{}/graphql", self.api),
        }
    }

    pub fn is_api_url(&self, url: &str) -> bool {
        url.starts_with(&format!("{}/", self.api))
    }

    /// Sends `call`, waiting out rate limits and server errors within the retry policy, the
    /// rate limits held under `holder` rather than the bearer: the App's calls, each signed
    /// with a fresh JWT, are all limited as the App.
    pub async fn send_as(&self, call: &Call<'_>, bearer: &str, holder: &str) -> HostResult<Reply> {
        self.exchange_as(call, bearer, holder, true).await?.reply()
    }

    /// Sends `call`, waiting out rate limits (GitHub did not act on the call). A server error
    /// or a lost answer (the call may have taken effect) is sent again only when `repeat`,
    /// within the retry policy; otherwise, and once the policy is spent, it is
    /// `Sent::Unknown`. While the token waits out a rate limit on the call's API, the call is
    /// not sent (see `rate_limits`).
    pub async fn exchange(&self, call: &Call<'_>, bearer: &str, repeat: bool) -> HostResult<Sent> {
        self.exchange_as(call, bearer, bearer, repeat).await
    }

    /// [`Self::exchange`], with the rate limits of `holder`.
    async fn exchange_as(
        &self,
        call: &Call<'_>,
        bearer: &str,
        holder: &str,
        repeat: bool,
    ) -> HostResult<Sent> {
        let what = format!("{} {}", call.method, call.url.trim_start_matches(&self.api));
        let api = if call.url == self.graphql_url() {
            Api::GraphQl
        } else {
            Api::Rest
        };
        let mut attempt = 1;
        loop {
            let held_back = self.limits.wait(holder, api);
            let (wait, problem, unknown) = match held_back {
                Some(wait) => (wait, HELD_BACK.to_owned(), false),
                None => match self.send_once(call, bearer, &what).await {
                    Ok(reply) => match retry_hint(&reply) {
                        None => return Ok(Sent::Answered(reply)),
                        Some(Hint::RateLimited(wait)) => {
                            self.limits.refused(holder, api, wait);
                            (wait, format!("rate limited: {}", reply.message()), false)
                        }
                        Some(Hint::ServerError(wait)) => (
                            wait.unwrap_or_else(|| self.backoff(attempt)),
                            format!("{} {}", reply.status.as_u16(), reply.message()),
                            true,
                        ),
                    },
                    Err(e) => (self.backoff(attempt), e, true),
                },
            };
            let error = HostError::Transient {
                message: format!("{what}: {problem}"),
                retry_after: Some(wait),
            };
            let spent = attempt >= self.retry.attempts || wait > self.retry.max_wait;
            if unknown && (spent || !repeat) {
                return Ok(Sent::Unknown(error));
            }
            if spent {
                return Err(error);
            }
            tracing::info!(%what, ?wait, attempt, %problem, "GitHub asks to retry later");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// Attempts in all for one call, the first included.
    pub fn attempts(&self) -> u32 {
        self.retry.attempts
    }

    /// The wait after the `attempt`th attempt failed.
    pub fn backoff(&self, attempt: u32) -> Duration {
        self.retry.backoff * 2u32.saturating_pow(attempt.saturating_sub(1))
    }

    /// One attempt. A read whose answer is kept asks whether it changed, and a `304 Not
    /// Modified` is answered with the kept answer.
    async fn send_once(&self, call: &Call<'_>, bearer: &str, what: &str) -> Result<Reply, String> {
        let read = call.method == Method::GET;
        let kept = read
            .then(|| self.answers.kept(&call.url, call.accept, bearer))
            .flatten();
        let mut request = self
            .http
            .request(call.method.clone(), &call.url)
            .header(ACCEPT, call.accept)
            .header(USER_AGENT, &self.user_agent)
            .header("X-GitHub-Api-Version", API_VERSION)
            .header(AUTHORIZATION, format!("Bearer {bearer}"));
        if let Some(body) = call.body {
            request = request.json(body);
        }
        if let Some(kept) = &kept {
            request = request.header(IF_NONE_MATCH, kept.etag.clone());
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        if let (StatusCode::NOT_MODIFIED, Some(kept)) = (status, kept) {
            return Ok(Reply {
                status: StatusCode::OK,
                headers: fresh_over(kept.headers.clone(), &headers),
                body: kept.body.clone(),
                what: what.to_owned(),
            });
        }
        if read && status == StatusCode::OK {
            self.answers
                .keep(&call.url, call.accept, bearer, &headers, &body);
        }
        Ok(Reply {
            status,
            headers,
            body: body.to_vec(),
            what: what.to_owned(),
        })
    }
}

/// The kept answer's headers with those of the `304` laid over them: the `Link` of a page can
/// change while its body does not (a new last page), and GitHub sends the current one.
fn fresh_over(mut kept: HeaderMap, fresh: &HeaderMap) -> HeaderMap {
    kept.remove(LINK);
    for name in fresh.keys() {
        kept.remove(name);
    }
    for (name, value) in fresh {
        kept.append(name, value.clone());
    }
    kept
}

/// What sending a call gave.
#[derive(Debug)]
pub(crate) enum Sent {
    /// GitHub answered, with anything but a server error.
    Answered(Reply),
    /// A server error, or no answer: the call may or may not have taken effect.
    Unknown(HostError),
}

impl Sent {
    /// The answer; an unknown outcome is its error.
    pub fn reply(self) -> HostResult<Reply> {
        match self {
            Sent::Answered(reply) => Ok(reply),
            Sent::Unknown(error) => Err(error),
        }
    }
}

enum Hint {
    RateLimited(Duration),
    ServerError(Option<Duration>),
}

/// Whether an answer asks to retry, and after how long: primary rate limits (403/429 with no
/// requests remaining: wait until `x-ratelimit-reset`), secondary ones (`retry-after`, else a
/// minute, as GitHub documents), GraphQL's (answered 200, with a `RATE_LIMITED` error), and
/// server errors.
fn retry_hint(reply: &Reply) -> Option<Hint> {
    let retry_after = header_number(reply, "retry-after").map(Duration::from_secs);
    match reply.status.as_u16() {
        403 | 429 => {
            let secondary = reply.status == StatusCode::TOO_MANY_REQUESTS
                || reply.message().to_ascii_lowercase().contains("rate limit");
            let wait = rate_limit_wait(reply).or(secondary.then_some(Duration::from_secs(60)));
            wait.map(Hint::RateLimited)
        }
        200 if graphql_rate_limited(reply) => Some(Hint::RateLimited(
            rate_limit_wait(reply).unwrap_or(Duration::from_secs(60)),
        )),
        500 | 502 | 503 | 504 => Some(Hint::ServerError(retry_after)),
        _ => None,
    }
}

/// The wait a rate-limited answer asks for: its `retry-after`, or until `x-ratelimit-reset`
/// when no requests remain.
fn rate_limit_wait(reply: &Reply) -> Option<Duration> {
    if let Some(seconds) = header_number(reply, "retry-after") {
        return Some(Duration::from_secs(seconds));
    }
    if header_number(reply, "x-ratelimit-remaining") != Some(0) {
        return None;
    }
    let reset = header_number(reply, "x-ratelimit-reset").unwrap_or_else(|| unix_seconds() + 60);
    Some(Duration::from_secs(reset.saturating_sub(unix_seconds())))
}

fn header_number(reply: &Reply, name: &str) -> Option<u64> {
    let value = reply.headers.get(name)?.to_str().ok()?;
    value.trim().parse().ok()
}

/// A GraphQL answer refused for a rate limit: GitHub answers those 200, with an error of type
/// `RATE_LIMITED` (or one that says so) and no data.
fn graphql_rate_limited(reply: &Reply) -> bool {
    if !reply.what.ends_with("/graphql") {
        return false;
    }
    let Ok(answer) = serde_json::from_slice::<Value>(&reply.body) else {
        return false;
    };
    let errors = answer["errors"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    errors.iter().any(|e| {
        let message = e["message"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        e["type"] == "RATE_LIMITED" || message.contains("rate limit")
    })
}

/// Characters escaped in a path segment; `/` is kept where a ref name spans segments.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'&')
    .add(b'+');

/// A value for a URL path, slashes kept (branch names).
pub(crate) fn escape(value: &str) -> String {
    utf8_percent_encode(value, SEGMENT).to_string()
}

/// `/repos/{owner}/{name}`.
pub(crate) fn repo_path(repo: &RepoRef) -> String {
    format!(
        "/repos/{}/{}",
        escape(&repo.owner).replace('/', "%2F"),
        escape(&repo.name).replace('/', "%2F")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphql_is_beside_the_rest_api_on_github_and_on_enterprise_server() {
        let url = |api: &str| {
            Transport::new(api, RetryPolicy::default(), "mq")
                .unwrap()
                .graphql_url()
        };
        assert_eq!(
            url("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            url("https://api.github.com/"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            url("https://ghe.example.com/api/v3"),
            "https://ghe.example.com/api/graphql"
        );
    }
}
