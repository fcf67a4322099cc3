//! Comment commands: `/service merge [--priority P] [--no-batch]` and `/service cancel`, on a
//! line of their own in a pull request comment.

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

/// The command in a comment's body: `None` when no line starts with `/service`.
pub fn parse_command(body: &str) -> Option<Result<CommentCommand, InvalidCommand>> {
    let line = body.lines().map(str::trim).find(|line| {
        line.strip_prefix(PREFIX)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
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

fn parse_merge<'a>(
    mut words: impl Iterator<Item = &'a str>,
) -> Result<CommentCommand, InvalidCommand> {
    let mut priority = None;
    let mut no_batch = false;
    while let Some(word) = words.next() {
        match word.split_once('=') {
            _ if word == "--no-batch" => no_batch = true,
            Some(("--priority", value)) => priority = Some(parse_priority(value)?),
            None if word == "--priority" => {
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
