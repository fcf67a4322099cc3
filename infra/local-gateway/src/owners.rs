//! Which organisation owns which repositories on the local gateway.
//!
//! `MQ_REPO_OWNERS` links repository owners to organisations:
//! `acme=github.com/acme,github.com/acme-labs;umbrella=github.com/umbrella`. Without it, one
//! organisation owns every repository (the quick start's single token); several organisations
//! without it are refused, since nothing would say whose repository is whose.

use mq_core::ids::{OrgId, OwnerRef};
use mq_core::time::Timestamp;
use mq_store::{OwnerLink, OwnerStore, StoreError};
use std::collections::BTreeSet;

/// The environment variable of the links.
pub const REPO_OWNERS_VAR: &str = "MQ_REPO_OWNERS";

/// How repositories are owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Each listed owner belongs to its organisation; any other owner to none.
    Links(Vec<(OrgId, OwnerRef)>),
    /// The one organisation owns every repository whose owner is linked to no other.
    Everything(OrgId),
}

impl Ownership {
    /// The ownership of `orgs` (the organisations with tokens) given `MQ_REPO_OWNERS`.
    pub fn decide(orgs: &BTreeSet<OrgId>, repo_owners: Option<&str>) -> Result<Self, String> {
        if let Some(list) = repo_owners.filter(|l| !l.trim().is_empty()) {
            return parse_owner_list(list).map(Ownership::Links);
        }
        let mut only = orgs.iter();
        match (only.next(), only.next()) {
            (Some(org), None) => Ok(Ownership::Everything(org.clone())),
            _ => Err(several_without_links(orgs)),
        }
    }

    /// The organisation the links give `owner`, or the one owning everything.
    pub fn owner_of(&self, owner: &OwnerRef) -> Option<&OrgId> {
        match self {
            Ownership::Links(links) => links
                .iter()
                .find(|(_, o)| o.key() == owner.key())
                .map(|(org, _)| org),
            Ownership::Everything(org) => Some(org),
        }
    }

    /// Stores the links (an owner linked to another organisation before is moved: the
    /// variable says who owns it now).
    pub async fn store(&self, store: &dyn OwnerStore, now: Timestamp) -> Result<(), String> {
        let Ownership::Links(links) = self else {
            return Ok(());
        };
        for (org, owner) in links {
            link(store, owner, org, now).await?;
        }
        Ok(())
    }
}

/// Links `owner` to `org`, replacing a link to another organisation.
pub async fn link(
    store: &dyn OwnerStore,
    owner: &OwnerRef,
    org: &OrgId,
    now: Timestamp,
) -> Result<(), String> {
    let link = OwnerLink {
        owner: owner.clone(),
        org: org.clone(),
        linked_at: now,
        account_id: None,
    };
    match store.link_owner(&link).await {
        Err(StoreError::AlreadyExists) => {
            if let Some(previous) = store.owner_link(&owner.key()).await.map_err(describe)? {
                match store.unlink_owner(owner, &previous.org).await {
                    Ok(()) | Err(StoreError::NotFound) => {}
                    Err(e) => return Err(describe(e)),
                }
            }
            store.link_owner(&link).await.map_err(describe)
        }
        other => other.map_err(describe),
    }
}

fn describe(e: StoreError) -> String {
    format!("cannot store the repository owners: {e}")
}

fn several_without_links(orgs: &BTreeSet<OrgId>) -> String {
    let names: Vec<&str> = orgs.iter().map(OrgId::as_str).collect();
    let example: Vec<String> = names
        .iter()
        .map(|org| format!("{org}=github.com/{org}"))
        .collect();
    format!(
        "{} organisations ({}) and no {REPO_OWNERS_VAR}: set it to say which organisation owns \
         which repository owners, e.g. {REPO_OWNERS_VAR}=\"{}\"",
        names.len(),
        names.join(", "),
        example.join(";")
    )
}

/// Parses `org=host/owner,host/owner;org2=host/owner`. An owner listed twice must name the
/// same organisation.
pub fn parse_owner_list(list: &str) -> Result<Vec<(OrgId, OwnerRef)>, String> {
    let mut links: Vec<(OrgId, OwnerRef)> = Vec::new();
    for entry in list.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (org, owners) = entry.split_once('=').ok_or_else(|| {
            format!("{REPO_OWNERS_VAR} entry `{entry}` is not org=host/owner,host/owner")
        })?;
        let org = OrgId::parse(org.trim())
            .map_err(|e| format!("{REPO_OWNERS_VAR} entry `{entry}`: {e}"))?;
        for owner in owners.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let owner = OwnerRef::parse(REPO_OWNERS_VAR, owner)
                .map_err(|e| format!("{REPO_OWNERS_VAR} entry `{entry}`: {e}"))?;
            if let Some((other, _)) = links.iter().find(|(_, o)| o.key() == owner.key())
                && other != &org
            {
                return Err(format!(
                    "{REPO_OWNERS_VAR} links {owner} to both {other} and {org}; an owner belongs \
                     to one organisation"
                ));
            }
            links.push((org.clone(), owner));
        }
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn org(s: &str) -> OrgId {
        OrgId::parse(s).unwrap()
    }

    fn orgs(names: &[&str]) -> BTreeSet<OrgId> {
        names.iter().map(|n| org(n)).collect()
    }

    #[test]
    fn owner_lists_link_each_owner_to_its_organisation() {
        let links = parse_owner_list(
            "acme=github.com/acme, github.com/acme-labs; umbrella=git.example.com:8443/umbrella;",
        )
        .unwrap();
        let keys: Vec<(&str, String)> = links
            .iter()
            .map(|(org, owner)| (org.as_str(), owner.key()))
            .collect();
        assert_eq!(
            keys,
            [
                ("acme", "github.com/acme".to_owned()),
                ("acme", "github.com/acme-labs".to_owned()),
                ("umbrella", "git.example.com:8443/umbrella".to_owned()),
            ]
        );
    }

    #[test]
    fn malformed_owner_lists_say_what_is_wrong() {
        for (list, says) in [
            ("acme", "is not org=host/owner"),
            ("Acme=github.com/acme", "organisation"),
            ("acme=github.com", "must be host/owner"),
            ("acme=../acme", "host"),
            (
                "acme=github.com/a;umbrella=GitHub.com/A",
                "to both acme and umbrella",
            ),
        ] {
            let err = parse_owner_list(list).unwrap_err();
            assert!(err.contains(says), "{list}: {err}");
            assert!(err.starts_with(REPO_OWNERS_VAR), "{list}: {err}");
        }
    }

    #[test]
    fn one_organisation_owns_everything_and_several_need_links() {
        assert_eq!(
            Ownership::decide(&orgs(&["local"]), None),
            Ok(Ownership::Everything(org("local")))
        );
        let err = Ownership::decide(&orgs(&["acme", "umbrella"]), Some(" ")).unwrap_err();
        assert!(err.contains("MQ_REPO_OWNERS="), "{err}");
        assert!(err.contains("acme, umbrella"), "{err}");
        let links = Ownership::decide(&orgs(&["acme", "umbrella"]), Some("acme=github.com/acme"));
        let acme = OwnerRef::parse("o", "GitHub.com/Acme").unwrap();
        let other = OwnerRef::parse("o", "github.com/umbrella").unwrap();
        let links = links.unwrap();
        assert_eq!(links.owner_of(&acme), Some(&org("acme")));
        assert_eq!(links.owner_of(&other), None);
    }
}
