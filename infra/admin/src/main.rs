//! `mq-admin`: manage API tokens and tables of a deployment (or of a local DynamoDB endpoint).
//!
//! ```text
//! mq-admin tokens create --org acme --label ci     # prints the token once
//! mq-admin tokens list
//! mq-admin tokens revoke tok_1a2b3c4d5e6f
//! mq-admin owners link --org acme --owner github.com/acme
//! mq-admin owners list
//! mq-admin owners unlinked
//! mq-admin owners unlink --org acme --owner github.com/acme
//! mq-admin tables create                            # creates missing tables (local endpoints)
//! mq-admin test-cases expire                        # once, after upgrading to expiring tests
//! ```
//!
//! Table names come from `MQ_*_TABLE` (as the deployed functions read them) or `--table-prefix`;
//! AWS credentials and region from the standard chain, or `--dynamodb-endpoint` for a local
//! server.

mod owners;

use clap::{Parser, Subcommand};
use mq_core::ids::OrgId;
use mq_store::{DynamoStore, StoreError, TableNames, TokenStore};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "mq-admin", about = "Administer a merge queue deployment")]
struct Cli {
    /// A DynamoDB-compatible endpoint (e.g. http://127.0.0.1:8000) instead of AWS.
    #[arg(long, env = "MQ_DYNAMODB_ENDPOINT", global = true)]
    dynamodb_endpoint: Option<String>,
    /// Table names as `<prefix>Queues`, ... instead of the MQ_*_TABLE variables.
    #[arg(long, global = true)]
    table_prefix: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// API tokens: one organisation each, stored as SHA-256 hashes.
    #[command(subcommand)]
    Tokens(TokenCommand),
    /// Repository owners (`host/owner`), each linked to the one organisation that owns its
    /// repositories.
    #[command(subcommand)]
    Owners(OwnerCommand),
    /// Tables.
    #[command(subcommand)]
    Tables(TableCommand),
    /// Test cases of the test-health table.
    #[command(subcommand)]
    TestCases(TestCaseCommand),
}

#[derive(Subcommand)]
enum TestCaseCommand {
    /// Gives the test cases written before tests were forgotten their expiry: 90 days after
    /// their last result, none while a user's quarantine override is set
    /// (docs/queue-semantics.md §9). Run once after upgrading; it reads the whole table.
    Expire,
}

#[derive(Subcommand)]
enum OwnerCommand {
    /// Links an owner to an organisation. With a GitHub App configured, the App must be
    /// installed on the owner.
    Link {
        #[arg(long)]
        org: String,
        /// `host/owner`, e.g. `github.com/acme`.
        #[arg(long)]
        owner: String,
        #[command(flatten)]
        app: owners::AppArgs,
    },
    /// Removes an owner's link to an organisation.
    Unlink {
        #[arg(long)]
        org: String,
        #[arg(long)]
        owner: String,
    },
    /// Lists every owner with its organisation.
    List,
    /// Lists the owners of existing queues linked to no organisation (queues made before
    /// owners were linked, which the service leaves alone until they are).
    Unlinked,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Creates a token for an organisation and prints it (it cannot be shown again).
    Create {
        #[arg(long)]
        org: String,
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Lists tokens (ids, organisations, labels, dates; never secrets).
    List,
    /// Revokes a token by its id (`tok_...`).
    Revoke { id: String },
}

#[derive(Subcommand)]
enum TableCommand {
    /// Creates the template's tables that do not exist yet.
    Create,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    let tables = match &cli.table_prefix {
        Some(prefix) => TableNames::with_prefix(prefix),
        None => TableNames::from_env(),
    };
    let client = match &cli.dynamodb_endpoint {
        Some(endpoint) => mq_tables::local_client(endpoint).await,
        None => aws_sdk_dynamodb::Client::new(
            &aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await,
        ),
    };
    match cli.command {
        Command::Tables(TableCommand::Create) => mq_tables::create_missing_tables(&client, &tables)
            .await
            .map_err(|e| e.to_string()),
        Command::Tokens(command) => tokens(&DynamoStore::new(client, tables), command).await,
        Command::TestCases(TestCaseCommand::Expire) => {
            let store = DynamoStore::new(client, tables);
            let done = store
                .expire_forgotten_tests()
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "test cases without an expiry: {} given one, {} kept by a user's quarantine \
                 override, {} written meanwhile or unreadable (left as they are)",
                done.given, done.kept, done.skipped
            );
            Ok(())
        }
        Command::Owners(command) => {
            let store = DynamoStore::new(client, tables);
            match command {
                OwnerCommand::Link { org, owner, app } => {
                    owners::link(&store, &org, &owner, &app).await
                }
                OwnerCommand::Unlink { org, owner } => owners::unlink(&store, &org, &owner).await,
                OwnerCommand::List => owners::list(&store).await,
                OwnerCommand::Unlinked => owners::unlinked(&store).await,
            }
        }
    }
}

async fn tokens(store: &DynamoStore, command: TokenCommand) -> Result<(), String> {
    let now = mq_service::Clock::now(&mq_service::SystemClock);
    match command {
        TokenCommand::Create { org, label } => {
            let org = OrgId::parse(&org).map_err(|e| format!("--org {org:?}: {e}"))?;
            let (token, record) =
                mq_http::auth::new_token(org, &label, now).map_err(|e| e.to_string())?;
            store.put_token(&record).await.map_err(describe)?;
            println!("id:    {}", record.id);
            println!("org:   {}", record.org);
            println!("token: {token}");
            eprintln!("Store the token now: only its hash is kept, it cannot be shown again.");
            Ok(())
        }
        TokenCommand::List => {
            println!(
                "{:<18} {:<20} {:<24} {:<26} revoked",
                "id", "org", "label", "created"
            );
            for t in store.list_tokens().await.map_err(describe)? {
                let revoked = t
                    .revoked_at
                    .map(|r| r.to_rfc3339())
                    .unwrap_or_else(|| "-".into());
                println!(
                    "{:<18} {:<20} {:<24} {:<26} {revoked}",
                    t.id,
                    t.org,
                    t.label,
                    t.created_at.to_rfc3339()
                );
            }
            Ok(())
        }
        TokenCommand::Revoke { id } => {
            store.revoke_token(&id, now).await.map_err(describe)?;
            println!("revoked {id}");
            Ok(())
        }
    }
}

fn describe(e: StoreError) -> String {
    match e {
        StoreError::NotFound => "no token with that id".to_owned(),
        other => other.to_string(),
    }
}
