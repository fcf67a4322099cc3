//! The GitHub accounts repository owners are linked as. A login names an account only until
//! it is renamed or deleted: anyone may then register it, create repositories of the same
//! names and install the App there. An owner linked with its account's id (GitHub's numeric
//! id, which no rename changes) is served only while its repositories belong to that account:
//! the GitHub adapter refuses an installation of another account under its name, and webhook
//! deliveries from another account under its name reach nothing.

use crate::error::HostResult;
use async_trait::async_trait;

/// Where the account id each owner was linked as is kept.
#[async_trait]
pub trait AccountPins: Send + Sync + std::fmt::Debug {
    /// The GitHub account id the owner whose key is `owner_key` (`github.com/acme`) was
    /// linked as; `None` when its link recorded none (or there is no link).
    async fn linked_account(&self, owner_key: &str) -> HostResult<Option<u64>>;
}

/// Whether the account `seen` on GitHub (`None`: not said) may act for an owner linked as
/// `linked`: any account when the link recorded none, else that one.
pub fn account_may_act(linked: Option<u64>, seen: Option<u64>) -> bool {
    linked.is_none_or(|id| seen == Some(id))
}
