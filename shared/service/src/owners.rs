//! Who owns a repository: the organisation its owner (`host/owner`) is linked to, or the
//! application's default owner when the owner is linked to none. A request of any other
//! organisation is answered 404 `REPOSITORY_NOT_FOUND`, the same answer whether another
//! organisation owns the repository or none does.

use crate::app::App;
use crate::error::ServiceError;
use mq_core::DomainError;
use mq_core::ids::{OrgId, QueueId, RepoRef};

/// The organisation owning the repositories of the owner whose key is `owner_key`.
pub async fn organisation_of(app: &App, owner_key: &str) -> Result<Option<OrgId>, ServiceError> {
    let link = app.store.owner_link(owner_key).await?;
    Ok(link.map(|l| l.org).or_else(|| app.default_owner.clone()))
}

/// 404 `REPOSITORY_NOT_FOUND` unless `org` owns `repo`.
pub async fn check_repo(app: &App, org: &OrgId, repo: &RepoRef) -> Result<(), ServiceError> {
    check_owner_key(app, org, &repo.owner_ref().key()).await
}

/// 404 `REPOSITORY_NOT_FOUND` unless `org` owns the repository of the queue `id`.
pub async fn check_queue(app: &App, org: &OrgId, id: &QueueId) -> Result<(), ServiceError> {
    check_owner_key(app, org, id.owner_key()).await
}

async fn check_owner_key(app: &App, org: &OrgId, owner_key: &str) -> Result<(), ServiceError> {
    match organisation_of(app, owner_key).await? {
        Some(owner) if &owner == org => Ok(()),
        _ => Err(DomainError::repository_not_found().into()),
    }
}
