//! The queue's comments on a pull request: its status comment, one per pull request, and its
//! reply to each comment command, each updated in place. A hidden marker in the body finds a
//! comment again, and tells the comment-command parser to skip it.

/// An HTML comment: invisible when the host renders the body.
pub const COMMENT_MARKER: &str = "<!-- merge-queue:status-comment -->";

/// How every marker the queue writes begins.
const MARKER_START: &str = "<!-- merge-queue:";

/// The marker of the queue's reply to the comment command of comment `comment_id`.
pub fn reply_marker(comment_id: u64) -> String {
    format!("{MARKER_START}reply-to-comment {comment_id} -->")
}

/// The status comment's body as posted: the text, then the marker on its own line.
pub fn marked(body: &str) -> String {
    marked_with(body, COMMENT_MARKER)
}

/// A body as posted with `marker`.
pub fn marked_with(body: &str, marker: &str) -> String {
    format!("{}\n\n{marker}", body.trim_end())
}

/// Whether a comment's body is one the queue posted.
pub fn is_marked(body: &str) -> bool {
    body.contains(MARKER_START)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_body_is_recognised() {
        let body = marked("Testing now.\n");
        assert!(body.starts_with("Testing now.\n\n"));
        assert!(is_marked(&body));
        assert!(!is_marked("Testing now."));
    }

    #[test]
    fn a_reply_is_marked_apart_from_the_status_comment() {
        let reply = marked_with("Only people who can write…", &reply_marker(7));
        assert!(is_marked(&reply));
        assert!(!reply.contains(COMMENT_MARKER));
        assert!(!reply_marker(55).contains(&reply_marker(5)));
    }
}
