//! Secrets of a deployment, read from AWS Secrets Manager by the ARNs the environment names:
//! the GitHub App's private key and the webhook secret. They never pass through the
//! template or the functions' environment. Each is read when a function starts, and again
//! when GitHub refuses it (the key) or a delivery's signature matches none held (the webhook
//! secret), at most once a minute: rotated in Secrets Manager, it takes effect without a
//! deployment (SECURITY.md).

use mq_githost::github::{GitHubAuth, GitHubConfig, GitHubHost};
use mq_githost::pins::AccountPins;
use mq_githost::webhook::WebhookReceiver;
use mq_githost::{GitHost, SecretSource};
use std::sync::Arc;

/// Reads secrets by ARN.
#[derive(Debug, Clone)]
pub struct Secrets {
    client: aws_sdk_secretsmanager::Client,
}

impl Secrets {
    pub fn new(config: &aws_config::SdkConfig) -> Self {
        Self {
            client: aws_sdk_secretsmanager::Client::new(config),
        }
    }

    /// The secret's string value.
    pub async fn read(&self, arn: &str) -> Result<String, String> {
        let out = self
            .client
            .get_secret_value()
            .secret_id(arn)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "cannot read secret {arn}: {}",
                    aws_sdk_secretsmanager::error::DisplayErrorContext(e)
                )
            })?;
        out.secret_string
            .ok_or_else(|| format!("secret {arn} holds no string"))
    }
}

/// One secret, read again through [`SecretSource`].
#[derive(Debug)]
struct KeptSecret {
    secrets: Secrets,
    arn: String,
}

#[async_trait::async_trait]
impl SecretSource for KeptSecret {
    async fn read(&self) -> Result<String, String> {
        self.secrets.read(&self.arn).await
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The GitHub host (and webhook receiver) the environment configures, if any:
/// `MQ_GITHUB_APP_ID`, `MQ_GITHUB_PRIVATE_KEY_SECRET_ARN`, `MQ_GITHUB_API_URL`,
/// `MQ_WEBHOOK_SECRET_ARN`.
/// The App acts only through installations of the accounts owners were linked as (`pins`).
pub async fn github_from_env(
    secrets: &Secrets,
    pins: Arc<dyn AccountPins>,
) -> Result<Option<(Arc<dyn GitHost>, Option<WebhookReceiver>)>, String> {
    let Some(names) = GitHubSettings::from(env)? else {
        return Ok(None);
    };
    let auth = GitHubAuth::App {
        app_id: names.app_id,
        private_key_pem: secrets.read(&names.key_arn).await?,
    };
    let api_url = env("MQ_GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".to_owned());
    let host_name = api_host(&api_url);
    let kept = |arn: &str| -> Arc<dyn SecretSource> {
        Arc::new(KeptSecret {
            secrets: secrets.clone(),
            arn: arn.to_owned(),
        })
    };
    let config = GitHubConfig::new(auth)
        .with_api(api_url, host_name.clone())
        .with_key_source(kept(&names.key_arn))
        .with_account_pins(pins);
    let host = GitHubHost::new(config).map_err(|e| e.to_string())?;
    let webhook = match names.webhook_secret_arn {
        Some(arn) => {
            let secret = secrets.read(&arn).await?.into_bytes();
            Some(WebhookReceiver::new(secret, host_name).with_source(kept(&arn)))
        }
        None => None,
    };
    Ok(Some((Arc::new(host), webhook)))
}

/// What the environment names for GitHub: the App, its key's secret and the webhook's.
#[derive(Debug, PartialEq, Eq)]
struct GitHubSettings {
    app_id: u64,
    key_arn: String,
    webhook_secret_arn: Option<String>,
}

impl GitHubSettings {
    /// `None` when the environment names no GitHub at all; an error when it names part of it
    /// (an App without its key, a key or a webhook secret without an App), which would leave
    /// the function without GitHub and say nothing.
    fn from(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let app_id = var("MQ_GITHUB_APP_ID");
        let key_arn = var("MQ_GITHUB_PRIVATE_KEY_SECRET_ARN");
        let webhook_secret_arn = var("MQ_WEBHOOK_SECRET_ARN");
        let (app_id, key_arn) = match (app_id, key_arn) {
            (Some(app_id), Some(key_arn)) => (app_id, key_arn),
            (None, None) if webhook_secret_arn.is_none() => return Ok(None),
            (app_id, _) => {
                let missing = if app_id.is_none() {
                    "MQ_GITHUB_APP_ID (the stack's GitHubAppId)"
                } else {
                    "MQ_GITHUB_PRIVATE_KEY_SECRET_ARN (the stack's GitHubPrivateKeySecretArn)"
                };
                return Err(format!(
                    "GitHub is configured in part: {missing} is not set"
                ));
            }
        };
        let app_id = app_id
            .parse()
            .map_err(|_| format!("MQ_GITHUB_APP_ID `{app_id}` is not a number"))?;
        Ok(Some(Self {
            app_id,
            key_arn,
            webhook_secret_arn,
        }))
    }
}

/// The host name repositories carry: `github.com` for the public API, else the API's host.
pub fn api_host(api_url: &str) -> String {
    let rest = api_url.split_once("://").map_or(api_url, |(_, rest)| rest);
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    if host == "api.github.com" || host.is_empty() {
        "github.com".to_owned()
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{GitHubSettings, api_host};

    fn settings(vars: &[(&str, &str)]) -> Result<Option<GitHubSettings>, String> {
        GitHubSettings::from(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn github_is_configured_whole_or_not_at_all() {
        assert_eq!(settings(&[]), Ok(None));
        let app = ("MQ_GITHUB_APP_ID", "123");
        let key = ("MQ_GITHUB_PRIVATE_KEY_SECRET_ARN", "arn:key");
        let webhook = ("MQ_WEBHOOK_SECRET_ARN", "arn:webhook");
        let whole = settings(&[app, key, webhook]).unwrap().unwrap();
        assert_eq!(
            (whole.app_id, whole.webhook_secret_arn.as_deref()),
            (123, Some("arn:webhook"))
        );
        for part in [vec![app], vec![key], vec![webhook], vec![key, webhook]] {
            let err = settings(&part).unwrap_err();
            assert!(err.starts_with("GitHub is configured in part"), "{err}");
        }
        let err = settings(&[("MQ_GITHUB_APP_ID", "rocket"), key]).unwrap_err();
        assert!(err.contains("is not a number"), "{err}");
    }

    #[test]
    fn repositories_on_the_public_api_are_on_github_com() {
        assert_eq!(api_host("https://api.github.com"), "github.com");
        assert_eq!(
            api_host("https://git.example.com/api/v3"),
            "git.example.com"
        );
        assert_eq!(api_host("http://127.0.0.1:8080/api"), "127.0.0.1");
    }
}
