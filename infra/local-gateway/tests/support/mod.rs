//! What the tests of the gateway's binary share: starting it on a free port, in a directory
//! of its own, and stopping it when the test ends. Each test file uses part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The gateway process, stopped when the test ends however it ends, and the lines it has
/// printed since it listens (its standard output: start-up lines and logs).
pub struct Gateway {
    pub child: Child,
    pub printed: Receiver<String>,
}

impl Gateway {
    /// A gateway the test started itself, its output not read.
    pub fn of(child: Child) -> Self {
        let (_, printed) = std::sync::mpsc::channel();
        Self { child, printed }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the binary with `args` and `--listen` on `port`, in `dir`, and waits until it
/// listens.
pub fn start(dir: &Path, port: u16, args: &[&str]) -> Gateway {
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-gateway"))
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the gateway starts");
    // Its output is read to the end, as a terminal would.
    let printed = lines_of(child.stdout.take().unwrap());
    let gateway = Gateway { child, printed };
    let mut seen = String::new();
    while let Ok(line) = gateway.printed.recv_timeout(Duration::from_secs(60)) {
        if line.starts_with("merge queue API on") {
            return gateway;
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    panic!("the gateway did not start listening:\n{seen}");
}

/// The lines `output` prints, read on a thread of their own until it closes.
pub fn lines_of(output: impl Read + Send + 'static) -> Receiver<String> {
    let (lines, printed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    printed
}
