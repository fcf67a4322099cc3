//! Booting a function on Lambda: logging, the application, the runtime loop.

use crate::app::App;
use lambda_http::{Body, Request, Response};
use std::convert::Infallible;
use std::future::Future;

/// Runs `handler` for every invocation. The application (SDK clients included) is built once
/// per execution environment and shared by all invocations.
pub async fn run<H, Fut>(handler: H) -> Result<(), lambda_http::Error>
where
    H: Fn(&'static App, Request) -> Fut + Sync,
    Fut: Future<Output = Response<Body>> + Send,
{
    crate::logging::init_json();
    let app: &'static App = Box::leak(Box::new(App::from_env().await));
    let handler = &handler;
    lambda_http::run(lambda_http::service_fn(move |req| async move {
        Ok::<_, Infallible>(handler(app, req).await)
    }))
    .await
}
