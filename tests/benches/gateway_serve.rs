//! The server of the gateway load benchmark: the local gateway's router (every handler, the
//! in-memory store) with one queue whose pull request #100 is testing, on one thread.
//!
//! Run by `infra/scripts/bench-gateway` with `BENCH_ADDR` (where to listen) and `BENCH_BODY`
//! (where to write the answer of getSubmittedPullRequest for #100, for the bare baseline to
//! serve); run by `cargo bench` without them, it returns at once.

use e2e::requests::post;
use e2e::timeline::{Event::*, Timeline};
use e2e::{TestClock, register_organisations};
use local_gateway::router;
use mq_core::ids::{QueueId, RepoRef};
use mq_core::time::Timestamp;
use mq_http::routes::route;
use mq_service::App;
use mq_store::{MemoryStore, Store};
use serde_json::json;
use std::sync::Arc;

const NOW: Timestamp = Timestamp(1_795_000_000_000);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (Ok(addr), Ok(body_file)) = (std::env::var("BENCH_ADDR"), std::env::var("BENCH_BODY"))
    else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    register_organisations(store.as_ref()).await;
    let clock = Arc::new(TestClock::default());
    clock.set(NOW);
    let app = Arc::new(App::new(store, clock));
    let queue = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "targetBranch": "main",
    });
    call(&app, "createQueue", &queue).await;
    let id = QueueId::new(
        &RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main",
    );
    Timeline::new(app.store.as_ref(), id, NOW)
        .at(5, vec![Submit(100), Submit(101), Start("run-1", vec![100])])
        .await;
    let mut pr = queue.clone();
    pr["pr"] = json!({"number": 100});
    let answer = call(&app, "getSubmittedPullRequest", &pr).await;
    std::fs::write(&body_file, answer).expect("body file written");
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .expect("address free");
    axum::serve(listener, router(app))
        .await
        .expect("server runs");
}

async fn call(app: &App, endpoint: &str, body: &serde_json::Value) -> Vec<u8> {
    let route = route(endpoint).expect("route");
    let response = route.serve(app, post(body)).await;
    assert_eq!(response.status(), 200, "{endpoint}");
    response.body().as_ref().to_vec()
}
