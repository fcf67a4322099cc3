//! Real git repositories in temporary directories, for the local host's tests.

#![allow(dead_code)]

use mq_core::engine::BranchPr;
use mq_core::ids::{PrNumber, RepoRef, Sha};
use mq_githost::local::LocalGitHost;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// A bare repository served by a [`LocalGitHost`], and a working clone to make commits in.
pub struct Fixture {
    _dir: TempDir,
    pub root: PathBuf,
    pub bare: PathBuf,
    pub work: PathBuf,
    pub repo: RepoRef,
}

impl Fixture {
    /// `main` with one commit holding `a.txt` (lines 1 to 5) and `b.txt`.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("hosts");
        let repo = RepoRef::new("git.local", "acme", "rocket").unwrap();
        let bare = root.join("git.local/acme/rocket.git");
        std::fs::create_dir_all(&bare).unwrap();
        git(
            &bare,
            &["init", "--quiet", "--bare", "--initial-branch=main"],
        );
        let work = dir.path().join("work");
        git(
            dir.path(),
            &["clone", "--quiet", bare.to_str().unwrap(), "work"],
        );
        std::fs::write(work.join("a.txt"), "1\n2\n3\n4\n5\n").unwrap();
        std::fs::write(work.join("b.txt"), "b\n").unwrap();
        git(&work, &["add", "--all"]);
        git(&work, &["commit", "--quiet", "-m", "Initial"]);
        git(
            &work,
            &["push", "--quiet", "origin", "HEAD:refs/heads/main"],
        );
        git(&work, &["fetch", "--quiet", "origin"]);
        Self {
            _dir: dir,
            root,
            bare,
            work,
            repo,
        }
    }

    pub fn host(&self) -> LocalGitHost {
        LocalGitHost::new(&self.root)
    }

    /// Commits `files` on top of `from` (a revision of the working clone) as `Ada Lovelace`.
    pub fn commit(&self, from: &str, files: &[(&str, &str)], message: &str) -> Sha {
        git(&self.work, &["checkout", "--quiet", "--detach", from]);
        for (path, text) in files {
            let path = self.work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(&self.work, &["add", "--all"]);
        git(
            &self.work,
            &["commit", "--quiet", "--allow-empty", "-m", message],
        );
        Sha::new(git(&self.work, &["rev-parse", "HEAD"]))
    }

    /// Pushes a revision of the working clone to a ref of the bare repository (forced).
    pub fn push(&self, rev: &str, to: &str) {
        git(
            &self.work,
            &[
                "push",
                "--quiet",
                "--force",
                "origin",
                &format!("{rev}:{to}"),
            ],
        );
    }

    /// Opens pull request `n` at `head`.
    pub fn open_pr(&self, n: PrNumber, head: &Sha) -> BranchPr {
        self.push(head.as_str(), &format!("refs/pull/{n}/head"));
        BranchPr {
            pr: n,
            head_sha: head.clone(),
            title: format!("PR {n}"),
            stamp: None,
        }
    }

    /// A pull request of one commit on top of `main` writing `files`.
    pub fn pr_writing(&self, n: PrNumber, files: &[(&str, &str)]) -> BranchPr {
        let head = self.commit("origin/main", files, &format!("Change for #{n}"));
        self.open_pr(n, &head)
    }

    pub fn fetch(&self) {
        git(
            &self.work,
            &[
                "fetch",
                "--quiet",
                "origin",
                "+refs/heads/*:refs/remotes/origin/*",
            ],
        );
    }

    pub fn config(&self, key: &str, value: &str) {
        git(&self.bare, &["config", key, value]);
    }

    /// Runs git in the bare repository.
    pub fn bare_git(&self, args: &[&str]) -> String {
        git(&self.bare, args)
    }

    pub fn head(&self, branch: &str) -> Sha {
        Sha::new(self.bare_git(&["rev-parse", &format!("refs/heads/{branch}")]))
    }

    pub fn tree(&self, rev: &str) -> String {
        self.bare_git(&["rev-parse", &format!("{rev}^{{tree}}")])
    }

    pub fn file(&self, rev: &str, path: &str) -> String {
        self.bare_git(&["show", &format!("{rev}:{path}")])
    }
}

/// Runs git in `dir` as a fixed identity; its trimmed output. Panics when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "commit.gpgSign=false"])
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
