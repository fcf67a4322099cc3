//! `list-unhealthy-tests` and `list-quarantined-tests` (in `openapi/openapi.json`): one `Query`
//! for the page, one for the count, both on the index built for the list.

use super::pages::{self, PageRequest};
use super::{caller_scope, settings};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::health::{RepoHealthSettings, StatusKind, TestCase};
use mq_core::ids::{OrgId, RepoRef};
use mq_core::time::Timestamp;
use mq_store::{HealthScope, PageCursor, TestList};
use mq_wire::test_health::{
    HtmlUrl, ListQuarantinedRequest, ListUnhealthyRequest, QuarantinedTest, QuarantinedTestsPage,
    StatusView, UnhealthyTest, UnhealthyTestsPage,
};

fn parse_status(s: &str) -> Result<StatusKind, ServiceError> {
    match s.to_ascii_uppercase().as_str() {
        "FLAKY" => Ok(StatusKind::Flaky),
        "BROKEN" => Ok(StatusKind::Broken),
        _ => Err(ServiceError::invalid(format!(
            "status must be FLAKY or BROKEN, got {s:?}"
        ))),
    }
}

/// A list's name, which page tokens are bound to.
fn list_name(scope: &HealthScope, list: &str) -> String {
    format!("{}#{}#{list}", scope.org, scope.repo_key)
}

pub async fn unhealthy(
    app: &App,
    org: &OrgId,
    req: &ListUnhealthyRequest,
) -> Result<UnhealthyTestsPage, ServiceError> {
    let (scope, repo) = caller_scope(app, org, &req.org_url_slug, &req.repo).await?;
    let kind = parse_status(&req.status)?;
    let name = list_name(&scope, kind.as_str());
    let page_req = pages::request(&name, req.page_query.page_size, &req.page_query.page_token)?;
    let list = TestList::WithStatus(kind);
    let (cases, page) = fetch(app, &scope, list, &name, &page_req).await?;
    let settings = settings(app, &scope).await?;
    let now = app.now();
    let tests = cases
        .iter()
        .map(|c| unhealthy_view(&repo, c, &settings, now))
        .collect();
    Ok(UnhealthyTestsPage { tests, page })
}

pub async fn quarantined(
    app: &App,
    org: &OrgId,
    req: &ListQuarantinedRequest,
) -> Result<QuarantinedTestsPage, ServiceError> {
    let (scope, _) = caller_scope(app, org, &req.org_url_slug, &req.repo).await?;
    let name = list_name(&scope, "QUARANTINED");
    let page_req = pages::request(&name, req.page_query.page_size, &req.page_query.page_token)?;
    let settings = settings(app, &scope).await?;
    if !settings.quarantining {
        return Ok(QuarantinedTestsPage {
            quarantined_tests: Vec::new(),
            page: pages::page(&name, &page_req, 0, &[], false),
        });
    }
    let list = TestList::Quarantine {
        overrides_only: !settings.auto_quarantine,
    };
    let (cases, page) = fetch(app, &scope, list, &name, &page_req).await?;
    let quarantined_tests = cases
        .iter()
        .map(|case| quarantined_view(case, &settings))
        .collect();
    Ok(QuarantinedTestsPage {
        quarantined_tests,
        page,
    })
}

async fn fetch(
    app: &App,
    scope: &HealthScope,
    list: TestList,
    name: &str,
    req: &PageRequest,
) -> Result<(Vec<TestCase>, mq_wire::test_health::Page), ServiceError> {
    let total = app.store.count_test_cases(scope, list).await?;
    let (mut cases, mut beyond) = read_page(app, scope, list, req, total).await?;
    let mut req = *req;
    // A page read back to the start of the list is short when tests before it left the list
    // meanwhile: the first page, whole, instead.
    let short = cases.len() < req.size as usize;
    if matches!(req.cursor, PageCursor::Before(_)) && !beyond && short {
        req.cursor = PageCursor::First;
        (cases, beyond) = read_page(app, scope, list, &req, total).await?;
    }
    let ids: Vec<_> = cases.iter().map(|c| c.id).collect();
    Ok((cases, pages::page(name, &req, total, &ids, beyond)))
}

/// The test cases of the page `req` asks for, and whether the list goes on beyond it.
async fn read_page(
    app: &App,
    scope: &HealthScope,
    list: TestList,
    req: &PageRequest,
    total: u64,
) -> Result<(Vec<TestCase>, bool), ServiceError> {
    let limit = pages::limit(req, total);
    let read = app
        .store
        .list_test_cases(scope, list, req.cursor, limit)
        .await?;
    Ok(pages::served(req, total, read))
}

/// `https://<host>/<owner>/<name>`.
pub fn repository_url(repo: &RepoRef) -> String {
    format!("https://{}/{}/{}", repo.host, repo.owner, repo.name)
}

/// The test's source file on the Git host when the report names it, else the repository.
fn test_url(repo: &RepoRef, case: &TestCase) -> String {
    let base = repository_url(repo);
    match case.identity.file.trim_start_matches("./") {
        "" => base,
        file => format!("{base}/blob/HEAD/{file}"),
    }
}

/// An item of `tests` (`UnhealthyTest` in `openapi/openapi.json`).
pub fn unhealthy_view(
    repo: &RepoRef,
    case: &TestCase,
    settings: &RepoHealthSettings,
    now: Timestamp,
) -> UnhealthyTest {
    UnhealthyTest {
        id: case.id.to_string(),
        repository: HtmlUrl {
            html_url: repository_url(repo),
        },
        html_url: test_url(repo, case),
        name: case.identity.name.clone(),
        variant: case.identity.variant.clone(),
        status: StatusView {
            reason: case.status.reason.clone(),
            timestamp: case.status.since.to_rfc3339(),
        },
        codeowners: case.codeowners.clone(),
        pull_requests_impacted_last_7d: case.pull_requests_impacted_last_7d(now),
        quarantined: case.quarantined(settings),
        file_path: case.identity.file.clone(),
        parent: case.identity.parent.clone(),
        classname: case.identity.classname.clone(),
        ticket: case.ticket_url.clone().map(|html_url| HtmlUrl { html_url }),
        recent_results: mq_wire::dashboard::recent_results(&case.history),
    }
}

/// An item of `quarantined_tests` (`QuarantinedTest` in `openapi/openapi.json`).
pub fn quarantined_view(case: &TestCase, settings: &RepoHealthSettings) -> QuarantinedTest {
    QuarantinedTest {
        name: case.identity.name.clone(),
        parent: case.identity.parent.clone(),
        file: case.identity.file.clone(),
        classname: case.identity.classname.clone(),
        codeowners: case.codeowners.clone(),
        quarantined_at: case
            .quarantined_at(settings)
            .unwrap_or(case.status.since)
            .to_rfc3339(),
        status_last_updated_at: case.status.since.to_rfc3339(),
        test_case_id: case.id.to_string(),
        variant: case.identity.variant.clone(),
        ticket: case.ticket_url.clone().map(|html_url| HtmlUrl { html_url }),
        recent_results: mq_wire::dashboard::recent_results(&case.history),
    }
}
