//! What a command works on, from flags, then the environment, then CI conventions. Each
//! value is looked up when a command first needs it; with `-v` it is shown with its source.

use crate::ci::{self, Environment, Found, Repo};
use crate::cli::GlobalArgs;
use crate::client::Api;
use crate::error::{Error, Result};
use crate::output::{self, note};
use clap::ArgMatches;
use clap::parser::ValueSource;
use serde_json::{Value, json};
use std::cell::OnceCell;

/// The command's configuration and the API client, built on first use.
pub struct Context {
    pub args: GlobalArgs,
    pub env: Environment,
    /// For each flag given, whether it came from the command line or its variable.
    sources: Vec<(&'static str, String)>,
    repo: OnceCell<Repo>,
    target: OnceCell<String>,
    pr: OnceCell<u32>,
    api: OnceCell<Api>,
    org: OnceCell<String>,
}

/// The flags with a variable, as (argument id, flag, variable).
const FLAGS: [(&str, &str, &str); 6] = [
    ("api_url", "--api-url", "MQ_API_URL"),
    ("repo", "--repo", "MQ_REPO"),
    ("target", "--target", "MQ_TARGET_BRANCH"),
    ("pr", "--pr", "MQ_PR"),
    ("sha", "--sha", "MQ_SHA"),
    ("org", "--org", "MQ_ORG"),
];

impl Context {
    pub fn new(args: GlobalArgs, matches: &ArgMatches, env: Environment) -> Self {
        let sources = FLAGS
            .iter()
            .filter_map(|(id, flag, var)| {
                let source = deepest_source(matches, id)?;
                let name = if source == ValueSource::EnvVariable {
                    *var
                } else {
                    *flag
                };
                Some((*id, name.to_owned()))
            })
            .collect();
        Self {
            args,
            env,
            sources,
            repo: OnceCell::new(),
            target: OnceCell::new(),
            pr: OnceCell::new(),
            api: OnceCell::new(),
            org: OnceCell::new(),
        }
    }

    /// Where a flag's value came from: the flag or its variable.
    pub fn source(&self, id: &str) -> String {
        self.sources
            .iter()
            .find(|(i, _)| *i == id)
            .map_or_else(|| id.to_owned(), |(_, s)| s.clone())
    }

    /// Shows a value and where it came from, with `-v`.
    pub fn show<T: std::fmt::Display>(&self, what: &str, found: &Found<T>) {
        if self.args.verbose > 0 {
            note(format!("{what}: {} (from {})", found.value, found.from));
        }
    }

    /// The API client: its URL from --api-url or MQ_API_URL, its token from --token-file or
    /// MQ_API_TOKEN.
    pub fn api(&self) -> Result<&Api> {
        if let Some(api) = self.api.get() {
            return Ok(api);
        }
        let url = self.args.api_url.clone().ok_or_else(|| {
            Error::input("the API's URL is unknown: set MQ_API_URL or pass --api-url URL")
        })?;
        let (token, token_from) = self.token()?;
        let api = Api::new(&url, token, self.args.verbose)?;
        if self.args.verbose > 0 {
            let found = Found::new(api.base().to_string(), self.source("api_url"));
            self.show("API", &found);
            note(format!("token: from {token_from} (not shown)"));
        }
        Ok(self.api.get_or_init(|| api))
    }

    fn token(&self) -> Result<(String, String)> {
        if let Some(path) = &self.args.token_file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::input(format!(
                    "cannot read the token file {}: {e}",
                    path.display()
                ))
            })?;
            let token = text.trim().to_owned();
            if token.is_empty() {
                return Err(Error::input(format!(
                    "the token file {} is empty",
                    path.display()
                )));
            }
            return Ok((token, format!("--token-file {}", path.display())));
        }
        let var = self.env.var("MQ_API_TOKEN").ok_or_else(|| {
            Error::input("no API token: set MQ_API_TOKEN or pass --token-file FILE")
        })?;
        Ok((var.value, var.from))
    }

    /// The repository.
    pub fn repo(&self) -> Result<&Repo> {
        if let Some(repo) = self.repo.get() {
            return Ok(repo);
        }
        let found = match &self.args.repo {
            Some(text) => {
                let repo = Repo::parse(text, &ci::default_host(&self.env)).map_err(Error::input)?;
                Found::new(repo, self.source("repo"))
            }
            None => ci::repository(&self.env).ok_or_else(|| {
                Error::input(
                    "the repository is unknown: pass --repo OWNER/NAME (or set MQ_REPO), or run \
                     in a checkout with an `origin` remote or with GITHUB_REPOSITORY set",
                )
            })?,
        };
        self.show("repository", &found);
        Ok(self.repo.get_or_init(|| found.value))
    }

    /// The queue's target branch; `main` when nothing tells, except in a job started by a
    /// pull request's comment, whose base the CI environment does not say.
    pub fn target(&self) -> Result<String> {
        if let Some(target) = self.target.get() {
            return Ok(target.clone());
        }
        let found = match &self.args.target {
            Some(branch) => Found::new(branch.clone(), self.source("target")),
            None => match ci::target_branch(&self.env) {
                Some(found) => found,
                None if ci::on_pull_request_comment(&self.env) => {
                    return Err(Error::input(
                        "the pull request's base branch is unknown in a job started by a \
                         comment: pass --target BRANCH (or set MQ_TARGET_BRANCH)",
                    ));
                }
                None => Found::new("main".to_owned(), "the default"),
            },
        };
        check_branch("target branch", &found.value)?;
        self.show("target branch", &found);
        Ok(self.target.get_or_init(|| found.value).clone())
    }

    /// The pull request's number.
    pub fn pr(&self) -> Result<u32> {
        if let Some(pr) = self.pr.get() {
            return Ok(*pr);
        }
        let found = match self.args.pr {
            Some(n) => Found::new(n, self.source("pr")),
            None => ci::pull_request(&self.env).ok_or_else(|| {
                Error::input(
                    "the pull request is unknown: pass --pr NUMBER (or set MQ_PR), or run in a \
                     pull request's CI job (GITHUB_REF refs/pull/N/merge or GITHUB_EVENT_PATH)",
                )
            })?,
        };
        self.show("pull request", &found);
        Ok(*self.pr.get_or_init(|| found.value))
    }

    /// The pull request's head commit, when it can be known.
    pub fn sha(&self) -> Result<Option<String>> {
        self.commit("head commit", ci::head_sha(&self.env))
    }

    /// The commit the tests ran on, when it can be known ([`ci::tested_sha`]).
    pub fn tested_sha(&self) -> Result<Option<String>> {
        self.commit("tested commit", ci::tested_sha(&self.env))
    }

    /// `--sha`, else `found`: checked to be a commit sha, and shown as `what`.
    fn commit(&self, what: &str, found: Option<Found<String>>) -> Result<Option<String>> {
        let found = match &self.args.sha {
            Some(sha) => Found::new(sha.clone(), self.source("sha")),
            None => match found {
                Some(found) => found,
                None => return Ok(None),
            },
        };
        let value = found.value.trim();
        let hex = value.chars().all(|c| c.is_ascii_hexdigit());
        if !(7..=64).contains(&value.len()) || !hex {
            return Err(Error::input(format!(
                "`{value}` (from {}) is not a commit sha: 7 to 64 hexadecimal digits",
                found.from
            )));
        }
        self.show(what, &found);
        Ok(Some(value.to_owned()))
    }

    /// The organisation of the test-health endpoints: --org, else the token's, as the API
    /// says (`listQueues`, asked once). A repository's owner is not its organisation's id.
    pub fn org(&self) -> Result<String> {
        if let Some(org) = self.org.get() {
            return Ok(org.clone());
        }
        let found = match &self.args.org {
            Some(org) => Found::new(org.clone(), self.source("org")),
            None => {
                let list = self.api()?.read("listQueues", &self.repo_body()?)?;
                let org = list["organisation"].as_str().unwrap_or_default().to_owned();
                Found::new(org, "the API token's organisation")
            }
        };
        self.show("organisation", &found);
        Ok(self.org.get_or_init(|| found.value).clone())
    }

    /// `{repo: {host, owner, name}}` of the repository.
    pub fn repo_body(&self) -> Result<Value> {
        let repo = self.repo()?;
        Ok(json!({"repo": {"host": repo.host, "owner": repo.owner, "name": repo.name}}))
    }

    /// `{repo, targetBranch}`: the queue.
    pub fn queue_body(&self) -> Result<Value> {
        let mut body = self.repo_body()?;
        body["targetBranch"] = json!(self.target()?);
        Ok(body)
    }

    /// `{repo, targetBranch, pr: {number}}`: the pull request in its queue.
    pub fn pr_body(&self) -> Result<Value> {
        let mut body = self.queue_body()?;
        body["pr"] = json!({"number": self.pr()?});
        Ok(body)
    }

    /// `{repo, org_url_slug}`: the repository's test health.
    pub fn health_body(&self) -> Result<Value> {
        let mut body = self.repo_body()?;
        body["org_url_slug"] = json!(self.org()?);
        Ok(body)
    }

    /// A line about the queue: `<repo> <target>: <what>`.
    pub fn queue_line(&self, what: impl std::fmt::Display) -> Result<String> {
        Ok(format!("{} {}: {what}", self.repo()?, self.target()?))
    }

    /// Prints the API's answer with `--json`, else `summary`.
    pub fn print(&self, answer: &Value, summary: impl std::fmt::Display) {
        if self.args.json {
            output::json(answer);
        } else {
            output::line(summary);
        }
    }
}

/// The source of an argument in the matches of the command or subcommand that has it.
fn deepest_source(matches: &ArgMatches, id: &str) -> Option<ValueSource> {
    if let Some((_, sub)) = matches.subcommand()
        && let Some(source) = deepest_source(sub, id)
    {
        return Some(source);
    }
    let known = matches.try_get_raw(id).ok().flatten().is_some();
    known.then(|| matches.value_source(id)).flatten()
}

/// Refuses a branch name git would refuse, before the API does: the service's own rule
/// (`mq_core::ids::check_branch`).
pub fn check_branch(what: &str, name: &str) -> Result<()> {
    mq_core::ids::check_branch(what, name).map_err(|_| {
        Error::input(format!(
            "`{name}` is not a valid {what} (see git check-ref-format)"
        ))
    })
}
