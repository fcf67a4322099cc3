//! Request logs as the functions write them (JSON, one object per line), captured while the
//! gateway serves requests: each request's lines carry its span (request id, route,
//! organisation, queue), and the same request id comes back in `X-Request-Id`.

use e2e::{ACME, Auth, Backend, TestEnv, queue_body};
use mq_core::ids::OrgId;
use mq_core::time::Timestamp;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Log output of this test process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Installs the functions' JSON log format (at level info) as this process's logger.
    fn install() -> Self {
        static LOGS: OnceLock<Captured> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Captured::default();
            let writer = logs.clone();
            let subscriber = mq_lambda::logging::json_logs(
                move || writer.clone(),
                mq_lambda::logging::levels("info"),
            );
            tracing::subscriber::set_global_default(subscriber).expect("the only logger");
            logs
        })
        .clone()
    }

    /// Every line logged in the span of request `id`.
    fn of_request(&self, id: &str) -> Vec<Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("every line is JSON"))
            .filter(|l| l["span"]["request_id"] == id)
            .collect()
    }

    /// The request's closing line.
    fn finished(&self, id: &str) -> Value {
        self.of_request(id)
            .into_iter()
            .find(|l| l["fields"]["message"] == "request finished")
            .unwrap_or_else(|| panic!("no closing line for request {id}"))
    }
}

fn request_id(headers: &reqwest::header::HeaderMap) -> String {
    let id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("X-Request-Id on the response");
    assert!(!id.is_empty());
    id.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_logs_its_id_route_organisation_and_queue() {
    let logs = Captured::install();
    let env = TestEnv::start(Backend::Memory).await;
    let rocket = queue_body("rocket", json!({}));
    env.ok("createQueue", &rocket).await;

    let r = env.post("getQueue", Some(ACME), &rocket).await;
    let id = request_id(&r.headers);
    let line = logs.finished(&id);
    assert_eq!(line["level"], "INFO");
    let token = mq_http::auth::record_for(ACME, OrgId::parse("acme").unwrap(), "", Timestamp(0)).id;
    assert_eq!(
        line["span"],
        json!({"name": "request", "request_id": id, "route": "getQueue", "org": "acme",
               "token": token, "queue": "github.com/acme/rocket#main"})
    );
    assert_eq!(line["fields"]["status"], 200);
    assert!(line["fields"]["latency_ms"].is_u64());

    let r = env
        .get(
            "getMergeQueueMetrics?repo=acme/rocket&repoHost=github.com",
            Auth::Bearer(ACME),
        )
        .await;
    let id = request_id(&r.headers);
    let line = logs.finished(&id);
    assert_eq!(line["span"]["route"], "getMergeQueueMetrics");
    assert_eq!(line["span"]["org"], "acme");
    assert_eq!(line["fields"]["status"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_are_logged_and_answered_with_their_id_too() {
    let logs = Captured::install();
    let env = TestEnv::start(Backend::Memory).await;

    let r = env
        .post("getQueue", Some("wrong"), &queue_body("x", json!({})))
        .await;
    assert_eq!(r.status, 401);
    let id = request_id(&r.headers);
    let line = logs.finished(&id);
    assert_eq!(line["fields"]["status"], 401);
    assert_eq!(line["span"]["route"], "getQueue");
    assert!(
        line["span"].get("org").is_none(),
        "no organisation without a valid token"
    );

    let r = env.post("noSuchEndpoint", Some(ACME), &json!({})).await;
    assert_eq!(r.status, 404);
    let id = request_id(&r.headers);
    assert_eq!(logs.finished(&id)["fields"]["status"], 404);

    let first = env.post("getQueue", Some(ACME), &json!({})).await;
    let second = env.post("getQueue", Some(ACME), &json!({})).await;
    assert_ne!(request_id(&first.headers), request_id(&second.headers));
}
