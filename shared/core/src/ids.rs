//! Identifiers: organisations, repositories, queues, pull requests, commits.

use crate::error::DomainError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest accepted host, owner, repository or branch name.
pub const MAX_NAME_LEN: usize = 255;

/// An organisation: the tenant a token and its queues belong to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OrgId(String);

impl OrgId {
    /// Organisation ids are slugs: 1..=64 of `a-z 0-9 - _`.
    pub fn parse(s: &str) -> Result<Self, DomainError> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(DomainError::invalid(
                "organisation",
                "must be 1 to 64 characters of a-z, 0-9, '-' or '_'",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OrgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A repository on a Git host, as the API names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RepoRef {
    pub host: String,
    pub owner: String,
    pub name: String,
}

impl RepoRef {
    /// Validates each part; `field` prefixes error messages (e.g. `repo`).
    pub fn new(host: &str, owner: &str, name: &str) -> Result<Self, DomainError> {
        check_host("repo.host", host)?;
        check_path_segment("repo.owner", owner)?;
        check_path_segment("repo.name", name)?;
        Ok(Self {
            host: host.to_owned(),
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }

    /// `host/owner/name` in lowercase: Git hosts treat these names case-insensitively.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.host, self.owner, self.name).to_ascii_lowercase()
    }

    /// The order of [`key`](Self::key)s, without making them.
    pub fn cmp_key(&self, other: &Self) -> std::cmp::Ordering {
        self.key_bytes().cmp(other.key_bytes())
    }

    fn key_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let parts = [self.host.as_str(), "/", &self.owner, "/", &self.name];
        parts
            .into_iter()
            .flat_map(str::bytes)
            .map(|b| b.to_ascii_lowercase())
    }

    /// `owner/name`, as metrics label it.
    pub fn full_name(&self) -> String {
        [self.owner.as_str(), "/", &self.name].concat()
    }

    /// The repository's owner on its host: what an organisation is linked to.
    pub fn owner_ref(&self) -> OwnerRef {
        OwnerRef {
            host: self.host.clone(),
            owner: self.owner.clone(),
        }
    }
}

/// A repository owner on a host (`github.com/acme`): the unit an organisation owns. Every
/// repository of the owner belongs to the organisation linked to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OwnerRef {
    pub host: String,
    pub owner: String,
}

impl OwnerRef {
    /// Validates both parts as [`RepoRef::new`] does; `field` prefixes error messages.
    pub fn new(field: &str, host: &str, owner: &str) -> Result<Self, DomainError> {
        check_host(&format!("{field} host"), host)?;
        check_path_segment(&format!("{field} owner"), owner)?;
        Ok(Self {
            host: host.to_owned(),
            owner: owner.to_owned(),
        })
    }

    /// Parses `host/owner` (`github.com/acme`); `field` prefixes error messages.
    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        match s.trim().split_once('/') {
            Some((host, owner)) => Self::new(field, host, owner),
            None => Err(DomainError::invalid(
                field,
                &format!("must be host/owner (github.com/acme), got {s:?}"),
            )),
        }
    }

    /// `host/owner` in lowercase, as [`RepoRef::key`] spells its first two parts.
    pub fn key(&self) -> String {
        format!("{}/{}", self.host, self.owner).to_ascii_lowercase()
    }
}

impl fmt::Display for OwnerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.host, self.owner)
    }
}

impl fmt::Display for RepoRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.owner, self.name)
    }
}

fn check_host(field: &str, s: &str) -> Result<(), DomainError> {
    if s.len() <= MAX_NAME_LEN && is_host(s) {
        Ok(())
    } else {
        Err(DomainError::invalid(field, HOST_RULE))
    }
}

/// What [`RepoRef::new`] and [`OwnerRef::parse`] require of a host, for messages.
pub const HOST_RULE: &str = "must be a DNS host name (labels of 1 to 63 letters, digits or '-', \
     separated by single dots, neither starting nor ending with '-'), optionally with :port; \
     at most 255 characters";

/// A DNS name (`git.example.com`), optionally with a port (`:8443`, 1 to 65535): no empty
/// label (so no `.`, `..`, leading, trailing or doubled dot), each label 1 to 63 characters of
/// letters, digits and `-`, not at either end.
pub fn is_host(s: &str) -> bool {
    let (name, port) = match s.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (s, None),
    };
    let port_ok = port.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 5
            && p.bytes().all(|b| b.is_ascii_digit())
            && !p.starts_with('0')
            && p.parse::<u32>().is_ok_and(|n| n <= 65_535)
    });
    port_ok && !name.is_empty() && name.split('.').all(is_dns_label)
}

fn is_dns_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

fn check_path_segment(field: &str, s: &str) -> Result<(), DomainError> {
    let ok = !s.is_empty()
        && s.len() <= MAX_NAME_LEN
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if ok {
        Ok(())
    } else {
        Err(DomainError::invalid(
            field,
            "must be 1 to 255 characters of letters, digits, '.', '-' or '_'",
        ))
    }
}

/// Checks a branch name against Git's ref-name rules (`git check-ref-format --branch`).
pub fn check_branch(field: &str, s: &str) -> Result<(), DomainError> {
    let bad_char = s.chars().any(|c| {
        c.is_control() || c.is_whitespace() || matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\')
    });
    let bad = s.is_empty()
        || s.len() > MAX_NAME_LEN
        || bad_char
        || s.starts_with('-')
        || s.starts_with('/')
        || s.ends_with('/')
        || s.ends_with('.')
        || s.contains("..")
        || s.contains("//")
        || s.contains("@{")
        || s == "@"
        || s.split('/')
            .any(|part| part.starts_with('.') || part.ends_with(".lock"));
    if bad {
        Err(DomainError::invalid(field, "is not a valid branch name"))
    } else {
        Ok(())
    }
}

/// One queue per target branch of a repository: `host/owner/name#branch`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueueId(String);

impl QueueId {
    pub fn new(repo: &RepoRef, branch: &str) -> Self {
        Self(format!("{}#{}", repo.key(), branch))
    }

    /// Rebuilds an id read back from storage.
    pub fn from_stored(s: String) -> Self {
        Self(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `host/owner` of the queue's repository, in lowercase: its [`OwnerRef::key`].
    pub fn owner_key(&self) -> &str {
        let mut slashes = self.0.match_indices('/').map(|(i, _)| i);
        let end = slashes.nth(1).unwrap_or(self.0.len());
        &self.0[..end]
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A pull request number (`pr.number`, 0..=4294967295).
pub type PrNumber = u32;

/// A commit id as the Git host spells it (hex).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Sha(pub String);

impl Sha {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 7 characters, for messages.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(7)]
    }

    /// Whether this sha, as a client gave it (an abbreviation of at least 7 hex digits, in
    /// any case), names the commit `full`, as git takes an abbreviated sha.
    pub fn abbreviates(&self, full: &Sha) -> bool {
        full.0
            .get(..self.0.len())
            .is_some_and(|prefix| self.0.len() >= 7 && prefix.eq_ignore_ascii_case(&self.0))
    }
}

impl fmt::Display for Sha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abbreviated_sha_names_the_commits_it_starts() {
        let full = Sha::new("0123456789abcdef0123456789abcdef01234567");
        for given in ["0123456", "0123456789ABCDEF", full.as_str()] {
            assert!(Sha::new(given).abbreviates(&full), "{given}");
        }
        for given in [
            "012345",
            "1123456",
            "0123456789abcdef0123456789abcdef012345678",
        ] {
            assert!(!Sha::new(given).abbreviates(&full), "{given}");
        }
    }

    #[test]
    fn queue_id_ignores_case_of_repository_but_not_of_branch() {
        let a = RepoRef::new("GitHub.com", "Acme", "Rocket").unwrap();
        let b = RepoRef::new("github.com", "acme", "rocket").unwrap();
        assert_eq!(QueueId::new(&a, "main"), QueueId::new(&b, "main"));
        assert_ne!(QueueId::new(&a, "Main"), QueueId::new(&b, "main"));
        assert_eq!(
            QueueId::new(&a, "main").as_str(),
            "github.com/acme/rocket#main"
        );
        assert_eq!(QueueId::new(&a, "a/b").owner_key(), a.owner_ref().key());
        assert_eq!(a.owner_ref().key(), "github.com/acme");
    }

    #[test]
    fn keys_compare_as_the_keys_made() {
        let repos = [
            ("github.com", "acme", "rocket"),
            ("GitHub.com", "Acme", "Rocket"),
            ("github.com", "acme", "rocket.rs"),
            ("github.com", "acme", "rocket-2"),
            ("github.com", "acme-corp", "a"),
            ("github.com", "acme", "Zeta"),
            ("gitlab.com", "a", "b"),
            ("git.example", "acme", "rocket"),
        ]
        .map(|(h, o, n)| RepoRef::new(h, o, n).unwrap());
        for a in &repos {
            for b in &repos {
                assert_eq!(a.cmp_key(b), a.key().cmp(&b.key()), "{a} and {b}");
            }
        }
    }

    #[test]
    fn rejects_names_that_are_not_repository_names() {
        assert!(RepoRef::new("github.com", "acme", "a/b").is_err());
        assert!(RepoRef::new("", "acme", "rocket").is_err());
        assert!(RepoRef::new("github.com", "..", "rocket").is_err());
        for host in [
            ".",
            "..",
            "...",
            "a..b",
            ".github.com",
            "github.com.",
            "-a.com",
            "a-.com",
            "a_b.com",
            "a.com:",
            "a.com:0",
            "a.com:65536",
            "a.com:08",
            "a.com:1:2",
            ":80",
        ] {
            let err = RepoRef::new(host, "acme", "rocket").unwrap_err();
            assert!(err.to_string().starts_with("repo.host"), "{host}: {err}");
        }
        let label = "a".repeat(63);
        for host in [
            "github.com",
            "localhost",
            "127.0.0.1",
            "git.example.com:8443",
            &label,
        ] {
            assert!(RepoRef::new(host, "acme", "rocket").is_ok(), "{host}");
        }
        assert!(RepoRef::new(&format!("{label}a.com"), "acme", "rocket").is_err());
        let err = RepoRef::new("github.com", "acme", "").unwrap_err();
        assert!(err.to_string().starts_with("repo.name"));
    }

    #[test]
    fn branch_names_follow_git_rules() {
        for ok in ["main", "release/1.2", "feature_x-y", "v1.0"] {
            assert!(check_branch("targetBranch", ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "a..b", "a b", "-x", "x/", "x.lock", "a.lock/b", "a:b", "@", ".hidden", "a//b",
        ] {
            assert!(check_branch("targetBranch", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn org_ids_are_slugs() {
        assert!(OrgId::parse("acme-eng").is_ok());
        assert!(OrgId::parse("Acme").is_err());
        assert!(OrgId::parse("").is_err());
    }
}
