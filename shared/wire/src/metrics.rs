//! The query of `getMergeQueueMetrics` (`openapi/openapi.json`): `repo` (`owner/name`) with
//! `repoHost`, or neither for every queue of the caller's organisation.

use mq_core::DomainError;
use mq_core::ids::RepoRef;

/// Longest part of a bad value echoed back in an error message.
const ECHO_LIMIT: usize = 100;

/// Which queues the metrics cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsQuery {
    /// One repository's queues; `None`: every queue of the organisation.
    pub repo: Option<RepoRef>,
}

impl MetricsQuery {
    /// Reads `repo` and `repoHost` from the query's parameters, `(name, value)` in any order
    /// (a name given twice is refused); other parameters are ignored.
    pub fn parse<'a>(params: &[(&'a str, &'a str)]) -> Result<Self, DomainError> {
        let repo = single(params, "repo")?;
        let host = single(params, "repoHost")?;
        let repo = match (repo, host) {
            (None, None) => None,
            (Some(_), None) => {
                return Err(DomainError::invalid(
                    "repoHost",
                    "is required when repo is given (e.g. repoHost=github.com)",
                ));
            }
            (None, Some(_)) => {
                return Err(DomainError::invalid(
                    "repo",
                    "is required when repoHost is given (owner/name, e.g. repo=acme/rocket)",
                ));
            }
            (Some(repo), Some(host)) => Some(repo_ref(host, repo)?),
        };
        Ok(Self { repo })
    }
}

/// The one value of a parameter; a parameter given twice is refused.
fn single<'a>(params: &[(&'a str, &'a str)], name: &str) -> Result<Option<&'a str>, DomainError> {
    let mut values = params.iter().filter(|(n, _)| *n == name).map(|(_, v)| *v);
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(value), None) => Ok(Some(value)),
        (Some(_), Some(_)) => Err(DomainError::invalid(name, "must be given once")),
    }
}

fn repo_ref(host: &str, repo: &str) -> Result<RepoRef, DomainError> {
    let not_owner_name = || {
        DomainError::invalid(
            "repo",
            &format!(
                "must be owner/name (e.g. acme/rocket), got \"{}\"",
                echo(repo)
            ),
        )
    };
    let (owner, name) = repo.split_once('/').ok_or_else(not_owner_name)?;
    if owner.is_empty() || name.is_empty() || name.contains('/') {
        return Err(not_owner_name());
    }
    RepoRef::new(host, owner, name).map_err(|e| {
        if e.message.starts_with("repo.host") {
            DomainError::invalid(
                "repoHost",
                &format!("{}, got \"{}\"", mq_core::ids::HOST_RULE, echo(host)),
            )
        } else {
            DomainError::invalid(
                "repo",
                &format!(
                    "must be owner/name, each 1 to 255 characters of letters, digits, '.', '-' \
                     or '_', got \"{}\"",
                    echo(repo)
                ),
            )
        }
    })
}

fn echo(value: &str) -> String {
    value.chars().take(ECHO_LIMIT).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Result<MetricsQuery, DomainError> {
        MetricsQuery::parse(pairs)
    }

    fn refused(pairs: &[(&str, &str)]) -> String {
        query(pairs).unwrap_err().message
    }

    #[test]
    fn no_parameters_mean_every_queue() {
        assert_eq!(query(&[]).unwrap().repo, None);
        assert_eq!(query(&[("other", "x")]).unwrap().repo, None);
    }

    #[test]
    fn repo_with_host_names_one_repository() {
        let q = query(&[("repo", "Acme/Rocket"), ("repoHost", "github.com")]).unwrap();
        let repo = q.repo.unwrap();
        assert_eq!(repo.key(), "github.com/acme/rocket");
        assert_eq!(repo.full_name(), "Acme/Rocket");
    }

    #[test]
    fn repo_and_host_come_together() {
        assert!(refused(&[("repo", "acme/rocket")]).starts_with("repoHost is required"));
        assert!(refused(&[("repoHost", "github.com")]).starts_with("repo is required"));
    }

    #[test]
    fn repo_must_be_owner_slash_name() {
        for bad in [
            "rocket",
            "acme/",
            "/rocket",
            "acme/rocket/x",
            "",
            "acme/ro cket",
        ] {
            let message = refused(&[("repo", bad), ("repoHost", "github.com")]);
            assert!(
                message.starts_with("repo must be owner/name"),
                "{bad}: {message}"
            );
        }
        let message = refused(&[("repo", "acme/rocket"), ("repoHost", "git hub")]);
        assert!(
            message.starts_with("repoHost must be a DNS host name"),
            "{message}"
        );
    }

    #[test]
    fn a_parameter_given_twice_is_refused() {
        let message = refused(&[
            ("repo", "acme/a"),
            ("repo", "acme/b"),
            ("repoHost", "github.com"),
        ]);
        assert_eq!(message, "repo must be given once");
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "x".repeat(5000);
        let message = refused(&[("repo", &long), ("repoHost", "github.com")]);
        assert!(message.len() < 200, "{}", message.len());
    }
}
