//! A headless Chromium driven through ChromeDriver (WebDriver, with the `fantoccini` client),
//! for the dashboard's browser tests.
//!
//! Both come from Debian's packages `chromium` and `chromium-driver`. When
//! `/usr/bin/chromedriver` is missing, the first test that needs them runs
//! `infra/scripts/install-browser` (apt-get, as root or through sudo), under a file lock so
//! that concurrent test processes install them once. ChromeDriver listens on a free loopback
//! port; the browser gets a fresh profile directory. Everything runs in a process group of its
//! own, ended when the [`Browser`] is dropped, or when the test process ends however it ends
//! (the group's watcher sees its standard input close).

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The binaries the Debian packages install.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// How long a wait for the page lasts before the test fails.
pub const PAGE_DEADLINE: Duration = Duration::from_secs(45);

/// The browser's window: also the size of every screenshot.
pub const WINDOW: (u32, u32) = (1280, 1000);

/// Installs Chromium and ChromeDriver on first use (once per process, and once across
/// processes thanks to a file lock).
pub fn ensure_installed() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        if Path::new(CHROMEDRIVER).is_file() && Path::new(CHROMIUM).is_file() {
            return Ok(());
        }
        let root = mq_tables::moto::workspace_root();
        let tools = root.join(".tools");
        std::fs::create_dir_all(&tools).map_err(|e| e.to_string())?;
        let lock =
            std::fs::File::create(tools.join("browser-install.lock")).map_err(|e| e.to_string())?;
        lock.lock().map_err(|e| e.to_string())?;
        if Path::new(CHROMEDRIVER).is_file() && Path::new(CHROMIUM).is_file() {
            return Ok(());
        }
        eprintln!(
            "installing Debian's chromium and chromium-driver (infra/scripts/install-browser)"
        );
        let out = Command::new(root.join("infra/scripts/install-browser"))
            .output()
            .map_err(|e| format!("cannot run infra/scripts/install-browser: {e}"))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!(
                "infra/scripts/install-browser failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Runs its arguments in the background, in the process group this shell leads, and ends the
/// whole group (ChromeDriver, Chromium and its helpers) when standard input closes.
const WATCH: &str = r#""$@" & cat > /dev/null; kill -KILL 0"#;

/// A headless Chromium session.
pub struct Browser {
    pub client: Client,
    group: Child,
    /// Closing it ends the group (see [`WATCH`]).
    stdin: Option<ChildStdin>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts ChromeDriver on a free loopback port and a headless Chromium session.
    pub async fn start() -> Self {
        ensure_installed();
        let port = crate::free_port();
        let profile = tempfile::Builder::new()
            .prefix("mq-chromium-")
            .tempdir()
            .expect("a profile directory");
        let log = profile.path().join("chromedriver.log");
        let mut command = Command::new("sh");
        command
            .args(["-c", WATCH, "sh", CHROMEDRIVER])
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .arg(format!("--log-path={}", log.display()))
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut group = command.spawn().expect("chromedriver starts");
        let stdin = group.stdin.take();
        let url = format!("http://127.0.0.1:{port}");
        wait_for_driver(&url, &log).await;
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--hide-scrollbars",
                    format!("--window-size={},{}", WINDOW.0, WINDOW.1),
                    format!("--user-data-dir={}", profile.path().join("profile").display()),
                ],
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&url)
            .await
            .unwrap_or_else(|e| {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("no Chromium session: {e}; chromedriver said:\n{said}")
            });
        Self {
            client,
            group,
            stdin,
            _profile: profile,
        }
    }

    /// Ends the session, then ChromeDriver and everything it started.
    pub async fn stop(mut self) {
        let _ = self.client.clone().close().await;
        self.end_group();
    }

    fn end_group(&mut self) {
        drop(self.stdin.take());
        let _ = self.group.wait();
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("the page loads");
    }

    /// The element `css` names, once it is on the page.
    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PAGE_DEADLINE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css} on the page: {e}"))
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub async fn run(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("the page did not run {script}: {e}"))
    }

    /// The visible text of the first element `css` names, or `None` while there is none.
    pub async fn text_of(&self, css: &str) -> Option<String> {
        let found = self
            .run(
                "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
                vec![json!(css)],
            )
            .await;
        found.as_str().map(str::to_owned)
    }

    /// Waits until the text of `css` contains `words`; returns the text.
    pub async fn wait_for_text(&self, css: &str, words: &str) -> String {
        let started = Instant::now();
        loop {
            let seen = self.text_of(css).await;
            if let Some(text) = seen.as_deref().filter(|t| t.contains(words)) {
                return text.to_owned();
            }
            assert!(
                started.elapsed() < PAGE_DEADLINE,
                "gave up waiting for {css} to say {words:?}; it says {seen:?}; the page: {}",
                self.text_of("main").await.unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The id of the element that has keyboard focus.
    pub async fn focused(&self) -> String {
        self.run("return document.activeElement.id;", vec![])
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// A PNG of the window, saved as `dir/name`.
    pub async fn screenshot(&self, dir: &Path, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::create_dir_all(dir).expect("the screenshots' directory");
        let path = dir.join(name);
        std::fs::write(&path, png).expect("the screenshot written");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.end_group();
    }
}

async fn wait_for_driver(url: &str, log: &Path) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = http.get(format!("{url}/status")).send().await;
        if let Ok(r) = ready {
            let status: Value = r.json().await.unwrap_or(Value::Null);
            if status["value"]["ready"] == true {
                return;
            }
        }
        if Instant::now() > deadline {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            panic!("chromedriver did not become ready; it said:\n{said}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
