//! What the logs never hold: API tokens (or their hashes), the webhook secret and signatures,
//! and request body content. A run with every way of presenting a token, signed and forged
//! webhook deliveries, and bodies carrying marker strings (accepted and refused ones) is
//! logged at debug level in the functions' JSON format, and the output is searched.

use e2e::health::{Run, form, upload};
use e2e::live::{LiveEnv, body, pr_body};
use e2e::{ACME, Auth, Backend, REVOKED, UMBRELLA, live_on_both_stores};
use mq_githost::webhook::sign;
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

live_on_both_stores!(no_token_secret_or_body_content_is_logged);

const SECRET: &str = "webhook-secret-4f1d9c";
const IDEMPOTENCY_KEY: &str = "idem-key-marker-61b0";

/// Strings only the requests carry.
const BODY_MARKERS: [&str; 7] = [
    "target-marker-a91f",
    "ticket-marker-c3e7",
    "testname-marker-5d2b",
    "zen-marker-0e44",
    "refused-marker-7b18",
    "status-marker-99aa",
    "form-marker-12fe",
];

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
    fn install() -> Self {
        static LOGS: OnceLock<Captured> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Captured::default();
            let writer = logs.clone();
            let subscriber = mq_lambda::logging::json_logs(
                move || writer.clone(),
                mq_lambda::logging::levels("debug"),
            );
            tracing::subscriber::set_global_default(subscriber).expect("the only logger");
            logs
        })
        .clone()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

async fn no_token_secret_or_body_content_is_logged(backend: Backend) {
    let logs = Captured::install();
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"state": "paused"})).await;

    // Tokens: x-api-token, Bearer on GET and POST, another organisation's, a revoked one.
    let submitted = env
        .post_with_headers(
            "submitPullRequest",
            ACME,
            &[("idempotency-key", IDEMPOTENCY_KEY)],
            &pr_body(&repo, 1, json!({})),
        )
        .await;
    assert_eq!(submitted.status, 200);
    let metrics = env
        .get(
            "getMergeQueueMetrics?repo=acme/rocket&repoHost=github.com",
            Auth::Bearer(ACME),
        )
        .await;
    assert_eq!(metrics.status, 200);
    let bearer = env
        .http
        .post(env.url("getQueue"))
        .bearer_auth(ACME)
        .json(&body(&repo, json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status().as_u16(), 200);
    for token in [UMBRELLA, REVOKED] {
        let r = env
            .post("getQueue", Some(token), &body(&repo, json!({})))
            .await;
        assert!(r.status == 404 || r.status == 401);
    }

    // Bodies with markers: accepted, and refused (error messages may quote them).
    let mut targets = body(&repo, json!({"impactedTargets": ["//target-marker-a91f"]}));
    targets["pr"] = json!({"number": 1, "sha": repo.pr_head(1)});
    assert_eq!(env.ok("setImpactedTargets", &targets).await, json!({}));
    let refused = env
        .post(
            "updateQueue",
            Some(ACME),
            &body(&repo, json!({"mergeMethod": "refused-marker-7b18"})),
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.message().contains("refused-marker-7b18"),
        "the client is told"
    );
    let report = "<testsuite name=\"s\" tests=\"1\"><testcase classname=\"c\" \
                  name=\"testname-marker-5d2b\" time=\"0.1\"><failure>status-marker-99aa</failure>\
                  </testcase></testsuite>";
    let uploaded = upload(
        &env,
        &Run::main("c1", "u1"),
        &[("job_name", "form-marker-12fe")],
        &[("r.xml", report.as_bytes().to_vec())],
    )
    .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    let (ct, bad_form) = form(&[("repo", "form-marker-12fe")], &[]);
    assert_eq!(
        env.post_raw("flaky-tests/upload", ACME, &ct, bad_form)
            .await
            .status,
        400
    );
    let ticket = e2e::health::health_body(json!({
        "test_case_id": uuid::Uuid::nil().to_string(),
        "ticket_url": "https://tracker.example/ticket-marker-c3e7",
    }));
    assert_eq!(
        env.post("flaky-tests/link-ticket", Some(ACME), &ticket)
            .await
            .status,
        404
    );

    // Webhook deliveries: signed, and forged with another secret.
    let ping = json!({"zen": "zen-marker-0e44", "hook_id": 7});
    let mut signatures = Vec::new();
    for secret in [SECRET, "forged-secret"] {
        let signature = sign(secret.as_bytes(), ping.to_string().as_bytes());
        let r = env
            .http
            .post(env.url("webhooks/github"))
            .header("X-GitHub-Event", "ping")
            .header("X-Hub-Signature-256", &signature)
            .header("content-type", "application/json")
            .body(ping.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16() == 401, secret != SECRET);
        signatures.push(signature);
    }

    let text = logs.text();
    assert!(text.contains("request finished"), "the run was logged");
    // Who did it: a request's line names its token by its public id.
    let acme_id = mq_http::auth::record_for(
        ACME,
        mq_core::ids::OrgId::parse("acme").unwrap(),
        "",
        mq_core::time::Timestamp(0),
    )
    .id;
    assert!(
        text.lines()
            .any(|l| l.contains("request finished")
                && l.contains(&format!("\"token\":\"{acme_id}\""))),
        "the token's id is logged"
    );
    let hashes: Vec<String> = [ACME, UMBRELLA, REVOKED]
        .iter()
        .map(|t| mq_http::auth::hash_token(t))
        .collect();
    let mut secrets: Vec<&str> = vec![ACME, UMBRELLA, REVOKED, SECRET, "forged-secret"];
    secrets.extend(hashes.iter().map(String::as_str));
    secrets.extend(signatures.iter().map(|s| s.trim_start_matches("sha256=")));
    secrets.extend(BODY_MARKERS);
    secrets.push(IDEMPOTENCY_KEY);
    for secret in secrets {
        let line = text.lines().find(|l| l.contains(secret));
        assert!(
            line.is_none(),
            "{secret} is logged: {}",
            line.unwrap_or_default()
        );
    }
}
