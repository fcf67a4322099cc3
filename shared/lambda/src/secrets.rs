//! Secrets of a deployment, read from AWS Secrets Manager by the ARNs the environment names:
//! the GitHub App's private key and the webhook secret. They never pass through the
//! template or the functions' environment.

use mq_githost::GitHost;
use mq_githost::github::{GitHubAuth, GitHubConfig, GitHubHost};
use mq_githost::webhook::WebhookReceiver;
use std::sync::Arc;

/// Reads secrets by ARN.
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

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The GitHub host (and webhook receiver) the environment configures, if any:
/// `MQ_GITHUB_APP_ID`, `MQ_GITHUB_PRIVATE_KEY_SECRET_ARN`, `MQ_GITHUB_API_URL`,
/// `MQ_WEBHOOK_SECRET_ARN`.
pub async fn github_from_env(
    secrets: &Secrets,
) -> Result<Option<(Arc<dyn GitHost>, Option<WebhookReceiver>)>, String> {
    let (Some(app_id), Some(key_arn)) = (
        env("MQ_GITHUB_APP_ID"),
        env("MQ_GITHUB_PRIVATE_KEY_SECRET_ARN"),
    ) else {
        return Ok(None);
    };
    let app_id: u64 = app_id
        .parse()
        .map_err(|_| format!("MQ_GITHUB_APP_ID `{app_id}` is not a number"))?;
    let auth = GitHubAuth::App {
        app_id,
        private_key_pem: secrets.read(&key_arn).await?,
    };
    let api_url = env("MQ_GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".to_owned());
    let host_name = api_host(&api_url);
    let config = GitHubConfig::new(auth).with_api(api_url, host_name.clone());
    let host = GitHubHost::new(config).map_err(|e| e.to_string())?;
    let webhook = match env("MQ_WEBHOOK_SECRET_ARN") {
        Some(arn) => Some(WebhookReceiver::new(
            secrets.read(&arn).await?.into_bytes(),
            host_name,
        )),
        None => None,
    };
    Ok(Some((Arc::new(host), webhook)))
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
    use super::api_host;

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
