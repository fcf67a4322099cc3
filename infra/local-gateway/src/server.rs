//! The HTTP server: turns each request into the Lambda request type, calls the handler, and
//! turns its response back.
//!
//! A client gets [`Timeouts::headers`] to send a request's headers (the connection is closed
//! otherwise) and [`Timeouts::body`] to send its body (408 otherwise), so slow clients cannot
//! hold connections and handlers forever.

use axum::Router;
use axum::extract::Request as HttpRequest;
use axum::response::Response as HttpResponse;
use axum::routing::{MethodFilter, on};
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use lambda_http::http::StatusCode;
use lambda_http::{RequestExt, aws_lambda_events::query_map::QueryMap};
use mq_http::ApiError;
use mq_http::body::MAX_BODY_BYTES;
use mq_http::endpoint::unrouted;
use mq_http::routes::{ROUTES, Route};
use mq_service::App;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a client may take to send a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To send the request line and headers.
    pub headers: Duration,
    /// To send the body, once the headers are in.
    pub body: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            headers: Duration::from_secs(10),
            body: Duration::from_secs(60),
        }
    }
}

/// The router of every endpoint over one application.
pub fn router(app: Arc<App>) -> Router {
    router_with(app, Timeouts::default())
}

/// [`router`] reading bodies within `timeouts.body`.
pub fn router_with(app: Arc<App>, timeouts: Timeouts) -> Router {
    let mut router = Router::new();
    for route in ROUTES {
        let path = route.path();
        router = router.route(&path, method_router(app.clone(), route, timeouts.body));
    }
    router = router.route(
        mq_http::openapi::OPENAPI_PATH,
        axum::routing::get(|| async { to_http(mq_http::openapi::response()) }),
    );
    // The dashboard's pages, as the `dashboard` function serves them.
    router = router
        .route("/", axum::routing::any(page))
        .route("/ui/{*file}", axum::routing::any(page));
    router.fallback(|| async {
        to_http(unrouted(&ApiError::not_found(
            "NOT_FOUND",
            "no such endpoint",
        )))
    })
}

fn method_router(
    app: Arc<App>,
    route: &'static Route,
    body: Duration,
) -> axum::routing::MethodRouter {
    let filter = if route.method == lambda_http::http::Method::GET {
        MethodFilter::GET
    } else {
        MethodFilter::POST
    };
    let allowed = route.method.to_string();
    on(filter, move |req: HttpRequest| {
        dispatch(app.clone(), route, req, body)
    })
    .fallback(move || {
        let allowed = allowed.clone();
        async move { to_http(unrouted(&ApiError::method_not_allowed(&allowed))) }
    })
}

async fn dispatch(
    app: Arc<App>,
    route: &'static Route,
    req: HttpRequest,
    body_timeout: Duration,
) -> HttpResponse {
    let (parts, body) = req.into_parts();
    let read = tokio::time::timeout(body_timeout, read_capped(body, MAX_BODY_BYTES + 1)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(())) => {
            return to_http(unrouted(&ApiError::bad_request(
                "cannot read the request body",
            )));
        }
        Err(_) => return to_http(unrouted(&body_too_slow(body_timeout))),
    };
    let query = query_map(parts.uri.query());
    let request = lambda_http::Request::from_parts(parts, lambda_http::Body::Binary(bytes))
        .with_query_string_parameters(query);
    to_http(route.serve(&app, request).await)
}

/// A page of the dashboard or one of its files (`mq_http::pages`); the body is not read.
async fn page(req: HttpRequest) -> HttpResponse {
    let (parts, _) = req.into_parts();
    let request = lambda_http::Request::from_parts(parts, lambda_http::Body::Empty);
    to_http(mq_http::pages::serve(&request))
}

/// Reads at most `cap` bytes: a larger body reaches the handler cut at `cap`, which is still
/// over the limit, so the handler answers 413 as it does on Lambda.
async fn read_capped(mut body: axum::body::Body, cap: usize) -> Result<Vec<u8>, ()> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ())?;
        if let Some(data) = frame.data_ref() {
            let room = cap - out.len();
            out.extend_from_slice(&data[..data.len().min(room)]);
            if out.len() >= cap {
                break;
            }
        }
    }
    Ok(out)
}

fn body_too_slow(timeout: Duration) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "REQUEST_TIMEOUT",
        format!(
            "the request body did not arrive within {} s",
            timeout.as_secs_f64()
        ),
    )
}

fn query_map(query: Option<&str>) -> QueryMap {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        map.entry(decode(k)).or_default().push(decode(v));
    }
    QueryMap::from(map)
}

/// Percent-decoding of a query component (`+` is a space).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| Some((hex_value(*bytes.get(i + 1)?)? << 4) | hex_value(*bytes.get(i + 2)?)?))
            .flatten();
        match (bytes[i], escaped) {
            (_, Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn to_http(response: lambda_http::Response<lambda_http::Body>) -> HttpResponse {
    let (parts, body) = response.into_parts();
    let bytes: Vec<u8> = match body {
        lambda_http::Body::Text(s) => s.into_bytes(),
        lambda_http::Body::Binary(b) => b,
        other => other.as_ref().to_vec(),
    };
    HttpResponse::from_parts(parts, axum::body::Body::from(bytes))
}

/// A running gateway.
pub struct Gateway {
    pub addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Gateway {
    /// Serves `app` on `listen` (port 0 picks a free port) until stopped or dropped.
    pub async fn start(app: Arc<App>, listen: SocketAddr) -> std::io::Result<Self> {
        Self::start_with(app, listen, Timeouts::default()).await
    }

    /// [`Gateway::start`] with other timeouts.
    pub async fn start_with(
        app: Arc<App>,
        listen: SocketAddr,
        timeouts: Timeouts,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let service = router_with(app, timeouts);
        let task = tokio::spawn(serve(listener, service, timeouts.headers, rx));
        Ok(Self {
            addr,
            shutdown: Some(tx),
            task,
        })
    }

    /// The base URL, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops accepting requests and waits for the server to finish.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Waits until the server stops (it runs until the process is interrupted).
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }
}

/// Serves each connection of `listener` (HTTP/1.1) until `stop` fires, then lets the
/// requests in flight finish.
async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    mut stop: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
    graceful.shutdown().await;
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_components_are_decoded() {
        assert_eq!(decode("acme%2Frocket"), "acme/rocket");
        assert_eq!(decode("a+b"), "a b");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%C3%A9"), "%zzé");
        let map = query_map(Some("repo=acme%2Frocket&repoHost=github.com&flag"));
        assert_eq!(map.first("repo"), Some("acme/rocket"));
        assert_eq!(map.first("repoHost"), Some("github.com"));
        assert_eq!(map.first("flag"), Some(""));
    }
}
