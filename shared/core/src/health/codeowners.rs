//! CODEOWNERS: the owners of a file are those of the last rule whose pattern matches it.
//!
//! Patterns follow GitHub's rules: `*` and `?` stay within one path segment, `**` spans
//! segments; a pattern with a `/` at its start or middle is anchored at the root, otherwise it
//! matches at any depth; a pattern matching a directory matches everything below it, except a
//! pattern ending in `/*` (only the directory's own files). A rule without owners removes them.

/// One rule: a pattern and its owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    segments: Vec<String>,
    anchored: bool,
    /// The pattern ends in `/*`: files directly inside, not deeper.
    shallow: bool,
    pub owners: Vec<String>,
}

/// A parsed CODEOWNERS file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CodeOwners {
    rules: Vec<Rule>,
}

/// Longest CODEOWNERS text accepted (GitHub's own limit is 3 MB).
pub const MAX_CODEOWNERS_BYTES: usize = 3 * 1024 * 1024;

impl CodeOwners {
    /// Parses the text; blank lines, comments and malformed lines are skipped.
    pub fn parse(text: &str) -> Self {
        let rules = text.lines().filter_map(parse_line).collect();
        Self { rules }
    }

    /// The owners of `path` (relative to the repository root): the last matching rule's.
    pub fn owners_of(&self, path: &str) -> Vec<String> {
        let path = path.trim_start_matches("./").trim_start_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if segments.is_empty() {
            return Vec::new();
        }
        self.rules
            .iter()
            .rev()
            .find(|rule| rule.matches(&segments))
            .map(|rule| rule.owners.clone())
            .unwrap_or_default()
    }
}

fn parse_line(line: &str) -> Option<Rule> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let pattern = parts.next()?;
    let owners: Vec<String> = parts
        .take_while(|p| !p.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let trimmed = pattern.trim_end_matches('/');
    let anchored = pattern.starts_with('/') || trimmed.trim_start_matches('/').contains('/');
    let body = trimmed.trim_start_matches('/');
    if body.is_empty() {
        return None;
    }
    let segments: Vec<String> = body.split('/').map(str::to_owned).collect();
    Some(Rule {
        shallow: segments.len() > 1 && segments.last().is_some_and(|s| s == "*"),
        segments,
        anchored,
        owners,
    })
}

impl Rule {
    fn matches(&self, path: &[&str]) -> bool {
        let pattern: Vec<&str> = self.segments.iter().map(String::as_str).collect();
        let starts: Vec<usize> = if self.anchored {
            vec![0]
        } else {
            (0..path.len()).collect()
        };
        starts.into_iter().any(|start| {
            let rest = &path[start..];
            // The path itself, or (for directory patterns) one of its directories.
            let prefixes = if self.shallow {
                rest.len()..=rest.len()
            } else {
                1..=rest.len()
            };
            prefixes
                .into_iter()
                .any(|n| segments_match(&pattern, &rest[..n]))
        })
    }
}

/// Matches pattern segments (with `**`) against path segments.
fn segments_match(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| segments_match(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((segment, path_rest)) => {
                glob(first.as_bytes(), segment.as_bytes()) && segments_match(rest, path_rest)
            }
            None => false,
        },
    }
}

/// `*` (any run) and `?` (one character) within a segment.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
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
        CodeOwners::parse(EXAMPLE).owners_of(path)
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
    }

    #[test]
    fn a_rule_without_owners_removes_them() {
        assert!(owners("apps/github/main.py").is_empty());
    }

    #[test]
    fn slash_star_patterns_are_shallow_and_unanchored_names_match_anywhere() {
        let co = CodeOwners::parse("docs/* @docs\n*.test.js @qa\n");
        assert_eq!(co.owners_of("docs/intro.md"), ["@docs"]);
        assert!(co.owners_of("docs/build/intro.md").is_empty());
        assert_eq!(co.owners_of("src/__tests__/math.test.js"), ["@qa"]);
        assert!(CodeOwners::parse("").owners_of("a.rs").is_empty());
        assert!(co.owners_of("").is_empty());
    }
}
