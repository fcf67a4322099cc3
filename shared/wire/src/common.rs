//! Request fields shared by the queue and pull request endpoints (`Repo`, `PrRef` in
//! `openapi/openapi.json`).

use mq_core::DomainError;
use mq_core::ids::{QueueId, RepoRef, check_branch};
use serde::{Deserialize, Deserializer, de};
use std::fmt;

/// `repo`: `{host, owner, name}`.
#[derive(Debug, Clone, Deserialize)]
pub struct RepoBody {
    pub host: String,
    pub owner: String,
    pub name: String,
}

impl RepoBody {
    pub fn to_ref(&self) -> Result<RepoRef, DomainError> {
        RepoRef::new(&self.host, &self.owner, &self.name)
    }
}

/// A validated queue address: repository and target branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueTarget {
    pub repo: RepoRef,
    pub branch: String,
}

impl QueueTarget {
    pub fn new(repo: &RepoBody, target_branch: &str) -> Result<Self, DomainError> {
        let repo = repo.to_ref()?;
        check_branch("targetBranch", target_branch)?;
        Ok(Self {
            repo,
            branch: target_branch.to_owned(),
        })
    }

    pub fn id(&self) -> QueueId {
        QueueId::new(&self.repo, &self.branch)
    }
}

/// `{repo, targetBranch}`: the body of `getQueue` and `deleteQueue`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueRequest {
    pub repo: RepoBody,
    pub target_branch: String,
}

impl QueueRequest {
    pub fn target(&self) -> Result<QueueTarget, DomainError> {
        QueueTarget::new(&self.repo, &self.target_branch)
    }
}

/// Any JSON integer of up to 64 bits; the range is checked by the field's own rule so the
/// message can say it. A number written with a fraction or an exponent (`2.0`, `1e3`), or an
/// integer beyond 64 bits, is refused with [`NOT_AN_INTEGER`]; `mq_http::body::from_slice`
/// puts the number as it was sent in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int(pub i128);

/// The error of an [`Int`] given any other number.
pub const NOT_AN_INTEGER: &str =
    "expected an integer, got a number with a fraction, an exponent or more than 64 bits";

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Int, E> {
                Err(E::custom(NOT_AN_INTEGER))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_and_other_numbers_do_not() {
        assert_eq!(
            serde_json::from_str::<Int>("4294967296").unwrap(),
            Int(4_294_967_296)
        );
        assert_eq!(serde_json::from_str::<Int>("-3").unwrap(), Int(-3));
        for not_integer in ["1.5", "2.0", "1e3", "1e30", "18446744073709551616"] {
            let err = serde_json::from_str::<Int>(not_integer).unwrap_err();
            assert!(err.to_string().starts_with(NOT_AN_INTEGER), "{err}");
        }
        assert!(serde_json::from_str::<Int>("\"7\"").is_err());
    }

    #[test]
    fn branch_and_repo_are_validated_with_field_names() {
        let repo = RepoBody {
            host: "github.com".into(),
            owner: "acme".into(),
            name: "rocket".into(),
        };
        assert_eq!(
            QueueTarget::new(&repo, "main").unwrap().id().as_str(),
            "github.com/acme/rocket#main"
        );
        let err = QueueTarget::new(&repo, "bad branch").unwrap_err();
        assert!(err.message.starts_with("targetBranch "), "{}", err.message);
    }
}
