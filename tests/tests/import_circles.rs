//! No import circle between the files of a crate: when file A uses something of file B
//! (`use crate::b::...`, `super::b::...`, or a path `crate::b::x` in the code), B must not use
//! A, directly or through other files of the crate. A module may use its parents (a child
//! module builds on what its parent declares); that is not counted. Doc comments and unit
//! test modules are left out.
//!
//! The check reads the sources as text: it knows the shapes of paths this workspace writes,
//! and is checked against a made-up crate with a circle below.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose files are checked.
const CRATES: [&str; 18] = [
    "shared/core",
    "shared/junit",
    "shared/store",
    "shared/githost",
    "shared/metrics",
    "shared/wire",
    "shared/service",
    "shared/http",
    "shared/lambda",
    "shared/simulation",
    "shared/advisor",
    "infra/local-gateway",
    "infra/cli",
    "infra/admin",
    "infra/tables",
    "infra/health-eval",
    "infra/advice-eval",
    "tests",
];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Module path (`engine::view`) → its text, for every file under `src`.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).unwrap().with_extension("");
                let mut parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                let text = std::fs::read_to_string(&path).unwrap();
                found.insert(parts.join("::"), code_of(&text));
            }
        }
    }
    found
}

/// The text without comments and without the unit tests at the end of the file.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path that starts with `crate::`, `super::` or `self::`, with the names a `use`
/// brings from braces (`use crate::a::{b, c::d}` gives `crate::a::b` and `crate::a::c::d`).
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start).map(|i| i + from) {
            from = i + start.len();
            let before = i.checked_sub(1).map(|j| bytes[j]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
                continue;
            }
            let end = code[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| i + e);
            let head = code[i..end].trim_end_matches(':').to_owned();
            if code[end..].starts_with('{') {
                let close = code[end..].find('}').map_or(code.len(), |e| end + e);
                for name in code[end + 1..close].split(',') {
                    let name = name.trim().split([' ', '{']).next().unwrap_or("");
                    if !name.is_empty() {
                        paths.push(format!("{head}::{name}"));
                    }
                }
            }
            paths.push(head);
        }
    }
    paths
}

/// The module of `modules` that `path`, written in module `at`, names.
fn resolve(path: &str, at: &str, modules: &BTreeMap<String, String>) -> Option<String> {
    let mut segments: Vec<&str> = path.split("::").collect();
    let mut base: Vec<&str> = if at.is_empty() {
        Vec::new()
    } else {
        at.split("::").collect()
    };
    match segments.first().copied() {
        Some("crate") => base.clear(),
        Some("self") => {}
        Some("super") => {
            base.pop();
            while segments.get(1) == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
        }
        _ => return None,
    }
    let rest = &segments[1..];
    (0..=rest.len()).rev().find_map(|k| {
        let candidate: Vec<&str> = base.iter().chain(&rest[..k]).copied().collect();
        let name = candidate.join("::");
        modules.contains_key(&name).then_some(name)
    })
}

fn graph(modules: &BTreeMap<String, String>) -> Graph {
    let mut graph = Graph::new();
    for (module, code) in modules {
        let uses = graph.entry(module.clone()).or_default();
        for path in paths_in(code) {
            let Some(target) = resolve(&path, module, modules) else {
                continue;
            };
            let is_parent = target.is_empty() || module.starts_with(&format!("{target}::"));
            if target != *module && !is_parent {
                uses.insert(target);
            }
        }
    }
    graph
}

/// The groups of modules that reach each other (strongly connected, more than one).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (m, reached) in &reaches {
        if !reached.contains(*m) || groups.iter().any(|g| g.contains(m)) {
            continue;
        }
        let group: Vec<String> = reached
            .iter()
            .filter(|other| reaches[other].contains(*m))
            .cloned()
            .collect();
        groups.push(group);
    }
    groups
}

#[test]
fn no_file_of_a_crate_imports_in_a_circle() {
    let mut found = Vec::new();
    for krate in CRATES {
        let modules = modules(&root().join(krate).join("src"));
        assert!(
            modules.len() > 1 || krate == "shared/junit",
            "{krate}: {modules:?}"
        );
        for group in circles(&graph(&modules)) {
            found.push(format!("{krate}: {}", group.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_a_circle_and_ignores_parents_and_comments() {
    let modules: BTreeMap<String, String> = [
        ("", "mod a; mod b; mod c;"),
        ("a", "use crate::b::{Thing, other::X};"),
        ("b", "use super::c;"),
        ("c", "fn f() { crate::a::run(); }"),
        ("b::other", "use super::Thing; // crate::c::nothing"),
    ]
    .into_iter()
    .map(|(m, text)| (m.to_owned(), code_of(text)))
    .collect();
    let graph = graph(&modules);
    assert_eq!(graph["b::other"], BTreeSet::new(), "a parent and a comment");
    assert_eq!(
        graph["a"],
        BTreeSet::from(["b".to_owned(), "b::other".to_owned()])
    );
    assert_eq!(circles(&graph), [vec!["a", "b", "c"]]);
}
