//! The baseline of the gateway load benchmark: an axum server that answers every request
//! with the same JSON body (read once from a file) and does nothing else.
//!
//! Run by `infra/scripts/bench-gateway` with `BENCH_ADDR` (where to listen) and
//! `BENCH_BODY` (the file holding the body); run by `cargo bench` without them, it returns
//! at once.

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::any;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (Ok(addr), Ok(body)) = (std::env::var("BENCH_ADDR"), std::env::var("BENCH_BODY")) else {
        return;
    };
    let body: &'static [u8] = std::fs::read(body).expect("the body file").leak();
    let app = Router::new().fallback(any(move || async move {
        ([(CONTENT_TYPE, "application/json")], body)
    }));
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .expect("address free");
    axum::serve(listener, app).await.expect("server runs");
}
