//! `POST /v1/flaky-tests/upload`: JUnit reports (plain or gzip) with the metadata of their run,
//! as `multipart/form-data`.

use lambda_http::{Body, Request, Response};
use mq_api::service::test_health::ingest::{Limits, from_form};
use mq_api::service::test_health::{caller_scope, ingest};
use mq_api::{App, http, multipart};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "flaky-tests/upload", |caller, req| async move {
        let parts = multipart::parse(&req).await?;
        let slug = parts
            .iter()
            .find(|p| p.name == "org_url_slug")
            .map(|p| p.text())
            .transpose()?;
        let upload = from_form(parts)?;
        if let Some(slug) = slug {
            let repo = &upload.metadata.repo;
            let body = mq_api::wire::RepoBody {
                host: repo.host.clone(),
                owner: repo.owner.clone(),
                name: repo.name.clone(),
            };
            caller_scope(&caller.org, &slug, &body)?;
        }
        Ok(http::ok(
            &ingest(app, &caller.org, upload, &Limits::default()).await?,
        ))
    })
    .await
}
