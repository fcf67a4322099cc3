//! Building responses.

use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Response};
use serde::Serialize;

/// A JSON response.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    // Room for a typical answer up front: growing the buffer copies what was written.
    let mut bytes = Vec::with_capacity(16 * 1024);
    match serde_json::to_writer(&mut bytes, value) {
        Ok(()) => with_content_type(status, Body::Binary(bytes), "application/json"),
        Err(e) => {
            tracing::error!(error = %e, "a response did not serialise");
            let body = r#"{"error":{"code":"INTERNAL","message":"internal error"}}"#;
            let internal = StatusCode::INTERNAL_SERVER_ERROR;
            with_content_type(internal, Body::Text(body.to_owned()), "application/json")
        }
    }
}

/// A `200` JSON response.
pub fn ok<T: Serialize + ?Sized>(value: &T) -> Response<Body> {
    json(StatusCode::OK, value)
}

/// `200 {}`: a mutation without a documented body.
pub fn empty_ok() -> Response<Body> {
    with_content_type(
        StatusCode::OK,
        Body::Text("{}".to_owned()),
        "application/json",
    )
}

/// A response with a body and its content type.
pub fn with_content_type(
    status: StatusCode,
    body: Body,
    content_type: &'static str,
) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
