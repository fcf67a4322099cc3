//! Pull request requests and responses (`openapi/openapi.json`), with the exact field names.

use super::common::{Int, QueueTarget, RepoBody};
use mq_core::DomainError;
use mq_core::engine::view;
use mq_core::entry::{Entry, EntryState, ImpactedTargets};
use mq_core::ids::{PrNumber, Sha};
use mq_core::priority::Priority;
use mq_core::snapshot::Queue;
use serde::{Deserialize, Deserializer, Serialize};
use std::borrow::Cow;
use std::collections::BTreeSet;

pub use mq_core::entry::{MAX_IMPACTED_TARGETS, MAX_TARGET_LEN, MAX_TARGETS_BYTES};

/// `pr`: `{number}`, and `sha` where an endpoint needs it.
#[derive(Debug, Clone, Deserialize)]
pub struct PrBody {
    pub number: Int,
    pub sha: Option<String>,
}

impl PrBody {
    /// `pr.number`, checked against 0..=4294967295.
    pub fn number(&self) -> Result<PrNumber, DomainError> {
        PrNumber::try_from(self.number.0).map_err(|_| {
            DomainError::invalid(
                "pr.number",
                &format!(
                    "must be an integer from 0 to 4294967295, got {}",
                    self.number.0
                ),
            )
        })
    }
}

/// `{repo, targetBranch, pr}`: cancel, restart and getSubmittedPullRequest.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrRequest {
    pub repo: RepoBody,
    pub target_branch: String,
    pub pr: PrBody,
}

impl PrRequest {
    pub fn target(&self) -> Result<(QueueTarget, PrNumber), DomainError> {
        let target = QueueTarget::new(&self.repo, &self.target_branch)?;
        Ok((target, self.pr.number()?))
    }
}

/// A priority as sent: an integer 0..=255 or a name in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PriorityBody {
    Number(Int),
    Name(String),
}

impl<'de> Deserialize<'de> for PriorityBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(Int),
            Name(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Number(n)) => Ok(PriorityBody::Number(n)),
            Ok(Raw::Name(s)) => Ok(PriorityBody::Name(s)),
            Err(_) => Err(serde::de::Error::custom(
                "expected an integer from 0 to 255 or a priority name",
            )),
        }
    }
}

impl PriorityBody {
    pub fn to_priority(&self) -> Result<Priority, DomainError> {
        match self {
            PriorityBody::Number(Int(n)) => Priority::from_int(*n),
            PriorityBody::Name(name) => Priority::from_name(name),
        }
    }
}

/// The body of `submitPullRequest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmitRequest {
    pub repo: RepoBody,
    pub target_branch: String,
    pub pr: PrBody,
    pub priority: Option<PriorityBody>,
    pub no_batch: Option<bool>,
}

/// A validated submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    pub target: QueueTarget,
    pub pr: PrNumber,
    pub priority: Priority,
    /// `None`: not given (an active entry keeps its own).
    pub no_batch: Option<bool>,
}

impl SubmitRequest {
    pub fn submission(&self) -> Result<Submission, DomainError> {
        let target = QueueTarget::new(&self.repo, &self.target_branch)?;
        let priority = match &self.priority {
            Some(p) => p.to_priority()?,
            None => Priority::default_priority(),
        };
        Ok(Submission {
            target,
            pr: self.pr.number()?,
            priority,
            no_batch: self.no_batch,
        })
    }
}

/// `impactedTargets`: a list of target names, or `"ALL"` (alias `"IMPACTS_ALL"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetsBody {
    All,
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for TargetsBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<String>),
        }
        match Raw::deserialize(d) {
            Ok(Raw::List(list)) => Ok(TargetsBody::List(list)),
            Ok(Raw::Word(w))
                if w.eq_ignore_ascii_case("ALL") || w.eq_ignore_ascii_case("IMPACTS_ALL") =>
            {
                Ok(TargetsBody::All)
            }
            _ => Err(serde::de::Error::custom(
                "expected a list of target names or the string \"ALL\"",
            )),
        }
    }
}

/// The body of `setImpactedTargets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImpactedTargetsRequest {
    pub repo: RepoBody,
    pub target_branch: String,
    pub pr: PrBody,
    pub impacted_targets: TargetsBody,
}

/// A validated `setImpactedTargets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetsUpload {
    pub target: QueueTarget,
    pub pr: PrNumber,
    /// The head the targets were computed for; `None`: the pull request's current head.
    pub head_sha: Option<Sha>,
    pub targets: ImpactedTargets,
}

impl ImpactedTargetsRequest {
    pub fn upload(&self) -> Result<TargetsUpload, DomainError> {
        let target = QueueTarget::new(&self.repo, &self.target_branch)?;
        let head_sha = match self.pr.sha.as_deref() {
            Some(sha) => {
                check_sha("pr.sha", sha)?;
                Some(Sha::new(sha.to_ascii_lowercase()))
            }
            None => None,
        };
        Ok(TargetsUpload {
            target,
            pr: self.pr.number()?,
            head_sha,
            targets: targets(&self.impacted_targets)?,
        })
    }
}

fn targets(body: &TargetsBody) -> Result<ImpactedTargets, DomainError> {
    let list = match body {
        TargetsBody::All => return Ok(ImpactedTargets::All),
        TargetsBody::List(list) => list,
    };
    if list.len() > MAX_IMPACTED_TARGETS {
        return Err(DomainError::invalid(
            "impactedTargets",
            &format!("may hold at most {MAX_IMPACTED_TARGETS} targets; send \"ALL\" instead"),
        ));
    }
    for (i, t) in list.iter().enumerate() {
        if t.is_empty() || t.chars().count() > MAX_TARGET_LEN {
            return Err(DomainError::invalid(
                &format!("impactedTargets[{i}]"),
                &format!("must be a non-empty name of at most {MAX_TARGET_LEN} characters"),
            ));
        }
    }
    if list.iter().map(String::len).sum::<usize>() > MAX_TARGETS_BYTES {
        return Err(DomainError::invalid(
            "impactedTargets",
            &format!(
                "may hold at most {MAX_TARGETS_BYTES} bytes of target names in all; send \"ALL\" instead"
            ),
        ));
    }
    Ok(ImpactedTargets::List(
        list.iter().cloned().collect::<BTreeSet<_>>(),
    ))
}

/// A commit sha: 7 to 64 hex digits.
pub fn check_sha(field: &str, sha: &str) -> Result<(), DomainError> {
    let ok = (7..=64).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(())
    } else {
        Err(DomainError::invalid(
            field,
            "must be a commit sha (7 to 64 hexadecimal digits)",
        ))
    }
}

/// `readiness` of a submitted pull request (`SubmittedPullRequest` in `openapi/openapi.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessView {
    pub requires_impacted_targets: bool,
    pub does_base_branch_match: bool,
    pub has_impacted_targets: bool,
}

/// The `getSubmittedPullRequest` response (`SubmittedPullRequest` in `openapi/openapi.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmittedPullRequest {
    pub state_changed_at: String,
    pub priority_value: u8,
    pub priority_name: String,
    pub skip_the_line: bool,
    pub force_enqueued: bool,
    pub is_currently_submitted_to_queue: bool,
    pub pr_number: u32,
    pub pr_title: String,
    pub pr_sha: String,
    pub pr_base_branch: String,
    pub pr_author: String,
    pub id: String,
    pub state: EntryState,
    pub readiness: ReadinessView,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub used_default_priority_name: Option<String>,
    /// The run testing the pull request now, or the last one that did: the `testRunId` of
    /// `getMergeQueueTestingDetails`. Absent until its first run starts.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub test_run_id: Option<String>,
}

impl SubmittedPullRequest {
    /// An entry of `queue`, active or concluded.
    pub fn of(queue: &Queue, entry: &Entry) -> Self {
        let readiness = view::readiness(queue, entry);
        Self {
            state_changed_at: entry.state_changed_at.to_rfc3339(),
            priority_value: entry.priority.value,
            priority_name: entry.priority.name().into_owned(),
            skip_the_line: entry.priority.is_urgent(),
            force_enqueued: entry.force_enqueued,
            is_currently_submitted_to_queue: entry.state.is_active(),
            pr_number: entry.pr,
            pr_title: entry.pr_facts.title.clone(),
            pr_sha: entry.pr_facts.head_sha.to_string(),
            pr_base_branch: entry.pr_facts.base_branch.clone(),
            pr_author: entry.pr_facts.author.clone(),
            id: entry.id.clone(),
            state: entry.state,
            readiness: ReadinessView {
                requires_impacted_targets: readiness.requires_impacted_targets,
                does_base_branch_match: readiness.does_base_branch_match,
                has_impacted_targets: readiness.has_impacted_targets,
            },
            used_default_priority_name: entry.priority.defaulted_name().map(Cow::into_owned),
            test_run_id: view::test_run_id(entry).map(str::to_owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn submit(body: serde_json::Value) -> Result<Submission, String> {
        let req: SubmitRequest = serde_json::from_value(body).map_err(|e| e.to_string())?;
        req.submission().map_err(|e| e.message)
    }

    fn base() -> serde_json::Value {
        json!({"repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
               "targetBranch": "main", "pr": {"number": 7}})
    }

    fn with(field: &str, value: serde_json::Value) -> serde_json::Value {
        let mut b = base();
        b[field] = value;
        b
    }

    #[test]
    fn priority_is_a_number_or_a_name_in_any_case() {
        let s = submit(base()).unwrap();
        assert_eq!((s.priority.value, s.priority.defaulted), (100, true));
        assert_eq!(
            submit(with("priority", json!("URGENT")))
                .unwrap()
                .priority
                .value,
            0
        );
        assert_eq!(
            submit(with("priority", json!(42))).unwrap().priority.value,
            42
        );
        assert!(
            submit(with("priority", json!(256)))
                .unwrap_err()
                .starts_with("priority")
        );
        assert!(
            submit(with("priority", json!("soon")))
                .unwrap_err()
                .starts_with("priority")
        );
        assert!(submit(with("priority", json!(true))).is_err());
    }

    #[test]
    fn pr_numbers_range_over_u32() {
        assert_eq!(
            submit(with("pr", json!({"number": 4_294_967_295u64})))
                .unwrap()
                .pr,
            u32::MAX
        );
        assert!(
            submit(with("pr", json!({"number": 4_294_967_296u64})))
                .unwrap_err()
                .starts_with("pr.number")
        );
        assert!(
            submit(with("pr", json!({"number": -1})))
                .unwrap_err()
                .starts_with("pr.number")
        );
    }

    fn upload(body: serde_json::Value) -> Result<TargetsUpload, String> {
        let req: ImpactedTargetsRequest =
            serde_json::from_value(body).map_err(|e| e.to_string())?;
        req.upload().map_err(|e| e.message)
    }

    #[test]
    fn impacted_targets_are_a_list_or_all() {
        let mut b = with("pr", json!({"number": 7, "sha": "ABCDEF1234567"}));
        b["impactedTargets"] = json!(["//b", "//a", "//a"]);
        let u = upload(b.clone()).unwrap();
        assert_eq!(u.head_sha.unwrap().as_str(), "abcdef1234567");
        assert_eq!(
            u.targets,
            ImpactedTargets::List(["//a".to_owned(), "//b".to_owned()].into())
        );
        for all in ["ALL", "all", "IMPACTS_ALL"] {
            b["impactedTargets"] = json!(all);
            assert_eq!(upload(b.clone()).unwrap().targets, ImpactedTargets::All);
        }
        b["impactedTargets"] = json!("SOME");
        assert!(upload(b.clone()).is_err());
        b["impactedTargets"] = json!([""]);
        assert!(
            upload(b.clone())
                .unwrap_err()
                .starts_with("impactedTargets[0]")
        );
        // Lengths count characters, as the OpenAPI's `maxLength` does, not bytes.
        b["impactedTargets"] = json!(["é".repeat(MAX_TARGET_LEN)]);
        assert!(upload(b.clone()).is_ok());
        b["impactedTargets"] = json!(["é".repeat(MAX_TARGET_LEN + 1)]);
        assert!(
            upload(b.clone())
                .unwrap_err()
                .starts_with("impactedTargets[0]")
        );
        b["pr"] = json!({"number": 7, "sha": "not-a-sha"});
        b["impactedTargets"] = json!("ALL");
        assert!(upload(b.clone()).unwrap_err().starts_with("pr.sha"));
        b["pr"] = json!({"number": 7});
        assert_eq!(
            upload(b).unwrap().head_sha,
            None,
            "the current head is used"
        );
    }
}
