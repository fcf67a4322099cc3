//! The README, followed literally: the gateway is started with the arguments of the README's
//! `cargo run -p local-gateway -- ...` line (on a free port instead of 3000), then every block
//! marked `sh session` runs, in order, in one `bash`, from a directory that stands for the
//! repository's root. A block's `# => TEXT` lines say what the commands above them print: the
//! output since the previous such lines must contain each TEXT. A command that fails stops the
//! session (`set -e`), and so does a wait that outlasts [`STEP_TIMEOUT`].
//!
//! The gateway's own output goes to a pipe, as when it is started with its logs sent to a
//! file: it must carry no colour codes.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;
use support::{free_port, lines_of, start};

/// The longest a step of the session may take (it includes waits for the example's CI).
const STEP_TIMEOUT: Duration = Duration::from_secs(180);
/// Printed by the shell after each step, with the step's exit status.
const DONE: &str = "__README_STEP_DONE__";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// The arguments the README's quick start gives the gateway.
fn quick_start_args(readme: &str) -> Vec<String> {
    let line = readme
        .lines()
        .find_map(|l| l.trim().strip_prefix("cargo run -p local-gateway -- "))
        .expect("the README starts the gateway with cargo run -p local-gateway -- ...");
    line.split_whitespace().map(str::to_owned).collect()
}

/// The `sh session` blocks, in order.
fn session_blocks(readme: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh session") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// A piece of a block: the commands up to a group of `# =>` lines, and those lines' texts.
#[derive(Debug)]
struct Step {
    commands: String,
    expected: Vec<String>,
}

fn steps(block: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut commands = String::new();
    let mut expected = Vec::new();
    for line in block.lines() {
        match line.strip_prefix("# => ") {
            Some(text) => expected.push(text.to_owned()),
            None => {
                if !expected.is_empty() {
                    let done = std::mem::take(&mut expected);
                    let run = std::mem::take(&mut commands);
                    steps.push(Step {
                        commands: run,
                        expected: done,
                    });
                }
                commands.push_str(line);
                commands.push('\n');
            }
        }
    }
    steps.push(Step { commands, expected });
    steps
}

/// One `bash` for the whole session, its output (standard error included) read line by line.
struct Shell {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<String>,
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Shell {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash runs");
        let mut stdin = child.stdin.take().unwrap();
        let output = lines_of(child.stdout.take().unwrap());
        writeln!(stdin, "exec 2>&1\nset -e").unwrap();
        Self {
            child,
            stdin,
            output,
        }
    }

    /// Runs `commands`; their output, and whether the last one succeeded.
    fn run(&mut self, commands: &str) -> (String, bool) {
        write!(self.stdin, "{commands}\nprintf '\\n{DONE} %d\\n' $?\n").unwrap();
        self.stdin.flush().unwrap();
        let mut output = String::new();
        loop {
            match self.output.recv_timeout(STEP_TIMEOUT) {
                Ok(line) => match line.strip_prefix(DONE) {
                    Some(status) => return (output, status.trim() == "0"),
                    None => {
                        output.push_str(&line);
                        output.push('\n');
                    }
                },
                Err(_) => panic!("the session stopped or hung in:\n{commands}\noutput:\n{output}"),
            }
        }
    }
}

/// A directory standing for the repository's root: the gateway's `.local/` is created there,
/// and the folders the README names (the JUnit fixtures) are links to the real ones.
fn root_stand_in() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("shared"), dir.path().join("shared")).unwrap();
    dir
}

#[test]
fn every_session_block_of_the_readme_runs_and_prints_what_it_shows() {
    let readme = readme();
    let blocks = session_blocks(&readme);
    assert!(blocks.len() >= 8, "{} session blocks", blocks.len());
    let dir = root_stand_in();
    let port = free_port();
    let args = quick_start_args(&readme);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let gateway = start(dir.path(), port, &args);
    let mut shell = Shell::start(dir.path());
    let mut checked = 0;
    for block in &blocks {
        let block = block.replace("127.0.0.1:3000", &format!("127.0.0.1:{port}"));
        for step in steps(&block) {
            let (output, ok) = shell.run(&step.commands);
            assert!(ok, "failed:\n{}\noutput:\n{output}", step.commands);
            for text in &step.expected {
                assert!(
                    output.contains(text.as_str()),
                    "the README shows `{text}` after\n{}\nbut it printed:\n{output}",
                    step.commands
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "only {checked} outputs checked");

    let printed: Vec<String> = gateway.printed.try_iter().collect();
    assert!(
        printed.iter().any(|l| l.contains("request finished")),
        "the gateway logs its requests: {printed:?}"
    );
    let coloured: Vec<&String> = printed.iter().filter(|l| l.contains('\x1b')).collect();
    assert!(coloured.is_empty(), "colour codes in a pipe: {coloured:?}");
}
