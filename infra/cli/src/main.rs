//! `mq`: the merge queue's command-line client (`mq --help`).

mod ci;
mod cli;
mod client;
mod commands;
mod config;
mod duration;
mod error;
mod exit;
mod output;
mod reports;
mod size;

use ci::Environment;
use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command};
use commands::{advice, health, pull_request, queue};
use config::Context;
use error::Result;
use exit::Outcome;
use std::process::ExitCode;

fn main() -> ExitCode {
    let env = Environment::from_process();
    let matches = match without_empty_variables(Cli::command(), &env).try_get_matches() {
        Ok(matches) => matches,
        Err(e) => return usage_error(&e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let ctx = Context::new(cli.global, &matches, env);
    match run(&ctx, &cli.command) {
        Ok(outcome) => outcome.into(),
        Err(e) => {
            output::note(format!("error: {e}"));
            ExitCode::from(exit::ERROR)
        }
    }
}

/// The command line without the variables that are set but empty (or blank): such a variable
/// counts as unset, as MQ_API_TOKEN does, so its flag falls back to the CI conventions (a
/// workflow's `MQ_PR: ${{ github.event.pull_request.number }}` is empty on a push).
fn without_empty_variables(command: clap::Command, env: &Environment) -> clap::Command {
    command
        .mut_args(|arg| {
            let empty = arg
                .get_env()
                .and_then(|name| name.to_str())
                .is_some_and(|name| env.is_empty(name));
            if empty { arg.env(None) } else { arg }
        })
        .mut_subcommands(|sub| without_empty_variables(sub, env))
}

/// Help and version exit 0; a bad command line exits with the error code.
fn usage_error(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    if e.use_stderr() {
        ExitCode::from(exit::ERROR)
    } else {
        ExitCode::SUCCESS
    }
}

fn run(ctx: &Context, command: &Command) -> Result<Outcome> {
    match command {
        Command::Submit(args) => pull_request::submit(ctx, args),
        Command::Status => pull_request::status(ctx),
        Command::Cancel => pull_request::cancel(ctx),
        Command::Restart => pull_request::restart(ctx),
        Command::Targets(args) => pull_request::targets(ctx, args),
        Command::Queue(args) => queue::queue(ctx, args),
        Command::Pause => queue::set_state(ctx, "paused"),
        Command::Resume => queue::set_state(ctx, "running"),
        Command::Drain => queue::set_state(ctx, "draining"),
        Command::Settings(args) => queue::settings(ctx, args),
        Command::Advice(args) => advice::advice(ctx, args),
        Command::Run(args) => queue::run(ctx, args),
        Command::Queues(command) => queue::queues(ctx, command),
        Command::Upload(args) => health::upload(ctx, args),
        Command::CheckQuarantined(args) => health::check_quarantined(ctx, args),
        Command::Tests(command) => health::tests(ctx, command),
        Command::Metrics(args) => health::metrics(ctx, args),
        Command::Completions(args) => {
            let mut command = Cli::command();
            clap_complete::generate(args.shell, &mut command, "mq", &mut std::io::stdout());
            Ok(Outcome::Done)
        }
    }
}
