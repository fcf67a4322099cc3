//! Booting a function on Lambda: logging, the application, the runtime loop.

use crate::deployed;
use lambda_http::{Body, Request, Response};
use mq_http::routes::{Needs, Route};
use mq_service::App;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

/// Serves `route` (one of [`mq_http::routes::ROUTES`]): the function of that endpoint. The
/// application has what the route needs besides the store. The choice is made where a
/// function's `main` names its route (inlined there, the route a constant), so a function's
/// binary links the Git host or the uploads bucket only when its route needs them.
#[inline(always)]
pub fn run_route(route: &'static Route) -> Pin<Box<dyn Future<Output = RunResult>>> {
    let handler = move |app: &'static App, req| route.serve(app, req);
    match route.needs {
        Needs::Store => Box::pin(run_with(store_only, handler)),
        Needs::GitHost => Box::pin(run_with(github, handler)),
        Needs::Uploads => Box::pin(run_with(uploads, handler)),
    }
}

/// How a function's runtime loop ends.
pub type RunResult = Result<(), lambda_http::Error>;

/// Runs `handler` for every invocation, over the application `parts` builds from the
/// store-only one (adding the Git host or the uploads bucket: see [`deployed::attach_github`],
/// [`deployed::attach_uploads`]). The application (SDK clients included) is built once per
/// execution environment and shared by all invocations.
pub async fn run_with<P, PFut, H, Fut>(parts: P, handler: H) -> Result<(), lambda_http::Error>
where
    P: FnOnce(App, aws_config::SdkConfig) -> PFut,
    PFut: Future<Output = App>,
    H: Fn(&'static App, Request) -> Fut + Sync,
    Fut: Future<Output = Response<Body>> + Send,
{
    crate::logging::init_json();
    let app = deployed_app(parts).await;
    let handler = &handler;
    lambda_http::run(lambda_http::service_fn(move |req| async move {
        Ok::<_, Infallible>(handler(app, req).await)
    }))
    .await
}

/// The deployed application, built once and kept for the life of the process.
pub async fn deployed_app<P, PFut>(parts: P) -> &'static App
where
    P: FnOnce(App, aws_config::SdkConfig) -> PFut,
    PFut: Future<Output = App>,
{
    let config = deployed::aws_config_from_env().await;
    let app = match deployed::app_from_env(&config) {
        Ok(app) => app,
        Err(e) => panic!("the function's configuration is wrong: {e}"),
    };
    Box::leak(Box::new(parts(app, config).await))
}

/// No parts besides the store.
pub async fn store_only(app: App, _: aws_config::SdkConfig) -> App {
    app
}

/// The Git host (GitHub) and its webhook deliveries.
pub async fn github(app: App, config: aws_config::SdkConfig) -> App {
    deployed::attach_github(app, &config).await
}

/// The bucket of large test reports.
pub async fn uploads(app: App, config: aws_config::SdkConfig) -> App {
    deployed::attach_uploads(app, &config)
}
