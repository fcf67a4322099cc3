//! `POST /v1/flaky-tests/upload`: JUnit reports (plain or gzip) with the metadata of their run,
//! as `multipart/form-data`.

use lambda_http::{Body, Request, Response};
use mq_api::service::owners::check_repo;
use mq_api::service::test_health::ingest::{Limits, from_form};
use mq_api::service::test_health::{check_slug, ingest};
use mq_api::{App, http, multipart};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "flaky-tests/upload", |caller, req| async move {
        let parts = multipart::parse(&req).await?;
        if let Some(slug) = parts.iter().find(|p| p.name == "org_url_slug") {
            check_slug(&caller.org, &slug.text()?)?;
        }
        let upload = from_form(parts)?;
        check_repo(app, &caller.org, &upload.metadata.repo).await?;
        Ok(http::ok(
            &ingest(app, &caller.org, upload, &Limits::default()).await?,
        ))
    })
    .await
}
