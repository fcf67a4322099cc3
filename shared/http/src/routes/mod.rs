//! Every HTTP endpoint in one table: its name, method and path, whether it mutates (and so
//! honours `Idempotency-Key`), what the application needs besides the store, and its handler.
//! The local gateway serves from this table, each Lambda function serves one of its rows
//! (`mq_lambda::lambda::run_route`), and the tests check `template.yaml` and
//! `openapi/openapi.json` against it. Adding an endpoint: docs/architecture.md.

mod advice;
mod dashboard;
mod metrics;
mod pull_requests;
mod queues;
mod test_health;
mod webhook;

use crate::auth::Caller;
use crate::endpoint::{serve, serve_unauthenticated};
use crate::error::ApiError;
use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use mq_service::App;
use std::future::Future;
use std::pin::Pin;

/// What a handler answers: the response, or the error the frame renders.
pub type Answered = Result<Response<Body>, ApiError>;

/// A handler's answer to come.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Answered> + Send + 'a>>;

/// How an endpoint's requests are authenticated, and the handler that takes them.
#[derive(Clone, Copy)]
pub enum Handler {
    /// An organisation's API token; the handler gets the caller.
    Token(for<'a> fn(&'a App, Caller, Request) -> Answer<'a>),
    /// The handler checks the request itself (a webhook signed by the Git host).
    Signed(for<'a> fn(&'a App, Request) -> Answer<'a>),
}

/// What a function's application needs besides the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Store,
    /// The Git host (GitHub) and its webhook deliveries.
    GitHost,
    /// The bucket of large test reports.
    Uploads,
}

/// One endpoint.
pub struct Route {
    /// The name the logs, the idempotency keys and the Lambda functions know it by: its path
    /// under `/v1/`.
    pub name: &'static str,
    pub method: Method,
    /// Whether it changes state: only such requests may carry an `Idempotency-Key`.
    pub mutating: bool,
    pub needs: Needs,
    pub handler: Handler,
}

impl Route {
    /// The path the API serves it at.
    pub fn path(&self) -> String {
        format!("/v1/{}", self.name)
    }

    /// Answers `req` in the frame every endpoint shares (request id, log span, errors as
    /// JSON; authentication and idempotency for token endpoints).
    pub async fn serve(&'static self, app: &App, req: Request) -> Response<Body> {
        match self.handler {
            Handler::Token(handle) => {
                serve(app, req, self.name, self.mutating, |caller, req| {
                    handle(app, caller, req)
                })
                .await
            }
            Handler::Signed(handle) => {
                serve_unauthenticated(req, self.name, |req| handle(app, req)).await
            }
        }
    }
}

/// The route named `name`.
pub fn route(name: &str) -> Option<&'static Route> {
    ROUTES.iter().copied().find(|r| r.name == name)
}

macro_rules! token {
    ($f:path) => {
        Handler::Token(|app, caller, req| Box::pin($f(app, caller, req)))
    };
}

macro_rules! signed {
    ($f:path) => {
        Handler::Signed(|app, req| Box::pin($f(app, req)))
    };
}

/// Declares each endpoint as a `static` (a Lambda function names its own, so it links only
/// that handler) and [`ROUTES`], all of them in the order the API document lists them.
macro_rules! routes {
    ($(
        $ident:ident: $method:ident $name:literal,
        mutating: $mutating:literal, needs: $needs:ident, $handler:expr;
    )+) => {
        $(
            #[doc = concat!("`", stringify!($method), " /v1/", $name, "`")]
            pub static $ident: Route = Route {
                name: $name,
                method: Method::$method,
                mutating: $mutating,
                needs: Needs::$needs,
                handler: $handler,
            };
        )+
        /// Every endpoint, in the order the API document lists them.
        pub static ROUTES: &[&Route] = &[$(&$ident),+];
    };
}

routes! {
    SUBMIT_PULL_REQUEST: POST "submitPullRequest",
        mutating: true, needs: GitHost, token!(pull_requests::submit);
    CANCEL_PULL_REQUEST: POST "cancelPullRequest",
        mutating: true, needs: GitHost, token!(pull_requests::cancel);
    RESTART_TESTS_ON_PULL_REQUEST: POST "restartTestsOnPullRequest",
        mutating: true, needs: GitHost, token!(pull_requests::restart);
    GET_SUBMITTED_PULL_REQUEST: POST "getSubmittedPullRequest",
        mutating: false, needs: Store, token!(pull_requests::submitted);
    SET_IMPACTED_TARGETS: POST "setImpactedTargets",
        mutating: true, needs: GitHost, token!(pull_requests::set_impacted_targets);
    GET_MERGE_QUEUE_TESTING_DETAILS: POST "getMergeQueueTestingDetails",
        mutating: false, needs: Store, token!(pull_requests::testing_details);
    CREATE_QUEUE: POST "createQueue",
        mutating: true, needs: Store, token!(queues::create);
    DELETE_QUEUE: POST "deleteQueue",
        mutating: true, needs: GitHost, token!(queues::delete);
    GET_QUEUE: POST "getQueue",
        mutating: false, needs: Store, token!(queues::get);
    UPDATE_QUEUE: POST "updateQueue",
        mutating: true, needs: Store, token!(queues::update);
    GET_MERGE_QUEUE_METRICS: GET "getMergeQueueMetrics",
        mutating: false, needs: Store, token!(metrics::get);
    WEBHOOKS_GITHUB: POST "webhooks/github",
        mutating: false, needs: GitHost, signed!(webhook::github);
    FLAKY_TESTS_LIST_UNHEALTHY_TESTS: POST "flaky-tests/list-unhealthy-tests",
        mutating: false, needs: Store, token!(test_health::list_unhealthy);
    FLAKY_TESTS_LIST_QUARANTINED_TESTS: POST "flaky-tests/list-quarantined-tests",
        mutating: false, needs: Store, token!(test_health::list_quarantined);
    FLAKY_TESTS_UPLOAD: POST "flaky-tests/upload",
        mutating: true, needs: Store, token!(test_health::upload);
    FLAKY_TESTS_UPLOAD_URL: POST "flaky-tests/upload-url",
        mutating: false, needs: Uploads, token!(test_health::upload_url);
    FLAKY_TESTS_UPDATE_SETTINGS: POST "flaky-tests/update-settings",
        mutating: true, needs: Store, token!(test_health::update_settings);
    FLAKY_TESTS_CHECK_QUARANTINED: POST "flaky-tests/check-quarantined",
        mutating: false, needs: Store, token!(test_health::check_quarantined);
    FLAKY_TESTS_LINK_TICKET: POST "flaky-tests/link-ticket",
        mutating: true, needs: Store, token!(test_health::link_ticket);
    LIST_QUEUES: POST "listQueues",
        mutating: false, needs: Store, token!(dashboard::list_queues);
    GET_QUEUE_ACTIVITY: POST "getQueueActivity",
        mutating: false, needs: Store, token!(dashboard::queue_activity);
    GET_PULL_REQUEST_HISTORY: POST "getPullRequestHistory",
        mutating: false, needs: Store, token!(dashboard::pull_request_history);
    GET_QUEUE_ADVICE: POST "getQueueAdvice",
        mutating: false, needs: Store, token!(advice::get);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_only_mutating_endpoints_take_idempotency_keys() {
        let mut names: Vec<_> = ROUTES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ROUTES.len());
        let mutating = |name| route(name).map(|r| r.mutating);
        assert_eq!(mutating("submitPullRequest"), Some(true));
        assert_eq!(mutating("flaky-tests/link-ticket"), Some(true));
        assert_eq!(mutating("getQueue"), Some(false));
        assert_eq!(mutating("flaky-tests/upload-url"), Some(false));
        let webhook = route("webhooks/github").map(|r| r.path());
        assert_eq!(webhook.as_deref(), Some("/v1/webhooks/github"));
    }
}
