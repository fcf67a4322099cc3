//! Real git on a bare repository: each call runs the `git` binary (git 2.38 or newer, for
//! `merge-tree --write-tree`). Ref updates carry the expected old value, so concurrent writers
//! never overwrite each other unnoticed.

use crate::error::{HostError, HostResult};
use crate::tested_chain::CommitInfo;
use mq_core::ids::Sha;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Who a commit is by: a name, an e-mail and optionally a date (git's formats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

/// A commit's author and message, to carry over to a rewritten commit.
#[derive(Debug, Clone)]
pub(crate) struct Authorship {
    pub name: String,
    pub email: String,
    pub date: String,
    pub message: String,
}

/// What a conditional ref update did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefUpdate {
    Done,
    /// The ref was not at the expected value (or is locked by another writer).
    Refused(String),
}

/// What a process printed and how it ended.
struct Output {
    success: bool,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

/// A bare repository and the identity its new commits are committed by.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    dir: PathBuf,
    committer: Identity,
}

impl Git {
    pub fn new(dir: PathBuf, committer: Identity) -> Self {
        Self { dir, committer }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    async fn output(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
        env: &[(&str, &str)],
    ) -> HostResult<Output> {
        let mut command = Command::new("git");
        command
            .arg("--git-dir")
            .arg(&self.dir)
            .args(["-c", "commit.gpgSign=false"])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .env("GIT_COMMITTER_NAME", &self.committer.name)
            .env("GIT_COMMITTER_EMAIL", &self.committer.email)
            .env("GIT_AUTHOR_NAME", &self.committer.name)
            .env("GIT_AUTHOR_EMAIL", &self.committer.email)
            .envs(env.iter().copied())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| HostError::Other(format!("cannot run git: {e}")))?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input)
                .await
                .map_err(|e| HostError::Other(format!("cannot write to git: {e}")))?;
        }
        let out = child
            .wait_with_output()
            .await
            .map_err(|e| HostError::Other(format!("git did not finish: {e}")))?;
        Ok(Output {
            success: out.status.success(),
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }

    /// Runs a command that must succeed; its output, trimmed.
    async fn run(&self, args: &[&str]) -> HostResult<String> {
        self.run_with(args, None, &[]).await
    }

    async fn run_with(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
        env: &[(&str, &str)],
    ) -> HostResult<String> {
        let out = self.output(args, stdin, env).await?;
        if out.success {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(failed(args, &out))
        }
    }

    /// The commit a revision names, `None` when it names none.
    pub async fn resolve(&self, rev: &str) -> HostResult<Option<Sha>> {
        let spec = format!("{rev}^{{commit}}");
        let out = self
            .output(&["rev-parse", "--verify", "--quiet", &spec], None, &[])
            .await?;
        Ok(out
            .success
            .then(|| Sha::new(String::from_utf8_lossy(&out.stdout).trim())))
    }

    /// The branch `HEAD` names (the repository's default branch).
    pub async fn head_branch(&self) -> HostResult<String> {
        self.run(&["symbolic-ref", "--short", "HEAD"]).await
    }

    /// Every value of a config key (none when unset).
    pub async fn config_all(&self, key: &str) -> HostResult<Vec<String>> {
        let out = self
            .output(&["config", "--null", "--get-all", key], None, &[])
            .await?;
        match out.code {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
                .split('\0')
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .collect()),
            Some(1) => Ok(Vec::new()),
            _ => Err(failed(&["config", key], &out)),
        }
    }

    /// The last value of a config key.
    pub async fn config(&self, key: &str) -> HostResult<Option<String>> {
        Ok(self.config_all(key).await?.pop())
    }

    /// Sets a config key, waiting out another writer's lock on the config file.
    pub async fn set_config(&self, key: &str, value: &str) -> HostResult<()> {
        let args = ["config", key, value];
        for _ in 0..50 {
            let out = self.output(&args, None, &[]).await?;
            if out.success {
                return Ok(());
            }
            if !out.stderr.contains("could not lock") {
                return Err(failed(&args, &out));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(HostError::Transient {
            message: format!("the config of {} stayed locked", self.dir.display()),
            retry_after: Some(Duration::from_secs(1)),
        })
    }

    /// A real three-way merge of two commits, written as a tree: `None` when it conflicts.
    /// With `merge_base`, the merge applies the changes from `merge_base` to `theirs` (a
    /// cherry-pick when `merge_base` is the parent of `theirs`).
    pub async fn merge_tree(
        &self,
        ours: &Sha,
        theirs: &Sha,
        merge_base: Option<&Sha>,
    ) -> HostResult<Option<String>> {
        let base_arg = merge_base.map(|b| format!("--merge-base={b}"));
        let mut args = vec!["merge-tree", "--write-tree", "--no-messages"];
        args.extend(base_arg.as_deref());
        args.extend([ours.as_str(), theirs.as_str()]);
        let out = self.output(&args, None, &[]).await?;
        let first_line = || {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        match out.code {
            Some(0) => Ok(Some(first_line())),
            Some(1) => Ok(None),
            // Unrelated histories cannot be merged either.
            _ if out.stderr.contains("unrelated histories") => Ok(None),
            _ => Err(failed(&args, &out)),
        }
    }

    /// Writes a commit of `tree` with `parents`; authored as `author` when given, else by the
    /// committer.
    pub async fn commit_tree(
        &self,
        tree: &str,
        parents: &[&Sha],
        message: &str,
        author: Option<&Authorship>,
    ) -> HostResult<Sha> {
        let mut args = vec!["commit-tree", tree];
        for parent in parents {
            args.extend(["-p", parent.as_str()]);
        }
        let env: Vec<(&str, &str)> = match author {
            Some(a) => vec![
                ("GIT_AUTHOR_NAME", a.name.as_str()),
                ("GIT_AUTHOR_EMAIL", a.email.as_str()),
                ("GIT_AUTHOR_DATE", a.date.as_str()),
            ],
            None => Vec::new(),
        };
        let sha = self.run_with(&args, Some(message.as_bytes()), &env).await?;
        Ok(Sha::new(sha))
    }

    /// Writes a commit of `tree` with `parents`, authored and committed by the committer at
    /// `date` (git's date format): the same arguments always give the same commit.
    pub async fn commit_tree_at(
        &self,
        tree: &str,
        parents: &[&Sha],
        message: &str,
        date: &str,
    ) -> HostResult<Sha> {
        let mut args = vec!["commit-tree", tree];
        for parent in parents {
            args.extend(["-p", parent.as_str()]);
        }
        let env = [("GIT_AUTHOR_DATE", date), ("GIT_COMMITTER_DATE", date)];
        let sha = self.run_with(&args, Some(message.as_bytes()), &env).await?;
        Ok(Sha::new(sha))
    }

    /// Points `name` at `new` only if it is at `old` now (`None`: only if it does not exist).
    pub async fn update_ref(
        &self,
        name: &str,
        new: &str,
        old: Option<&str>,
    ) -> HostResult<RefUpdate> {
        let args = ["update-ref", name, new, old.unwrap_or("")];
        self.conditional(&args).await
    }

    /// Points `name` at `new` whatever it was before (records, where the last write wins),
    /// retrying while another writer holds the ref.
    pub async fn set_ref(&self, name: &str, new: &str) -> HostResult<()> {
        for _ in 0..50 {
            let current = self.ref_target(name).await?;
            match self.update_ref(name, new, current.as_deref()).await? {
                RefUpdate::Done => return Ok(()),
                RefUpdate::Refused(_) => tokio::task::yield_now().await,
            }
        }
        Err(HostError::Transient {
            message: format!("{name} kept changing"),
            retry_after: None,
        })
    }

    async fn ref_target(&self, name: &str) -> HostResult<Option<String>> {
        Ok(self
            .refs_under(name)
            .await?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id))
    }

    /// Deletes `name` only if it is at `old` now.
    pub async fn delete_ref(&self, name: &str, old: &str) -> HostResult<RefUpdate> {
        self.conditional(&["update-ref", "-d", name, old]).await
    }

    async fn conditional(&self, args: &[&str]) -> HostResult<RefUpdate> {
        let out = self.output(args, None, &[]).await?;
        if out.success {
            Ok(RefUpdate::Done)
        } else if out.stderr.contains("cannot lock ref") {
            Ok(RefUpdate::Refused(out.stderr))
        } else {
            Err(failed(args, &out))
        }
    }

    /// Whether `ancestor` is reachable from `descendant` (or is it).
    pub async fn is_ancestor(&self, ancestor: &Sha, descendant: &Sha) -> HostResult<bool> {
        let args = [
            "merge-base",
            "--is-ancestor",
            ancestor.as_str(),
            descendant.as_str(),
        ];
        let out = self.output(&args, None, &[]).await?;
        match out.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(&args, &out)),
        }
    }

    /// A commit's tree and parents.
    pub async fn commit_info(&self, sha: &Sha) -> HostResult<CommitInfo> {
        let text = self
            .run(&["show", "-s", "--format=%T%n%P", sha.as_str()])
            .await?;
        let mut lines = text.lines();
        let tree = lines.next().unwrap_or_default().to_owned();
        let parents = lines
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(Sha::new)
            .collect();
        Ok(CommitInfo {
            sha: sha.clone(),
            tree,
            parents,
        })
    }

    /// A commit's author, author date and message.
    pub async fn authorship(&self, sha: &Sha) -> HostResult<Authorship> {
        let text = self
            .run(&[
                "show",
                "-s",
                "--format=%an%x00%ae%x00%aI%x00%B",
                sha.as_str(),
            ])
            .await?;
        let mut parts = text.splitn(4, '\0');
        let mut next = || parts.next().unwrap_or_default().to_owned();
        Ok(Authorship {
            name: next(),
            email: next(),
            date: next(),
            message: next(),
        })
    }

    /// The commits of `head` not reachable from `base`, oldest first, merges left out.
    pub async fn commits_between(&self, base: &Sha, head: &Sha) -> HostResult<Vec<Sha>> {
        let range = format!("{base}..{head}");
        let text = self
            .run(&["rev-list", "--reverse", "--no-merges", &range])
            .await?;
        Ok(text.lines().map(Sha::new).collect())
    }

    /// Stores bytes as a blob; its id.
    pub async fn write_blob(&self, bytes: &[u8]) -> HostResult<String> {
        self.run_with(&["hash-object", "-w", "--stdin"], Some(bytes), &[])
            .await
    }

    /// The blob a revision names (`<ref>` or `<commit>:<path>`), `None` when there is none.
    pub async fn read_blob(&self, rev: &str) -> HostResult<Option<Vec<u8>>> {
        let Some(id) = self.resolve_object(rev).await? else {
            return Ok(None);
        };
        let out = self.output(&["cat-file", "blob", &id], None, &[]).await?;
        if out.success {
            Ok(Some(out.stdout))
        } else {
            Err(failed(&["cat-file", "blob", &id], &out))
        }
    }

    async fn resolve_object(&self, spec: &str) -> HostResult<Option<String>> {
        let out = self
            .output(&["rev-parse", "--verify", "--quiet", spec], None, &[])
            .await?;
        Ok(out
            .success
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// The names and targets of the refs under `prefix`.
    pub async fn refs_under(&self, prefix: &str) -> HostResult<Vec<(String, String)>> {
        let text = self
            .run(&[
                "for-each-ref",
                "--format=%(refname)%00%(objectname)",
                prefix,
            ])
            .await?;
        Ok(text
            .lines()
            .filter_map(|line| line.split_once('\0'))
            .map(|(name, id)| (name.to_owned(), id.to_owned()))
            .collect())
    }
}

fn failed(args: &[&str], out: &Output) -> HostError {
    HostError::Other(format!("git {} failed: {}", args.join(" "), out.stderr))
}
