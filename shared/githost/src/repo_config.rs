//! The repository's own configuration file, `.merge-queue.yaml`, read from the target branch.
//!
//! Only `required_statuses` is read here; other keys are left to whoever needs them.

use crate::error::{HostError, HostResult};
use mq_core::git::{RequiredStatuses, RequiredStatusesSource};
use mq_core::settings::{MAX_REQUIRED_STATUSES, MAX_STATUS_NAME_LEN};
use serde::Deserialize;

/// Where the file lives in the branch's tree.
pub const CONFIG_FILE: &str = ".merge-queue.yaml";

#[derive(Debug, Deserialize)]
struct ConfigFile {
    required_statuses: Option<Vec<String>>,
}

/// The `required_statuses` list of the file's text: `None` when the file does not set one or
/// sets an empty list. A file that is not YAML, or a list that is not strings, is an error.
pub fn required_statuses_in(text: &str) -> HostResult<Option<Vec<String>>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let file: ConfigFile = serde_norway::from_str(text)
        .map_err(|e| HostError::Invalid(format!("{CONFIG_FILE}: {e}")))?;
    let contexts: Vec<String> = file
        .required_statuses
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    within_limits(&contexts)?;
    Ok((!contexts.is_empty()).then_some(contexts))
}

/// The file's list is held to the limits of a queue's own list.
fn within_limits(contexts: &[String]) -> HostResult<()> {
    let too_long = contexts.iter().any(|c| c.len() > MAX_STATUS_NAME_LEN);
    if contexts.len() > MAX_REQUIRED_STATUSES || too_long {
        return Err(HostError::Invalid(format!(
            "{CONFIG_FILE}: required_statuses may hold at most {MAX_REQUIRED_STATUSES} names \
             of at most {MAX_STATUS_NAME_LEN} characters"
        )));
    }
    Ok(())
}

/// Picks the list the repository's sources give: the config file first, then the host's branch
/// protection; no source when neither gives a list.
pub fn resolve_required(config: Option<Vec<String>>, protection: Vec<String>) -> RequiredStatuses {
    match config {
        Some(contexts) => RequiredStatuses {
            contexts,
            source: Some(RequiredStatusesSource::ServiceConfig),
        },
        None if !protection.is_empty() => RequiredStatuses {
            contexts: dedup(protection),
            source: Some(RequiredStatusesSource::RepoProviderBranchProtection),
        },
        None => RequiredStatuses {
            contexts: Vec::new(),
            source: None,
        },
    }
}

fn dedup(mut contexts: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    contexts.retain(|c| seen.insert(c.clone()));
    contexts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_list_and_ignores_other_keys() {
        let text = "merge_method: squash\nrequired_statuses:\n  - build\n  - 'ci/test: unit'\n";
        assert_eq!(
            required_statuses_in(text).unwrap(),
            Some(vec!["build".to_owned(), "ci/test: unit".to_owned()])
        );
    }

    #[test]
    fn an_empty_file_or_list_says_nothing() {
        assert_eq!(required_statuses_in("").unwrap(), None);
        assert_eq!(required_statuses_in("required_statuses: []").unwrap(), None);
        assert_eq!(required_statuses_in("other: 1").unwrap(), None);
    }

    #[test]
    fn a_malformed_file_is_an_invalid_error_naming_the_file() {
        let err = required_statuses_in("required_statuses: build").unwrap_err();
        assert!(matches!(&err, HostError::Invalid(m) if m.starts_with(".merge-queue.yaml")));
        assert!(required_statuses_in("required_statuses: [a, [b]]").is_err());
    }

    /// The file's list is kept to a queue's own limits: every run stores it.
    #[test]
    fn a_list_past_a_queues_limits_is_invalid() {
        let many: String = (0..=MAX_REQUIRED_STATUSES)
            .map(|i| format!("  - check-{i}\n"))
            .collect();
        let long = format!(
            "required_statuses: [{}]",
            "x".repeat(MAX_STATUS_NAME_LEN + 1)
        );
        for text in [format!("required_statuses:\n{many}"), long] {
            let err = required_statuses_in(&text).unwrap_err();
            assert!(
                matches!(&err, HostError::Invalid(m) if m.contains("at most")),
                "{err}"
            );
        }
        let most: String = (0..MAX_REQUIRED_STATUSES)
            .map(|i| format!("  - check-{i}\n"))
            .collect();
        let read = required_statuses_in(&format!("required_statuses:\n{most}")).unwrap();
        assert_eq!(read.map(|l| l.len()), Some(MAX_REQUIRED_STATUSES));
    }

    #[test]
    fn the_config_file_wins_over_branch_protection() {
        let both = resolve_required(Some(vec!["a".into()]), vec!["b".into()]);
        assert_eq!(both.source, Some(RequiredStatusesSource::ServiceConfig));
        assert_eq!(both.contexts, vec!["a"]);
        let protection = resolve_required(None, vec!["b".into(), "b".into()]);
        assert_eq!(
            protection.source,
            Some(RequiredStatusesSource::RepoProviderBranchProtection)
        );
        assert_eq!(protection.contexts, vec!["b"]);
        assert_eq!(resolve_required(None, Vec::new()).source, None);
    }
}
