//! Comment commands: `/service merge [--priority P] [--no-batch]` and `/service cancel`, on a
//! line of their own in a pull request comment, outside code and HTML comments (where a
//! command is shown, not given). Words are read in any case.

use mq_core::priority::Priority;

/// A command a comment gives the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentCommand {
    /// Submit the pull request; `priority` is `None` when the comment gave none.
    Merge {
        priority: Option<Priority>,
        no_batch: bool,
    },
    Cancel,
}

/// A `/service` line the queue cannot follow; the message says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidCommand(pub String);

const PREFIX: &str = "/service";
const USAGE: &str = "use `/service merge [--priority <0-255|urgent|high|medium|low>] [--no-batch]` or `/service cancel`";

/// The command in a comment's body: `None` when no line of its prose (`prose_lines`) starts
/// with `/service`.
pub fn parse_command(body: &str) -> Option<Result<CommentCommand, InvalidCommand>> {
    let line = prose_lines(body).find(|line| {
        let prefixed = line.get(..PREFIX.len());
        let rest = line.get(PREFIX.len()..).unwrap_or_default();
        prefixed.is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
            && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    })?;
    let mut words = line.split_whitespace().skip(1);
    Some(match words.next() {
        Some(verb) if verb.eq_ignore_ascii_case("merge") => parse_merge(words),
        Some(verb) if verb.eq_ignore_ascii_case("cancel") => match words.next() {
            None => Ok(CommentCommand::Cancel),
            Some(extra) => Err(invalid(&format!(
                "`/service cancel` takes no arguments, got {}",
                quoted(extra)
            ))),
        },
        Some(verb) => Err(invalid(&format!(
            "unknown command {}",
            quoted(&format!("/service {verb}"))
        ))),
        None => Err(invalid("`/service` needs a command")),
    })
}

/// The lines of a comment's body a command may stand on, trimmed: not those of a fenced code
/// block (```` ``` ```` or `~~~`), of indented code (four spaces or a tab), or of an HTML
/// comment (`<!-- ... -->`, which GitHub does not show). Quoted lines start with `>` and are
/// no commands either.
fn prose_lines(body: &str) -> impl Iterator<Item = &str> {
    let mut fence: Option<(char, usize)> = None;
    let mut in_comment = false;
    body.lines().filter_map(move |raw| {
        let line = raw.trim();
        let was_in_comment = in_comment;
        in_comment = still_in_comment(line, in_comment);
        if was_in_comment {
            return None;
        }
        let code = raw.starts_with("    ") || raw.starts_with('\t');
        if let Some((mark, length)) = fence {
            let closing = fence_of(line).is_some_and(|(m, n)| m == mark && n >= length);
            if closing && line.chars().all(|c| c == mark) {
                fence = None;
            }
            return None;
        }
        if !code && let Some(opened) = fence_of(line) {
            fence = Some(opened);
            return None;
        }
        (!code && !line.starts_with("<!--")).then_some(line)
    })
}

/// The fence a line opens or closes: its character (`` ` `` or `~`) and length, at least 3.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let mark = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let length = line.chars().take_while(|&c| c == mark).count();
    (length >= 3).then_some((mark, length))
}

/// Whether an HTML comment is still open after `line`, given whether it was before: the last
/// `<!--` of the line comes after its last `-->`, or it was open and the line closes none.
fn still_in_comment(line: &str, open: bool) -> bool {
    match (line.rfind("<!--"), line.rfind("-->")) {
        (Some(opened), Some(closed)) => opened > closed,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => open,
    }
}

fn parse_merge<'a>(
    mut words: impl Iterator<Item = &'a str>,
) -> Result<CommentCommand, InvalidCommand> {
    let mut priority = None;
    let mut no_batch = false;
    while let Some(word) = words.next() {
        let option = |name: &str| word.eq_ignore_ascii_case(name);
        match word.split_once('=') {
            _ if option("--no-batch") => no_batch = true,
            Some((name, value)) if name.eq_ignore_ascii_case("--priority") => {
                priority = Some(parse_priority(value)?);
            }
            None if option("--priority") => {
                let value = words
                    .next()
                    .ok_or_else(|| invalid("`--priority` needs a value"))?;
                priority = Some(parse_priority(value)?);
            }
            _ => return Err(invalid(&format!("unknown option {}", quoted(word)))),
        }
    }
    Ok(CommentCommand::Merge { priority, no_batch })
}

fn parse_priority(value: &str) -> Result<Priority, InvalidCommand> {
    let parsed = match value.parse::<i128>() {
        Ok(number) => Priority::from_int(number),
        Err(_) => Priority::from_name(value),
    };
    parsed.map_err(|e| invalid(&e.to_string()))
}

fn invalid(problem: &str) -> InvalidCommand {
    InvalidCommand(format!("{problem}; {USAGE}"))
}

/// How much of a commenter's word a reply quotes.
const QUOTED_CHARS: usize = 40;

/// A commenter's word as a code span in the queue's reply: without backticks, which would end
/// the span (and let the word mention people or format the reply), and cut short.
fn quoted(word: &str) -> String {
    let plain: String = word
        .chars()
        .filter(|&c| c != '`')
        .take(QUOTED_CHARS)
        .collect();
    format!("`{plain}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_quoted_in_a_reply_cannot_leave_its_code_span() {
        let Some(Err(InvalidCommand(reply))) = parse_command("/service merge x`@acme/everyone`")
        else {
            panic!("an unknown option is refused");
        };
        assert!(
            reply.starts_with("unknown option `x@acme/everyone`;"),
            "{reply}"
        );
        let Some(Err(InvalidCommand(reply))) =
            parse_command(&format!("/service {}", "a".repeat(99)))
        else {
            panic!("an unknown command is refused");
        };
        assert!(reply.len() < 200, "{reply}");
    }

    fn merge(
        priority: Option<u8>,
        no_batch: bool,
    ) -> Option<Result<CommentCommand, InvalidCommand>> {
        Some(Ok(CommentCommand::Merge {
            priority: priority.map(Priority::of),
            no_batch,
        }))
    }

    #[test]
    fn reads_merge_with_its_options_in_any_order_and_form() {
        assert_eq!(parse_command("/service merge"), merge(None, false));
        assert_eq!(
            parse_command("LGTM\n  /service merge --priority high --no-batch\n"),
            merge(Some(10), true)
        );
        assert_eq!(
            parse_command("/service merge --no-batch --priority=7"),
            merge(Some(7), true)
        );
        assert_eq!(
            parse_command("/service MERGE --priority URGENT"),
            merge(Some(0), false)
        );
    }

    #[test]
    fn reads_cancel() {
        assert_eq!(
            parse_command("/service cancel"),
            Some(Ok(CommentCommand::Cancel))
        );
    }

    #[test]
    fn other_comments_are_not_commands() {
        assert_eq!(parse_command("Looks good to me"), None);
        assert_eq!(parse_command("see /service merge in the docs"), None);
        assert_eq!(parse_command("/servicemerge"), None);
        assert_eq!(parse_command("> /service merge\n\nquoted"), None);
    }

    /// A command shown in code or hidden in an HTML comment is not given: only a line of the
    /// comment's prose is read, and one after such a block still is.
    #[test]
    fn commands_in_code_or_html_comments_are_not_given() {
        for body in [
            "When green, run:\n```\n/service merge --priority urgent\n```",
            "~~~sh\n/service cancel\n~~~",
            "Example:\n\n    /service merge",
            "\t/service merge",
            "<!--\n/service cancel\n-->",
            "<!-- /service cancel -->",
            "note <!-- hidden\n/service cancel\n-->",
            "````md\n```\n/service merge\n```\n````",
            "<!-- a\n--> <!-- b\n/service cancel\n-->",
        ] {
            assert_eq!(parse_command(body), None, "{body:?}");
        }
        assert_eq!(
            parse_command("```\n/service cancel\n```\n/service merge --no-batch"),
            merge(None, true),
            "the example does not shadow the command after it"
        );
        assert_eq!(
            parse_command("<!-- a note -->\n/service cancel"),
            Some(Ok(CommentCommand::Cancel))
        );
    }

    #[test]
    fn words_are_read_in_any_case() {
        assert_eq!(
            parse_command("/SERVICE Merge --No-Batch --PRIORITY=high"),
            merge(Some(10), true)
        );
        assert_eq!(
            parse_command("/Service cancel"),
            Some(Ok(CommentCommand::Cancel))
        );
    }

    #[test]
    fn mistakes_are_explained() {
        for (body, says) in [
            ("/service merge --priority 300", "priority"),
            ("/service merge --priority", "needs a value"),
            ("/service merge --fast", "unknown option `--fast`"),
            ("/service frobnicate", "unknown command"),
            ("/service cancel now", "takes no arguments"),
            ("/service", "needs a command"),
        ] {
            let Some(Err(InvalidCommand(message))) = parse_command(body) else {
                panic!("{body} should be refused");
            };
            assert!(message.contains(says), "{body}: {message}");
            assert!(message.contains("/service merge"), "{message}");
        }
    }
}
