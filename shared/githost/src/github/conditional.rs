//! Conditional reads: GitHub's answers to reads kept with their `ETag` and sent back as
//! `If-None-Match`. GitHub answers `304 Not Modified` when nothing changed, and such an answer
//! does not count against the installation's hourly rate limit. The tick reads every run's
//! branch and CI results each minute; unchanged, those reads cost nothing.
//!
//! An answer is kept per URL and media type for the token that read it (a read with another
//! token is made afresh), within a budget of bytes for the life of the process.

use reqwest::header::{ETAG, HeaderMap, HeaderValue};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The bytes of answers kept at most; past it, every kept answer is dropped.
const KEPT_BYTES: usize = 16 << 20;

/// A read's answer as it was last given in full.
pub(crate) struct Kept {
    bearer: String,
    pub etag: HeaderValue,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Kept {
    /// Its bytes, headers included.
    fn size(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        self.body.len() + headers + self.bearer.len()
    }
}

type Key = (String, String);

/// The kept answers and their bytes.
#[derive(Default)]
pub(crate) struct Answers {
    kept: Mutex<(HashMap<Key, Arc<Kept>>, usize)>,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers").finish_non_exhaustive()
    }
}

impl Answers {
    /// The answer kept for a read of `url` as `accept` by `bearer`, if any.
    pub fn kept(&self, url: &str, accept: &str, bearer: &str) -> Option<Arc<Kept>> {
        let kept = self.lock();
        let answer = kept.0.get(&(url.to_owned(), accept.to_owned()))?;
        (answer.bearer == bearer).then(|| Arc::clone(answer))
    }

    /// Keeps a read's full answer, when it has a validator.
    pub fn keep(&self, url: &str, accept: &str, bearer: &str, headers: &HeaderMap, body: &[u8]) {
        let Some(etag) = headers.get(ETAG) else {
            return;
        };
        let answer = Arc::new(Kept {
            bearer: bearer.to_owned(),
            etag: etag.clone(),
            headers: headers.clone(),
            body: body.to_vec(),
        });
        let size = answer.size();
        let mut kept = self.lock();
        let (answers, bytes) = &mut *kept;
        if *bytes + size > KEPT_BYTES {
            answers.clear();
            *bytes = 0;
        }
        *bytes += size;
        if let Some(old) = answers.insert((url.to_owned(), accept.to_owned()), answer) {
            *bytes -= old.size();
        }
    }

    fn lock(&self) -> MutexGuard<'_, (HashMap<Key, Arc<Kept>>, usize)> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_etag() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ETAG, HeaderValue::from_static("\"v1\""));
        headers
    }

    #[test]
    fn an_answer_is_kept_for_its_token_and_read_only() {
        let answers = Answers::default();
        answers.keep("u", "json", "token-a", &with_etag(), b"{}");
        assert_eq!(answers.kept("u", "json", "token-a").unwrap().body, b"{}");
        assert!(
            answers.kept("u", "json", "token-b").is_none(),
            "another token"
        );
        assert!(
            answers.kept("u", "raw", "token-a").is_none(),
            "another media type"
        );
        answers.keep("w", "json", "token-a", &HeaderMap::new(), b"{}");
        assert!(
            answers.kept("w", "json", "token-a").is_none(),
            "no validator"
        );
    }

    #[test]
    fn answers_past_the_budget_are_dropped() {
        let answers = Answers::default();
        let big = vec![b' '; KEPT_BYTES * 2 / 5];
        answers.keep("a", "json", "t", &with_etag(), &big);
        answers.keep("a", "json", "t", &with_etag(), &big);
        answers.keep("b", "json", "t", &with_etag(), &big);
        assert!(
            answers.kept("a", "json", "t").is_some(),
            "a replaced answer counts once"
        );
        answers.keep("c", "json", "t", &with_etag(), &big);
        assert!(answers.kept("a", "json", "t").is_none(), "past the budget");
        assert!(answers.kept("c", "json", "t").is_some());
    }
}
