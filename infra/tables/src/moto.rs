//! The moto server the tests talk to: a real DynamoDB-compatible server on 127.0.0.1.
//!
//! [`endpoint`] returns `MQ_TEST_DYNAMODB_ENDPOINT` when the test script started one server for
//! the whole run; otherwise it starts one for this process. moto is installed into the
//! project's virtualenv (`.venv`) on first use. The server reads its standard input until end
//! of file, so it stops when the test process that started it exits, however it exits.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The environment variable naming a running server to use.
pub const ENDPOINT_VAR: &str = "MQ_TEST_DYNAMODB_ENDPOINT";

/// Starts moto's server app with every request applied one at a time.
///
/// DynamoDB applies conditional writes and transactions atomically; moto's backends take no
/// lock, so two transactions with the same condition, arriving on two server threads at once,
/// can both pass it (seen as a lost update by the concurrency contract test). Serialising the
/// requests gives moto DynamoDB's atomicity; clients still send concurrently. With a
/// certificate and its key after the port, it serves HTTPS.
const SERVE: &str = r#"
import sys, threading
from moto.server import DomainDispatcherApplication, create_backend_app
from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import make_server

app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serialised(environ, start_response):
    with lock:
        return list(app(environ, start_response))

tls = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else None
server = make_server("127.0.0.1", int(sys.argv[1]), serialised, threaded=True,
                     request_handler=MotoRequestHandler, ssl_context=tls)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
server.shutdown()
"#;

/// A moto server owned by this process.
pub struct MotoServer {
    pub endpoint: String,
    _child: Child,
}

/// The endpoint of the run's moto server, starting one for this process if needed.
pub fn endpoint() -> String {
    if let Ok(url) = std::env::var(ENDPOINT_VAR) {
        return url;
    }
    static SERVER: OnceLock<MotoServer> = OnceLock::new();
    SERVER
        .get_or_init(|| MotoServer::start().unwrap_or_else(|e| panic!("cannot start moto: {e}")))
        .endpoint
        .clone()
}

impl MotoServer {
    /// Installs moto if needed and starts it on a free loopback port.
    pub fn start() -> Result<Self, String> {
        Self::launch(None)
    }

    /// [`MotoServer::start`], serving HTTPS with `certificate` and its `key` (PEM files).
    pub fn start_tls(certificate: &Path, key: &Path) -> Result<Self, String> {
        Self::launch(Some((certificate, key)))
    }

    fn launch(tls: Option<(&Path, &Path)>) -> Result<Self, String> {
        let python = ensure_installed()?;
        let port = free_port()?;
        let mut command = Command::new(&python);
        command.args(["-c", SERVE, &port.to_string()]);
        if let Some((certificate, key)) = tls {
            command.arg(certificate).arg(key);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if line.trim() != "ready" {
            let _ = child.kill();
            return Err("moto exited before it was ready".to_owned());
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        let endpoint = format!("{scheme}://127.0.0.1:{port}");
        eprintln!("moto server (DynamoDB) listening on {endpoint}");
        Ok(Self {
            endpoint,
            _child: child,
        })
    }
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// The workspace root (this crate lives at `infra/tables`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The virtualenv's python with moto installed, installing it under a file lock if missing.
pub fn ensure_installed() -> Result<PathBuf, String> {
    let root = workspace_root();
    let venv = root.join(".venv");
    let python = venv.join("bin/python");
    let marker = venv.join("bin/moto_server");
    if marker.exists() {
        return Ok(python);
    }
    std::fs::create_dir_all(&venv).map_err(|e| e.to_string())?;
    let lock = std::fs::File::create(venv.join(".install.lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    if !marker.exists() {
        eprintln!("installing moto into {}", venv.display());
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv)).map_err(|e| {
            format!(
                "{e} (if Python's venv module is missing: on Debian and Ubuntu, apt install \
                 python3-venv)"
            )
        })?;
        let requirements = root.join("infra/requirements/moto.txt");
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(requirements))?;
    }
    Ok(python)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}
