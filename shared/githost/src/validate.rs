//! Checks on what callers pass in, before any of it reaches git or a URL.

use crate::error::{HostError, HostResult};
use crate::port::TestBranchRequest;
use mq_core::ids::{Sha, check_branch};

/// A branch name git accepts (`git check-ref-format --branch` rules).
pub(crate) fn branch(field: &str, name: &str) -> HostResult<()> {
    check_branch(field, name).map_err(|e| HostError::Invalid(e.to_string()))
}

/// A full or abbreviated commit id: 4 to 64 hex digits.
pub(crate) fn sha(field: &str, sha: &Sha) -> HostResult<()> {
    let s = sha.as_str();
    if (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(HostError::Invalid(format!(
            "{field} must be a commit id (4 to 64 hex digits), got {s:?}"
        )))
    }
}

/// A test branch request: valid branch names, a test branch that is not the target, and
/// commit ids for the pull requests' heads.
pub(crate) fn test_branch_request(request: &TestBranchRequest) -> HostResult<()> {
    branch("branch", &request.branch)?;
    branch("target", &request.target)?;
    if request.branch == request.target {
        return Err(HostError::Invalid(format!(
            "the test branch cannot be the target branch {}",
            request.target
        )));
    }
    for pr in &request.prs {
        sha("head_sha", &pr.head_sha)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_ids_are_hex() {
        assert!(sha("base", &Sha::new("a1b2c3d")).is_ok());
        assert!(sha("base", &Sha::new("--upload-pack=x")).is_err());
        assert!(sha("base", &Sha::new("")).is_err());
    }

    #[test]
    fn branch_names_follow_git_rules() {
        assert!(branch("branch", "mq/main/run-1").is_ok());
        let err = branch("branch", "a..b").unwrap_err();
        assert!(matches!(err, HostError::Invalid(m) if m.starts_with("branch")));
    }
}
