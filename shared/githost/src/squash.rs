//! The commit a squash merge writes for a pull request, as GitHub's own squash merge writes it:
//! titled and described as the repository's settings ask (`squash_merge_commit_title`,
//! `squash_merge_commit_message`), authored by the pull request's author, with a
//! `Co-authored-by` trailer for every other author of its commits (and every co-author their
//! messages name), so that changelog tools, `Fixes #N` keywords and attribution work as they
//! do with GitHub's button.

use mq_core::ids::PrNumber;

/// Where a squash commit's title comes from (`squash_merge_commit_title`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TitleFrom {
    /// The pull request's title.
    PrTitle,
    /// The commit's title when the pull request has one commit, else the pull request's.
    #[default]
    CommitOrPrTitle,
}

/// Where a squash commit's message comes from (`squash_merge_commit_message`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyFrom {
    /// The pull request's description.
    PrBody,
    /// The commits' messages.
    #[default]
    CommitMessages,
    Blank,
}

/// A repository's squash settings; GitHub's defaults for what it does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SquashStyle {
    pub title: TitleFrom,
    pub body: BodyFrom,
}

impl SquashStyle {
    /// From the settings as the REST API spells them (`PR_TITLE`, `PR_BODY`, ...).
    pub fn from_settings(title: Option<&str>, body: Option<&str>) -> Self {
        Self {
            title: match title {
                Some("PR_TITLE") => TitleFrom::PrTitle,
                _ => TitleFrom::CommitOrPrTitle,
            },
            body: match body {
                Some("PR_BODY") => BodyFrom::PrBody,
                Some("BLANK") => BodyFrom::Blank,
                _ => BodyFrom::CommitMessages,
            },
        }
    }
}

/// A commit's author or co-author.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub name: String,
    pub email: String,
}

/// One commit of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrCommit {
    pub message: String,
    pub author: Person,
    /// The account its author's email belongs to on the host, if any.
    pub account: Option<String>,
}

/// What a squash commit is written from.
#[derive(Debug, Clone, Copy)]
pub struct Squashed<'a> {
    pub number: PrNumber,
    pub title: &'a str,
    pub body: &'a str,
    /// The pull request's author: the commit's author.
    pub author: &'a Person,
    /// The pull request's author's account: their commits are theirs, whatever email.
    pub author_account: &'a str,
    /// Its commits, oldest first.
    pub commits: &'a [PrCommit],
}

const TRAILER: &str = "Co-authored-by:";

/// The squash commit's message: `<title> (#N)`, the body `style` asks for, then the
/// co-authors' trailers.
pub fn message(pr: &Squashed<'_>, style: SquashStyle) -> String {
    let only = match pr.commits {
        [one] if style.title == TitleFrom::CommitOrPrTitle => Some(one),
        _ => None,
    };
    let (subject, commit_body) = match only {
        Some(one) => {
            let (subject, body) = one.message.split_once('\n').unwrap_or((&one.message, ""));
            (subject, Some(without_trailers(body)))
        }
        None => (pr.title, None),
    };
    let body = match (style.body, commit_body) {
        (BodyFrom::Blank, _) => String::new(),
        (BodyFrom::PrBody, _) => pr.body.trim().to_owned(),
        (BodyFrom::CommitMessages, Some(body)) => body,
        (BodyFrom::CommitMessages, None) => pr
            .commits
            .iter()
            .map(|c| format!("* {}", without_trailers(&c.message)))
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    let title = format!("{} (#{})", subject.trim(), pr.number);
    let trailers = co_authors(pr)
        .iter()
        .map(|p| format!("{TRAILER} {} <{}>", p.name, p.email))
        .collect::<Vec<_>>()
        .join("\n");
    [title, body, trailers]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The people the commits name besides the pull request's author, each once (by email), in
/// the order they first appear: the commits' authors (but the pull request's author's own
/// commits, by whichever email), and the co-authors their messages name.
fn co_authors(pr: &Squashed<'_>) -> Vec<Person> {
    let mut seen = vec![pr.author.email.to_lowercase()];
    let mut people = Vec::new();
    let named = pr.commits.iter().flat_map(|c| {
        let own = c.account.as_deref() == Some(pr.author_account);
        let author = (!own).then(|| c.author.clone());
        author
            .into_iter()
            .chain(c.message.lines().filter_map(co_author))
    });
    for person in named {
        let email = person.email.to_lowercase();
        if !email.is_empty() && !seen.contains(&email) {
            seen.push(email);
            people.push(person);
        }
    }
    people
}

/// The person a `Co-authored-by: Name <email>` line names.
fn co_author(line: &str) -> Option<Person> {
    let rest = line.trim().strip_prefix(TRAILER)?;
    let (name, email) = rest.trim().strip_suffix('>')?.rsplit_once('<')?;
    Some(Person {
        name: name.trim().to_owned(),
        email: email.trim().to_owned(),
    })
}

/// A message without its `Co-authored-by` lines (they go, once each, to the end), trimmed.
fn without_trailers(message: &str) -> String {
    message
        .lines()
        .filter(|l| co_author(l).is_none())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(name: &str, email: &str) -> Person {
        Person {
            name: name.to_owned(),
            email: email.to_owned(),
        }
    }

    fn commit(message: &str, author: &Person) -> PrCommit {
        PrCommit {
            message: message.to_owned(),
            author: author.clone(),
            account: Some(author.name.to_lowercase()),
        }
    }

    #[test]
    fn one_commit_gives_its_title_and_body_by_default() {
        let alice = person("Alice", "1+alice@users.noreply.github.com");
        let at_work = person("Alice", "alice@example.com");
        let commits = [commit("feat: parse dates\n\nFixes #12", &at_work)];
        let pr = Squashed {
            number: 7,
            title: "Parse dates",
            body: "A longer story.",
            author: &alice,
            author_account: "alice",
            commits: &commits,
        };
        assert_eq!(
            message(&pr, SquashStyle::default()),
            "feat: parse dates (#7)\n\nFixes #12"
        );
        let pr_title = SquashStyle::from_settings(Some("PR_TITLE"), Some("PR_BODY"));
        assert_eq!(
            message(&pr, pr_title),
            "Parse dates (#7)\n\nA longer story."
        );
        let blank = SquashStyle::from_settings(Some("PR_TITLE"), Some("BLANK"));
        assert_eq!(message(&pr, blank), "Parse dates (#7)");
    }

    #[test]
    fn several_commits_are_listed_and_their_other_authors_credited_once() {
        let alice = person("Alice", "1+alice@users.noreply.github.com");
        let bob = person("Bob", "bob@example.com");
        let commits = [
            commit("feat: add X", &alice),
            commit(
                "Apply suggestions\n\nCo-authored-by: Carol <carol@example.com>",
                &bob,
            ),
            commit("fix: Y\n\nBREAKING CHANGE: Z", &bob),
        ];
        let pr = Squashed {
            number: 9,
            title: "feat: X and Y",
            body: "",
            author: &alice,
            author_account: "alice",
            commits: &commits,
        };
        assert_eq!(
            message(&pr, SquashStyle::default()),
            "feat: X and Y (#9)\n\n* feat: add X\n\n* Apply suggestions\n\n* fix: Y\n\nBREAKING \
             CHANGE: Z\n\nCo-authored-by: Bob <bob@example.com>\nCo-authored-by: Carol \
             <carol@example.com>"
        );
    }
}
