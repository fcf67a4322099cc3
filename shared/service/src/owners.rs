//! Who owns a repository: the organisation its owner (`host/owner`) is linked to, or the
//! application's default owner when the owner is linked to none. A request of any other
//! organisation is answered 404 `REPOSITORY_NOT_FOUND`, the same answer whether another
//! organisation owns the repository or none does.

use crate::app::App;
use crate::error::ServiceError;
use async_trait::async_trait;
use mq_core::DomainError;
use mq_core::ids::{OrgId, QueueId, RepoRef};
use mq_githost::pins::{AccountPins, account_may_act};
use mq_githost::{HostError, HostResult};
use mq_store::Store;
use std::sync::Arc;

/// The organisation owning the repositories of the owner whose key is `owner_key`.
pub async fn organisation_of(app: &App, owner_key: &str) -> Result<Option<OrgId>, ServiceError> {
    let link = app.store.owner_link(owner_key).await?;
    Ok(link.map(|l| l.org).or_else(|| app.default_owner.clone()))
}

/// The organisation a webhook delivery about a repository of the owner whose key is
/// `owner_key` reaches: the owner's, unless the owner was linked as another GitHub account
/// than `account`, the one the delivery says owns the repository (its login was taken over:
/// see `mq_githost::pins`).
pub async fn organisation_of_delivery(
    app: &App,
    owner_key: &str,
    account: Option<u64>,
) -> Result<Option<OrgId>, ServiceError> {
    let Some(link) = app.store.owner_link(owner_key).await? else {
        return Ok(app.default_owner.clone());
    };
    if !account_may_act(link.account_id, account) {
        tracing::error!(
            owner = owner_key,
            linked = link.account_id.unwrap_or_default(),
            found = account.unwrap_or_default(),
            "a delivery under a linked owner's name comes from another GitHub account; ignored"
        );
        return Ok(None);
    }
    Ok(Some(link.org))
}

/// The GitHub accounts owners were linked as, read from their links: the GitHub adapter acts
/// only through installations of those accounts.
pub struct LinkedAccounts {
    store: Arc<dyn Store>,
}

impl LinkedAccounts {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }
}

impl std::fmt::Debug for LinkedAccounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkedAccounts")
    }
}

#[async_trait]
impl AccountPins for LinkedAccounts {
    async fn linked_account(&self, owner_key: &str) -> HostResult<Option<u64>> {
        match self.store.owner_link(owner_key).await {
            Ok(link) => Ok(link.and_then(|l| l.account_id)),
            Err(e) => Err(HostError::Transient {
                message: format!("cannot read the link of {owner_key}: {e}"),
                retry_after: None,
            }),
        }
    }
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
