//! The monitoring files of `infra/monitoring`, checked against the service:
//!
//! - the alerting rules pass `promtool check rules` and their unit tests
//!   (`promtool test rules`), and every alert is tested both firing and not firing;
//! - every alert has a delay, a severity and annotations, and those on a queue's figures name
//!   the queue (repository and branch);
//! - the rules, their tests and the Grafana dashboard name only metric families the service
//!   exports, select and group by only labels those families carry, match only label values
//!   the service writes (`state`, `conclusion`, ...), and never `rate()` the rolling one-hour
//!   figures; the dashboard shows every family;
//! - the dashboard is importable: unique panel ids, every panel and query on the
//!   `${datasource}` variable, panels inside the 24-column grid without overlapping;
//! - every dashboard query returns series when Prometheus holds a document the service
//!   rendered (promtool evaluates them).
//!
//! What the service exports is read from a document rendered by `mq_metrics`, the renderer of
//! `getMergeQueueMetrics`, never from a copy of its names.

use e2e::prometheus::binaries;
use mq_core::metrics::{
    CI_RUNS_BUCKETS, CiRuns, DURATION_BUCKETS, Durations, LaneFigures, OutcomeFigures,
    QueueFigures, QueueName,
};
use mq_core::settings::QueueState;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Labels Prometheus adds to every scraped series.
const TARGET_LABELS: [&str; 2] = ["job", "instance"];

/// Functions that treat a series as a counter: wrong on the rolling one-hour figures.
const COUNTER_FUNCTIONS: [&str; 5] = ["rate", "irate", "increase", "resets", "idelta"];

/// Keywords followed by a list of label names.
const GROUPING: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The variable a panel's data source must name.
const DATASOURCE_VARIABLES: [&str; 2] = ["${datasource}", "$datasource"];

fn monitoring() -> PathBuf {
    let root = mq_tables::moto::workspace_root();
    root.canonicalize().unwrap_or(root).join("infra/monitoring")
}

fn rules_path() -> PathBuf {
    monitoring().join("prometheus/alerts.yml")
}

fn rule_tests_path() -> PathBuf {
    monitoring().join("prometheus/alerts.test.yml")
}

fn dashboard_path() -> PathBuf {
    monitoring().join("grafana/merge-queue.json")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(path: &Path) -> Value {
    serde_norway::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dashboard() -> Value {
    let path = dashboard_path();
    serde_json::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn array(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Runs `promtool ARGS FILE`; panics with everything promtool said unless it succeeds.
fn promtool(args: &[&str], file: &Path) {
    let out = Command::new(&binaries().promtool)
        .args(args)
        .arg(file)
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool {} {} failed ({}):\n{}{}",
        args.join(" "),
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// What the service exports.

/// The figures of a queue with something in every family: every count above 0, and
/// observations in every histogram.
fn figures(repo: &str, branch: &str, state: QueueState) -> QueueFigures {
    let durations = |s: &[f64]| Durations::of(&DURATION_BUCKETS, s.iter().copied());
    let outcome = |count, in_queue: &[f64], ci_runs: &[f64]| OutcomeFigures {
        count,
        time_in_queue_seconds: durations(in_queue),
        ci_runs: CiRuns::of(&CI_RUNS_BUCKETS, ci_runs.iter().copied()),
    };
    QueueFigures {
        repo: repo.into(),
        branch: branch.into(),
        state,
        depth: 4,
        awaiting_mergeability: 1,
        effects_pending: 1,
        entries_stuck: 1,
        restarts: 2,
        wait_seconds: durations(&[45.0, 300.0, 2400.0]),
        // Runs finished: succeeded, failed, cancelled.
        main: LaneFigures {
            prs_testing: 3,
            runs_active: 2,
            runs_limit: 2,
            runs_finished: [5, 1, 1],
            test_seconds: durations(&[600.0, 900.0, 1200.0]),
        },
        bisection: LaneFigures {
            prs_testing: 1,
            runs_active: 1,
            runs_limit: 1,
            runs_finished: [0, 1, 0],
            test_seconds: durations(&[600.0]),
        },
        // Merged, failed, cancelled.
        outcomes: [
            outcome(3, &[1800.0, 2400.0, 3600.0], &[1.0, 1.0, 2.0]),
            outcome(1, &[1800.0], &[2.0]),
            outcome(1, &[180.0], &[0.0]),
        ],
    }
}

/// What `getMergeQueueMetrics` exports, read from a document it rendered.
struct Exported {
    /// Family → type (`gauge`, `histogram`), from the `# TYPE` lines.
    families: BTreeMap<String, String>,
    /// Sample name (a gauge's family; a histogram's `_bucket`, `_sum` and `_count`) → the
    /// labels of its series → their values.
    samples: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Every sample: its series (`name{label="value",...}`) and its value.
    series: Vec<(String, String)>,
}

impl Exported {
    fn render() -> Self {
        let queues = [
            figures("acme/rocket", "main", QueueState::Running),
            figures("acme/probe", "release", QueueState::Paused),
        ];
        let unreadable = [QueueName {
            repo: "acme/broken".into(),
            branch: "main".into(),
        }];
        let document = mq_metrics::prometheus_text::render(&queues, &unreadable).expect("renders");
        let mut exported = Exported {
            families: BTreeMap::new(),
            samples: BTreeMap::new(),
            series: Vec::new(),
        };
        for line in document.lines().filter(|l| !l.is_empty()) {
            if let Some(declared) = line.strip_prefix("# TYPE ") {
                let (name, kind) = declared.split_once(' ').expect("# TYPE name type");
                exported.families.insert(name.into(), kind.into());
            } else if !line.starts_with('#') {
                let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
                for selector in scan(series).selectors {
                    let labels = exported.samples.entry(selector.name).or_default();
                    for matcher in selector.matchers {
                        let values = labels.entry(matcher.label).or_default();
                        values.insert(matcher.value);
                    }
                }
                exported.series.push((series.into(), value.into()));
            }
        }
        assert!(
            !exported.families.is_empty() && !exported.series.is_empty(),
            "the rendered document has families and samples:\n{document}"
        );
        exported
    }

    /// The family `name` belongs to: its own, or a histogram's of its `_bucket`, `_sum` or
    /// `_count` series.
    fn family_of(&self, name: &str) -> Option<&str> {
        if let Some((family, _)) = self.families.get_key_value(name) {
            return Some(family.as_str());
        }
        ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
            let base = name.strip_suffix(suffix)?;
            let (family, kind) = self.families.get_key_value(base)?;
            (kind == "histogram").then_some(family.as_str())
        })
    }

    /// Every label a series of the service carries once scraped.
    fn all_labels(&self) -> BTreeSet<String> {
        let mut all: BTreeSet<String> = self
            .samples
            .values()
            .flat_map(|l| l.keys())
            .cloned()
            .collect();
        all.extend(TARGET_LABELS.map(String::from));
        all
    }
}

// Reading PromQL.

/// A selector of an `mq_` metric: its name and its label matchers.
#[derive(Debug)]
struct Selector {
    name: String,
    matchers: Vec<Matcher>,
}

/// `label op "value"`.
#[derive(Debug, PartialEq)]
struct Matcher {
    label: String,
    /// `=`, `!=`, `=~` or `!~`.
    op: String,
    value: String,
}

impl Matcher {
    /// The label values the matcher names: its value (`=`, `!=`), or the alternatives of a
    /// regular expression that only lists values (`=~ "a|b"`); none for any other.
    fn named_values(&self) -> Vec<&str> {
        let plain =
            |v: &str| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match self.op.as_str() {
            "=" | "!=" => vec![self.value.as_str()],
            _ if self.value.split('|').all(plain) => self.value.split('|').collect(),
            _ => Vec::new(),
        }
    }
}

/// What an expression refers to.
#[derive(Debug, Default)]
struct Scan {
    /// Selectors of `mq_` metrics.
    selectors: Vec<Selector>,
    /// Label names of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right`.
    grouping: Vec<String>,
    /// Names called as functions.
    functions: Vec<String>,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}

/// The string literal opening at `open` (`"`, `'` or a raw `` ` ``), its escapes undone, and
/// the index after it.
fn string_at(chars: &[char], open: usize) -> (String, usize) {
    let quote = chars[open];
    let mut value = String::new();
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote != '`' => {
                value.extend(chars.get(i + 1));
                i += 2;
            }
            c if c == quote => return (value, i + 1),
            c => {
                value.push(c);
                i += 1;
            }
        }
    }
    (value, chars.len())
}

/// The index after the string literal opening at `open` (`"`, `'` or a raw `` ` ``).
fn skip_string(chars: &[char], open: usize) -> usize {
    let quote = chars[open];
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if quote != '`' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

fn skip_whitespace(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// The label matchers in the braces opening at `open`, and the index after the closing
/// brace.
fn matchers(chars: &[char], open: usize) -> (Vec<Matcher>, usize) {
    let text = || chars.iter().collect::<String>();
    let mut found = Vec::new();
    let mut i = skip_whitespace(chars, open + 1);
    while chars.get(i) != Some(&'}') {
        let start = i;
        while chars.get(i).is_some_and(|c| is_name(*c)) {
            i += 1;
        }
        let label: String = chars[start..i].iter().collect();
        i = skip_whitespace(chars, i);
        let op_start = i;
        while chars.get(i).is_some_and(|c| matches!(c, '=' | '!' | '~')) {
            i += 1;
        }
        let op: String = chars[op_start..i].iter().collect();
        i = skip_whitespace(chars, i);
        let quoted = chars.get(i).is_some_and(|c| matches!(c, '"' | '\'' | '`'));
        assert!(
            !label.is_empty() && !op.is_empty() && quoted,
            "a matcher is label op \"value\": {}",
            text()
        );
        let (value, end) = string_at(chars, i);
        found.push(Matcher { label, op, value });
        i = skip_whitespace(chars, end);
        match chars.get(i) {
            Some(',') => i = skip_whitespace(chars, i + 1),
            Some('}') => {}
            _ => panic!("unclosed braces in {}", text()),
        }
    }
    (found, i + 1)
}

/// The `mq_` selectors, grouping labels and function calls of a PromQL expression (or of a
/// series in the text format, or of a promtool series).
fn scan(expr: &str) -> Scan {
    let chars: Vec<char> = expr.chars().collect();
    let mut found = Scan::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '"' | '\'' | '`') {
            i = skip_string(&chars, i);
            continue;
        }
        if c == '{' {
            let (matched, end) = matchers(&chars, i);
            assert!(
                !matched.iter().any(|m| m.label == "__name__"),
                "select metrics by name, not by __name__: {expr}"
            );
            i = end;
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            // A number or a duration (`1h`, `0.9`, `1e3`) is one token.
            while chars.get(i).is_some_and(|c| is_name(*c) || *c == '.') {
                i += 1;
            }
            continue;
        }
        if !is_name_start(c) {
            i += 1;
            continue;
        }
        let start = i;
        while chars.get(i).is_some_and(|c| is_name(*c)) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let next = skip_whitespace(&chars, i);
        match chars.get(next) {
            Some('{') => {
                let (matchers, end) = matchers(&chars, next);
                if word.starts_with("mq_") {
                    found.selectors.push(Selector {
                        name: word,
                        matchers,
                    });
                }
                i = end;
            }
            Some('(') if GROUPING.contains(&word.as_str()) => {
                let close = chars[next..]
                    .iter()
                    .position(|c| *c == ')')
                    .map(|p| next + p)
                    .unwrap_or_else(|| panic!("unclosed {word}( in {expr}"));
                let list: String = chars[next + 1..close].iter().collect();
                let names = list.split(',').map(str::trim).filter(|l| !l.is_empty());
                found.grouping.extend(names.map(String::from));
                i = close + 1;
            }
            Some('(') => found.functions.push(word),
            _ if word.starts_with("mq_") => found.selectors.push(Selector {
                name: word,
                matchers: Vec::new(),
            }),
            _ => {}
        }
    }
    found
}

/// Every `mq_` name in a text, wherever it stands (comments and descriptions too); the bare
/// prefix `mq_` is not a name, and a colon ends one (as in prose).
fn mq_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut word = String::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if word.starts_with("mq_") && word != "mq_" {
            names.insert(word.clone());
        }
        word.clear();
    }
    names
}

// The rules and the dashboard.

/// Every string in a JSON document, keys included.
fn strings(value: &Value) -> Box<dyn Iterator<Item = &str> + '_> {
    match value {
        Value::String(s) => Box::new(std::iter::once(s.as_str())),
        Value::Array(items) => Box::new(items.iter().flat_map(strings)),
        Value::Object(fields) => Box::new(
            fields
                .iter()
                .flat_map(|(k, v)| std::iter::once(k.as_str()).chain(strings(v))),
        ),
        _ => Box::new(std::iter::empty()),
    }
}

/// The alerting rules: `groups[].rules[]`.
fn alert_rules() -> Vec<Value> {
    let rules = yaml(&rules_path());
    let groups = array(&rules["groups"]);
    assert!(!groups.is_empty(), "alerts.yml has rule groups");
    groups
        .iter()
        .flat_map(|g| array(&g["rules"]).iter().cloned())
        .collect()
}

/// Every panel, those inside rows included.
fn panels(dashboard: &Value) -> Vec<&Value> {
    fn collect<'a>(list: &'a Value, into: &mut Vec<&'a Value>) {
        for panel in array(list) {
            into.push(panel);
            collect(&panel["panels"], into);
        }
    }
    let mut all = Vec::new();
    collect(&dashboard["panels"], &mut all);
    all
}

/// The query of a query variable: a string, or `{"query": ...}`.
fn variable_query(variable: &Value) -> &str {
    match &variable["query"] {
        Value::String(query) => query,
        query => text(&query["query"]),
    }
}

/// `label_values(SELECTOR, LABEL)`: the selector and the label.
fn label_values(query: &str) -> Option<(&str, &str)> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, label) = inner.rsplit_once(',')?;
    Some((selector.trim(), label.trim()))
}

/// Every PromQL expression of the dashboard, with where it stands: the panels' queries, the
/// selectors of the query variables and the annotation queries.
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut queries = Vec::new();
    for panel in panels(dashboard) {
        for target in array(&panel["targets"]) {
            let place = format!(
                "panel {} \"{}\" query {}",
                panel["id"],
                text(&panel["title"]),
                text(&target["refId"])
            );
            queries.push((place, text(&target["expr"]).to_owned()));
        }
    }
    for variable in array(&dashboard["templating"]["list"]) {
        if variable["type"] == "query" {
            let query = variable_query(variable);
            let (selector, _) = label_values(query).unwrap_or_else(|| {
                panic!(
                    "variable {}: label_values(...), not {query}",
                    variable["name"]
                )
            });
            let place = format!("variable {}", variable["name"]);
            queries.push((place, selector.to_owned()));
        }
    }
    for annotation in array(&dashboard["annotations"]["list"]) {
        if let Some(expr) = annotation["expr"].as_str() {
            let place = format!("annotation {}", annotation["name"]);
            queries.push((place, expr.to_owned()));
        }
    }
    queries
}

/// Every PromQL expression of the rules and their tests, with where it stands: the rules'
/// expressions and the tests' input series.
fn rule_expressions() -> Vec<(String, String)> {
    let mut exprs: Vec<(String, String)> = alert_rules()
        .iter()
        .map(|rule| {
            let place = format!("rule {}", text(&rule["alert"]));
            (place, text(&rule["expr"]).to_owned())
        })
        .collect();
    let tests = yaml(&rule_tests_path());
    for (n, test) in array(&tests["tests"]).iter().enumerate() {
        for input in array(&test["input_series"]) {
            let place = format!("alerts.test.yml test {}", n + 1);
            exprs.push((place, text(&input["series"]).to_owned()));
        }
    }
    exprs
}

/// The dashboard's expression with each template variable replaced by the value its "All"
/// selects; panics when it uses a variable the dashboard does not define.
fn with_all_values(dashboard: &Value, expr: &str) -> String {
    let mut variables: Vec<(&str, &str)> = array(&dashboard["templating"]["list"])
        .iter()
        .map(|v| {
            let all = v["allValue"].as_str().unwrap_or(".*");
            (text(&v["name"]), all)
        })
        .collect();
    variables.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut expr = expr.to_owned();
    for (name, all) in variables {
        expr = expr
            .replace(&format!("${{{name}}}"), all)
            .replace(&format!("${name}"), all);
    }
    assert!(
        !expr.contains('$'),
        "a variable the dashboard does not define: {expr}"
    );
    expr
}

// The tests.

#[test]
fn the_alerting_rules_pass_promtool_check_and_their_unit_tests() {
    promtool(&["check", "rules"], &rules_path());
    promtool(&["test", "rules"], &rule_tests_path());
}

#[test]
fn every_alert_is_tested_firing_and_not_firing_and_names_its_queue() {
    let rules = alert_rules();
    let mut names = BTreeSet::new();
    for rule in &rules {
        let name = text(&rule["alert"]);
        assert!(
            !name.is_empty(),
            "alerts.yml holds alerting rules only: {rule}"
        );
        assert!(names.insert(name), "{name} is defined twice");
        assert!(rule["for"].is_string(), "{name} has a for: delay");
        let severity = text(&rule["labels"]["severity"]);
        assert!(
            ["critical", "warning"].contains(&severity),
            "{name}: severity critical or warning, not {severity:?}"
        );
        let on_a_queue = !scan(text(&rule["expr"])).selectors.is_empty();
        for annotation in ["summary", "description"] {
            let said = text(&rule["annotations"][annotation]);
            assert!(!said.trim().is_empty(), "{name} has a {annotation}");
            for label in ["$labels.repo", "$labels.branch"] {
                assert!(
                    !on_a_queue || said.contains(label),
                    "{name}: its {annotation} names the queue ({label})"
                );
            }
        }
    }

    let tests = yaml(&rule_tests_path());
    let mut firing = BTreeSet::new();
    let mut not_firing = BTreeSet::new();
    for test in array(&tests["tests"]) {
        for case in array(&test["alert_rule_test"]) {
            let name = text(&case["alertname"]);
            assert!(
                names.contains(name),
                "alerts.test.yml tests an unknown alert {name}"
            );
            if array(&case["exp_alerts"]).is_empty() {
                not_firing.insert(name);
            } else {
                firing.insert(name);
            }
        }
    }
    for name in &names {
        assert!(firing.contains(name), "no test of {name} firing");
        assert!(not_firing.contains(name), "no test of {name} not firing");
    }
}

#[test]
fn rules_and_dashboard_name_only_exported_families_and_labels() {
    let exported = Exported::render();
    let known_labels = exported.all_labels();

    // Every mq_ name anywhere in the files: the rules' comments, the dashboard's titles and
    // descriptions included.
    let dashboard = dashboard();
    let mut texts = vec![
        ("alerts.yml", read(&rules_path())),
        ("alerts.test.yml", read(&rule_tests_path())),
    ];
    texts.extend(strings(&dashboard).map(|s| ("merge-queue.json", s.to_owned())));
    for (file, said) in &texts {
        for name in mq_names(said) {
            assert!(
                exported.family_of(&name).is_some(),
                "{file}: {name} is not exported; the service exports {:?}",
                exported.families.keys()
            );
        }
    }

    let mut exprs = rule_expressions();
    exprs.extend(dashboard_queries(&dashboard));
    let mut selected = 0;
    for (place, expr) in &exprs {
        let found = scan(expr);
        for selector in &found.selectors {
            let labels = exported.samples.get(&selector.name).unwrap_or_else(|| {
                panic!(
                    "{place}: {} has no series (a histogram is read through _bucket, _sum \
                     and _count); the service exports {:?}",
                    selector.name,
                    exported.samples.keys()
                )
            });
            for matcher in &selector.matchers {
                let label = matcher.label.as_str();
                if TARGET_LABELS.contains(&label) {
                    continue;
                }
                let values = labels.get(label).unwrap_or_else(|| {
                    panic!(
                        "{place}: {} has no label {label}; it has {:?}",
                        selector.name,
                        labels.keys()
                    )
                });
                // The service names the values of its own labels; a queue's repository and
                // branch are the queue's (the rules' tests make up their own).
                if !place.starts_with("alerts.test.yml") {
                    for value in matcher.named_values() {
                        assert!(
                            values.contains(value),
                            "{place}: {} has no series with {label}=\"{value}\"; it has \
                             {values:?}",
                            selector.name
                        );
                    }
                }
            }
            selected += 1;
        }
        for label in &found.grouping {
            assert!(
                known_labels.contains(label),
                "{place}: no series has the label {label}: {expr}"
            );
        }
        if !found.selectors.is_empty() {
            for function in &found.functions {
                assert!(
                    !COUNTER_FUNCTIONS.contains(&function.as_str()),
                    "{place}: {function}() of rolling one-hour figures, which are read as \
                     they are: {expr}"
                );
            }
        }
    }
    assert!(
        selected > 20,
        "the expressions select the service's metrics"
    );
}

#[test]
fn the_dashboard_shows_every_exported_family() {
    let exported = Exported::render();
    let dashboard = dashboard();
    let shown: BTreeSet<&str> = panels(&dashboard)
        .iter()
        .flat_map(|panel| array(&panel["targets"]))
        .flat_map(|target| scan(text(&target["expr"])).selectors)
        .filter_map(|selector| exported.family_of(&selector.name))
        .collect();
    let missing: Vec<&String> = exported
        .families
        .keys()
        .filter(|family| !shown.contains(family.as_str()))
        .collect();
    assert!(missing.is_empty(), "no panel shows {missing:?}");
}

#[test]
fn the_dashboard_is_importable() {
    let dashboard = dashboard();
    assert!(
        dashboard["id"].is_null(),
        "no database id: Grafana assigns one"
    );
    assert!(!text(&dashboard["uid"]).is_empty(), "a uid");
    assert!(!text(&dashboard["title"]).is_empty(), "a title");
    assert!(dashboard["schemaVersion"].as_u64() >= Some(36));

    let variables = array(&dashboard["templating"]["list"]);
    let datasource = variables.iter().find(|v| v["name"] == "datasource");
    assert_eq!(
        datasource.map(|v| (&v["type"], &v["query"])),
        Some((&json!("datasource"), &json!("prometheus"))),
        "a data source variable choosing among the Prometheus data sources"
    );
    let on_the_variable = |source: &Value| {
        source["type"] == "prometheus" && DATASOURCE_VARIABLES.contains(&text(&source["uid"]))
    };
    for variable in variables.iter().filter(|v| v["type"] == "query") {
        assert!(
            on_the_variable(&variable["datasource"]),
            "variable {} queries ${{datasource}}",
            variable["name"]
        );
    }

    for annotation in array(&dashboard["annotations"]["list"]) {
        assert!(
            annotation["builtIn"] == 1 || on_the_variable(&annotation["datasource"]),
            "annotation {} queries ${{datasource}}",
            annotation["name"]
        );
    }

    let panels = panels(&dashboard);
    assert!(!panels.is_empty(), "the dashboard has panels");
    let mut ids = BTreeSet::new();
    let mut placed: Vec<(u64, [u64; 4])> = Vec::new();
    for panel in &panels {
        let id = panel["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("a panel without a numeric id: {}", panel["title"]));
        let title = text(&panel["title"]);
        assert!(ids.insert(id), "panel id {id} ({title}) is used twice");
        assert!(!title.is_empty(), "panel {id} has a title");
        assert!(
            on_the_variable(&panel["datasource"]),
            "panel {id} ({title}) has the data source ${{datasource}}, not {}",
            panel["datasource"]
        );
        let mut refs = BTreeSet::new();
        for target in array(&panel["targets"]) {
            let r = text(&target["refId"]);
            assert!(refs.insert(r), "panel {id} ({title}): refId {r:?} twice");
            assert!(
                on_the_variable(&target["datasource"]),
                "panel {id} ({title}) query {r}: data source ${{datasource}}"
            );
            assert!(
                !text(&target["expr"]).trim().is_empty(),
                "panel {id} ({title}) query {r} has an expression"
            );
        }
        assert!(
            panel["type"] == "row" || !refs.is_empty(),
            "panel {id} ({title}) has queries"
        );
        let grid = &panel["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| {
            grid[k]
                .as_u64()
                .unwrap_or_else(|| panic!("panel {id} ({title}) has gridPos.{k}"))
        });
        assert!(
            w > 0 && h > 0 && x + w <= 24,
            "panel {id} ({title}) fits in the 24 columns"
        );
        for (other, [ox, oy, ow, oh]) in &placed {
            let apart = x + w <= *ox || ox + ow <= x || y + h <= *oy || oy + oh <= y;
            assert!(apart, "panels {other} and {id} ({title}) overlap");
        }
        placed.push((id, [x, y, w, h]));
    }
}

#[test]
fn every_dashboard_query_returns_series_of_a_rendered_document() {
    let exported = Exported::render();
    let dashboard = dashboard();
    // Queries on the service's metrics only: the alerts' series exist only while one fires.
    let queries: Vec<(String, String)> = dashboard_queries(&dashboard)
        .into_iter()
        .filter(|(_, expr)| !scan(expr).selectors.is_empty())
        .map(|(place, expr)| (place, with_all_values(&dashboard, &expr)))
        .collect();
    assert!(
        queries.len() > 20,
        "the dashboard queries the service's metrics"
    );

    // An hour of the document, one sample a minute; every query evaluated at its end.
    let input: Vec<Value> = exported
        .series
        .iter()
        .map(|(series, value)| json!({"series": series, "values": format!("{value}x60")}))
        .collect();
    let cases: Vec<Value> = queries
        .iter()
        .map(|(_, expr)| {
            json!({
                "expr": format!("group({expr})"),
                "eval_time": "60m",
                "exp_samples": [{"labels": "{}", "value": 1}],
            })
        })
        .collect();
    let test = json!({
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": input, "promql_expr_test": cases}],
    });
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("dashboard.test.yml");
    std::fs::write(&file, test.to_string()).expect("test written");

    let out = Command::new(&binaries().promtool)
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .expect("promtool runs");
    let listed: Vec<String> = queries
        .iter()
        .map(|(place, expr)| format!("{place}: {expr}"))
        .collect();
    assert!(
        out.status.success(),
        "a dashboard query returned nothing (got: nil) or did not parse:\n{}{}\nthe queries:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        listed.join("\n")
    );
}

#[test]
fn the_promql_reader_finds_selectors_labels_and_functions() {
    let found = scan(
        r#"sum by (repo, le) (rate(mq_a_bucket{repo=~"$repo", x = "a,}\"b"}[1h] offset 1h)) / on(repo) group_left mq_b > 0.5 and ALERTS{alertname="y"} or mq_c{state!="on",c=~"m|f"}"#,
    );
    let matcher = |label: &str, op: &str, value: &str| Matcher {
        label: label.into(),
        op: op.into(),
        value: value.into(),
    };
    let selectors: Vec<(&str, &[Matcher])> = found
        .selectors
        .iter()
        .map(|s| (s.name.as_str(), s.matchers.as_slice()))
        .collect();
    assert_eq!(
        selectors,
        [
            (
                "mq_a_bucket",
                &[matcher("repo", "=~", "$repo"), matcher("x", "=", "a,}\"b")][..]
            ),
            ("mq_b", &[]),
            (
                "mq_c",
                &[matcher("state", "!=", "on"), matcher("c", "=~", "m|f")]
            ),
        ]
    );
    let named: Vec<Vec<&str>> = found.selectors[2]
        .matchers
        .iter()
        .chain(&found.selectors[0].matchers)
        .map(Matcher::named_values)
        .collect();
    assert_eq!(named, [vec!["on"], vec!["m", "f"], vec![], vec!["a,}\"b"]]);
    assert_eq!(found.grouping, ["repo", "le", "repo"]);
    assert_eq!(found.functions, ["rate"]);
    assert_eq!(
        mq_names("see mq_a_bucket, mq_b{} and mq_*; mq_c: a gauge"),
        BTreeSet::from(["mq_a_bucket", "mq_b", "mq_c"].map(String::from))
    );
    assert_eq!(
        label_values(r#"label_values(mq_a{repo=~"$repo"}, branch)"#),
        Some((r#"mq_a{repo=~"$repo"}"#, "branch"))
    );
}
