//! `local-gateway`: run the merge queue on this machine.
//!
//! ```text
//! cargo run -p local-gateway                     # in-memory store, prints a token
//! cargo run -p local-gateway -- --api-token T    # a known token (organisation "local")
//! cargo run -p local-gateway -- --repos-dir .local/repos --ci-command 'make test'
//! cargo run -p local-gateway -- --dynamodb-endpoint http://127.0.0.1:8000
//! MQ_API_TOKENS=acme:t1,umbrella:t2 \
//!   MQ_REPO_OWNERS='acme=github.com/acme;umbrella=github.com/umbrella' cargo run -p local-gateway
//! ```

use clap::Parser;
use local_gateway::Gateway;
use local_gateway::background::{spawn_status_listener, spawn_tick};
use local_gateway::example::{
    EXAMPLE_CI_COMMAND, EXAMPLE_REPOS_DIR, create_example_queue, create_example_repo,
    link_example_owner,
};
use local_gateway::host::{HostArgs, open_host};
use local_gateway::owners::Ownership;
use local_gateway::server::Timeouts;
use local_gateway::tokens::{LOCAL_ORG, parse_token_list, register};
use mq_core::ids::OrgId;
use mq_service::{App, Clock, SystemClock};
use mq_store::{DynamoStore, MemoryStore, Store, TableNames};
use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "local-gateway", about = "Serve the merge queue API locally")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// Use DynamoDB at this endpoint (tables are created if missing) instead of memory.
    #[arg(long, env = "MQ_DYNAMODB_ENDPOINT")]
    dynamodb_endpoint: Option<String>,
    /// Prefix of the table names on the DynamoDB endpoint.
    #[arg(long, default_value = "mq-local-")]
    table_prefix: String,
    /// An API token to accept, for the organisation "local" (repeatable).
    #[arg(long = "api-token")]
    api_tokens: Vec<String>,
    /// Tokens of several organisations: `org1:token1,org2:token2`.
    #[arg(long, env = "MQ_API_TOKENS", hide_env_values = true)]
    tokens: Option<String>,
    /// Which organisation owns which repository owners:
    /// `acme=github.com/acme,github.com/acme-labs;umbrella=github.com/umbrella`. Required with
    /// several organisations; with one, it owns every repository unless this says otherwise.
    #[arg(long, env = "MQ_REPO_OWNERS")]
    repo_owners: Option<String>,
    /// Create an example repository (`github.com/acme/rocket`, three pull requests) under
    /// the repositories directory (default `.local/repos`), test it with `test ! -e FAIL`, and
    /// create its queue, for the organisation owning `github.com/acme` (linked to `local`
    /// when no organisation owns it). With the embedded store the repository `--example`
    /// made is made again at every start, as the queue is (a repository of that name it did
    /// not make is never touched); with `--dynamodb-endpoint` it is kept.
    #[arg(long)]
    example: bool,
    /// Seconds between ticks (timeouts, batching waits, retries); fractions allowed.
    #[arg(long, default_value_t = 5.0, value_parser = parse_interval)]
    tick_interval: f64,
    /// Seconds a client may take to send a request's headers (then its connection is closed).
    #[arg(long, default_value_t = 10.0, value_parser = parse_interval)]
    header_timeout: f64,
    /// Seconds a client may take to send a request's body (then it gets 408).
    #[arg(long, default_value_t = 60.0, value_parser = parse_interval)]
    body_timeout: f64,
    #[command(flatten)]
    host: HostArgs,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.01 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds of at least 0.01")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    mq_lambda::logging::init_text();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(mut args: Args) -> Result<(), String> {
    let local = OrgId::parse(LOCAL_ORG).map_err(|e| e.to_string())?;
    let mut given = parse_token_list(args.tokens.as_deref().unwrap_or_default())?;
    given.extend(args.api_tokens.iter().map(|t| (local.clone(), t.clone())));
    let orgs = organisations(&given, &local);
    let ownership = Ownership::decide(&orgs, args.repo_owners.as_deref())?;
    if args.example {
        prepare_example(&mut args)?;
    }
    let store = open_store(&args).await?;
    let mut app = App::new(store.clone(), Arc::new(SystemClock));
    if let Ownership::Everything(org) = &ownership {
        app = app.with_default_owner(org.clone());
    }
    let pins = Arc::new(mq_service::owners::LinkedAccounts::new(store.clone()));
    let opened = open_host(&args.host, pins)?;
    if let Some(host) = opened.host.clone() {
        app = app.with_githost(host);
    }
    if let Some(receiver) = opened.webhook.clone() {
        app = app.with_webhook(receiver);
    }
    let app = Arc::new(app);
    let now = SystemClock.now();
    let generated = register(store.as_ref(), given, now).await?;
    ownership.store(store.as_ref(), now).await?;
    if args.example {
        let org = link_example_owner(store.as_ref(), &ownership, &local, now).await?;
        create_example_queue(&app, &org).await?;
    }
    let timeouts = Timeouts {
        headers: Duration::from_secs_f64(args.header_timeout),
        body: Duration::from_secs_f64(args.body_timeout),
    };
    let gateway = Gateway::start_with(app.clone(), args.listen, timeouts)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let _tick = spawn_tick(app.clone(), Duration::from_secs_f64(args.tick_interval));
    let _statuses = opened
        .statuses
        .map(|rx| spawn_status_listener(app.clone(), rx));
    say(format_args!("merge queue API on {}", gateway.base_url()));
    say(format_args!("dashboard on http://{}/", gateway.addr));
    say(format_args!("{}", opened.description));
    if let Some(token) = generated {
        say(format_args!(
            "API token (organisation \"{LOCAL_ORG}\"): {token}"
        ));
    }
    tokio::select! {
        _ = gateway.wait() => {}
        _ = tokio::signal::ctrl_c() => say(format_args!("stopping")),
    }
    Ok(())
}

/// The organisations of the given tokens, or `local` (whose token is generated) when none is
/// given.
fn organisations(given: &[(OrgId, String)], local: &OrgId) -> BTreeSet<OrgId> {
    match given.is_empty() {
        true => BTreeSet::from([local.clone()]),
        false => given.iter().map(|(org, _)| org.clone()).collect(),
    }
}

/// Tells the operator something on stdout. A stdout that went away (a closed pipe, a closed
/// terminal) does not stop the gateway, as `println!` would by panicking.
fn say(line: std::fmt::Arguments) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Points the flags at the example repository, creating it if needed.
fn prepare_example(args: &mut Args) -> Result<(), String> {
    let dir = args
        .host
        .repos_dir
        .get_or_insert_with(|| EXAMPLE_REPOS_DIR.into())
        .clone();
    args.host
        .ci_command
        .get_or_insert_with(|| EXAMPLE_CI_COMMAND.to_owned());
    let anew = args.dynamodb_endpoint.is_none();
    let repo = create_example_repo(&dir, anew)?;
    say(format_args!("example repository: {}", repo.display()));
    Ok(())
}

async fn open_store(args: &Args) -> Result<Arc<dyn Store>, String> {
    let Some(endpoint) = &args.dynamodb_endpoint else {
        return Ok(Arc::new(MemoryStore::new()));
    };
    let client = mq_tables::local_client(endpoint).await;
    let tables = TableNames::with_prefix(&args.table_prefix);
    mq_tables::create_missing_tables(&client, &tables)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(DynamoStore::new(client, tables)))
}
