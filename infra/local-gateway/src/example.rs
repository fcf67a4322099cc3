//! `--example`: an example repository with three pull requests and a queue for it, so a
//! first run shows a pull request going from submitted to merged.
//!
//! The repository is `github.com/acme/rocket` under the repositories directory: `main`
//! requires the status `local-ci`; pull requests #1, #2 and #3 each add a file, and #3 also
//! adds a file named `FAIL`, which the example CI command (`test ! -e FAIL`) fails.

use crate::owners::Ownership;
use mq_core::ErrorCode;
use mq_core::ids::{OrgId, RepoRef};
use mq_core::settings::SettingsPatch;
use mq_core::time::Timestamp;
use mq_service::App;
use mq_service::queues;
use mq_store::OwnerStore;
use mq_wire::QueueTarget;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CI command of the example: fails a tree that contains a file named `FAIL`.
pub const EXAMPLE_CI_COMMAND: &str = "test ! -e FAIL";
/// Where the example keeps its repositories unless `--repos-dir` says otherwise.
pub const EXAMPLE_REPOS_DIR: &str = ".local/repos";

/// The example repository's address.
pub fn example_repo() -> RepoRef {
    RepoRef::new("github.com", "acme", "rocket").expect("a valid repository name")
}

/// The organisation owning the example repository: the one `ownership` gives its owner, or
/// else `local`, to which the owner is then linked.
pub async fn link_example_owner(
    store: &dyn OwnerStore,
    ownership: &Ownership,
    local: &OrgId,
    now: Timestamp,
) -> Result<OrgId, String> {
    let owner = example_repo().owner_ref();
    match ownership.owner_of(&owner) {
        Some(org) => Ok(org.clone()),
        None => {
            crate::owners::link(store, &owner, local, now).await?;
            Ok(local.clone())
        }
    }
}

/// Creates the example repository under `root` unless it exists; returns its path. With
/// `anew`, an existing one that `--example` made (marked so, or under `.local/repos`) is made
/// again, its previous run's merges undone: with the embedded store the queue starts empty,
/// and the example's pull requests must be open again to be submitted. A repository of that
/// name that `--example` did not make is never touched.
pub fn create_example_repo(root: &Path, anew: bool) -> Result<PathBuf, String> {
    let root = std::path::absolute(root).map_err(|e| e.to_string())?;
    let bare = root.join("github.com/acme/rocket.git");
    if bare.exists() {
        if !anew || !made_by_example(&root, &bare) {
            return Ok(bare);
        }
        std::fs::remove_dir_all(&bare).map_err(|e| format!("{}: {e}", bare.display()))?;
    }
    build_example(&root, &bare).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&bare);
    })?;
    Ok(bare)
}

/// The configuration key marking a repository `--example` made.
const EXAMPLE_MARK: &str = "mergeQueue.example";

/// Whether `--example` made the repository `bare`: it carries the example's mark, or (made
/// before the mark) it is under the example's own directory.
fn made_by_example(root: &Path, bare: &Path) -> bool {
    let marked = Command::new("git")
        .args(["-C", &path(bare), "config", "--get", EXAMPLE_MARK])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "true");
    marked || root.ends_with(EXAMPLE_REPOS_DIR)
}

fn build_example(root: &Path, bare: &Path) -> Result<(), String> {
    std::fs::create_dir_all(bare.parent().unwrap_or(root)).map_err(|e| e.to_string())?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let w = work.path();
    git_at(
        None,
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            &path(bare),
        ],
    )?;
    git_at(
        Some(bare),
        &["config", "branch.main.requiredStatuses", "local-ci"],
    )?;
    git_at(Some(bare), &["config", EXAMPLE_MARK, "true"])?;
    git_at(
        None,
        &["init", "--quiet", "--initial-branch=main", &path(w)],
    )?;
    write(w, "README.md", "# rocket\n")?;
    commit(w, &["README.md"], "Initial commit")?;
    git_at(Some(w), &["push", "--quiet", &path(bare), "main"])?;
    for pr in 1..=3 {
        git_at(
            Some(w),
            &["checkout", "--quiet", "-b", &format!("change-{pr}"), "main"],
        )?;
        let file = format!("change-{pr}.txt");
        write(w, &file, &format!("change {pr}\n"))?;
        let mut files = vec![file.as_str()];
        if pr == 3 {
            write(w, "FAIL", "")?;
            files.push("FAIL");
        }
        commit(w, &files, &format!("Change {pr}"))?;
        let head = format!("HEAD:refs/pull/{pr}/head");
        git_at(Some(w), &["push", "--quiet", &path(bare), &head])?;
        git_at(Some(w), &["checkout", "--quiet", "main"])?;
    }
    Ok(())
}

/// Creates the example's queue for `org` unless it exists.
pub async fn create_example_queue(app: &App, org: &OrgId) -> Result<(), String> {
    let target = QueueTarget {
        repo: example_repo(),
        branch: "main".to_owned(),
    };
    match queues::create(app, org, target, &SettingsPatch::default()).await {
        Ok(_) => Ok(()),
        Err(e) if e.is(ErrorCode::QueueAlreadyExists) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn write(dir: &Path, file: &str, text: &str) -> Result<(), String> {
    std::fs::write(dir.join(file), text).map_err(|e| e.to_string())
}

fn commit(dir: &Path, files: &[&str], message: &str) -> Result<(), String> {
    let mut add = vec!["add"];
    add.extend_from_slice(files);
    git_at(Some(dir), &add)?;
    git_at(Some(dir), &["commit", "--quiet", "-m", message])
}

/// Runs git (in `dir` when given) as the example's author.
fn git_at(dir: Option<&Path>, args: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    let out = cmd
        .args(args)
        .env("GIT_AUTHOR_NAME", "Octo Cat")
        .env("GIT_AUTHOR_EMAIL", "octocat@example.com")
        .env("GIT_COMMITTER_NAME", "Octo Cat")
        .env("GIT_COMMITTER_EMAIL", "octocat@example.com")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(bare: &Path, key: &str) -> String {
        let out = Command::new("git")
            .args(["-C", &path(bare), "config", "--get", key])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The example's own repository is made again (a merged pull request open again); one of
    /// the same name that `--example` did not make (a user's, under `--repos-dir`) is kept.
    #[test]
    fn only_the_example_s_own_repository_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let example = create_example_repo(dir.path(), false).unwrap();
        git_at(Some(&example), &["config", "pr.1.state", "merged"]).unwrap();
        create_example_repo(dir.path(), false).unwrap();
        assert_eq!(
            config(&example, "pr.1.state"),
            "merged",
            "kept when not anew"
        );
        create_example_repo(dir.path(), true).unwrap();
        assert_eq!(config(&example, "pr.1.state"), "", "made again");

        git_at(Some(&example), &["config", "--unset", EXAMPLE_MARK]).unwrap();
        git_at(Some(&example), &["config", "pr.1.state", "merged"]).unwrap();
        create_example_repo(dir.path(), true).unwrap();
        assert_eq!(
            config(&example, "pr.1.state"),
            "merged",
            "not the example's"
        );
    }
}
