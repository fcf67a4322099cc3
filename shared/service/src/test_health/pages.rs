//! Pagination of the test lists (§2.9, docs/queue-semantics.md §9): `page_size` 1..=100; tokens
//! are opaque (base64url of a small JSON object) and carry the last (or first) test case id of the
//! page they continue from, never an offset, so inserts between requests neither repeat nor skip a
//! test that was there all along.

use crate::error::ServiceError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mq_store::PageCursor;
use mq_wire::Int;
use mq_wire::test_health::Page;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const MAX_PAGE_SIZE: u64 = 100;

/// A validated page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub size: u64,
    pub cursor: PageCursor,
    /// The index of the page asked for (0 for the first).
    pub index: u64,
}

/// What a token says. `l` binds it to one list (a token of another list is refused).
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Token {
    l: String,
    /// `a`: after `k`; `b`: before `k`; `z`: the last page.
    d: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    k: Option<Uuid>,
    i: u64,
}

/// Parses `page_query`; `list` names the list (organisation, repository and which list).
pub fn request(list: &str, size: Int, token: &str) -> Result<PageRequest, ServiceError> {
    let size = u64::try_from(size.0)
        .ok()
        .filter(|s| (1..=MAX_PAGE_SIZE).contains(s))
        .ok_or_else(|| {
            ServiceError::invalid(format!(
                "page_query.page_size must be an integer from 1 to {MAX_PAGE_SIZE}, got {}",
                size.0
            ))
        })?;
    if token.is_empty() {
        return Ok(PageRequest {
            size,
            cursor: PageCursor::First,
            index: 0,
        });
    }
    let t = decode(token)
        .filter(|t| t.l == binding(list))
        .ok_or_else(|| {
            ServiceError::invalid("page_query.page_token is not a token of this list")
        })?;
    let cursor = match (t.d.as_str(), t.k) {
        ("a", Some(k)) => PageCursor::After(k),
        ("b", Some(k)) => PageCursor::Before(k),
        ("z", _) => PageCursor::Last,
        _ => return Err(ServiceError::invalid("page_query.page_token is malformed")),
    };
    Ok(PageRequest {
        size,
        cursor,
        index: t.i,
    })
}

/// The `limit` to ask the store for: the last page holds what remains.
pub fn limit(req: &PageRequest, total: u64) -> usize {
    match req.cursor {
        PageCursor::Last => {
            let full = total.saturating_sub(1) / req.size * req.size;
            (total - full).max(1) as usize
        }
        _ => req.size as usize,
    }
}

/// The `page` object of a response for the page served, whose test case ids are `ids`.
pub fn page(list: &str, req: &PageRequest, total: u64, ids: &[Uuid]) -> Page {
    let total_pages = total.div_ceil(req.size);
    let index = match req.cursor {
        PageCursor::Last => total_pages.saturating_sub(1),
        _ => req.index.min(total_pages.saturating_sub(1)),
    };
    let token = |d: &str, k: Option<Uuid>, i: u64| {
        encode(&Token {
            l: binding(list),
            d: d.to_owned(),
            k,
            i,
        })
    };
    let next = match ids.last() {
        Some(last) if index + 1 < total_pages => token("a", Some(*last), index + 1),
        _ => String::new(),
    };
    let prev = match ids.first() {
        Some(first) if index > 0 => token("b", Some(*first), index - 1),
        _ => String::new(),
    };
    let last = if total_pages > 0 {
        token("z", None, total_pages - 1)
    } else {
        String::new()
    };
    Page {
        total_rows: total,
        total_pages,
        next_page_token: next,
        prev_page_token: prev,
        last_page_token: last,
        page_index: index,
    }
}

/// A short digest of the list's name: tokens stay small and do not spell out the list.
fn binding(list: &str) -> String {
    Uuid::new_v5(&Uuid::NAMESPACE_OID, list.as_bytes())
        .simple()
        .to_string()[..12]
        .to_owned()
}

fn encode(t: &Token) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(t).unwrap_or_default())
}

fn decode(s: &str) -> Option<Token> {
    let bytes = URL_SAFE_NO_PAD.decode(s).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_outside_one_to_a_hundred_are_refused_naming_the_field() {
        for bad in [0, 101, -1] {
            let err = request("l", Int(bad), "").unwrap_err();
            let message = err.refusal().unwrap_or_default();
            assert!(err.is_invalid_input(), "{err}");
            assert!(
                message.starts_with("page_query.page_size must be"),
                "{message}"
            );
        }
        assert_eq!(
            request("l", Int(100), "").unwrap().cursor,
            PageCursor::First
        );
    }

    #[test]
    fn tokens_round_trip_and_belong_to_their_list() {
        let first = request("list-a", Int(2), "").unwrap();
        let ids = [Uuid::from_u128(1), Uuid::from_u128(2)];
        let p = page("list-a", &first, 5, &ids);
        assert_eq!(
            (p.total_pages, p.page_index, p.prev_page_token.as_str()),
            (3, 0, "")
        );
        let next = request("list-a", Int(2), &p.next_page_token).unwrap();
        assert_eq!((next.cursor, next.index), (PageCursor::After(ids[1]), 1));
        let last = request("list-a", Int(2), &p.last_page_token).unwrap();
        assert_eq!((last.cursor, last.index), (PageCursor::Last, 2));
        assert_eq!(limit(&last, 5), 1, "the last page holds the remainder");
        assert_eq!(limit(&last, 4), 2);
        let err = request("list-b", Int(2), &p.next_page_token).unwrap_err();
        assert!(err.to_string().contains("page_token"), "{err}");
        assert!(request("list-a", Int(2), "garbage!").is_err());
    }

    #[test]
    fn an_empty_list_has_no_tokens() {
        let p = page("l", &request("l", Int(10), "").unwrap(), 0, &[]);
        assert_eq!(p, Page::default());
    }
}
