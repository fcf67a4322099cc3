//! The frame around every handler: request id, log span, authentication, error rendering.

use crate::auth::{Caller, authenticate};
use crate::error::ApiError;
use crate::idempotency;
use lambda_http::http::HeaderValue;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use mq_service::App;
use mq_service::request_log;
use std::future::Future;
use std::time::Instant;
use tracing::Instrument;

/// The response header carrying the request id.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Runs an authenticated handler: every response carries `X-Request-Id`, every error is
/// rendered as JSON, and one log span covers the request (request id, route, organisation,
/// queue; never the body or the token). On `mutating` routes an `Idempotency-Key` makes a
/// retried request replay the first response instead of acting twice ([`idempotency`]).
pub async fn serve<F, Fut>(
    app: &App,
    req: Request,
    route: &'static str,
    mutating: bool,
    handler: F,
) -> Response<Body>
where
    F: FnOnce(Caller, Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
{
    frame(req, route, |request_id, req| async move {
        let token = authenticate(app.store.as_ref(), &req).await?;
        let span = tracing::Span::current();
        span.record("org", token.org.as_str());
        span.record("token", token.id.as_str());
        let caller = Caller {
            org: token.org,
            request_id,
        };
        let key = match mutating {
            true => idempotency::key_of(&req)?,
            false => None,
        };
        match key {
            Some(key) => idempotency::run_once(app, caller, route, &key, req, handler).await,
            None => handler(caller, req).await,
        }
    })
    .await
}

/// Runs a handler that authenticates the request itself (a webhook signed by the Git host),
/// in the same frame as [`serve`].
pub async fn serve_unauthenticated<F, Fut>(
    req: Request,
    route: &'static str,
    handler: F,
) -> Response<Body>
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
{
    frame(req, route, |_, req| handler(req)).await
}

/// The request id, the log span, error rendering and `X-Request-Id` around a handler.
async fn frame<F, Fut>(req: Request, route: &'static str, handler: F) -> Response<Body>
where
    F: FnOnce(String, Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
{
    let request_id = request_id(&req);
    let span = tracing::info_span!(
        "request",
        request_id = %request_id,
        route,
        org = tracing::field::Empty,
        token = tracing::field::Empty,
        queue = tracing::field::Empty,
    );
    let started = Instant::now();
    let result = request_log::scope(handler(request_id.clone(), req))
        .instrument(span.clone())
        .await;
    let mut response = result.unwrap_or_else(|e| e.to_response());
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            latency_ms = started.elapsed().as_millis() as u64,
            "request finished"
        )
    });
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    response
}

/// The answer to a request no handler takes (unknown path, wrong method, unreadable body):
/// the error with a new request id, logged like any other request.
pub fn unrouted(error: &ApiError) -> Response<Body> {
    let request_id = uuid::Uuid::new_v4().to_string();
    tracing::info_span!("request", request_id = %request_id, route = "unrouted")
        .in_scope(|| tracing::info!(status = error.status.as_u16(), "request finished"));
    let mut response = error.to_response();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    response
}

/// API Gateway's request id on Lambda, else the Lambda invocation id, else a new one.
fn request_id(req: &Request) -> String {
    let from_gateway = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.request_id.clone(),
        Some(RequestContext::ApiGatewayV1(ctx)) => ctx.request_id.clone(),
        _ => None,
    };
    from_gateway
        .or_else(|| req.lambda_context_ref().map(|c| c.request_id.clone()))
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::record_for;
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
    use mq_core::ids::OrgId;
    use mq_core::time::Timestamp;
    use mq_service::{App, ManualClock};
    use mq_store::{MemoryStore, TokenStore};
    use std::sync::Arc;

    async fn app() -> App {
        let store = Arc::new(MemoryStore::new());
        let org = OrgId::parse("acme").unwrap();
        store
            .put_token(&record_for("t", org, "test", Timestamp(0)))
            .await
            .unwrap();
        App::new(store, Arc::new(ManualClock::new(Timestamp(0))))
    }

    fn request(gateway_id: Option<&str>) -> Request {
        let req = lambda_http::http::Request::builder()
            .header("x-api-token", "t")
            .body(Body::Empty)
            .unwrap();
        match gateway_id {
            None => req,
            Some(id) => {
                let mut ctx = ApiGatewayV2httpRequestContext::default();
                ctx.request_id = Some(id.to_owned());
                req.with_request_context(RequestContext::ApiGatewayV2(ctx))
            }
        }
    }

    async fn answer(app: &App, req: Request) -> Response<Body> {
        serve(app, req, "test", false, |caller, _| async move {
            assert_eq!(caller.org.as_str(), "acme");
            Ok(crate::http::empty_ok())
        })
        .await
    }

    #[tokio::test]
    async fn api_gateway_request_ids_are_kept() {
        let app = app().await;
        let response = answer(&app, request(Some("gw-42"))).await;
        assert_eq!(response.headers()[REQUEST_ID_HEADER], "gw-42");
    }

    #[tokio::test]
    async fn without_a_gateway_id_each_request_gets_a_new_one() {
        let app = app().await;
        let a = answer(&app, request(None)).await;
        let b = answer(&app, request(None)).await;
        assert_ne!(
            a.headers()[REQUEST_ID_HEADER],
            b.headers()[REQUEST_ID_HEADER]
        );
        let refused = unrouted(&ApiError::method_not_allowed("GET"));
        assert_eq!(refused.status().as_u16(), 405);
        assert!(refused.headers().contains_key(REQUEST_ID_HEADER));
    }
}
