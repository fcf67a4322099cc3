//! Booting the `dashboard` function: the pages (`mq_http::pages`) need no store, no AWS
//! client and no token, so nothing is built but the log output and the runtime loop.

use crate::lambda::RunResult;
use std::convert::Infallible;

/// Serves the dashboard's pages (`GET /` and `GET /ui/<file>`) for every invocation.
pub async fn run_pages() -> RunResult {
    crate::logging::init_json();
    lambda_http::run(lambda_http::service_fn(|req| async move {
        Ok::<_, Infallible>(mq_http::pages::serve(&req))
    }))
    .await
}
