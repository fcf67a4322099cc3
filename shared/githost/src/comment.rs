//! The queue's comment on a pull request: one per pull request, updated in place. A hidden
//! marker in its body finds it again, and tells the comment-command parser to skip it.

/// An HTML comment: invisible when the host renders the body.
pub const COMMENT_MARKER: &str = "<!-- merge-queue:status-comment -->";

/// The body as posted: the text, then the marker on its own line.
pub fn marked(body: &str) -> String {
    format!("{}\n\n{COMMENT_MARKER}", body.trim_end())
}

/// Whether a comment's body is one the queue posted.
pub fn is_marked(body: &str) -> bool {
    body.contains(COMMENT_MARKER)
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
}
