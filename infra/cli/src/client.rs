//! The HTTP API: JSON reads, mutations with an `Idempotency-Key`, the metrics text, report
//! uploads. Answers the API may give again later (503, 504, 429, a key still in use) and
//! requests that timed out or could not connect are retried with back-off; a mutation's
//! retries carry the same key, so the API acts at most once.

use crate::error::{Error, Result};
use crate::output::note;
use bytes::Bytes;
use indicatif::ProgressBar;
use reqwest::Url;
use reqwest::blocking::{Client, RequestBuilder};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The header the API takes the token in.
const TOKEN_HEADER: &str = "x-api-token";
const KEY_HEADER: &str = "Idempotency-Key";
const REPLAYED_HEADER: &str = "idempotency-replayed";
/// How long a request may take; API Gateway gives up after 29 s.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(35);
/// How long an upload may take.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(600);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often and how long to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included, counting no retry of a key still in use.
    pub attempts: u32,
    /// The wait before the first retry; each later one waits twice as long, up to `max_delay`.
    pub first_delay: Duration,
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
    /// How long after its first `409 IDEMPOTENCY_KEY_IN_USE` a key still in use is retried.
    /// The API takes over a claim left unanswered for a minute (`STALE_AFTER_MS` in
    /// `shared/http/src/idempotency.rs`: the function that made it was stopped), so a retry
    /// after that acts; with waits of at most `max_delay` and its jitter, the last retry comes
    /// more than a minute after the claim.
    pub key_in_use_for: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 6,
            first_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
            key_in_use_for: Duration::from_secs(75),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `retry` (from 1): `Retry-After` when the API sent one, else
    /// exponential back-off with a quarter of jitter.
    fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        let base = self.first_delay.saturating_mul(factor).min(self.max_delay);
        let jitter = base.mul_f64(fastrand::f64() * 0.25);
        base + jitter
    }
}

/// An answer, read whole.
struct Answer {
    status: u16,
    retry_after: Option<Duration>,
    replayed: bool,
    body: Bytes,
}

impl Answer {
    fn error_code(&self) -> Option<String> {
        let value: Value = serde_json::from_slice(&self.body).ok()?;
        value["error"]["code"].as_str().map(str::to_owned)
    }

    /// Whether the same request may get another answer later.
    fn is_transient(&self, has_key: bool) -> bool {
        match self.status {
            429 | 503 | 504 => true,
            409 => has_key && self.is_key_in_use(),
            _ => false,
        }
    }

    /// `409 IDEMPOTENCY_KEY_IN_USE`: a request with the same key is still being answered, or
    /// was stopped before it answered.
    fn is_key_in_use(&self) -> bool {
        self.status == 409 && self.error_code().as_deref() == Some("IDEMPOTENCY_KEY_IN_USE")
    }
}

/// A request to build again for each attempt.
type Build<'a> = &'a dyn Fn(&Client) -> RequestBuilder;

/// The API at one base URL, with one token.
pub struct Api {
    http: Client,
    base: Url,
    token: String,
    verbose: u8,
    policy: RetryPolicy,
}

impl Api {
    pub fn new(base_url: &str, token: String, verbose: u8) -> Result<Self> {
        let http = Client::builder()
            .user_agent(concat!("mq/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            // A redirect would carry the token (x-api-token) to wherever it points: none is
            // followed, and a 3xx answer is an error naming it.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::input(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base: normalise_base_url(base_url)?,
            token,
            verbose,
            policy: RetryPolicy::default(),
        })
    }

    /// The same API, retried as `policy` says.
    #[cfg(test)]
    fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The base URL, ending with `/v1/`.
    pub fn base(&self) -> &Url {
        &self.base
    }

    fn url(&self, operation: &str) -> Result<Url> {
        self.base
            .join(operation)
            .map_err(|e| Error::input(format!("bad operation path {operation}: {e}")))
    }

    /// A read (`POST` with a JSON body): its JSON answer.
    pub fn read(&self, operation: &str, body: &Value) -> Result<Value> {
        let url = self.url(operation)?;
        let build = |c: &Client| self.authorised(c.post(url.clone()).json(body));
        let answer = self.send(operation, None, &build)?;
        decode(operation, &answer)
    }

    /// A mutation (`POST` with a JSON body) under a new `Idempotency-Key`.
    pub fn mutate(&self, operation: &str, body: &Value) -> Result<Value> {
        let url = self.url(operation)?;
        let key = new_key();
        let build = |c: &Client| self.authorised(c.post(url.clone()).json(body));
        let answer = self.send(operation, Some(&key), &build)?;
        decode(operation, &answer)
    }

    /// A `GET` answered with text (the Prometheus metrics).
    pub fn get_text(&self, operation: &str, query: &[(&str, &str)]) -> Result<String> {
        let mut url = self.url(operation)?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let build = |c: &Client| self.authorised(c.get(url.clone()));
        let answer = self.send(operation, None, &build)?;
        if !(200..300).contains(&answer.status) {
            return Err(api_error(operation, &answer));
        }
        Ok(String::from_utf8_lossy(&answer.body).into_owned())
    }

    /// A multipart upload under a new `Idempotency-Key`, showing `progress` while it is sent.
    pub fn upload(
        &self,
        operation: &str,
        content_type: &str,
        body: Bytes,
        progress: &ProgressBar,
    ) -> Result<Value> {
        let url = self.url(operation)?;
        let key = new_key();
        let build = |c: &Client| {
            let request = c
                .post(url.clone())
                .timeout(UPLOAD_TIMEOUT)
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(progress_body(body.clone(), progress));
            self.authorised(request)
        };
        let answer = self.send(operation, Some(&key), &build)?;
        decode(operation, &answer)
    }

    /// A `PUT` of `body` to a presigned URL: without the token, which is for the API alone.
    pub fn put_presigned(&self, url: &str, body: Bytes, progress: &ProgressBar) -> Result<()> {
        let url = Url::parse(url).map_err(|e| Error::input(format!("bad upload URL: {e}")))?;
        let build = |c: &Client| {
            c.put(url.clone())
                .timeout(UPLOAD_TIMEOUT)
                .body(progress_body(body.clone(), progress))
        };
        let answer = self.send("the upload URL", None, &build)?;
        if !(200..300).contains(&answer.status) {
            return Err(api_error("the upload URL", &answer));
        }
        Ok(())
    }

    fn authorised(&self, request: RequestBuilder) -> RequestBuilder {
        request.header(TOKEN_HEADER, &self.token)
    }

    /// Sends until the answer is not transient or its retries run out: a key still in use is
    /// retried until [`RetryPolicy::key_in_use_for`] has passed since it was first answered so,
    /// any other transient answer or error up to `attempts - 1` times.
    fn send(&self, operation: &str, key: Option<&str>, build: Build) -> Result<Answer> {
        let mut retry = 0;
        let mut counted = 0;
        let mut in_use_since = None;
        loop {
            let mut request = build(&self.http);
            if let Some(key) = key {
                request = request.header(KEY_HEADER, key);
            }
            let started = Instant::now();
            let outcome = request.send().and_then(read_answer);
            self.log(operation, key, &outcome, started.elapsed());
            let (why, retry_after, in_use) = match &outcome {
                Ok(answer) if answer.is_transient(key.is_some()) => (
                    describe_status(answer),
                    answer.retry_after,
                    answer.is_key_in_use(),
                ),
                Err(e) if is_transient(e) => (describe_transport(e), None, false),
                _ => return finish(operation, outcome),
            };
            let wait = self.policy.delay(retry + 1, retry_after);
            let allowed = if in_use {
                let since = *in_use_since.get_or_insert_with(Instant::now);
                since.elapsed() + wait <= self.policy.key_in_use_for
            } else {
                counted + 1 < self.policy.attempts
            };
            if !allowed {
                return finish(operation, outcome);
            }
            retry += 1;
            let same_key = if key.is_some() {
                ", same Idempotency-Key"
            } else {
                ""
            };
            if in_use {
                note(format!(
                    "{operation}: {why}; retry in {:.1} s{same_key} (the API frees a key left \
                     in use after a minute)",
                    wait.as_secs_f64()
                ));
            } else {
                counted += 1;
                note(format!(
                    "{operation}: {why}; retry {counted} of {} in {:.1} s{same_key}",
                    self.policy.attempts - 1,
                    wait.as_secs_f64()
                ));
            }
            std::thread::sleep(wait);
        }
    }

    fn log(
        &self,
        operation: &str,
        key: Option<&str>,
        outcome: &reqwest::Result<Answer>,
        took: Duration,
    ) {
        if self.verbose == 0 {
            return;
        }
        let result = match outcome {
            Ok(a) if a.replayed => format!("{} (replayed)", a.status),
            Ok(a) => a.status.to_string(),
            Err(e) => describe_transport(e),
        };
        let key = key
            .map(|k| format!(" [Idempotency-Key {k}]"))
            .unwrap_or_default();
        let took = if self.verbose > 1 {
            format!(" in {:.1} ms", took.as_secs_f64() * 1000.0)
        } else {
            String::new()
        };
        note(format!("{operation}{key}: {result}{took}"));
    }
}

/// The answer as it came, or the request's error as a network error.
fn finish(operation: &str, outcome: reqwest::Result<Answer>) -> Result<Answer> {
    outcome.map_err(|e| Error::Network {
        operation: operation.to_owned(),
        detail: describe_transport(&e),
    })
}

fn read_answer(response: reqwest::blocking::Response) -> reqwest::Result<Answer> {
    let status = response.status().as_u16();
    let headers = response.headers();
    let retry_after = headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let replayed = headers
        .get(REPLAYED_HEADER)
        .is_some_and(|v| v.as_bytes() == b"true");
    let body = response.bytes()?;
    Ok(Answer {
        status,
        retry_after,
        replayed,
        body,
    })
}

/// A request error that a later attempt may not meet: no connection, or no answer in time.
fn is_transient(e: &reqwest::Error) -> bool {
    e.is_timeout() || e.is_connect() || e.is_request() || e.is_body()
}

fn describe_status(answer: &Answer) -> String {
    match answer.error_code() {
        Some(code) => format!("{} {code}", answer.status),
        None => answer.status.to_string(),
    }
}

/// A transport error with its causes, e.g. "error sending request: connection refused".
fn describe_transport(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "no answer in time".to_owned()
    } else {
        text_without_url(e)
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The error's own text without the URL (a presigned URL carries a signature).
fn text_without_url(e: &reqwest::Error) -> String {
    let text = e.to_string();
    match e.url() {
        Some(url) => text.replace(&format!(" for url ({url})"), ""),
        None => text,
    }
}

/// A 2xx answer's JSON (`{}` when empty), or the API's error.
fn decode(operation: &str, answer: &Answer) -> Result<Value> {
    if !(200..300).contains(&answer.status) {
        return Err(api_error(operation, answer));
    }
    if answer.body.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(&answer.body).map_err(|e| Error::Network {
        operation: operation.to_owned(),
        detail: format!("the answer is not JSON ({e})"),
    })
}

/// The API's `{"error": {"code", "message"}}`, or the status and the start of whatever
/// else came back (a proxy's page, say).
fn api_error(operation: &str, answer: &Answer) -> Error {
    let parsed: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let field = |name: &str| {
        parsed
            .as_ref()
            .and_then(|v| v["error"][name].as_str())
            .map(str::to_owned)
    };
    let (code, message) = match (field("code"), field("message")) {
        (Some(code), Some(message)) => (code, message),
        _ if (300..400).contains(&answer.status) => (
            "HTTP_REDIRECT".to_owned(),
            "the API's URL redirects elsewhere, which is not followed (the token would go \
             with it): set MQ_API_URL to the address it redirects to"
                .to_owned(),
        ),
        _ => {
            let text = String::from_utf8_lossy(&answer.body);
            let start: String = text.trim().chars().take(200).collect();
            (
                "HTTP_ERROR".to_owned(),
                if start.is_empty() {
                    "(no body)".to_owned()
                } else {
                    start
                },
            )
        }
    };
    Error::Api {
        operation: operation.to_owned(),
        status: answer.status,
        code,
        message,
    }
}

/// A URL as it may be printed: without credentials before an `@`, a query or a fragment.
fn shown_url(text: &str) -> String {
    let text = text.trim();
    crate::ci::without_credentials(&text[..text.find(['?', '#']).unwrap_or(text.len())])
}

fn new_key() -> String {
    format!("mq-{}", uuid::Uuid::new_v4())
}

/// A body that moves `progress` as it is read; the bar starts over for each attempt.
fn progress_body(bytes: Bytes, progress: &ProgressBar) -> reqwest::blocking::Body {
    let len = bytes.len() as u64;
    progress.set_length(len);
    progress.set_position(0);
    let reader = progress.wrap_read(std::io::Cursor::new(bytes));
    reqwest::blocking::Body::sized(reader, len)
}

/// `http(s)://host[:port][/prefix]` with `/v1/` at the end (added when missing). An error
/// shows the URL without what could be a secret in it.
pub fn normalise_base_url(text: &str) -> Result<Url> {
    let shown = shown_url(text);
    let bad = |why: &str| Error::input(format!("the API URL `{shown}` {why}"));
    let mut url = Url::parse(text.trim()).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must start with https:// (or http://)"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("must not have a query or a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "must not carry credentials: the token goes in MQ_API_TOKEN (or --token-file)",
        ));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    let path = if path.ends_with("/v1") {
        path
    } else {
        format!("{path}/v1")
    };
    url.set_path(&format!("{path}/"));
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    #[test]
    fn secrets_in_a_bad_api_url_are_never_shown() {
        for url in [
            "https://api.example.com/v1?token=SECRET",
            "https://user:SECRET@api.example.com/v1",
            "https://SECRET@api.example.com/v1",
            "https://api.example.com/v1#SECRET",
        ] {
            let error = normalise_base_url(url).unwrap_err().to_string();
            assert!(!error.contains("SECRET"), "{error}");
            assert!(error.contains("api.example.com/v1"), "{error}");
        }
    }

    #[test]
    fn base_urls_end_with_v1() {
        for (given, base) in [
            ("http://127.0.0.1:3000", "http://127.0.0.1:3000/v1/"),
            ("http://127.0.0.1:3000/v1", "http://127.0.0.1:3000/v1/"),
            (
                "https://x.example.com/prod/v1/",
                "https://x.example.com/prod/v1/",
            ),
            (
                "https://x.example.com/prod",
                "https://x.example.com/prod/v1/",
            ),
        ] {
            assert_eq!(normalise_base_url(given).unwrap().as_str(), base);
        }
        for bad in ["queue.example.com", "ftp://x/v1", "https://x/v1?token=1"] {
            assert!(normalise_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn back_off_doubles_up_to_its_cap_and_honours_retry_after() {
        let p = RetryPolicy::default();
        let d1 = p.delay(1, None);
        assert!(d1 >= Duration::from_millis(500) && d1 <= Duration::from_millis(625));
        let d3 = p.delay(3, None);
        assert!(d3 >= Duration::from_secs(2) && d3 <= Duration::from_millis(2500));
        assert!(p.delay(9, None) <= Duration::from_secs(10));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(300))),
            Duration::from_secs(30)
        );
    }

    /// The default policy, a hundred times faster.
    fn hundredfold_faster() -> RetryPolicy {
        let policy = RetryPolicy::default();
        RetryPolicy {
            attempts: policy.attempts,
            first_delay: policy.first_delay / 100,
            max_delay: policy.max_delay / 100,
            max_retry_after: policy.max_retry_after / 100,
            key_in_use_for: policy.key_in_use_for / 100,
        }
    }

    /// An API on loopback: it answers each request with `answer(time since its first
    /// request)` and keeps the `Idempotency-Key` of each.
    struct FakeApi {
        url: String,
        keys: Arc<Mutex<Vec<Option<String>>>>,
    }

    impl FakeApi {
        fn start(answer: impl Fn(Duration) -> (u16, &'static str) + Send + 'static) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/v1", listener.local_addr().unwrap());
            let keys = Arc::new(Mutex::new(Vec::new()));
            let seen = Arc::clone(&keys);
            std::thread::spawn(move || {
                let mut first = None;
                for stream in listener.incoming().flatten() {
                    let mut reader = BufReader::new(stream);
                    let key = read_request(&mut reader);
                    let since = *first.get_or_insert_with(Instant::now);
                    seen.lock().unwrap().push(key);
                    let (status, body) = answer(since.elapsed());
                    let _ = write!(
                        reader.get_mut(),
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
            Self { url, keys }
        }

        fn keys(&self) -> Vec<Option<String>> {
            self.keys.lock().unwrap().clone()
        }
    }

    /// Reads a request whole; its `Idempotency-Key`.
    fn read_request(reader: &mut BufReader<TcpStream>) -> Option<String> {
        let (mut key, mut length) = (None, 0);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            if let Some((name, value)) = line.split_once(':') {
                let value = value.trim().to_owned();
                match name.to_ascii_lowercase().as_str() {
                    "idempotency-key" => key = Some(value),
                    "content-length" => length = value.parse().unwrap_or(0),
                    _ => {}
                }
            }
            line.clear();
        }
        let _ = reader.read_exact(&mut vec![0; length]);
        key
    }

    const KEY_IN_USE: &str = r#"{"error":{"code":"IDEMPOTENCY_KEY_IN_USE","message":"m"}}"#;

    /// An attempt acted but its answer was lost, and its function was stopped: the API
    /// answers the key in use until it takes the claim over after a minute (here a hundred
    /// times faster), and the retry after that acts.
    #[test]
    fn a_key_in_use_is_retried_until_the_api_takes_it_over() {
        let takeover = Duration::from_millis(600);
        let api = FakeApi::start(move |since_first| {
            if since_first < takeover {
                (409, KEY_IN_USE)
            } else {
                (200, r#"{"acted":true}"#)
            }
        });
        let client = Api::new(&api.url, "token".to_owned(), 0)
            .unwrap()
            .with_policy(hundredfold_faster());
        let answer = client.mutate("submitPullRequest", &serde_json::json!({}));
        assert_eq!(answer.unwrap(), serde_json::json!({"acted": true}));
        let keys = api.keys();
        assert!(
            keys.len() > 6,
            "more attempts than other answers get: {keys:?}"
        );
        assert!(
            keys[0].is_some() && keys.iter().all(|k| *k == keys[0]),
            "{keys:?}"
        );
    }

    /// Other transient answers keep their budget: the first attempt and 5 retries.
    #[test]
    fn other_transient_answers_are_retried_five_times() {
        let api = FakeApi::start(|_| (503, r#"{"error":{"code":"UNAVAILABLE","message":"m"}}"#));
        let client = Api::new(&api.url, "token".to_owned(), 0)
            .unwrap()
            .with_policy(hundredfold_faster());
        let error = client.mutate("submitPullRequest", &serde_json::json!({}));
        assert_eq!(error.unwrap_err().code(), Some("UNAVAILABLE"));
        assert_eq!(api.keys().len(), 6);
    }

    #[test]
    fn transient_answers() {
        let answer = |status, body: &str| Answer {
            status,
            retry_after: None,
            replayed: false,
            body: Bytes::from(body.to_owned()),
        };
        assert!(answer(503, "").is_transient(false));
        assert!(answer(504, "").is_transient(true));
        let in_use = r#"{"error":{"code":"IDEMPOTENCY_KEY_IN_USE","message":"m"}}"#;
        assert!(answer(409, in_use).is_transient(true));
        assert!(
            !answer(409, r#"{"error":{"code":"QUEUE_NOT_EMPTY","message":"m"}}"#)
                .is_transient(true)
        );
        assert!(!answer(502, "").is_transient(true));
        assert!(!answer(400, "").is_transient(true));
    }
}
