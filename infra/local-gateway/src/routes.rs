//! Every endpoint the gateway serves, and the handler function that serves it: the same
//! functions the Lambda binaries run.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use mq_api::App;
use std::future::Future;
use std::pin::Pin;

pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Response<Body>> + Send + 'a>>;
pub type Handler = for<'a> fn(&'a App, Request) -> HandlerFuture<'a>;

/// One endpoint: method, path under the base URL, handler.
#[derive(Clone)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub handler: Handler,
}

macro_rules! routes {
    ($( $method:ident $path:literal => $krate:ident ),+ $(,)?) => {
        /// The routes, in the order the spec lists the endpoints.
        pub fn routes() -> Vec<Route> {
            vec![ $( Route {
                method: Method::$method,
                path: $path,
                handler: |app, req| Box::pin($krate::handle(app, req)),
            } ),+ ]
        }
    };
}

routes! {
    POST "/v1/submitPullRequest" => submit_pull_request,
    POST "/v1/cancelPullRequest" => cancel_pull_request,
    POST "/v1/restartTestsOnPullRequest" => restart_tests_on_pull_request,
    POST "/v1/getSubmittedPullRequest" => get_submitted_pull_request,
    POST "/v1/setImpactedTargets" => set_impacted_targets,
    POST "/v1/getMergeQueueTestingDetails" => get_merge_queue_testing_details,
    POST "/v1/createQueue" => create_queue,
    POST "/v1/deleteQueue" => delete_queue,
    POST "/v1/getQueue" => get_queue,
    POST "/v1/updateQueue" => update_queue,
    POST "/v1/webhooks/github" => github_webhook,
    GET "/v1/getMergeQueueMetrics" => get_merge_queue_metrics,
    // test health
    POST "/v1/flaky-tests/list-unhealthy-tests" => list_unhealthy_tests,
    POST "/v1/flaky-tests/list-quarantined-tests" => list_quarantined_tests,
    POST "/v1/flaky-tests/upload" => upload_test_results,
    POST "/v1/flaky-tests/upload-url" => create_test_results_upload_url,
    POST "/v1/flaky-tests/update-settings" => update_test_health_settings,
    POST "/v1/flaky-tests/check-quarantined" => check_quarantined_tests,
    POST "/v1/flaky-tests/link-ticket" => link_test_ticket,
}
