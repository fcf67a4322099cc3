//! The OpenAPI 3.1 document of the API (`openapi/openapi.json`), served by the local gateway at
//! `GET /v1/openapi.json` and checked against real responses by the end-to-end tests.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Response};

/// The document, as kept in the repository.
pub const OPENAPI_JSON: &str = include_str!("../../../openapi/openapi.json");

/// Where the local gateway serves it (no token needed: it holds no data).
pub const OPENAPI_PATH: &str = "/v1/openapi.json";

/// `200` with the document.
pub fn response() -> Response<Body> {
    crate::http::with_content_type(
        StatusCode::OK,
        Body::Text(OPENAPI_JSON.to_owned()),
        "application/json",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_json() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI_JSON).expect("valid JSON");
        assert_eq!(doc["openapi"], "3.1.0");
        assert!(doc["paths"].as_object().is_some_and(|p| p.len() >= 20));
    }
}
