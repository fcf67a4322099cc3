//! Request fields shared by the queue and pull request endpoints (spec §2.1, §2.2).

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

/// Any JSON integer; the range is checked by the field's own rule so the message can say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int(pub i128);

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
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
                // Integers beyond 64 bits arrive as floats; keep them out of range, not wrong-typed.
                if v.fract() == 0.0 && v.is_finite() {
                    Ok(Int(if v.is_sign_negative() {
                        i128::MIN
                    } else {
                        i128::MAX
                    }))
                } else {
                    Err(E::invalid_type(de::Unexpected::Float(v), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_of_any_size_parse_and_fractions_do_not() {
        assert_eq!(
            serde_json::from_str::<Int>("4294967296").unwrap(),
            Int(4_294_967_296)
        );
        assert_eq!(serde_json::from_str::<Int>("-3").unwrap(), Int(-3));
        assert_eq!(serde_json::from_str::<Int>("1e30").unwrap(), Int(i128::MAX));
        assert!(serde_json::from_str::<Int>("1.5").is_err());
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
