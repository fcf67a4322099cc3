//! CODEOWNERS: the owners of a file are those of the last rule whose pattern matches it.
//!
//! Patterns follow GitHub's rules: `*` and `?` stay within one path segment, `**` spans
//! segments; a pattern with a `/` at its start or middle is anchored at the root, otherwise it
//! matches at any depth; a pattern matching a directory matches everything below it, except a
//! pattern ending in `/*` (only the directory's own files). A rule without owners removes them.
//! As on GitHub, `[`, `]`, `{`, `}` and `\` are plain characters, and `**` inside a segment is
//! one `*`.
//!
//! A rule naming a path from the root without wildcards (`/services/billing/`, the bulk of
//! a large monorepo's file) goes into a tree of path segments: a path finds all such rules
//! covering it in one walk down its segments. The other rules' patterns are compiled once into
//! `globset` matchers of up to 1,000 rules each: a path is matched against all the rules of a
//! matcher at once, in time linear in its length whatever the patterns (no backtracking).
//! [`MAX_PATTERNED_RULES`] and [`MAX_PATTERN_BYTES`] bound the matchers, and
//! [`MAX_MATCHING_WORK`] the matching an upload may ask of them.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::collections::HashMap;

/// Longest CODEOWNERS text accepted (GitHub's own limit is 3 MB).
pub const MAX_CODEOWNERS_BYTES: usize = 3 * 1024 * 1024;
/// Most patterned rules ([`CodeOwners::patterned_rules`]) in one CODEOWNERS text. Rules
/// naming a path from the root without wildcards are limited only by the text's size.
pub const MAX_PATTERNED_RULES: usize = 20_000;
/// Longest pattern of a rule.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// Most bytes of a rule's owners together: each test case keeps the owners of its file, and
/// a stored test case has to fit in one DynamoDB item (400 KB).
pub const MAX_OWNERS_BYTES: usize = 4096;
/// Most matching work of one upload: [`CodeOwners::patterned_rules`] times the bytes of the
/// distinct file paths matched. A patterned rule costs up to about a nanosecond per byte of
/// path, so this bounds the matching of an upload to a few seconds; rules naming a path
/// without wildcards cost next to nothing and are not counted.
pub const MAX_MATCHING_WORK: u64 = 1 << 32;

/// Patterned rules compiled into one matcher: a matcher's automaton grows with its patterns,
/// and `globset` refuses one too large, so many rules are matched by several.
const RULES_PER_MATCHER: usize = 1000;

/// A parsed CODEOWNERS file: its rules' owners, and what finds the rules matching a path.
#[derive(Debug, Clone, Default)]
pub struct CodeOwners {
    /// By rule, in the file's order.
    owners: Vec<Vec<String>>,
    /// The rules naming a path from the root without wildcards.
    paths: PathTree,
    /// How many other rules there are.
    patterned: usize,
    /// The other rules, in the file's order.
    matchers: Vec<Matcher>,
}

/// Rules naming a path from the root without wildcards, by the path's segments: a node holds
/// the last rule naming its path.
#[derive(Debug, Clone, Default)]
struct PathTree {
    rule: Option<usize>,
    children: HashMap<String, PathTree>,
}

impl PathTree {
    fn insert(&mut self, segments: &[&str], rule: usize) {
        let mut node = self;
        for segment in segments {
            node = node.children.entry((*segment).to_owned()).or_default();
        }
        node.rule = Some(rule);
    }

    /// The last rule naming `path` or one of its directories.
    fn last_match(&self, path: &str) -> Option<usize> {
        let mut node = self;
        let mut last = None;
        for segment in path.split('/') {
            match node.children.get(segment) {
                Some(child) => {
                    node = child;
                    last = last.max(child.rule);
                }
                None => break,
            }
        }
        last
    }
}

/// The patterns of consecutive patterned rules.
#[derive(Debug, Clone)]
struct Matcher {
    globs: GlobSet,
    /// The rule of each glob (a rule has one or two globs), ascending.
    rule_of: Vec<usize>,
}

impl Matcher {
    fn build(set: GlobSetBuilder, rule_of: Vec<usize>) -> Result<Self, CodeOwnersError> {
        let globs = set
            .build()
            .map_err(|e| CodeOwnersError::TooComplex(e.to_string()))?;
        Ok(Self { globs, rule_of })
    }

    /// The last of its rules matching `path`.
    fn last_match(&self, path: &str) -> Option<usize> {
        let globs = self.globs.matches(path);
        globs.into_iter().map(|glob| self.rule_of[glob]).max()
    }

    /// Its last rule.
    fn last_rule(&self) -> usize {
        self.rule_of.last().copied().unwrap_or_default()
    }
}

/// Why a CODEOWNERS text was refused. Messages are fit for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeOwnersError {
    #[error("has more than {MAX_PATTERNED_RULES} rules with wildcards or matching at any depth")]
    TooManyRules,
    #[error("line {line} has a pattern longer than {MAX_PATTERN_BYTES} bytes")]
    PatternTooLong { line: usize },
    #[error("line {line} names owners longer than {MAX_OWNERS_BYTES} bytes together")]
    OwnersTooLong { line: usize },
    #[error("line {line} has a pattern that cannot be read: {reason}")]
    BadPattern { line: usize, reason: String },
    #[error("has patterns too complex to match: {0}")]
    TooComplex(String),
}

/// A rule's pattern, as it is matched.
enum Pattern<'a> {
    /// A path from the root without wildcards: its segments.
    Path(Vec<&'a str>),
    /// Anything else: the globs a path is matched with.
    Globs(Vec<String>),
}

/// A [`CodeOwners`] being built, rule after rule.
struct Builder {
    done: CodeOwners,
    set: GlobSetBuilder,
    rule_of: Vec<usize>,
}

impl Builder {
    fn new() -> Self {
        Self {
            done: CodeOwners::default(),
            set: GlobSetBuilder::new(),
            rule_of: Vec::new(),
        }
    }

    fn add(
        &mut self,
        line: usize,
        pattern: &str,
        owners: Vec<String>,
    ) -> Result<(), CodeOwnersError> {
        let rule = self.done.owners.len();
        match pattern_of(pattern) {
            None => return Ok(()),
            Some(Pattern::Path(segments)) => self.done.paths.insert(&segments, rule),
            Some(Pattern::Globs(globs)) => self.add_globs(line, rule, &globs)?,
        }
        self.done.owners.push(owners);
        Ok(())
    }

    fn add_globs(
        &mut self,
        line: usize,
        rule: usize,
        globs: &[String],
    ) -> Result<(), CodeOwnersError> {
        let patterned = &mut self.done.patterned;
        *patterned += 1;
        if *patterned > MAX_PATTERNED_RULES {
            return Err(CodeOwnersError::TooManyRules);
        }
        if (*patterned - 1).is_multiple_of(RULES_PER_MATCHER) {
            self.flush()?;
        }
        for glob in globs {
            let glob =
                compile(glob).map_err(|reason| CodeOwnersError::BadPattern { line, reason })?;
            self.set.add(glob);
            self.rule_of.push(rule);
        }
        Ok(())
    }

    /// Compiles the globs added since the last matcher into one.
    fn flush(&mut self) -> Result<(), CodeOwnersError> {
        if self.rule_of.is_empty() {
            return Ok(());
        }
        let set = std::mem::replace(&mut self.set, GlobSetBuilder::new());
        let matcher = Matcher::build(set, std::mem::take(&mut self.rule_of))?;
        self.done.matchers.push(matcher);
        Ok(())
    }

    fn finish(mut self) -> Result<CodeOwners, CodeOwnersError> {
        self.flush()?;
        Ok(self.done)
    }
}

impl CodeOwners {
    /// Parses the text; blank lines and comments are skipped.
    pub fn parse(text: &str) -> Result<Self, CodeOwnersError> {
        let mut builder = Builder::new();
        for (i, line) in text.lines().enumerate() {
            let Some((pattern, owners)) = split_line(line) else {
                continue;
            };
            if pattern.len() > MAX_PATTERN_BYTES {
                return Err(CodeOwnersError::PatternTooLong { line: i + 1 });
            }
            if owners.iter().map(|o| o.len() + 1).sum::<usize>() > MAX_OWNERS_BYTES {
                return Err(CodeOwnersError::OwnersTooLong { line: i + 1 });
            }
            builder.add(i + 1, pattern, owners)?;
        }
        builder.finish()
    }

    /// The number of rules.
    pub fn rules(&self) -> usize {
        self.owners.len()
    }

    /// The number of rules whose matching costs time per byte of path: all but those naming
    /// a path from the root without wildcards.
    pub fn patterned_rules(&self) -> usize {
        self.patterned
    }

    /// Whether matching paths of `path_bytes` bytes in all (each distinct path once) stays
    /// within [`MAX_MATCHING_WORK`].
    pub fn can_match(&self, path_bytes: u64) -> bool {
        (self.patterned as u64).saturating_mul(path_bytes) <= MAX_MATCHING_WORK
    }

    /// The owners of `path` (relative to the repository root): the last matching rule's.
    pub fn owners_of(&self, path: &str) -> Vec<String> {
        let path = normalise(path);
        if path.is_empty() {
            return Vec::new();
        }
        let mut last = self.paths.last_match(&path);
        for matcher in self.matchers.iter().rev() {
            if last.is_some_and(|rule| rule > matcher.last_rule()) {
                break;
            }
            last = last.max(matcher.last_match(&path));
        }
        last.map(|rule| self.owners[rule].clone())
            .unwrap_or_default()
    }
}

/// The pattern and owners of a rule line; `None` for blank lines and comments.
fn split_line(line: &str) -> Option<(&str, Vec<String>)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let pattern = parts.next()?;
    let owners = parts
        .take_while(|p| !p.starts_with('#'))
        .map(str::to_owned)
        .collect();
    Some((pattern, owners))
}

/// How a pattern is matched; `None` for a pattern of slashes only.
fn pattern_of(pattern: &str) -> Option<Pattern<'_>> {
    let trimmed = pattern.trim_end_matches('/');
    let anchored = pattern.starts_with('/') || trimmed.trim_start_matches('/').contains('/');
    let body = trimmed.trim_start_matches('/');
    if body.is_empty() {
        return None;
    }
    if anchored && !body.contains(['*', '?']) {
        let segments = body.split('/').filter(|s| !s.is_empty()).collect();
        return Some(Pattern::Path(segments));
    }
    let segments: Vec<String> = body.split('/').map(segment_glob).collect();
    let shallow = segments.len() > 1 && segments.last().is_some_and(|s| s == "*");
    let glob = match anchored {
        true => segments.join("/"),
        false => format!("**/{}", segments.join("/")),
    };
    Some(Pattern::Globs(match shallow {
        true => vec![glob],
        false => vec![format!("{glob}/**"), glob],
    }))
}

/// One segment of a pattern as a glob: `**` alone spans segments; elsewhere a run of `*` is
/// one `*`; `[`, `]`, `{`, `}` and `\` are escaped (plain characters on GitHub).
fn segment_glob(segment: &str) -> String {
    if segment == "**" {
        return segment.to_owned();
    }
    let mut out = String::with_capacity(segment.len());
    for c in segment.chars() {
        match c {
            '*' if out.ends_with('*') => {}
            '[' | ']' | '{' | '}' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn compile(glob: &str) -> Result<Glob, String> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// The path without a leading `./` or `/`, and without empty segments.
fn normalise(path: &str) -> String {
    let path = path.trim_start_matches("./").trim_start_matches('/');
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    segments.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "
# GitHub's documented example, abridged
*       @global-owner1 @global-owner2
*.js    @js-owner #This is an inline comment.
*.go docs@example.com
/build/logs/ @doctocat
docs/*  docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
";

    fn owners(path: &str) -> Vec<String> {
        CodeOwners::parse(EXAMPLE).unwrap().owners_of(path)
    }

    fn parse(text: &str) -> CodeOwners {
        CodeOwners::parse(text).unwrap()
    }

    #[test]
    fn the_last_matching_rule_wins() {
        assert_eq!(owners("README.md"), ["@global-owner1", "@global-owner2"]);
        assert_eq!(owners("src/app.js"), ["@js-owner"]);
        assert_eq!(owners("pkg/calc/calc.go"), ["docs@example.com"]);
        assert_eq!(owners("scripts/deploy.sh"), ["@doctocat", "@octocat"]);
    }

    #[test]
    fn directory_patterns_cover_their_contents() {
        assert_eq!(
            owners("build/logs/today/run.txt"),
            ["@octocat"],
            "**/logs is later"
        );
        assert_eq!(owners("docs/guide/deep/page.md"), ["@doctocat"]);
        assert_eq!(owners("apps/web/main.py"), ["@octocat"]);
        assert_eq!(owners("./apps//web/main.py"), ["@octocat"]);
    }

    #[test]
    fn a_rule_without_owners_removes_them() {
        assert!(owners("apps/github/main.py").is_empty());
    }

    #[test]
    fn slash_star_patterns_are_shallow_and_unanchored_names_match_anywhere() {
        let co = parse("docs/* @docs\n*.test.js @qa\n");
        assert_eq!(co.owners_of("docs/intro.md"), ["@docs"]);
        assert!(co.owners_of("docs/build/intro.md").is_empty());
        assert_eq!(co.owners_of("src/__tests__/math.test.js"), ["@qa"]);
        assert!(parse("").owners_of("a.rs").is_empty());
        assert!(co.owners_of("").is_empty());
    }

    #[test]
    fn wildcards_stay_in_their_segment_and_brackets_are_plain() {
        let co = parse("src/*/mod.rs @one\n/lib/a**b.rs @two\n/x/[ab].rs @three\n{a,b}.md @four\n");
        assert_eq!(co.owners_of("src/core/mod.rs"), ["@one"]);
        assert!(co.owners_of("src/core/deep/mod.rs").is_empty());
        assert_eq!(co.owners_of("lib/a-anything-b.rs"), ["@two"]);
        assert!(
            co.owners_of("lib/a/b.rs").is_empty(),
            "** inside a segment is one *"
        );
        assert_eq!(co.owners_of("x/[ab].rs"), ["@three"]);
        assert!(co.owners_of("x/a.rs").is_empty());
        assert_eq!(co.owners_of("docs/{a,b}.md"), ["@four"]);
        assert!(co.owners_of("a.md").is_empty());
    }

    /// A backtracking matcher takes exponential time on this pattern and path (this test
    /// would not finish); `cargo bench -p mq-core --bench codeowners` measures the time.
    #[test]
    fn adversarial_patterns_are_matched() {
        let pattern = format!("{}b", "*a".repeat(40));
        let co = parse(&format!("{pattern} @slow\n"));
        let path = "a".repeat(4000);
        assert!(co.owners_of(&path).is_empty());
        assert_eq!(co.owners_of(&format!("{path}b")), ["@slow"]);
    }

    #[test]
    fn path_rules_and_patterned_rules_keep_the_files_order() {
        let co = parse("/src/ @a\n*.rs @b\n/src/gen/ @c\nlogs @d\n/src/gen/logs/keep/ @e\n");
        assert_eq!(co.owners_of("src/x.py"), ["@a"]);
        assert_eq!(co.owners_of("src/x.rs"), ["@b"]);
        assert_eq!(co.owners_of("src/gen/x.rs"), ["@c"]);
        assert_eq!(co.owners_of("src/gen/logs/x.txt"), ["@d"]);
        assert_eq!(co.owners_of("src/gen/logs/keep/x.rs"), ["@e"]);
        assert_eq!(co.owners_of("src"), ["@a"]);
        assert!(co.owners_of("srcs/x.py").is_empty());
    }

    #[test]
    fn only_patterned_rules_count_toward_the_matching_work() {
        let co = parse("/src/app/ @a\ndocs/guide @b\n*.js @c\nlogs @d\n/x/*/y @e\n/a?c @f\n");
        assert_eq!((co.rules(), co.patterned_rules()), (6, 4));
        assert!(co.can_match(MAX_MATCHING_WORK / 4));
        assert!(!co.can_match(MAX_MATCHING_WORK / 4 + 1));
        assert!(parse("/src/ @a\n").can_match(u64::MAX));
    }

    #[test]
    fn too_many_rules_or_too_long_a_pattern_is_refused() {
        let many = "*.a @x\n".repeat(MAX_PATTERNED_RULES + 1);
        assert_eq!(
            CodeOwners::parse(&many).unwrap_err(),
            CodeOwnersError::TooManyRules
        );
        let paths = "/a/b/ @x\n".repeat(MAX_PATTERNED_RULES + 1);
        assert_eq!(CodeOwners::parse(&paths).unwrap().patterned_rules(), 0);
        let long = format!("# comment\n/{} @x\n", "a".repeat(MAX_PATTERN_BYTES));
        assert_eq!(
            CodeOwners::parse(&long).unwrap_err().to_string(),
            "line 2 has a pattern longer than 1024 bytes"
        );
        // The same owner 400,000 times compresses to a few KiB, and would be copied into
        // every test case of the file.
        let crowd = format!("* {}\n", "@o ".repeat(400_000));
        assert_eq!(
            CodeOwners::parse(&crowd).unwrap_err().to_string(),
            "line 1 names owners longer than 4096 bytes together"
        );
        let team = format!("* {}\n", "@acme/team ".repeat(300));
        assert_eq!(
            CodeOwners::parse(&team).unwrap().owners_of("a.rs").len(),
            300
        );
    }
}
