//! The dashboard: a static single-page application (HTML, ES modules, CSS, and the vendored
//! uPlot), built into the binary and served at `GET /` and `GET /ui/<file>` by the `dashboard`
//! function and by the local gateway. The pages hold no data and need no token: they sign in
//! with an API token kept in the browser's session storage and call the token-authenticated
//! `/v1/` operations from the same origin. They are not operations of the API document.
//!
//! Every answer carries a strict Content-Security-Policy (scripts, styles and connections to
//! this origin only; no inline script or style, no frames, no forms submitted anywhere),
//! `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, and
//! `Cache-Control: no-cache` with an `ETag`, so a browser revalidates and a deployment shows
//! at once.

use crate::error::ApiError;
use lambda_http::http::{HeaderValue, Method, StatusCode, header};
use lambda_http::{Body, Request, Response};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The policy of every page and asset.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// A route of the pages, as API Gateway and the template name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRoute {
    pub method: Method,
    pub path: &'static str,
}

/// The page routes: the application at `/`, its files under `/ui/`.
pub static PAGE_ROUTES: [PageRoute; 2] = [
    PageRoute {
        method: Method::GET,
        path: "/",
    },
    PageRoute {
        method: Method::GET,
        path: "/ui/{proxy+}",
    },
];

/// Where the files are served from.
pub const ASSET_PREFIX: &str = "/ui/";

/// One file of the dashboard.
#[derive(Debug)]
pub struct Asset {
    /// Its path under [`ASSET_PREFIX`] (`/` serves `index.html`).
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

macro_rules! assets {
    ($($name:literal: $type:expr),+ $(,)?) => {
        /// Every file of the dashboard (`shared/http/dashboard/`).
        pub static ASSETS: &[Asset] = &[$(
            Asset {
                name: $name,
                content_type: $type,
                body: include_bytes!(concat!("../dashboard/", $name)),
            }
        ),+];
    };
}

assets! {
    "index.html": HTML,
    "style.css": CSS,
    "app.js": JS,
    "api.js": JS,
    "dom.js": JS,
    "format.js": JS,
    "charts.js": JS,
    "signin.js": JS,
    "queues.js": JS,
    "queue.js": JS,
    "pull.js": JS,
    "health.js": JS,
    "advice.js": JS,
    "vendor/uPlot.esm.js": JS,
    "vendor/uPlot.min.css": CSS,
}

/// The file a request path names: `/` is `index.html`, `/ui/<name>` is `<name>`.
pub fn asset(path: &str) -> Option<&'static Asset> {
    let name = match path {
        "/" | "" => "index.html",
        _ => path.strip_prefix(ASSET_PREFIX)?,
    };
    ASSETS.iter().find(|a| a.name == name)
}

/// The answer to a request for a page or one of its files: `200` with the file, `304` when
/// the browser's copy is current (`If-None-Match`), `404` (JSON error) for any other path,
/// `405` for a method other than `GET` or `HEAD`.
pub fn serve(req: &Request) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut response = ApiError::method_not_allowed("GET and HEAD").to_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return error(response);
    }
    let Some((asset, etag)) = asset(req.uri().path()).map(|a| (a, etag_of(a))) else {
        return error(ApiError::not_found("NOT_FOUND", "no such page").to_response());
    };
    let current = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let (status, body) = match current {
        true => (StatusCode::NOT_MODIFIED, Body::Empty),
        false => (StatusCode::OK, Body::Binary(asset.body.to_vec())),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    if let Ok(tag) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    secure(response)
}

/// The headers every answer of the pages carries.
fn secure(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// An error answer of the pages: never cached, with the headers every answer carries.
fn error(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    secure(response)
}

/// The strong validator of a file: the start of the SHA-256 of its bytes, quoted, computed
/// once per file.
fn etag_of(asset: &'static Asset) -> &'static str {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    let tags = TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| format!("\"{}\"", &hex::encode(Sha256::digest(a.body))[..20]))
            .collect()
    });
    let i = ASSETS
        .iter()
        .position(|a| std::ptr::eq(a, asset))
        .unwrap_or_default();
    &tags[i]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::Path;

    fn get(path: &str, headers: &[(&str, &str)]) -> Response<Body> {
        let mut builder = lambda_http::http::Request::builder()
            .method("GET")
            .uri(path);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        serve(&builder.body(Body::Empty).unwrap())
    }

    fn header<'a>(r: &'a Response<Body>, name: &str) -> &'a str {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    #[test]
    fn the_application_and_its_files_are_served_with_their_types() {
        let page = get("/", &[]);
        assert_eq!(page.status(), 200);
        assert_eq!(header(&page, "content-type"), HTML);
        assert!(page.body().as_ref().starts_with(b"<!doctype html>"));
        let script = get("/ui/app.js", &[]);
        assert_eq!(
            (script.status().as_u16(), header(&script, "content-type")),
            (200, JS)
        );
        let chart = get("/ui/vendor/uPlot.esm.js", &[]);
        assert_eq!(chart.status(), 200);
        assert_eq!(
            get("/ui/vendor/uPlot.min.css", &[])
                .headers()
                .get("content-type")
                .unwrap(),
            CSS
        );
    }

    #[test]
    fn every_answer_carries_the_security_headers() {
        for path in ["/", "/ui/style.css", "/ui/nothing.js", "/ui/../Cargo.toml"] {
            let r = get(path, &[]);
            assert_eq!(
                header(&r, "content-security-policy"),
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(header(&r, "x-content-type-options"), "nosniff", "{path}");
            assert_eq!(header(&r, "referrer-policy"), "no-referrer", "{path}");
            assert_eq!(header(&r, "x-frame-options"), "DENY", "{path}");
        }
        assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self';"));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }

    #[test]
    fn unknown_paths_and_other_methods_are_refused() {
        for path in [
            "/ui/",
            "/ui/nothing.js",
            "/ui/../Cargo.toml",
            "/index.html",
            "/ui/vendor",
        ] {
            let r = get(path, &[]);
            assert_eq!(r.status(), 404, "{path}");
            assert_eq!(header(&r, "content-type"), "application/json");
        }
        let post = lambda_http::http::Request::builder()
            .method("POST")
            .uri("/")
            .body(Body::Empty)
            .unwrap();
        let r = serve(&post);
        assert_eq!(r.status(), 405);
        assert_eq!(header(&r, "allow"), "GET, HEAD");
    }

    #[test]
    fn a_current_copy_is_not_sent_again() {
        let first = get("/ui/app.js", &[]);
        let tag = header(&first, "etag").to_owned();
        assert!(tag.starts_with('"') && tag.len() == 22, "{tag}");
        assert_eq!(header(&first, "cache-control"), "no-cache");
        let again = get("/ui/app.js", &[("if-none-match", &tag)]);
        assert_eq!(again.status(), 304);
        assert!(again.body().as_ref().is_empty());
        let other = get("/ui/app.js", &[("if-none-match", "\"0000\"")]);
        assert_eq!(other.status(), 200);
        assert_ne!(header(&get("/ui/api.js", &[]), "etag"), tag);
    }

    /// Every file of the folder is served (but the vendored libraries' notes), so none is
    /// forgotten in the table.
    #[test]
    fn every_file_of_the_dashboard_folder_is_served() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboard");
        let mut found = BTreeSet::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let name = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if !name.ends_with("README.md") && !name.ends_with("LICENSE") {
                    found.insert(name);
                }
            }
        }
        let served: BTreeSet<String> = ASSETS.iter().map(|a| a.name.to_owned()).collect();
        assert_eq!(found, served);
    }

    /// No inline script or style: the policy would block it, so the page would break.
    #[test]
    fn the_page_has_no_inline_script_or_style() {
        let page = std::str::from_utf8(asset("/").unwrap().body).unwrap();
        assert!(!page.contains("<style"), "inline <style>");
        assert!(!page.contains("style="), "style attribute");
        for tag in page.split("<script").skip(1) {
            let (attributes, rest) = tag.split_once('>').unwrap();
            assert!(attributes.contains("src="), "inline script: <script{tag}");
            assert!(rest.starts_with("</script>"), "a script with content");
        }
        for tag in page.split('<').skip(1) {
            let attributes = tag.split('>').next().unwrap_or_default();
            let handler = attributes
                .split_whitespace()
                .any(|a| a.starts_with("on") && a.contains('='));
            assert!(!handler, "an inline event handler: <{attributes}>");
        }
    }
}
