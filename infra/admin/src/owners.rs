//! `mq-admin owners`: which organisation owns which repository owners.

use clap::Args;
use mq_core::ids::{OrgId, OwnerRef};
use mq_githost::github::{GitHubAuth, GitHubConfig, GitHubHost, private_key_pem};
use mq_store::{OwnerLink, OwnerStore, QueueStore, StoreError, TokenStore};
use std::collections::{BTreeMap, BTreeSet};

/// The GitHub App whose installation `link` checks, when one is given.
#[derive(Args, Debug, Clone, Default)]
pub struct AppArgs {
    /// The GitHub App's id: `link` then checks the App is installed on the owner.
    #[arg(long, env = "MQ_GITHUB_APP_ID")]
    github_app_id: Option<u64>,
    /// The App's private key: a PEM file's path, or the PEM itself.
    #[arg(
        long,
        env = "MQ_GITHUB_PRIVATE_KEY",
        hide_env_values = true,
        conflicts_with = "github_private_key_secret_arn"
    )]
    github_private_key: Option<String>,
    /// The App's private key: the ARN of the Secrets Manager secret holding it.
    #[arg(long, env = "MQ_GITHUB_PRIVATE_KEY_SECRET_ARN")]
    github_private_key_secret_arn: Option<String>,
    /// GitHub Enterprise Server: the API's base URL (`https://git.example.com/api/v3`).
    #[arg(long, env = "MQ_GITHUB_API_URL")]
    github_api_url: Option<String>,
}

pub async fn link(
    store: &dyn OwnerStore,
    org: &str,
    owner: &str,
    app: &AppArgs,
) -> Result<(), String> {
    let (org, owner) = parse(org, owner)?;
    let account_id = match github_app(app).await? {
        Some(host) => Some(installed_account(&host, &owner).await?),
        None => None,
    };
    let link = OwnerLink {
        owner: owner.clone(),
        org: org.clone(),
        linked_at: mq_service::Clock::now(&mq_service::SystemClock),
        account_id,
    };
    let before = match account_id {
        Some(_) => (store.owner_link(&owner.key()).await).map_err(|e| e.to_string())?,
        None => None,
    };
    match store.link_owner(&link).await {
        Ok(()) => {
            account_recorded(store, &link, before.as_ref()).await?;
            println!("linked {owner} to {org}");
            Ok(())
        }
        Err(StoreError::AlreadyExists) => {
            let other = store
                .owner_link(&owner.key())
                .await
                .map_err(|e| e.to_string())?
                .map_or_else(|| "another organisation".to_owned(), |l| l.org.to_string());
            Err(format!(
                "{owner} is linked to {other}; unlink it first \
                 (mq-admin owners unlink --org {other} --owner {owner})"
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// After `link` linked `link` (or found it linked to the same organisation already, `before`):
/// the store recorded the account where the link had none, which is said; one linked as
/// another account is refused, as its login now names another account.
async fn account_recorded(
    store: &dyn OwnerStore,
    link: &OwnerLink,
    before: Option<&OwnerLink>,
) -> Result<(), String> {
    let Some(account) = link.account_id else {
        return Ok(());
    };
    let owner = &link.owner;
    let stored = store
        .owner_link(&owner.key())
        .await
        .map_err(|e| e.to_string())?;
    match stored.and_then(|l| l.account_id) {
        Some(recorded) if recorded == account => {
            if before.is_some_and(|l| l.account_id.is_none()) {
                println!("recorded GitHub account {account} for {owner}");
            }
            Ok(())
        }
        recorded => Err(format!(
            "{owner} was linked as GitHub account {}, and the App is installed on account \
             {account} under that name now (was the login renamed or deleted, and taken \
             since?); unlink it first if that account is the owner's \
             (mq-admin owners unlink --org {} --owner {owner})",
            recorded.map_or("(none)".to_owned(), |id| id.to_string()),
            link.org
        )),
    }
}

/// The GitHub id of the account `owner`, which the App must be installed on.
async fn installed_account(host: &GitHubHost, owner: &OwnerRef) -> Result<u64, String> {
    host.app_installed_account(owner)
        .await
        .map_err(|e| format!("cannot check the GitHub App's installation: {e}"))?
        .ok_or_else(|| {
            format!("the GitHub App is not installed on {owner}: install it there, then link again")
        })
}

pub async fn unlink(store: &dyn OwnerStore, org: &str, owner: &str) -> Result<(), String> {
    let (org, owner) = parse(org, owner)?;
    match store.unlink_owner(&owner, &org).await {
        Ok(()) => {
            println!("unlinked {owner} from {org}");
            Ok(())
        }
        Err(StoreError::NotFound) => Err(format!("{owner} is not linked to {org}")),
        Err(e) => Err(e.to_string()),
    }
}

pub async fn list(store: &dyn OwnerStore) -> Result<(), String> {
    println!("{:<40} {:<20} {:<26} account", "owner", "org", "linked");
    for link in store.owner_links().await.map_err(|e| e.to_string())? {
        let account = link
            .account_id
            .map_or("any".to_owned(), |id| id.to_string());
        println!(
            "{:<40} {:<20} {:<26} {account}",
            link.owner.key(),
            link.org,
            link.linked_at.to_rfc3339()
        );
    }
    Ok(())
}

/// Lists the owners of existing queues that are linked to no organisation, with the
/// organisations whose queues are there: queues made before owners were linked, which the
/// service leaves alone until their owner is linked. Organisations are found by their tokens,
/// revoked ones included.
pub async fn unlinked<S>(store: &S) -> Result<(), String>
where
    S: OwnerStore + TokenStore + QueueStore,
{
    let found = unlinked_owners(store).await.map_err(|e| e.to_string())?;
    if found.is_empty() {
        println!("every owner of a queue is linked to an organisation");
        return Ok(());
    }
    println!("{:<40} {:<20} queues", "owner", "org");
    for ((owner, org), queues) in &found {
        println!("{owner:<40} {org:<20} {queues}");
    }
    println!("link each owner to the organisation that owns it:");
    println!("  mq-admin owners link --org <org> --owner <owner>");
    println!(
        "(with MQ_GITHUB_APP_ID and MQ_GITHUB_PRIVATE_KEY_SECRET_ARN set, it checks the App is \
         installed there and records the owner's GitHub account)"
    );
    Ok(())
}

/// (owner key, organisation) of queues whose owner is linked to no organisation, with the
/// number of such queues.
async fn unlinked_owners<S>(store: &S) -> Result<BTreeMap<(String, OrgId), usize>, StoreError>
where
    S: OwnerStore + TokenStore + QueueStore,
{
    let orgs: BTreeSet<OrgId> = store
        .list_tokens()
        .await?
        .into_iter()
        .map(|t| t.org)
        .collect();
    let mut found = BTreeMap::new();
    for org in orgs {
        for queue in store.queues_of_org(&org).await? {
            let owner = queue.repo.owner_ref().key();
            if store.owner_link(&owner).await?.is_none() {
                *found.entry((owner, org.clone())).or_insert(0) += 1;
            }
        }
    }
    Ok(found)
}

fn parse(org: &str, owner: &str) -> Result<(OrgId, OwnerRef), String> {
    let org = OrgId::parse(org).map_err(|e| format!("--org {org:?}: {e}"))?;
    let owner = OwnerRef::parse("--owner", owner).map_err(|e| e.to_string())?;
    Ok((org, owner))
}

/// The GitHub App of the flags, if an id is given.
async fn github_app(args: &AppArgs) -> Result<Option<GitHubHost>, String> {
    let Some(app_id) = args.github_app_id else {
        return Ok(None);
    };
    let private_key_pem = match (
        &args.github_private_key,
        &args.github_private_key_secret_arn,
    ) {
        (Some(key), _) => private_key_pem(key)?,
        (None, Some(arn)) => {
            let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            mq_lambda::secrets::Secrets::new(&config).read(arn).await?
        }
        (None, None) => {
            return Err(
                "--github-app-id needs --github-private-key or --github-private-key-secret-arn"
                    .to_owned(),
            );
        }
    };
    let mut config = GitHubConfig::new(GitHubAuth::App {
        app_id,
        private_key_pem,
    });
    if let Some(url) = &args.github_api_url {
        config = config.with_api(url.clone(), mq_lambda::secrets::api_host(url));
    }
    GitHubHost::new(config).map(Some).map_err(|e| e.to_string())
}
