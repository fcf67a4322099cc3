//! Request bodies: size limit, content type, and JSON parsing with errors that name the field.

use crate::error::ApiError;
use lambda_http::Request;
use lambda_http::http::header;
use mq_wire::common::NOT_AN_INTEGER;
use serde::de::DeserializeOwned;

/// The largest accepted request body: 20 MiB (the limits in `openapi/openapi.json`).
pub const MAX_BODY_BYTES: usize = 20 * 1024 * 1024;

/// The raw bytes of a request body.
pub fn bytes(req: &Request) -> &[u8] {
    req.body().as_ref()
}

/// Checks the size (413) and the content type (415) of a JSON request body.
pub fn check_json_request(req: &Request) -> Result<&[u8], ApiError> {
    let body = bytes(req);
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::payload_too_large(MAX_BODY_BYTES));
    }
    if let Some(ct) = req.headers().get(header::CONTENT_TYPE)
        && !is_json_content_type(ct.to_str().unwrap_or_default())
    {
        return Err(ApiError::unsupported_media_type());
    }
    Ok(body)
}

/// `application/json` or any `+json` type, with parameters.
fn is_json_content_type(value: &str) -> bool {
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Parses a JSON body into `T`; errors name the offending field (`repo.host: missing field`).
pub fn parse_json<T: DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    let body = check_json_request(req)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "request body is empty; a JSON object is required",
        ));
    }
    from_slice(body)
}

/// Parses JSON bytes into `T`, naming the field of any error. Only whitespace may follow
/// the JSON value.
pub fn from_slice<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.is_syntax() || inner.is_eof() {
            format!("request body is not valid JSON: {inner}")
        } else if inner.to_string().starts_with(NOT_AN_INTEGER) {
            not_an_integer(&path, body, &inner)
        } else if let Some(message) = unknown_field(&path, &inner.to_string()) {
            message
        } else if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        };
        ApiError::bad_request(strip_position(&message))
    })?;
    de.end().map_err(|_| {
        ApiError::bad_request("request body has data after the JSON value; send one JSON object")
    })?;
    Ok(value)
}

/// The message for a number given to an integer field, naming the number as it was sent.
fn not_an_integer(path: &str, body: &[u8], error: &serde_json::Error) -> String {
    let field = if path == "." { "value" } else { path };
    match number_ending_at(body, error.line(), error.column()) {
        Some(n) if n.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) => {
            format!("{field}: expected an integer, got {n}")
        }
        Some(n) => format!("{field}: expected an integer of at most 64 bits, got {n}"),
        None => format!("{field}: {NOT_AN_INTEGER}"),
    }
}

/// The message for a field a strict request type (`#[serde(deny_unknown_fields)]`: the
/// settings endpoints) does not know, naming the nearest known field when one is close,
/// else every known one. `None` when `error` is not about an unknown field.
fn unknown_field(path: &str, error: &str) -> Option<String> {
    let rest = error.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let known: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let at = match path {
        "." => String::new(),
        // serde_path_to_error's path ends with the unknown field itself.
        p => p
            .strip_suffix(field)
            .map_or(p, |p| p.trim_end_matches('.'))
            .to_owned(),
    };
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" in {at}")
    };
    let hint = match nearest(field, &known) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("the known fields are {}", known.join(", ")),
    };
    Some(format!("unknown field `{field}`{at}: {hint}"))
}

/// The known name closest to `field` (edits, ignoring case), if it is close enough to be a
/// misspelling: at most a third of the longer name's letters, and at least 2 allowed.
fn nearest<'a>(field: &str, known: &[&'a str]) -> Option<&'a str> {
    let field = field.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&field, &k.to_ascii_lowercase()), *k))
        .filter(|(d, k)| *d <= (field.len().max(k.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// The JSON number whose last character is at `line`:`column` (both from 1, as serde_json
/// reports where it stopped).
fn number_ending_at(body: &[u8], line: usize, column: usize) -> Option<&str> {
    let start_of_line = match line {
        0 => return None,
        1 => 0,
        n => {
            body.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .nth(n - 2)?
                .0
                + 1
        }
    };
    let end = start_of_line.checked_add(column)?.min(body.len());
    let is_number = |b: &u8| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-');
    let start = body[..end]
        .iter()
        .rposition(|b| !is_number(b))
        .map_or(0, |i| i + 1);
    let number = std::str::from_utf8(&body[start..end]).ok()?;
    (!number.is_empty()).then_some(number)
}

/// serde_json appends " at line 1 column 23" to messages; clients need the field, not that.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(" column ") => message[..i].to_owned(),
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::Body;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Repo {
        host: String,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Req {
        repo: Repo,
        count: Option<u8>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Strict {
        concurrency: Option<u8>,
        pending_failure_depth: Option<u8>,
        nested: Option<Nested>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Nested {
        flaky_window: Option<u8>,
    }

    fn strict_error(body: &str) -> String {
        from_slice::<Strict>(body.as_bytes()).unwrap_err().message
    }

    #[test]
    fn an_unknown_field_of_a_strict_type_is_named_with_the_nearest_known_one() {
        assert_eq!(
            strict_error(r#"{"concurency": 2}"#),
            "unknown field `concurency`: did you mean `concurrency`?"
        );
        assert_eq!(
            strict_error(r#"{"PendingFailureDepth": 2}"#),
            "unknown field `PendingFailureDepth`: did you mean `pendingFailureDepth`?"
        );
        assert_eq!(
            strict_error(r#"{"nested": {"flakyWindw": 3}}"#),
            "unknown field `flakyWindw` in nested: did you mean `flakyWindow`?"
        );
        assert_eq!(
            strict_error(r#"{"colour": "red"}"#),
            "unknown field `colour`: the known fields are concurrency, pendingFailureDepth, nested"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    fn request(body: &str, content_type: Option<&str>) -> Request {
        let mut builder = lambda_http::http::Request::builder()
            .method("POST")
            .uri("/v1/x");
        if let Some(ct) = content_type {
            builder = builder.header("content-type", ct);
        }
        builder.body(Body::Text(body.to_owned())).unwrap()
    }

    #[test]
    fn errors_name_the_field() {
        let err =
            parse_json::<Req>(&request(r#"{"repo":{}}"#, Some("application/json"))).unwrap_err();
        assert_eq!(err.message, "repo: missing field `host`");
        let err =
            parse_json::<Req>(&request(r#"{"repo":{"host":"h"},"count":"x"}"#, None)).unwrap_err();
        assert_eq!(
            err.message,
            "count: invalid type: string \"x\", expected u8"
        );
        let err = parse_json::<Req>(&request(r#"{}"#, None)).unwrap_err();
        assert_eq!(err.message, "missing field `repo`");
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Counted {
        count: mq_wire::Int,
    }

    #[test]
    fn integer_fields_name_the_number_sent() {
        for (body, message) in [
            (r#"{"count": 2.0}"#, "count: expected an integer, got 2.0"),
            (r#"{"count":1e3}"#, "count: expected an integer, got 1e3"),
            (
                "{\n \"count\":\n  -1.5E+2 }",
                "count: expected an integer, got -1.5E+2",
            ),
            (
                r#"{"count": 18446744073709551616}"#,
                "count: expected an integer of at most 64 bits, got 18446744073709551616",
            ),
        ] {
            let err = parse_json::<Counted>(&request(body, None)).unwrap_err();
            assert_eq!((err.status.as_u16(), err.message.as_str()), (400, message));
        }
        assert!(parse_json::<Counted>(&request(r#"{"count": 7}"#, None)).is_ok());
    }

    #[test]
    fn data_after_the_json_value_is_refused() {
        for body in [
            r#"{"repo":{"host":"h"}}<script>"#,
            r#"{"repo":{"host":"h"}} {}"#,
            "{\"repo\":{\"host\":\"h\"}}x",
        ] {
            let err = parse_json::<Req>(&request(body, None)).unwrap_err();
            assert_eq!(err.status.as_u16(), 400, "{body}");
            assert!(
                err.message.contains("data after the JSON value"),
                "{}",
                err.message
            );
        }
        assert!(parse_json::<Req>(&request("{\"repo\":{\"host\":\"h\"}} \r\n\t", None)).is_ok());
    }

    #[test]
    fn malformed_json_is_a_bad_request() {
        let err = parse_json::<Req>(&request("{nope", None)).unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
        assert!(
            err.message.starts_with("request body is not valid JSON"),
            "{}",
            err.message
        );
    }

    #[test]
    fn non_json_content_types_are_refused() {
        let err = parse_json::<Req>(&request("{}", Some("text/plain"))).unwrap_err();
        assert_eq!(err.status.as_u16(), 415);
        assert!(
            parse_json::<Req>(&request(
                r#"{"repo":{"host":"h"}}"#,
                Some("application/json; charset=utf-8")
            ))
            .is_ok()
        );
        assert!(
            parse_json::<Req>(&request(
                r#"{"repo":{"host":"h"}}"#,
                Some("application/vnd.api+json")
            ))
            .is_ok()
        );
    }

    #[test]
    fn bodies_over_twenty_mebibytes_are_refused() {
        let big = " ".repeat(MAX_BODY_BYTES + 1);
        let err = parse_json::<Req>(&request(&big, Some("application/json"))).unwrap_err();
        assert_eq!(err.status.as_u16(), 413);
    }
}
