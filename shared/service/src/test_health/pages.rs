//! Pagination of the test lists (§2.9, docs/queue-semantics.md §9): `page_size` 1..=100; tokens
//! are opaque (base64url of a small JSON object) and carry the last (or first) test case id of the
//! page they continue from, never an offset, so inserts between requests neither repeat nor skip a
//! test that was there all along. Whether a page has a next (or previous) page is read from the
//! list itself, one item beyond the page in the direction it is read, not from counts: a test
//! that left the list meanwhile does not end the walk early.

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

/// How many items the page holds: the last page holds what remains.
fn page_len(req: &PageRequest, total: u64) -> usize {
    match req.cursor {
        PageCursor::Last => {
            let full = total.saturating_sub(1) / req.size * req.size;
            (total - full).max(1) as usize
        }
        _ => req.size as usize,
    }
}

/// The `limit` to ask the store for: the page, and one item beyond it in the direction it is
/// read (after it from the first page or after a test, before it otherwise).
pub fn limit(req: &PageRequest, total: u64) -> usize {
    page_len(req, total) + 1
}

/// Whether the page is read forwards from its cursor.
fn forwards(req: &PageRequest) -> bool {
    matches!(req.cursor, PageCursor::First | PageCursor::After(_))
}

/// The page of what the store answered to [`limit`] (in ascending order), and whether the
/// list goes on beyond it in the direction it was read.
pub fn served<T>(req: &PageRequest, total: u64, mut items: Vec<T>) -> (Vec<T>, bool) {
    let len = page_len(req, total);
    let beyond = items.len() > len;
    if beyond && forwards(req) {
        items.truncate(len);
    } else if beyond {
        items.drain(..items.len() - len);
    }
    (items, beyond)
}

/// The `page` object of a response for the page served, whose test case ids are `ids`;
/// `beyond` as [`served`] says. A page read after a test has one before it (the page it was
/// reached from), one read before a test one after it.
pub fn page(list: &str, req: &PageRequest, total: u64, ids: &[Uuid], beyond: bool) -> Page {
    let total_pages = total.div_ceil(req.size);
    let (has_prev, has_next) = match req.cursor {
        PageCursor::First => (false, beyond),
        PageCursor::After(_) => (true, beyond),
        PageCursor::Before(_) => (beyond, true),
        PageCursor::Last => (beyond, false),
    };
    let index = match req.cursor {
        _ if !has_prev => 0,
        PageCursor::Last => total_pages.saturating_sub(1),
        _ => req.index.clamp(1, total_pages.saturating_sub(1).max(1)),
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
        Some(last) if has_next => token("a", Some(*last), index + 1),
        _ => String::new(),
    };
    let prev = match ids.first() {
        Some(first) if has_prev => token("b", Some(*first), index - 1),
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
        let p = page("list-a", &first, 5, &ids, true);
        assert_eq!(
            (p.total_pages, p.page_index, p.prev_page_token.as_str()),
            (3, 0, "")
        );
        let next = request("list-a", Int(2), &p.next_page_token).unwrap();
        assert_eq!((next.cursor, next.index), (PageCursor::After(ids[1]), 1));
        let last = request("list-a", Int(2), &p.last_page_token).unwrap();
        assert_eq!((last.cursor, last.index), (PageCursor::Last, 2));
        assert_eq!(page_len(&last, 5), 1, "the last page holds the remainder");
        assert_eq!(page_len(&last, 4), 2);
        assert_eq!(limit(&last, 4), 3, "and one item before it");
        let err = request("list-b", Int(2), &p.next_page_token).unwrap_err();
        assert!(err.to_string().contains("page_token"), "{err}");
        assert!(request("list-a", Int(2), "garbage!").is_err());
    }

    #[test]
    fn an_empty_list_has_no_tokens() {
        let p = page("l", &request("l", Int(10), "").unwrap(), 0, &[], false);
        assert_eq!(p, Page::default());
    }

    #[test]
    fn the_item_beyond_a_page_is_left_out_on_the_side_it_was_read() {
        let first = request("l", Int(2), "").unwrap();
        assert_eq!(served(&first, 9, vec![1, 2, 3]), (vec![1, 2], true));
        assert_eq!(served(&first, 9, vec![1, 2]), (vec![1, 2], false));
        let last = PageRequest {
            cursor: PageCursor::Last,
            ..first
        };
        assert_eq!(served(&last, 9, vec![7, 8, 9]), (vec![9], true));
        let before = PageRequest {
            cursor: PageCursor::Before(Uuid::from_u128(9)),
            ..first
        };
        assert_eq!(served(&before, 9, vec![6, 7, 8]), (vec![7, 8], true));
    }

    /// A test inserted before the page a walk back reads: the page still has a previous
    /// page, whatever index its token carried.
    #[test]
    fn a_page_read_back_has_a_previous_page_while_the_list_goes_on() {
        let before = PageRequest {
            size: 2,
            cursor: PageCursor::Before(Uuid::from_u128(3)),
            index: 0,
        };
        let ids = [Uuid::from_u128(1), Uuid::from_u128(2)];
        let p = page("l", &before, 5, &ids, true);
        assert_eq!(p.page_index, 1);
        assert!(!p.prev_page_token.is_empty() && !p.next_page_token.is_empty());
        let at_start = page("l", &before, 5, &ids, false);
        assert_eq!(
            (at_start.page_index, at_start.prev_page_token.as_str()),
            (0, "")
        );
    }
}
