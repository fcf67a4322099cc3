//! What a CI job tells about itself: GitHub Actions' variables and event file, and the
//! checkout (`git`). Every lookup says where its answer came from.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An answer and where it came from (`--repo`, `GITHUB_REPOSITORY`, `the origin remote`...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<T> {
    pub value: T,
    pub from: String,
}

impl<T> Found<T> {
    pub fn new(value: T, from: impl Into<String>) -> Self {
        Self {
            value,
            from: from.into(),
        }
    }
}

/// The process's environment (a copy, so tests can hand one in) and the working directory.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: HashMap<String, String>,
    dir: PathBuf,
}

impl Environment {
    /// The process's variables (those that are Unicode) and working directory.
    pub fn from_process() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        Self {
            vars,
            dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    #[cfg(test)]
    pub fn with(vars: &[(&str, &str)], dir: &Path) -> Self {
        Self {
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            dir: dir.to_owned(),
        }
    }

    /// A variable that is set and not empty.
    pub fn var(&self, name: &str) -> Option<Found<String>> {
        self.vars
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(|v| Found::new(v.to_owned(), name))
    }

    /// Whether a variable is set but empty (or blank): it counts as unset.
    pub fn is_empty(&self, name: &str) -> bool {
        self.vars.get(name).is_some_and(|v| v.trim().is_empty())
    }

    /// The GitHub Actions event (`GITHUB_EVENT_PATH`), when there is one and it is JSON.
    pub fn event(&self) -> Option<Value> {
        let path = self.var("GITHUB_EVENT_PATH")?.value;
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// A field of the event, by JSON pointer (`/pull_request/number`).
    pub fn event_field(&self, pointer: &str) -> Option<Found<Value>> {
        let value = self.event()?.pointer(pointer)?.clone();
        (!value.is_null()).then(|| Found::new(value, format!("GITHUB_EVENT_PATH {pointer}")))
    }

    /// `git <args>` in the working directory, trimmed; `None` when git fails or prints nothing.
    pub fn git(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (out.status.success() && !text.is_empty()).then_some(text)
    }

    /// The top of the checkout, when the working directory is in one.
    pub fn checkout_root(&self) -> Option<PathBuf> {
        self.git(&["rev-parse", "--show-toplevel"])
            .map(PathBuf::from)
    }
}

/// A repository as the API names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub host: String,
    pub owner: String,
    pub name: String,
}

impl std::fmt::Display for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.owner, self.name)
    }
}

impl Repo {
    /// `host/owner/name`, or `owner/name` on `default_host`.
    pub fn parse(text: &str, default_host: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.trim().trim_end_matches(".git").split('/').collect();
        let (host, owner, name) = match parts.as_slice() {
            [owner, name] => (default_host, *owner, *name),
            [host, owner, name] => (*host, *owner, *name),
            _ => {
                return Err(format!(
                    "`{text}` is not a repository: write host/owner/name or owner/name"
                ));
            }
        };
        let ok = |s: &str, extra: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
        };
        if !ok(host, ".:-") || !ok(owner, "._-") || !ok(name, "._-") {
            return Err(format!(
                "`{text}` is not a repository: host, owner and name are letters, digits, `.`, `-` or `_`"
            ));
        }
        Ok(Self {
            host: host.to_ascii_lowercase(),
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The repository a remote URL points at: `https://host/owner/name(.git)`,
    /// `git@host:owner/name.git`, `ssh://git@host:port/owner/name.git`, or a local path laid
    /// out as the local gateway serves repositories (`.../<host>/<owner>/<name>.git`).
    pub fn from_remote(url: &str) -> Option<Self> {
        let url = url.trim().trim_end_matches('/');
        let path = if let Some((_, rest)) = url.split_once("://") {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
            let (authority, path) = rest.split_once('/')?;
            let host = authority.split(':').next()?;
            format!("{host}/{path}")
        } else if let Some((user_host, path)) = url.split_once(':').filter(|_| !is_path(url)) {
            let host = user_host.rsplit_once('@').map_or(user_host, |(_, h)| h);
            format!("{host}/{path}")
        } else {
            url.to_owned()
        };
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let [.., host, owner, name] = parts.as_slice() else {
            return None;
        };
        Self::parse(&format!("{host}/{owner}/{name}"), "").ok()
    }
}

fn is_path(url: &str) -> bool {
    url.starts_with('/') || url.starts_with('.') || Path::new(url).exists()
}

/// The host of `GITHUB_SERVER_URL` (GitHub Enterprise Server), else `github.com`.
pub fn default_host(env: &Environment) -> String {
    env.var("GITHUB_SERVER_URL")
        .and_then(|url| Repo::from_remote(&format!("{}/o/n", url.value)))
        .map_or_else(|| "github.com".to_owned(), |r| r.host)
}

/// The repository: `GITHUB_REPOSITORY`, else the `origin` remote of the checkout.
pub fn repository(env: &Environment) -> Option<Found<Repo>> {
    if let Some(var) = env.var("GITHUB_REPOSITORY")
        && let Ok(repo) = Repo::parse(&var.value, &default_host(env))
    {
        return Some(Found::new(repo, "GITHUB_REPOSITORY"));
    }
    let url = env.git(&["remote", "get-url", "origin"])?;
    let shown = without_credentials(&url);
    Repo::from_remote(&url).map(|r| Found::new(r, format!("the origin remote ({shown})")))
}

/// A URL without the user and password it may carry (`https://user:secret@host/...`).
pub fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}/{path}")
        }
        None => url.to_owned(),
    }
}

/// The pull request number in a ref: `refs/pull/<n>/merge`, `refs/pull/<n>/head`,
/// `refs/remotes/pull/<n>/merge` (as actions/checkout fetches it).
pub fn pr_in_ref(reference: &str) -> Option<u32> {
    let rest = reference
        .strip_prefix("refs/pull/")
        .or_else(|| reference.strip_prefix("refs/remotes/pull/"))?;
    let (number, kind) = rest.split_once('/')?;
    matches!(kind, "merge" | "head")
        .then(|| number.parse().ok())
        .flatten()
}

/// The pull request: `GITHUB_REF`, the event's pull request (or issue of a pull request
/// comment), else a pull request ref of the checkout pointing at `HEAD`.
pub fn pull_request(env: &Environment) -> Option<Found<u32>> {
    if let Some(var) = env.var("GITHUB_REF")
        && let Some(n) = pr_in_ref(&var.value)
    {
        return Some(Found::new(n, format!("GITHUB_REF ({})", var.value)));
    }
    if let Some(found) = event_number(env, "/pull_request/number") {
        return Some(found);
    }
    if env.event_field("/issue/pull_request").is_some()
        && let Some(found) = event_number(env, "/issue/number")
    {
        return Some(found);
    }
    let refs = env.git(&["for-each-ref", "--points-at", "HEAD", "--format=%(refname)"])?;
    refs.lines()
        .find_map(|r| pr_in_ref(r).map(|n| Found::new(n, format!("the checkout ({r} is HEAD)"))))
}

/// A job started by a comment on a pull request (`issue_comment`): its event names the pull
/// request but neither its head nor its base, and its checkout and `GITHUB_SHA` are the
/// default branch's, so neither is guessed from them.
pub fn on_pull_request_comment(env: &Environment) -> bool {
    env.event_field("/issue/pull_request").is_some() && env.event_field("/pull_request").is_none()
}

fn event_number(env: &Environment, pointer: &str) -> Option<Found<u32>> {
    let field = env.event_field(pointer)?;
    let n = u32::try_from(field.value.as_u64()?).ok()?;
    Some(Found::new(n, field.from))
}

/// The pull request's head commit: the event's `pull_request.head.sha`; in a job on a pull
/// request's merge ref, the second parent of the checkout's merge commit; `GITHUB_SHA`;
/// else the checkout's `HEAD`.
pub fn head_sha(env: &Environment) -> Option<Found<String>> {
    if let Some(sha) = event_string(env, "/pull_request/head/sha") {
        return Some(sha);
    }
    if on_pull_request_comment(env) {
        return None;
    }
    let on_merge_ref = env
        .var("GITHUB_REF")
        .is_some_and(|r| r.value.starts_with("refs/pull/") && r.value.ends_with("/merge"));
    if on_merge_ref && let Some(sha) = env.git(&["rev-parse", "--verify", "--quiet", "HEAD^2"]) {
        return Some(Found::new(sha, "the checkout (HEAD^2 of the merge ref)"));
    }
    if let Some(var) = env.var("GITHUB_SHA").filter(|_| !on_merge_ref) {
        return Some(var);
    }
    let sha = env.git(&["rev-parse", "--verify", "--quiet", "HEAD"])?;
    Some(Found::new(sha, "the checkout (HEAD)"))
}

/// The commit the tests ran on, for their results: the checkout's `HEAD` (in a pull request's
/// job, the merge commit with its target, whose tree CI tested: the same head tested on a
/// later target is another commit, so a failure caused by the target's change does not pass
/// for a flaky test's pass and fail on one commit), else `GITHUB_SHA` (the same commit, for
/// a job without a checkout).
pub fn tested_sha(env: &Environment) -> Option<Found<String>> {
    if let Some(sha) = env.git(&["rev-parse", "--verify", "--quiet", "HEAD"]) {
        return Some(Found::new(sha, "the checkout (HEAD)"));
    }
    env.var("GITHUB_SHA")
}

fn event_string(env: &Environment, pointer: &str) -> Option<Found<String>> {
    let field = env.event_field(pointer)?;
    let text = field.value.as_str()?.to_owned();
    Some(Found::new(text, field.from))
}

/// The queue's target branch: `GITHUB_BASE_REF`, the event's base branch, else the default
/// branch of the `origin` remote.
pub fn target_branch(env: &Environment) -> Option<Found<String>> {
    if let Some(var) = env.var("GITHUB_BASE_REF") {
        return Some(var);
    }
    if let Some(found) = event_string(env, "/pull_request/base/ref") {
        return Some(found);
    }
    if on_pull_request_comment(env) {
        return None;
    }
    let head = env.git(&[
        "symbolic-ref",
        "--quiet",
        "--short",
        "refs/remotes/origin/HEAD",
    ])?;
    let branch = head.strip_prefix("origin/")?.to_owned();
    Some(Found::new(branch, "origin's default branch"))
}

/// The branch the tests ran on: `GITHUB_HEAD_REF` (a pull request's branch; from a fork,
/// prefixed with the fork's owner, so that a fork's `main` is not taken for this
/// repository's), `GITHUB_REF_NAME`, else the checkout's current branch.
pub fn current_branch(env: &Environment) -> Option<Found<String>> {
    if let Some(var) = env.var("GITHUB_HEAD_REF") {
        return Some(match fork_owner(env) {
            Some(owner) => Found::new(
                format!("{owner}/{}", var.value),
                "GITHUB_HEAD_REF, with the fork's owner",
            ),
            None => var,
        });
    }
    if let Some(var) = env
        .var("GITHUB_REF_NAME")
        .filter(|v| pr_in_ref(&format!("refs/pull/{}", v.value)).is_none())
    {
        return Some(var);
    }
    let branch = env.git(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    Some(Found::new(branch, "the checkout's branch"))
}

/// The owner of the repository a pull request comes from, when it is a fork of this one.
fn fork_owner(env: &Environment) -> Option<String> {
    let head = event_string(env, "/pull_request/head/repo/full_name")?.value;
    let this = env.var("GITHUB_REPOSITORY")?.value;
    (!head.eq_ignore_ascii_case(&this))
        .then(|| head.split('/').next().unwrap_or_default().to_owned())
}

/// The URL of this GitHub Actions run.
pub fn job_url(env: &Environment) -> Option<Found<String>> {
    let server = env.var("GITHUB_SERVER_URL")?.value;
    let repo = env.var("GITHUB_REPOSITORY")?.value;
    let run = env.var("GITHUB_RUN_ID")?.value;
    let url = format!("{}/{repo}/actions/runs/{run}", server.trim_end_matches('/'));
    Some(Found::new(
        url,
        "GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_RUN_ID",
    ))
}

/// The upload id of these reports in this CI job's attempt: the same however often the upload
/// step is retried, different for each attempt of the job (a re-run runs the tests again: its
/// results are more evidence, a failure then a pass on one commit the flaky test's very sign),
/// for each job and variant of the run, and for each set of reports (`reports`, their digest):
/// the legs of a matrix share their job's name, and shards of one test suite, or two upload
/// steps of one job, are different uploads.
pub fn ci_upload_id(env: &Environment, variant: &str, reports: &str) -> Option<Found<String>> {
    let run = env.var("GITHUB_RUN_ID")?.value;
    let attempt = env
        .var("GITHUB_RUN_ATTEMPT")
        .map_or_else(|| "1".to_owned(), |a| a.value);
    let job = env.var("GITHUB_JOB").map_or_else(String::new, |j| j.value);
    let mut id = format!("gha-{run}-{attempt}-{job}");
    if !variant.is_empty() {
        id.push('-');
        id.push_str(variant);
    }
    id.push('-');
    id.push_str(reports);
    Some(Found::new(
        printable_id(&id),
        "GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_JOB, the variant and the reports",
    ))
}

/// An upload id the API accepts (1 to 128 visible ASCII characters): `text` itself when it
/// is one, else a prefix of it and a hash of the whole.
pub fn printable_id(text: &str) -> String {
    use sha2::Digest;
    let visible = |c: char| c.is_ascii_graphic();
    if text.len() <= 128 && text.chars().all(visible) {
        return text.to_owned();
    }
    let hash = hex::encode(&sha2::Sha256::digest(text.as_bytes())[..16]);
    let prefix: String = text
        .chars()
        .filter(|&c| visible(c))
        .take(128 - 33)
        .collect();
    format!("{prefix}-{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_of_every_shape_name_the_repository() {
        let rocket = Repo::parse("github.com/acme/rocket", "").unwrap();
        for url in [
            "https://github.com/acme/rocket.git",
            "https://token@github.com/acme/rocket",
            "git@github.com:acme/rocket.git",
            "ssh://git@github.com:22/acme/rocket.git",
            "/srv/repos/github.com/acme/rocket.git",
        ] {
            assert_eq!(Repo::from_remote(url).as_ref(), Some(&rocket), "{url}");
        }
        assert_eq!(Repo::from_remote("rocket"), None);
    }

    #[test]
    fn credentials_in_a_remote_are_never_shown() {
        assert_eq!(
            without_credentials("https://x-access-token:ghs_secret@github.com/acme/rocket.git"),
            "https://github.com/acme/rocket.git"
        );
        assert_eq!(
            without_credentials("git@github.com:acme/rocket.git"),
            "git@github.com:acme/rocket.git"
        );
    }

    #[test]
    fn repositories_are_checked() {
        assert_eq!(
            Repo::parse("acme/rocket", "github.com")
                .unwrap()
                .to_string(),
            "github.com/acme/rocket"
        );
        assert_eq!(
            Repo::parse("GHE.example.com/acme/rocket", "github.com")
                .unwrap()
                .host,
            "ghe.example.com"
        );
        for bad in [
            "rocket",
            "a/b/c/d",
            "acme/..",
            "acme/ro cket",
            "/acme/rocket",
        ] {
            assert!(Repo::parse(bad, "github.com").is_err(), "{bad}");
        }
    }

    /// A job started by a comment on pull request #7 (`issue_comment`): the event names the
    /// pull request, not its head or base; `GITHUB_SHA` is the default branch's tip.
    #[test]
    fn a_comment_job_guesses_neither_head_nor_base() {
        let dir = std::env::temp_dir().join(format!("mq-ci-comment-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let event = dir.join("event.json");
        let payload = r#"{"action": "created", "issue": {"number": 7,
            "pull_request": {"url": "https://api.github.com/repos/acme/rocket/pulls/7"}},
            "comment": {"body": "/merge"}}"#;
        std::fs::write(&event, payload).unwrap();
        let env = Environment::with(
            &[
                ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
                ("GITHUB_SHA", "d00dd00dd00dd00dd00dd00dd00dd00dd00dd00d"),
                ("GITHUB_REF", "refs/heads/main"),
            ],
            &dir,
        );
        assert_eq!(pull_request(&env).map(|f| f.value), Some(7));
        assert!(on_pull_request_comment(&env));
        assert_eq!(head_sha(&env).map(|f| f.value), None);
        assert_eq!(target_branch(&env).map(|f| f.value), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A pull request from a fork whose branch is `main`: the branch the tests ran on is
    /// not this repository's `main`.
    #[test]
    fn a_forks_branch_is_named_with_its_owner() {
        let dir = std::env::temp_dir().join(format!("mq-ci-fork-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let event = dir.join("event.json");
        let payload = r#"{"pull_request": {"number": 9,
            "head": {"ref": "main", "sha": "abc1234", "repo": {"full_name": "contributor/rocket"}},
            "base": {"ref": "main", "repo": {"full_name": "acme/rocket"}}}}"#;
        std::fs::write(&event, payload).unwrap();
        let vars = |repo: &'static str| {
            [
                ("GITHUB_EVENT_PATH", event.to_str().unwrap().to_owned()),
                ("GITHUB_HEAD_REF", "main".to_owned()),
                ("GITHUB_REPOSITORY", repo.to_owned()),
            ]
        };
        let branch = |repo| {
            let vars = vars(repo);
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            current_branch(&Environment::with(&vars, &dir)).map(|f| f.value)
        };
        assert_eq!(branch("acme/rocket").as_deref(), Some("contributor/main"));
        assert_eq!(
            branch("contributor/rocket").as_deref(),
            Some("main"),
            "not a fork"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pull_request_refs() {
        assert_eq!(pr_in_ref("refs/pull/42/merge"), Some(42));
        assert_eq!(pr_in_ref("refs/remotes/pull/7/head"), Some(7));
        assert_eq!(pr_in_ref("refs/heads/main"), None);
        assert_eq!(pr_in_ref("refs/pull/x/merge"), None);
    }

    #[test]
    fn a_pull_request_event_tells_everything() {
        let dir = tempdir();
        let event = dir.join("event.json");
        std::fs::write(
            &event,
            r#"{"pull_request": {"number": 9, "head": {"sha": "abc1234", "ref": "feature"},
                "base": {"ref": "release"}}}"#,
        )
        .unwrap();
        let env = Environment::with(&[("GITHUB_EVENT_PATH", event.to_str().unwrap())], &dir);
        assert_eq!(pull_request(&env).unwrap().value, 9);
        assert_eq!(head_sha(&env).unwrap().value, "abc1234");
        let target = target_branch(&env).unwrap();
        assert_eq!(
            (target.value.as_str(), target.from.as_str()),
            ("release", "GITHUB_EVENT_PATH /pull_request/base/ref")
        );
    }

    #[test]
    fn upload_ids_are_per_attempt_job_and_variant_and_always_valid() {
        let dir = tempdir();
        let env = Environment::with(
            &[
                ("GITHUB_RUN_ID", "77"),
                ("GITHUB_RUN_ATTEMPT", "2"),
                ("GITHUB_JOB", "test"),
            ],
            &dir,
        );
        assert_eq!(
            ci_upload_id(&env, "linux", "0a1b").unwrap().value,
            "gha-77-2-test-linux-0a1b"
        );
        let without_attempt =
            Environment::with(&[("GITHUB_RUN_ID", "77"), ("GITHUB_JOB", "test")], &dir);
        assert_eq!(
            ci_upload_id(&without_attempt, "", "0a1b").unwrap().value,
            "gha-77-1-test-0a1b"
        );
        let long = printable_id(&"x y".repeat(100));
        assert!(
            long.len() <= 128 && long.chars().all(|c| c.is_ascii_graphic()),
            "{long}"
        );
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mq-cli-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
