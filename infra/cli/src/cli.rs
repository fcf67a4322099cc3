//! The command line: every command, argument and help text, with an example per command.

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const ABOUT: &str = "The merge queue's command-line client, for CI pipelines and operators";

const LONG_ABOUT: &str = "\
The merge queue's command-line client, for CI pipelines and operators. It talks to the queue's \
HTTP API only.

Configuration comes from flags, then the environment (MQ_API_URL, MQ_API_TOKEN, MQ_REPO, \
MQ_TARGET_BRANCH, MQ_PR, MQ_SHA, MQ_ORG; one set but empty counts as unset), then CI \
conventions: the repository from \
GITHUB_REPOSITORY or the `origin` remote, the pull request and its head from GITHUB_REF, \
GITHUB_EVENT_PATH or the checkout, the target branch from GITHUB_BASE_REF. `-v` shows what \
was inferred and from where. The token is read from MQ_API_TOKEN or --token-file, sent in the \
x-api-token header, and never printed.";

const EXIT_CODES: &str = "\
Exit codes:
  0  done (submit --wait: merged; check-quarantined: every failure is quarantined, or none
     failed without --step-failed)
  1  submit --wait: the pull request failed; check-quarantined: a failure is not quarantined
     (with --step-failed: or none is in the reports)
  2  submit --wait: the pull request was cancelled
  3  submit --wait: --timeout ran out (the pull request stays in the queue)
  4  error: bad input, configuration, the API or the network (submit --wait goes on through
     a poll the API or the network failed for now, up to 20 in a row)

Examples:
  export MQ_API_URL=https://queue.example.com/v1 MQ_API_TOKEN=...
  mq submit --wait --timeout 2h     # in a pull request's CI job
  mq queue --repo acme/rocket --target main --watch
  mq upload 'target/nextest/ci/*.xml'
  mq check-quarantined --step-failed 'target/nextest/ci/*.xml'";

#[derive(Debug, Parser)]
#[command(
    name = "mq",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXIT_CODES,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Where to talk to and what about; every command takes these.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// The API's base URL (`/v1` is added when missing), e.g. `https://queue.example.com/v1`
    #[arg(long, env = "MQ_API_URL", global = true, value_name = "URL")]
    pub api_url: Option<String>,
    /// Read the API token from this file instead of MQ_API_TOKEN
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The repository: host/owner/name, or owner/name on github.com [default: from
    /// GITHUB_REPOSITORY or the `origin` remote]
    #[arg(long, env = "MQ_REPO", global = true, value_name = "REPO")]
    pub repo: Option<String>,
    /// The queue's target branch [default: GITHUB_BASE_REF, the event's base, origin's
    /// default branch, else main]
    #[arg(
        long,
        env = "MQ_TARGET_BRANCH",
        global = true,
        value_name = "BRANCH",
        visible_alias = "target-branch"
    )]
    pub target: Option<String>,
    /// The pull request's number [default: from GITHUB_REF, GITHUB_EVENT_PATH or the checkout]
    #[arg(long, env = "MQ_PR", global = true, value_name = "NUMBER")]
    pub pr: Option<u32>,
    /// The pull request's head commit [default: from GITHUB_EVENT_PATH, GITHUB_SHA or the
    /// checkout]
    #[arg(long, env = "MQ_SHA", global = true, value_name = "SHA")]
    pub sha: Option<String>,
    /// The organisation of the test-health endpoints [default: the API token's organisation]
    #[arg(long, env = "MQ_ORG", global = true, value_name = "ORG")]
    pub org: Option<String>,
    /// Print the API's JSON instead of text (one document per line when there are several)
    #[arg(long, global = true)]
    pub json: bool,
    /// Show what was inferred and from where, and every request (twice: with timings)
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Submit the pull request to the queue, and with --wait follow it to its end
    #[command(after_help = "Examples:
  mq submit                              # the pull request of this CI job
  mq submit --pr 42 --priority high --no-batch
  mq submit --wait --timeout 90m         # exit 0 merged, 1 failed, 2 cancelled, 3 timed out")]
    Submit(SubmitArgs),
    /// Show where the pull request stands in the queue
    #[command(after_help = "Example:
  mq status --pr 42")]
    Status,
    /// Take the pull request out of the queue
    #[command(after_help = "Example:
  mq cancel --pr 42")]
    Cancel,
    /// Test the pull request again (its run, and the runs of those behind it, start over)
    #[command(after_help = "Example:
  mq restart --pr 42")]
    Restart,
    /// Set the targets the pull request's head impacts (parallel queues)
    #[command(after_help = "Examples:
  mq targets //app //lib:core           # these targets
  mq targets --file impacted.txt         # one per line, or a JSON array of strings
  bazel-diff ... | mq targets --file -   # from standard input
  mq targets --all                       # every target")]
    Targets(TargetsArgs),
    /// Show the queue: its state and the pull requests in line, as a table
    #[command(after_help = "Examples:
  mq queue --repo acme/rocket --target main
  mq queue --watch --interval 5s")]
    Queue(QueueArgs),
    /// Pause the queue: nothing starts testing or merges until it is resumed
    #[command(after_help = "Example:
  mq pause --repo acme/rocket --target main")]
    Pause,
    /// Resume a paused or draining queue
    #[command(after_help = "Example:
  mq resume --repo acme/rocket --target main")]
    Resume,
    /// Drain the queue: submissions are refused, running tests finish and what passes merges
    /// (groups in line that must test again still do); pull requests never tested do not start
    #[command(after_help = "Example:
  mq drain --repo acme/rocket --target main")]
    Drain,
    /// Show the queue's settings, or change those given
    #[command(after_help = "Examples:
  mq settings                                   # show them
  mq settings --concurrency 3 --batch true --merge-method squash
  mq settings --required-statuses build,test")]
    Settings(SettingsArgs),
    /// Advise the queue's settings for a goal, from the queue's own history
    #[command(after_help = "Examples:
  mq advice --repo acme/rocket --target main   # for the most merges per hour
  mq advice --goal fewest-ci-runs --window-days 14
  mq advice --goal fastest-within-budget --ci-runs-per-hour 20

Prints the window read, the workload estimated from it, and the settings the simulator \
projects best next to the current ones (or why there is no advice), then auto-tuning's \
record. It changes nothing: apply advice with `mq settings`. It takes a few seconds.")]
    Advice(AdviceArgs),
    /// Show a test run: its status, branch, commit and the pull requests it tests
    #[command(after_help = "Example:
  mq run 0193c2a4-5e1f-7c3b-9d2e-8f6a1b4c7d90   # the id ending its branch mq-test/<target>/<id>")]
    Run(RunArgs),
    /// Create or delete a queue
    #[command(
        subcommand,
        after_help = "Examples:
  mq queues create --repo acme/rocket --target main --concurrency 2
  mq queues delete --repo acme/rocket --target release"
    )]
    Queues(QueuesCommand),
    /// Upload JUnit XML reports (plain or gzip) with the metadata of this CI run
    #[command(after_help = "Examples:
  mq upload 'target/nextest/ci/*.xml' 'reports/**/*.xml.gz'
  mq upload --variant linux-x86_64 'build/test-results/**/*.xml'

Reports are checked and gzipped before they are sent. An upload larger than --direct-limit, or \
with more reports (over 1,000), test cases or XML than one upload takes, goes through upload \
URLs (one per report) instead of one request. The upload id comes from the \
CI run (GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_JOB and the variant), so a retried step does \
not count twice while a re-run job's results count as a retry; outside CI it is a hash of the \
reports. Matrix jobs pass --variant to tell their legs \
apart.")]
    Upload(UploadArgs),
    /// Pass the job when every failed test in the reports is quarantined
    #[command(after_help = "Examples:
  cargo nextest run --profile ci || mq check-quarantined --step-failed 'target/nextest/ci/junit.xml'
  mq check-quarantined --variant linux 'reports/*.xml'

Reads the failed tests from the reports itself. Exit 0 when every failure is quarantined, or \
there is none (with --step-failed, exit 1 then); exit 1 listing the failures that are not.")]
    CheckQuarantined(CheckArgs),
    /// List the repository's unhealthy or quarantined tests
    #[command(
        subcommand,
        after_help = "Examples:
  mq tests unhealthy --status flaky
  mq tests quarantined --json"
    )]
    Tests(TestsCommand),
    /// Print the queue metrics of the repository in the Prometheus text format
    #[command(after_help = "Examples:
  mq metrics --repo acme/rocket
  mq metrics --all-repos | grep mq_queue_depth_current")]
    Metrics(MetricsArgs),
    /// Print a shell completion script
    #[command(after_help = "Examples:
  mq completions bash > /etc/bash_completion.d/mq
  mq completions zsh > \"${fpath[1]}/_mq\"
  mq completions fish > ~/.config/fish/completions/mq.fish")]
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// Priority: urgent, high, medium, low, or 0 (most urgent) to 255 [server default: medium]
    #[arg(long, value_name = "PRIORITY")]
    pub priority: Option<String>,
    /// Test this pull request alone, never in a batch
    #[arg(long)]
    pub no_batch: bool,
    /// Follow the pull request until it is merged, failed or cancelled, printing each change
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this long (e.g. 90s, 45m, 2h30m) and exit 3
    #[arg(long, value_name = "DURATION", requires = "wait", value_parser = crate::duration::parse)]
    pub timeout: Option<std::time::Duration>,
    /// With --wait: time between two looks at the pull request (at least 100ms)
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::duration::parse_interval)]
    pub interval: std::time::Duration,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct TargetsArgs {
    /// The impacted targets
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Read the targets from a file (`-`: standard input): one per line, or a JSON array
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Every target is impacted
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    /// Redraw the table in place until interrupted (without a terminal: print it again when
    /// it changes); once standard output is closed (`| head`), stop at the next redraw (the
    /// next change, without a terminal), exit 0
    #[arg(long)]
    pub watch: bool,
    /// With --watch: time between two redraws (at least 100ms)
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse_interval)]
    pub interval: std::time::Duration,
}

/// The queue settings, named as the API names them; only those given are changed.
#[derive(Debug, Args, Default)]
pub struct SettingsArgs {
    /// Groups tested at once
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,
    /// Bisection runs at once
    #[arg(long, value_name = "N")]
    pub bisection_concurrency: Option<u32>,
    /// Minutes before a run without a result fails
    #[arg(long, value_name = "MINUTES")]
    pub testing_timeout_minutes: Option<u32>,
    /// Pull requests behind a failure that are tested before it is failed
    #[arg(long, value_name = "N")]
    pub pending_failure_depth: Option<u32>,
    /// Fail a failed group at once while the queue has seen no flake lately
    #[arg(long, value_name = "BOOL")]
    pub adaptive_pending_failure: Option<bool>,
    /// Let the queue take the settings advised for the most merges per hour (see `mq advice`)
    #[arg(long, value_name = "BOOL")]
    pub auto_tune: Option<bool>,
    /// Merge a group that failed when a group behind it passes
    #[arg(long, value_name = "BOOL")]
    pub can_optimistically_merge: Option<bool>,
    /// Test pull requests in batches
    #[arg(long, value_name = "BOOL")]
    pub batch: Option<bool>,
    /// Longest wait for a batch to fill
    #[arg(long, value_name = "MINUTES")]
    pub batching_max_wait_time_minutes: Option<u32>,
    /// Pull requests a batch waits for
    #[arg(long, value_name = "N")]
    pub batching_min_size: Option<u32>,
    /// Single line, or parallel lanes by impacted targets
    #[arg(long, value_parser = ["single", "parallel"])]
    pub mode: Option<String>,
    /// Comment on pull requests
    #[arg(long, value_name = "BOOL")]
    pub comments_enabled: Option<bool>,
    /// Accept commands in pull request comments
    #[arg(long, value_name = "BOOL")]
    pub commands_enabled: Option<bool>,
    /// Open a draft pull request for each test branch
    #[arg(long, value_name = "BOOL")]
    pub create_prs_for_testing_branches: Option<bool>,
    /// Merge up-to-date green pull requests at once, without a test run
    #[arg(long, value_parser = ["off", "always"])]
    pub direct_merge_mode: Option<String>,
    /// Bisection's optimisation
    #[arg(long, value_parser = ["off", "bisection_skip_redundant_tests"])]
    pub optimization_mode: Option<String>,
    /// How pull requests land on the target
    #[arg(long, value_parser = ["merge_commit", "squash", "rebase"])]
    pub merge_method: Option<String>,
    /// Report the queue's own status check on pull requests
    #[arg(long, value_name = "BOOL")]
    pub status_check_enabled: Option<bool>,
    /// The statuses a test run needs, comma-separated
    #[arg(long, value_name = "STATUS,...", value_delimiter = ',')]
    pub required_statuses: Option<Vec<String>>,
    /// Forget the required statuses (the repository's configuration applies again)
    #[arg(long, conflicts_with = "required_statuses")]
    pub delete_required_statuses: bool,
}

#[derive(Debug, Args)]
pub struct AdviceArgs {
    /// What the advice optimises
    #[arg(long, value_enum, default_value_t = Goal::MostMerges)]
    pub goal: Goal,
    /// The CI budget of --goal fastest-within-budget, in runs per hour (required with it)
    #[arg(
        long,
        value_name = "N",
        required_if_eq("goal", "fastest-within-budget"),
        value_parser = positive_number
    )]
    pub ci_runs_per_hour: Option<f64>,
    /// Days of history to read, 1 to 30 [server default: 7]
    #[arg(long, value_name = "DAYS")]
    pub window_days: Option<u32>,
}

/// The goals of `mq advice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Goal {
    /// The most merges per hour
    MostMerges,
    /// The fewest CI runs per merge, keeping 95% of the most merges per hour
    FewestCiRuns,
    /// The shortest time to merge within --ci-runs-per-hour
    FastestWithinBudget,
}

impl Goal {
    /// The goal as the API names it.
    pub fn api_name(self) -> &'static str {
        match self {
            Goal::MostMerges => "mostMerges",
            Goal::FewestCiRuns => "fewestCiRuns",
            Goal::FastestWithinBudget => "fastestWithinBudget",
        }
    }
}

/// A finite number greater than 0.
fn positive_number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(format!("`{text}` is not a number greater than 0")),
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run's id: the last part of its test branch's name
    #[arg(value_name = "ID")]
    pub id: String,
}

#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// Create the queue of the target branch, with any settings given
    #[command(after_help = "Example:
  mq queues create --repo acme/rocket --target main --concurrency 2 --batch true")]
    Create(SettingsArgs),
    /// Delete the queue of the target branch (refused while pull requests are in it)
    #[command(after_help = "Example:
  mq queues delete --repo acme/rocket --target release")]
    Delete,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report files or glob patterns (quote them: `**` matches any depth)
    #[arg(value_name = "PATTERN", required = true)]
    pub patterns: Vec<String>,
    /// The variant the tests ran as (OS, toolchain, matrix leg); part of each test's identity
    #[arg(long, value_name = "VARIANT", default_value = "", env = "MQ_VARIANT")]
    pub variant: String,
}

#[derive(Debug, Args)]
pub struct UploadArgs {
    #[command(flatten)]
    pub reports: ReportArgs,
    /// The branch the tests ran on [default: GITHUB_HEAD_REF (a fork's prefixed with its owner),
    /// GITHUB_REF_NAME, or the checkout]
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// The upload's id: the same id again changes nothing [default: from the CI run]
    #[arg(long, env = "MQ_UPLOAD_ID", value_name = "ID")]
    pub upload_id: Option<String>,
    /// The CI job's URL [default: the GitHub Actions run's]
    #[arg(long, value_name = "URL")]
    pub job_url: Option<String>,
    /// The CODEOWNERS file [default: .github/CODEOWNERS, CODEOWNERS or docs/CODEOWNERS]
    #[arg(long, value_name = "FILE")]
    pub codeowners: Option<PathBuf>,
    /// Largest upload sent in one request; larger ones go through upload URLs (e.g. 4MiB)
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = crate::size::parse)]
    pub direct_limit: u64,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub reports: ReportArgs,
    /// The test step failed: reports with no failed test do not explain it (a build error, a
    /// crash, a report left from an earlier run), so exit 1 for them instead of 0
    #[arg(long)]
    pub step_failed: bool,
}

#[derive(Debug, Subcommand)]
pub enum TestsCommand {
    /// List flaky and broken tests (every page)
    #[command(after_help = "Examples:
  mq tests unhealthy --repo acme/rocket
  mq tests unhealthy --status flaky --json | jq -r '.tests[].name'")]
    Unhealthy(UnhealthyArgs),
    /// List quarantined tests (every page)
    #[command(after_help = "Example:
  mq tests quarantined --repo acme/rocket")]
    Quarantined,
}

#[derive(Debug, Args)]
pub struct UnhealthyArgs {
    /// Only these [default: both]
    #[arg(long, value_name = "STATUS", value_parser = ["flaky", "broken", "FLAKY", "BROKEN"])]
    pub status: Option<String>,
}

#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Every queue of the organisation, not only the repository's
    #[arg(long)]
    pub all_repos: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every command (and nested command) has an about text and an example, and every
    /// argument has a help text.
    #[test]
    fn every_command_and_argument_is_documented() {
        fn visit(cmd: &clap::Command, path: &str) {
            for sub in cmd.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                assert!(sub.get_about().is_some(), "{path} has no about");
                let after = sub.get_after_help().map(ToString::to_string);
                assert!(
                    after.as_deref().is_some_and(|a| a.contains(&path)),
                    "{path} shows no example of itself"
                );
                for arg in sub.get_arguments() {
                    assert!(
                        arg.get_help().is_some(),
                        "{path}: {} has no help",
                        arg.get_id()
                    );
                }
                visit(sub, &path);
            }
        }
        visit(&Cli::command(), "mq");
    }
}
