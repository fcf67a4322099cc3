//! Prometheus from the outside: reading the text format, `promtool check metrics`, and a real
//! Prometheus server on 127.0.0.1 that scrapes the gateway.
//!
//! Both binaries come from the Debian package `prometheus`. When they are not on the `PATH`,
//! the first test that needs them downloads the package into the project's `.tools/` and
//! unpacks it there (`apt-get download` and `dpkg-deb -x`: no root, nothing installed on the
//! system), under a file lock so that concurrent test processes fetch it once. The server gets a free loopback port and a
//! temporary storage directory, and stops when its [`PrometheusServer`] is dropped, or when
//! the test process ends however it ends.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Samples of a text-format document: `name{label="value",...}` (labels sorted) → value.
#[derive(Debug, Clone, Default)]
pub struct Samples(BTreeMap<String, f64>);

impl Samples {
    /// Parses the sample lines of a text-format document (comments and blank lines skipped).
    pub fn parse(text: &str) -> Self {
        let mut samples = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            let value: f64 = value.parse().expect("a sample's value is a number");
            samples.insert(canonical(series), value);
        }
        Self(samples)
    }

    /// The value of one series; panics, listing the family's series, when it is missing.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let key = key(name, labels);
        match self.0.get(&key) {
            Some(v) => *v,
            None => panic!(
                "no sample {key}; the family has:\n{}",
                self.family(name).join("\n")
            ),
        }
    }

    /// The series of a family (any sample whose name starts with `name`).
    pub fn family(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k.starts_with(name))
            .map(|(k, v)| format!("{k} {v}"))
            .collect()
    }

    /// Every distinct value of a label across all samples.
    pub fn label_values(&self, label: &str) -> Vec<String> {
        let needle = format!("{label}=\"");
        let mut values: Vec<String> = self
            .0
            .keys()
            .filter_map(|k| {
                let start = k.find(&needle)? + needle.len();
                let end = start + k[start..].find('"')?;
                Some(k[start..end].to_owned())
            })
            .collect();
        values.sort();
        values.dedup();
        values
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks a histogram of the standard buckets: cumulative counts per bucket bound (up to
    /// 7200 and +Inf), sum and count.
    pub fn assert_histogram(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        buckets: [f64; 9],
        sum: f64,
    ) {
        let bounds = [
            "60", "300", "600", "900", "1800", "3600", "5400", "7200", "+Inf",
        ];
        for (le, expected) in bounds.iter().zip(buckets) {
            let mut l = labels.to_vec();
            l.push(("le", le));
            assert_eq!(
                self.value(&format!("{name}_bucket"), &l),
                expected,
                "{name} le={le}"
            );
        }
        assert_eq!(
            self.value(&format!("{name}_sum"), labels),
            sum,
            "{name}_sum"
        );
        assert_eq!(
            self.value(&format!("{name}_count"), labels),
            buckets[8],
            "{name}_count"
        );
    }
}

/// `getMergeQueueMetrics` with `query` (`metrics?repo=...`) as acme: checks the status, the
/// content type and the request id, and parses the answer.
pub async fn scrape(env: &crate::TestEnv, query: &str) -> Samples {
    let path = format!(
        "getMergeQueueMetrics{}",
        query.trim_start_matches("metrics")
    );
    let r = env.get(&path, crate::Auth::ApiToken(crate::ACME)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("content-type"),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert!(!r.header("x-request-id").is_empty());
    if std::env::var("MQ_DEBUG_SCRAPE").is_ok() {
        eprintln!("{}", r.text);
    }
    Samples::parse(&r.text)
}

/// `name{a="1",b="2"}` with labels sorted by name.
fn key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut labels: Vec<(&str, &str)> = labels.to_vec();
    labels.sort();
    if labels.is_empty() {
        return name.to_owned();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// A series as written (`name{b="2",a="1"}`), with its labels sorted. Label values here never
/// hold `",` so splitting on it is exact.
fn canonical(series: &str) -> String {
    let Some((name, rest)) = series.split_once('{') else {
        return series.to_owned();
    };
    let inner = rest.trim_end_matches('}');
    let mut labels: Vec<&str> = inner.split("\",").collect();
    labels.sort();
    let labels: Vec<String> = labels
        .iter()
        .map(|l| {
            let l = l.trim_end_matches('"');
            format!("{l}\"")
        })
        .collect();
    format!("{name}{{{}}}", labels.join(","))
}

/// The binaries of the Debian package `prometheus`.
#[derive(Debug)]
pub struct Binaries {
    pub promtool: PathBuf,
    pub prometheus: PathBuf,
}

/// The binaries, installing the package on first use.
pub fn binaries() -> &'static Binaries {
    static BINARIES: OnceLock<Binaries> = OnceLock::new();
    BINARIES.get_or_init(|| ensure_installed().unwrap_or_else(|e| panic!("{e}")))
}

/// The binaries on the `PATH`, else in `dir/usr/bin`.
fn find(dir: &Path) -> Option<Binaries> {
    let path = std::env::var("PATH").unwrap_or_default();
    let search: Vec<PathBuf> = std::env::split_paths(&path)
        .chain([dir.join("usr/bin")])
        .collect();
    let locate = |name: &str| search.iter().map(|d| d.join(name)).find(|p| p.is_file());
    Some(Binaries {
        promtool: locate("promtool")?,
        prometheus: locate("prometheus")?,
    })
}

fn ensure_installed() -> Result<Binaries, String> {
    let tools = mq_tables::moto::workspace_root().join(".tools");
    let dir = tools.join("prometheus");
    if let Some(found) = find(&dir) {
        return Ok(found);
    }
    std::fs::create_dir_all(&tools).map_err(|e| e.to_string())?;
    let lock =
        std::fs::File::create(tools.join("prometheus-install.lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    if let Some(found) = find(&dir) {
        return Ok(found);
    }
    eprintln!(
        "downloading the Debian package prometheus into .tools/prometheus (promtool and the server)"
    );
    unpack_package(&tools, &dir).map_err(|e| {
        format!(
            "{e}; the tests need promtool and prometheus: put them on the PATH (Debian's \
             package prometheus has both)"
        )
    })?;
    find(&dir)
        .ok_or_else(|| "the prometheus package is unpacked but its binaries are not found".into())
}

/// Downloads the package `prometheus` into `tools` and unpacks it into `dir`.
fn unpack_package(tools: &Path, dir: &Path) -> Result<(), String> {
    let run = |program: &str, args: &[&std::ffi::OsStr]| -> Result<(), String> {
        let status = Command::new(program)
            .args(args)
            .current_dir(tools)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        match status.success() {
            true => Ok(()),
            false => Err(format!("{program} {args:?} failed ({status})")),
        }
    };
    run("apt-get", &["download".as_ref(), "prometheus".as_ref()])?;
    let deb = std::fs::read_dir(tools)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("prometheus_") && name.ends_with(".deb")
        })
        .ok_or("apt-get download left no prometheus_*.deb")?;
    run(
        "dpkg-deb",
        &["-x".as_ref(), deb.as_os_str(), dir.as_os_str()],
    )?;
    std::fs::remove_file(&deb).map_err(|e| e.to_string())
}

/// What `promtool check metrics` said about a document.
#[derive(Debug)]
pub struct Check {
    /// 0: clean; 3: lint problems; 1: the document does not parse.
    pub exit_code: i32,
    /// One line per problem: `<metric> <problem>`.
    pub problems: Vec<String>,
}

/// Runs `promtool check metrics` on `text`.
pub fn promtool_check(text: &str) -> Check {
    let mut child = Command::new(&binaries().promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("promtool reads the document");
    let out = child.wait_with_output().expect("promtool finishes");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Check {
        exit_code: out.status.code().unwrap_or(-1),
        problems: said.lines().map(str::to_owned).collect(),
    }
}

/// What Prometheus scrapes.
#[derive(Debug, Clone)]
pub struct ScrapeTarget {
    /// `127.0.0.1:PORT` of the gateway.
    pub address: String,
    pub metrics_path: String,
    pub params: Vec<(String, String)>,
    pub bearer_token: String,
}

/// A Prometheus server on 127.0.0.1, scraping one target every second.
pub struct PrometheusServer {
    pub url: String,
    http: reqwest::Client,
    child: Child,
    /// Closing it stops the server (see [`WATCH`]).
    stdin: Option<ChildStdin>,
    _dir: tempfile::TempDir,
}

/// Runs the server in the background and stops it when standard input closes: on drop, or
/// when the test process dies and the pipe closes with it.
const WATCH: &str = r#"exe="$1"; shift; "$exe" "$@" & pid=$!; cat > /dev/null; kill "$pid" 2>/dev/null; wait "$pid""#;

impl PrometheusServer {
    pub async fn start(target: &ScrapeTarget) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, scrape_config(target)).expect("config written");
        let port = crate::free_port();
        let log_path = dir.path().join("prometheus.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let mut child = Command::new("sh")
            .args(["-c", WATCH, "sh"])
            .arg(&binaries().prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let stdin = child.stdin.take();
        let server = Self {
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            child,
            stdin,
            _dir: dir,
        };
        server.wait_until_ready(&log_path).await;
        server
    }

    async fn wait_until_ready(&self, log: &std::path::Path) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = self.http.get(format!("{}/-/ready", self.url)).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            if Instant::now() > deadline {
                let said = std::fs::read_to_string(log).unwrap_or_default();
                panic!("prometheus did not become ready; it said:\n{said}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An instant query: each series' labels and value.
    pub async fn query(&self, promql: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let body: Value = self
            .http
            .get(format!(
                "{}/api/v1/query?query={}",
                self.url,
                encode(promql)
            ))
            .send()
            .await
            .expect("prometheus answers")
            .json()
            .await
            .expect("a JSON answer");
        assert_eq!(body["status"], "success", "{body}");
        body["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .expect("labels")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect();
                let value = series["value"][1].as_str().expect("a value");
                (labels, value.parse().expect("a number"))
            })
            .collect()
    }

    /// Queries until the answer is not empty (the first scrape has landed).
    pub async fn query_until_found(
        &self,
        promql: &str,
        timeout: Duration,
    ) -> Vec<(BTreeMap<String, String>, f64)> {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self.query(promql).await;
            if !found.is_empty() {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "nothing for {promql} after {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn scrape_config(target: &ScrapeTarget) -> String {
    let params: Vec<String> = target
        .params
        .iter()
        .map(|(k, v)| format!("      {k}: ['{v}']"))
        .collect();
    format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n\
         \x20 - job_name: merge-queue\n\
         \x20   metrics_path: {path}\n\
         \x20   params:\n{params}\n\
         \x20   authorization:\n\
         \x20     type: Bearer\n\
         \x20     credentials: {token}\n\
         \x20   static_configs:\n\
         \x20     - targets: ['{address}']\n",
        path = target.metrics_path,
        params = params.join("\n"),
        token = target.bearer_token,
        address = target.address,
    )
}

/// Percent-encodes a query parameter value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_keyed_with_sorted_labels() {
        let s = Samples::parse(
            "# HELP x y\n# TYPE x gauge\nx{b=\"2\",a=\"1\"} 3\nplain 4.5\nh_bucket{le=\"+Inf\"} 1\n",
        );
        assert_eq!(s.value("x", &[("a", "1"), ("b", "2")]), 3.0);
        assert_eq!(s.value("plain", &[]), 4.5);
        assert_eq!(s.value("h_bucket", &[("le", "+Inf")]), 1.0);
        assert_eq!(s.label_values("a"), ["1"]);
        assert_eq!(s.len(), 3);
    }
}
