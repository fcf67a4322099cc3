//! Counting the answers of many requests: by endpoint and status, with every answer the API
//! does not document (or a 5xx other than a retryable 503) kept as a failure to report.

use crate::Reply;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// The statuses the API documents for the endpoints the stress tests call (docs/queue-semantics.md
/// §1), apart from 401/413/415, which the tests never provoke.
pub const DOCUMENTED: [u16; 5] = [200, 400, 404, 409, 503];

/// Answers counted by endpoint and status, and the unexpected ones.
#[derive(Debug, Default)]
pub struct Tally {
    counts: Mutex<BTreeMap<(String, u16), u64>>,
    unexpected: Mutex<Vec<String>>,
}

impl Tally {
    /// Counts an answer; one outside [`DOCUMENTED`], a 503 without `Retry-After` and the
    /// `UNAVAILABLE` code, or an error without a JSON error body is unexpected.
    pub fn record(&self, endpoint: &str, reply: &Reply) {
        self.count(endpoint, reply.status);
        let problem = if !DOCUMENTED.contains(&reply.status) {
            Some("an undocumented status")
        } else if reply.status == 503
            && (reply.code() != "UNAVAILABLE" || !reply.headers.contains_key("retry-after"))
        {
            Some("a 503 that is not retryable")
        } else if reply.status != 200 && reply.code().is_empty() {
            Some("an error without a code")
        } else {
            None
        };
        if let Some(problem) = problem {
            self.unexpected(format!(
                "{endpoint}: {problem}: {} {}",
                reply.status, reply.body
            ));
        }
    }

    /// Counts a status without a body (the tick, called in process).
    pub fn count(&self, endpoint: &str, status: u16) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry((endpoint.to_owned(), status)).or_default() += 1;
    }

    pub fn unexpected(&self, what: String) {
        self.unexpected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what);
    }

    pub fn unexpected_answers(&self) -> Vec<String> {
        self.unexpected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many answers had `status`.
    pub fn with_status(&self, status: u16) -> u64 {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts
            .iter()
            .filter(|((_, s), _)| *s == status)
            .map(|(_, n)| n)
            .sum()
    }

    pub fn total(&self) -> u64 {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.values().sum()
    }

    /// One line per endpoint: `endpoint  total  status×count ...`.
    pub fn table(&self) -> String {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let mut by_endpoint: BTreeMap<&str, Vec<(u16, u64)>> = BTreeMap::new();
        for ((endpoint, status), n) in counts.iter() {
            by_endpoint
                .entry(endpoint.as_str())
                .or_default()
                .push((*status, *n));
        }
        let mut out = String::new();
        for (endpoint, statuses) in by_endpoint {
            let total: u64 = statuses.iter().map(|(_, n)| n).sum();
            let detail: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
            let _ = writeln!(out, "  {endpoint:<28} {total:>5}  {}", detail.join(" "));
        }
        out
    }
}
