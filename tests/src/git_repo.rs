//! Repositories for the live tests, made and read with the real `git`: a bare repository as
//! the local Git host serves it (`<root>/github.com/acme/<name>.git`, pull request `n` at
//! `refs/pull/<n>/head`), with a `main` branch, and a work tree beside it to make commits in.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The owner of every test repository (the organisation `acme` of the tests' tokens).
pub const OWNER: &str = "acme";
/// The host name of every test repository.
pub const HOST: &str = "github.com";
/// The author of the pull requests' commits.
pub const AUTHOR: &str = "Octo Cat";
/// The file that makes the CI command `test ! -e FAIL` fail.
pub const FAIL_FILE: &str = "FAIL";

/// A pull request to make: its own file `change-<n>.txt`, on top of `base`.
#[derive(Debug, Clone)]
pub struct PrSpec {
    pub number: u32,
    /// Also adds the file `FAIL`.
    pub fail: bool,
    /// The branch the pull request targets (and is made from); `main` when `None`.
    pub base: Option<String>,
    /// Files it also writes: name and content.
    pub files: Vec<(String, String)>,
}

impl PrSpec {
    pub fn new(number: u32) -> Self {
        Self {
            number,
            fail: false,
            base: None,
            files: Vec::new(),
        }
    }

    /// Also writes `file` with `content`.
    pub fn writing(mut self, file: &str, content: &str) -> Self {
        self.files.push((file.to_owned(), content.to_owned()));
        self
    }

    pub fn failing(mut self) -> Self {
        self.fail = true;
        self
    }

    pub fn based_on(mut self, branch: &str) -> Self {
        self.base = Some(branch.to_owned());
        self
    }
}

/// A bare repository served by the local Git host, and a work tree to make commits in.
#[derive(Debug, Clone)]
pub struct GitRepo {
    /// The repository's owner on `github.com`.
    pub owner: String,
    pub name: String,
    pub bare: PathBuf,
    work: PathBuf,
}

impl GitRepo {
    /// Creates `<root>/github.com/acme/<name>.git` with a `main` branch holding `README.md`;
    /// every move of a branch is kept in its reflog. The work tree goes to
    /// `work_root/acme/<name>`.
    pub fn create(root: &Path, work_root: &Path, name: &str) -> Self {
        Self::create_of(root, work_root, OWNER, name)
    }

    /// [`GitRepo::create`] for a repository of `owner`.
    pub fn create_of(root: &Path, work_root: &Path, owner: &str, name: &str) -> Self {
        let bare = root.join(HOST).join(owner).join(format!("{name}.git"));
        let work = work_root.join(owner).join(name);
        std::fs::create_dir_all(&bare).expect("repository directory");
        std::fs::create_dir_all(&work).expect("work tree directory");
        let repo = Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
            bare,
            work,
        };
        repo.git(&["init", "--quiet", "--bare", "--initial-branch=main"]);
        repo.git(&["config", "core.logAllRefUpdates", "always"]);
        repo.work(&["init", "--quiet", "--initial-branch=main"]);
        std::fs::write(repo.work.join("README.md"), format!("# {name}\n")).expect("README");
        repo.work(&["add", "README.md"]);
        repo.work(&["commit", "--quiet", "-m", "Initial commit"]);
        repo.push("HEAD", "refs/heads/main");
        repo
    }

    /// Gives the account `login` the role `role` (`read`, `triage`, `write`, `maintain`,
    /// `admin`) on the repository; an account without one may write.
    pub fn set_role(&self, login: &str, role: &str) {
        self.git(&["config", &format!("collaborator.{login}.permission"), role]);
    }

    /// Pull request `n` is now `state` (`open`, `closed`, `merged`) on the host.
    pub fn set_pr_state(&self, n: u32, state: &str) {
        self.git(&["config", &format!("pr.{n}.state"), state]);
    }

    /// What the branch's review rules now say of pull request `n` (`approved`,
    /// `review_required`, `changes_requested`).
    pub fn set_pr_review(&self, n: u32, review: &str) {
        self.git(&["config", &format!("pr.{n}.review"), review]);
    }

    /// Branch protection of `branch`: these statuses are required.
    pub fn require_statuses(&self, branch: &str, contexts: &[&str]) {
        let key = format!("branch.{branch}.requiredStatuses");
        self.git(&["config", &key, &contexts.join(",")]);
    }

    /// Makes pull requests `1..=count`, each adding its own file on top of `main`; those in
    /// `failing` also add `FAIL`. Returns their head shas, by number from 1.
    pub fn add_prs(&self, count: u32, failing: &[u32]) -> Vec<String> {
        (1..=count)
            .map(|n| {
                let spec = PrSpec::new(n);
                self.add_pr(if failing.contains(&n) {
                    spec.failing()
                } else {
                    spec
                })
            })
            .collect()
    }

    /// Makes a pull request from the current head of its base branch; returns its head sha.
    pub fn add_pr(&self, spec: PrSpec) -> String {
        let base = spec.base.clone().unwrap_or_else(|| "main".to_owned());
        self.checkout_branch_head(&base);
        let n = spec.number;
        std::fs::write(
            self.work.join(format!("change-{n}.txt")),
            format!("change {n}\n"),
        )
        .expect("change file");
        if spec.fail {
            std::fs::write(self.work.join(FAIL_FILE), "").expect("FAIL file");
        }
        for (file, content) in &spec.files {
            std::fs::write(self.work.join(file), content).expect("pull request file");
        }
        self.work(&["add", "--all"]);
        self.work(&["commit", "--quiet", "-m", &format!("Change {n}")]);
        self.push("HEAD", &format!("refs/pull/{n}/head"));
        if let Some(base) = &spec.base {
            self.git(&["config", &format!("pr.{n}.base"), base]);
        }
        self.pr_head(n)
    }

    /// Creates `branch` at the current head of `main`.
    pub fn add_branch(&self, branch: &str) {
        let main = self.head("main").expect("main exists");
        self.git(&["update-ref", &format!("refs/heads/{branch}"), &main]);
    }

    /// A commit adding `file` pushed to `branch` from outside the queue; returns its sha.
    pub fn push_commit(&self, branch: &str, file: &str) -> String {
        self.checkout_branch_head(branch);
        std::fs::write(self.work.join(file), "pushed\n").expect("pushed file");
        self.work(&["add", "--all"]);
        self.work(&["commit", "--quiet", "-m", &format!("Add {file}")]);
        self.push("HEAD", &format!("refs/heads/{branch}"));
        self.head(branch).expect("branch exists")
    }

    /// A commit writing `files` (name, content) pushed to `branch`; returns its sha.
    pub fn commit_files(&self, branch: &str, files: &[(&str, &str)], message: &str) -> String {
        self.checkout_branch_head(branch);
        for (file, content) in files {
            std::fs::write(self.work.join(file), content).expect("file");
        }
        self.work(&["add", "--all"]);
        self.work(&["commit", "--quiet", "-m", message]);
        self.push("HEAD", &format!("refs/heads/{branch}"));
        self.head(branch).expect("branch exists")
    }

    /// From now on, every value `branch` takes is appended to `log`, one commit per line, by a
    /// `reference-transaction` hook of the bare repository: whoever moves the branch, git
    /// itself records it.
    pub fn record_moves(&self, branch: &str, log: &Path) {
        let hooks = self.bare.join("hooks");
        std::fs::create_dir_all(&hooks).expect("hooks directory");
        let script = format!(
            "#!/bin/sh\n\
             [ \"$1\" = committed ] || exit 0\n\
             while read -r old new name; do\n\
             if [ \"$name\" = refs/heads/{branch} ]; then echo \"$new\" >> '{}'; fi\n\
             done\n\
             exit 0\n",
            log.display()
        );
        let hook = hooks.join("reference-transaction");
        std::fs::write(&hook, script).expect("hook");
        let mut mode = std::fs::metadata(&hook).expect("hook").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
        std::fs::set_permissions(&hook, mode).expect("hook mode");
    }

    /// The content of `file` in a commit, if it has one.
    pub fn file_at(&self, rev: &str, file: &str) -> Option<String> {
        self.try_git(&["show", &format!("{rev}:{file}")])
    }

    /// A commit adding `file` pushed to pull request `n` (new commits on its head); returns
    /// the new head.
    pub fn push_to_pr(&self, n: u32, file: &str) -> String {
        let bare = self.bare.to_string_lossy().into_owned();
        self.work(&["fetch", "--quiet", &bare, &format!("refs/pull/{n}/head")]);
        self.work(&["checkout", "--quiet", "--force", "--detach", "FETCH_HEAD"]);
        std::fs::write(self.work.join(file), "pushed\n").expect("pushed file");
        self.work(&["add", "--all"]);
        self.work(&["commit", "--quiet", "-m", &format!("Add {file}")]);
        self.push("HEAD", &format!("refs/pull/{n}/head"));
        self.pr_head(n)
    }

    /// The commit `branch` points at.
    pub fn head(&self, branch: &str) -> Option<String> {
        self.try_git(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
    }

    /// The head commit of pull request `n`.
    pub fn pr_head(&self, n: u32) -> String {
        self.git(&["rev-parse", &format!("refs/pull/{n}/head")])
    }

    /// The tree of a commit.
    pub fn tree(&self, rev: &str) -> String {
        self.git(&["rev-parse", &format!("{rev}^{{tree}}")])
    }

    /// The names of the files at the top of a commit's tree, sorted.
    pub fn files(&self, rev: &str) -> Vec<String> {
        let mut names = lines(&self.git(&["ls-tree", "--name-only", rev]));
        names.sort();
        names
    }

    /// The commits of `branch` after its first commit, oldest first, following first
    /// parents: what the branch's history shows.
    pub fn history(&self, branch: &str) -> Vec<String> {
        let mut commits = lines(&self.git(&["rev-list", "--first-parent", branch]));
        commits.pop();
        commits.reverse();
        commits
    }

    /// The subjects of [`GitRepo::history`].
    pub fn history_subjects(&self, branch: &str) -> Vec<String> {
        self.history(branch)
            .iter()
            .map(|c| self.git(&["log", "-1", "--format=%s", c]))
            .collect()
    }

    /// Every commit `branch` was moved to after it was created, oldest first (its reflog).
    pub fn moves(&self, branch: &str) -> Vec<String> {
        let log = self.git(&[
            "reflog",
            "show",
            "--format=%H",
            &format!("refs/heads/{branch}"),
        ]);
        let mut moves = lines(&log);
        moves.pop();
        moves.reverse();
        moves
    }

    /// Commits on which `context` was last reported with `state` (as recorded by the host).
    pub fn commits_with_status(&self, context: &str, state: &str) -> Vec<String> {
        let prefix = "refs/merge-queue/statuses/";
        let suffix = format!("/{}", hex(context));
        let refs = self.git(&["for-each-ref", "--format=%(refname)", prefix]);
        lines(&refs)
            .into_iter()
            .filter(|r| r.ends_with(&suffix))
            .filter(|r| {
                let report: Value =
                    serde_json::from_str(&self.git(&["cat-file", "blob", r])).unwrap_or_default();
                report["state"] == state
            })
            .map(|r| r[prefix.len()..r.len() - suffix.len()].to_owned())
            .collect()
    }

    /// The trees of the commits on which `context` last reported success.
    pub fn passed_trees(&self, context: &str) -> BTreeSet<String> {
        self.commits_with_status(context, "success")
            .iter()
            .map(|c| self.tree(c))
            .collect()
    }

    /// The test branches that exist now (`mq-test/...`).
    pub fn test_branches(&self) -> Vec<String> {
        let refs = self.git(&[
            "for-each-ref",
            "--format=%(refname:strip=2)",
            "refs/heads/mq-test/",
        ]);
        lines(&refs)
    }

    /// Runs git in the bare repository and returns its output, trimmed; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        run_git(&self.bare, args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_git(&self, args: &[&str]) -> Option<String> {
        run_git(&self.bare, args).ok().filter(|s| !s.is_empty())
    }

    fn work(&self, args: &[&str]) -> String {
        run_git(&self.work, args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn push(&self, from: &str, to: &str) {
        let bare = self.bare.to_string_lossy().into_owned();
        self.work(&["push", "--quiet", "--force", &bare, &format!("{from}:{to}")]);
    }

    /// Detaches the work tree at the bare repository's current head of `branch`.
    fn checkout_branch_head(&self, branch: &str) {
        let bare = self.bare.to_string_lossy().into_owned();
        self.work(&["fetch", "--quiet", &bare, &format!("refs/heads/{branch}")]);
        self.work(&["checkout", "--quiet", "--force", "--detach", "FETCH_HEAD"]);
        self.work(&["clean", "--quiet", "-d", "--force"]);
    }
}

fn run_git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "commit.gpgSign=false"])
        .args(args)
        .env("GIT_AUTHOR_NAME", AUTHOR)
        .env("GIT_AUTHOR_EMAIL", "octocat@example.com")
        .env("GIT_COMMITTER_NAME", AUTHOR)
        .env("GIT_COMMITTER_EMAIL", "octocat@example.com")
        .output()
        .map_err(|e| format!("cannot run git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?} in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}
