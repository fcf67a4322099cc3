//! The local CI: runs a shell command in a fresh checkout of every test branch the local host
//! creates, and records the outcome as a commit status on the branch's commit (context
//! `local-ci` unless configured otherwise). Jobs run in the background, at most `concurrency`
//! at once; deleting the branch stops its job. A job's checkout is removed when the job ends,
//! however it ends: passed, failed, unable to start, or stopped.

use super::git::Git;
use super::records::StatusRecorder;
use crate::error::{HostError, HostResult};
use crate::port::StatusUpdate;
use mq_core::git::StatusState;
use mq_core::ids::{RepoRef, Sha};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::process::Command;
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;

/// The context the local CI reports under unless told otherwise.
pub const DEFAULT_CI_CONTEXT: &str = "local-ci";

/// What the local CI runs, under which status context, and how many jobs at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiConfig {
    /// Run by `sh -c` in the checkout, with `MERGE_QUEUE_BRANCH` and `MERGE_QUEUE_SHA` set.
    pub command: String,
    pub context: String,
    pub concurrency: usize,
    /// Where checkouts are made (`merge-queue-ci-*` directories); the system's temporary
    /// directory unless set.
    pub work_dir: Option<PathBuf>,
}

impl CiConfig {
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            context: DEFAULT_CI_CONTEXT.to_owned(),
            concurrency: 2,
            work_dir: None,
        }
    }

    pub fn with_work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = context.into();
        self
    }

    pub fn with_concurrency(mut self, jobs: usize) -> Self {
        self.concurrency = jobs.max(1);
        self
    }
}

/// One test branch to test.
struct Job {
    repo: RepoRef,
    git: Git,
    branch: String,
    sha: Sha,
}

/// How a command ended.
struct Finished {
    success: bool,
    exit: String,
    seconds: f64,
    log: PathBuf,
}

#[derive(Debug)]
pub(crate) struct CiRunner {
    config: CiConfig,
    slots: Arc<Semaphore>,
    recorder: StatusRecorder,
    jobs: Mutex<HashMap<String, AbortHandle>>,
}

impl CiRunner {
    pub fn new(config: CiConfig, recorder: StatusRecorder) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
            config,
            recorder,
            jobs: Mutex::new(HashMap::new()),
        }
    }

    /// Queues a run for `branch` at `sha`, replacing a run still going for the same branch.
    pub fn start(&self, repo: &RepoRef, git: Git, branch: &str, sha: Sha) {
        let job = Job {
            repo: repo.clone(),
            git,
            branch: branch.to_owned(),
            sha,
        };
        let task = tokio::spawn(run(
            self.config.clone(),
            self.slots.clone(),
            self.recorder.clone(),
            job,
        ));
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.retain(|_, handle| !handle.is_finished());
        if let Some(previous) = jobs.insert(job_key(repo, branch), task.abort_handle()) {
            previous.abort();
        }
    }

    /// Stops the run of `branch`, if one is going (its command is killed).
    pub fn cancel(&self, repo: &RepoRef, branch: &str) {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(handle) = jobs.remove(&job_key(repo, branch)) {
            handle.abort();
        }
    }
}

fn job_key(repo: &RepoRef, branch: &str) -> String {
    format!("{}#{branch}", repo.key())
}

async fn run(config: CiConfig, slots: Arc<Semaphore>, recorder: StatusRecorder, job: Job) {
    let report = |state, description: String, target_url: Option<String>| {
        let update = StatusUpdate {
            context: config.context.clone(),
            state,
            description,
            target_url,
        };
        record(&recorder, &job, update)
    };
    report(StatusState::Pending, "queued".to_owned(), None).await;
    let Ok(_slot) = slots.acquire().await else {
        return;
    };
    let running = format!("running `{}`", config.command);
    report(StatusState::Pending, running, None).await;
    match run_command(&config, &job).await {
        Ok(done) => {
            let (state, verb) = if done.success {
                (StatusState::Success, "passed")
            } else {
                (StatusState::Failure, "failed")
            };
            let description = format!("{verb} ({}) in {:.1} s", done.exit, done.seconds);
            let url = format!("file://{}", done.log.display());
            report(state, description, Some(url)).await;
        }
        Err(e) => report(StatusState::Error, e.to_string(), None).await,
    }
}

/// Records a status of the job's commit; a failure to record is logged (there is no one to
/// tell it to).
async fn record(recorder: &StatusRecorder, job: &Job, update: StatusUpdate) {
    if let Err(e) = recorder
        .record(&job.git, &job.repo, &job.sha, &update)
        .await
    {
        tracing::warn!(repo = %job.repo, sha = %job.sha, error = %e, "local CI could not record a status");
    }
}

/// Checks the commit out in a temporary clone and runs the command there, its output going to
/// a log file kept in the repository (`merge-queue/ci-logs/<sha>.log`).
async fn run_command(config: &CiConfig, job: &Job) -> HostResult<Finished> {
    let command = config.command.as_str();
    let mut checkout = Checkout::new(config.work_dir.as_deref())?;
    let dir = checkout.path.join("src");
    clone_at(job.git.dir(), &dir, &job.sha).await?;
    let log = log_file(job.git.dir(), &job.sha)?;
    let out = std::fs::File::create(&log)
        .map_err(|e| HostError::Other(format!("cannot write {}: {e}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| HostError::Other(format!("cannot write {}: {e}", log.display())))?;
    let started = Instant::now();
    let cannot_run = |e: std::io::Error| HostError::Other(format!("cannot run `{command}`: {e}"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(&dir)
        .env("MERGE_QUEUE_BRANCH", &job.branch)
        .env("MERGE_QUEUE_SHA", job.sha.as_str())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(cannot_run)?;
    checkout.group = child.id().map(ProcessGroup);
    let status = child.wait().await.map_err(cannot_run)?;
    Ok(Finished {
        success: status.success(),
        exit: status.to_string(),
        seconds: started.elapsed().as_secs_f64(),
        log,
    })
}

/// A job's checkout directory and the process group of its command. Dropped when the run
/// ends or is cancelled (its task dropped): everything the command started is killed, not
/// only the shell, then the directory is removed. A killed process may still write for a
/// moment, so a removal that finds the directory refilled is tried again from a thread of its
/// own, for up to [`REMOVAL_PATIENCE`].
struct Checkout {
    path: PathBuf,
    group: Option<ProcessGroup>,
}

/// How long a checkout's removal is retried.
const REMOVAL_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

impl Checkout {
    fn new(work_dir: Option<&Path>) -> HostResult<Self> {
        let builder = tempfile::Builder::new().prefix("merge-queue-ci-").clone();
        let made = match work_dir {
            Some(dir) => std::fs::create_dir_all(dir).and_then(|()| builder.tempdir_in(dir)),
            None => builder.tempdir(),
        };
        let dir =
            made.map_err(|e| HostError::Other(format!("cannot make a checkout directory: {e}")))?;
        Ok(Self {
            path: dir.keep(),
            group: None,
        })
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(group) = self.group.take() {
            group.kill();
        }
        if remove(&self.path) {
            return;
        }
        let path = self.path.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while !remove(&path) && started.elapsed() < REMOVAL_PATIENCE {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
    }
}

/// Removes a directory and what it holds; whether it is gone.
fn remove(path: &Path) -> bool {
    match std::fs::remove_dir_all(path) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// The command's process group.
struct ProcessGroup(u32);

impl ProcessGroup {
    /// Kills every process of the group. The group may be gone already (every process
    /// ended): nothing to do then.
    fn kill(self) {
        let pid = i32::try_from(self.0)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// A clone sharing the repository's objects, with `sha` checked out.
async fn clone_at(repo: &Path, dir: &Path, sha: &Sha) -> HostResult<()> {
    let clone = Command::new("git")
        .args(["clone", "--quiet", "--shared", "--no-checkout"])
        .arg(repo)
        .arg(dir)
        .kill_on_drop(true)
        .output()
        .await;
    check("git clone", clone)?;
    let checkout = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["checkout", "--quiet", "--detach", sha.as_str()])
        .kill_on_drop(true)
        .output()
        .await;
    check("git checkout", checkout)
}

fn check(what: &str, result: std::io::Result<std::process::Output>) -> HostResult<()> {
    match result {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(HostError::Other(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Err(e) => Err(HostError::Other(format!("cannot run {what}: {e}"))),
    }
}

fn log_file(repo: &Path, sha: &Sha) -> HostResult<PathBuf> {
    let dir = repo.join("merge-queue").join("ci-logs");
    std::fs::create_dir_all(&dir)
        .map_err(|e| HostError::Other(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir.join(format!("{sha}.log")))
}
