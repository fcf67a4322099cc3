//! The Git host the gateway works with: local repositories (with a local CI), or GitHub.

use clap::Args;
use mq_githost::GitHost;
use mq_githost::github::{GitHubAuth, GitHubConfig, GitHubHost, private_key_pem};
use mq_githost::local::{CiConfig, LocalGitHost, StatusRecorded};
use mq_githost::pins::AccountPins;
use mq_githost::webhook::WebhookReceiver;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::broadcast;

#[derive(Args, Debug, Clone, Default)]
pub struct HostArgs {
    /// Serve the bare repositories under this directory (`<dir>/<host>/<owner>/<name>.git`).
    #[arg(long, env = "MQ_REPOS_DIR")]
    pub repos_dir: Option<PathBuf>,
    /// Test every test branch with this shell command, run in a checkout of the branch
    /// (exit code 0 = pass); its result is the status `local-ci`.
    #[arg(long, env = "MQ_CI_COMMAND", requires = "repos_dir")]
    pub ci_command: Option<String>,
    /// Parallel runs of the CI command.
    #[arg(long, default_value_t = 4)]
    pub ci_jobs: usize,
    /// Act on GitHub as this GitHub App (with `--github-private-key`).
    #[arg(long, env = "MQ_GITHUB_APP_ID", conflicts_with = "repos_dir")]
    pub github_app_id: Option<u64>,
    /// The App's private key: a PEM file's path, or the PEM itself.
    #[arg(long, env = "MQ_GITHUB_PRIVATE_KEY", hide_env_values = true)]
    pub github_private_key: Option<String>,
    /// Act on GitHub with this token instead of an App.
    #[arg(
        long,
        env = "MQ_GITHUB_TOKEN",
        hide_env_values = true,
        conflicts_with = "repos_dir"
    )]
    pub github_token: Option<String>,
    /// GitHub Enterprise Server: the API's base URL (`https://git.example.com/api/v3`).
    #[arg(long, env = "MQ_GITHUB_API_URL")]
    pub github_api_url: Option<String>,
    /// The secret of the GitHub webhook (deliveries to `POST /v1/webhooks/github`).
    #[arg(long, env = "MQ_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,
}

/// The Git host chosen by the flags, and what comes with it.
pub struct OpenedHost {
    pub host: Option<Arc<dyn GitHost>>,
    pub webhook: Option<WebhookReceiver>,
    /// Statuses the local host records (its CI's results), to deliver as they happen.
    pub statuses: Option<broadcast::Receiver<StatusRecorded>>,
    /// One line saying what the gateway works on.
    pub description: String,
}

/// A GitHub App acts only through installations of the accounts owners were linked as
/// (`pins`).
pub fn open_host(args: &HostArgs, pins: Arc<dyn AccountPins>) -> Result<OpenedHost, String> {
    if let Some(dir) = &args.repos_dir {
        return Ok(open_local(dir, args));
    }
    let Some(auth) = github_auth(args)? else {
        return Ok(OpenedHost {
            host: None,
            webhook: None,
            statuses: None,
            description: "no Git host: queue administration only (see --repos-dir)".to_owned(),
        });
    };
    let mut config = GitHubConfig::new(auth).with_account_pins(pins);
    let api_host = args
        .github_api_url
        .as_deref()
        .map_or_else(|| "github.com".to_owned(), mq_lambda::secrets::api_host);
    if let Some(url) = &args.github_api_url {
        config = config.with_api(url.clone(), api_host.clone());
    }
    let host = GitHubHost::new(config).map_err(|e| e.to_string())?;
    Ok(OpenedHost {
        host: Some(Arc::new(host)),
        webhook: args
            .webhook_secret
            .as_ref()
            .map(|s| WebhookReceiver::new(s.as_bytes().to_vec(), api_host.clone())),
        statuses: None,
        description: format!("Git host: GitHub ({api_host})"),
    })
}

fn open_local(dir: &std::path::Path, args: &HostArgs) -> OpenedHost {
    let mut host = LocalGitHost::new(dir);
    if let Some(command) = &args.ci_command {
        host = host.with_ci(CiConfig::new(command.clone()).with_concurrency(args.ci_jobs.max(1)));
    }
    let statuses = host.subscribe();
    let ci = match &args.ci_command {
        Some(c) => format!("CI command `{c}`"),
        None => "no CI command (statuses come from outside)".to_owned(),
    };
    OpenedHost {
        host: Some(Arc::new(host)),
        webhook: args
            .webhook_secret
            .as_ref()
            .map(|s| WebhookReceiver::new(s.as_bytes().to_vec(), "github.com")),
        statuses: Some(statuses),
        description: format!("Git host: repositories under {}, {ci}", dir.display()),
    }
}

fn github_auth(args: &HostArgs) -> Result<Option<GitHubAuth>, String> {
    match (
        &args.github_app_id,
        &args.github_private_key,
        &args.github_token,
    ) {
        (Some(app_id), Some(key), _) => Ok(Some(GitHubAuth::App {
            app_id: *app_id,
            private_key_pem: private_key_pem(key)?,
        })),
        (Some(_), None, _) => Err("--github-app-id needs --github-private-key".to_owned()),
        (None, _, Some(token)) => Ok(Some(GitHubAuth::Token(token.clone()))),
        (None, _, None) => Ok(None),
    }
}
