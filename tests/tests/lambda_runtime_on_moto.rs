//! A function binary run as Lambda runs it: started with a Lambda environment (credentials
//! and region in variables, the tables' names), it asks a runtime API on loopback for work,
//! reads DynamoDB on moto and posts its answer. This is the deployed path the other tests
//! skip: the AWS configuration from the environment, the shared clients, the JSON logs, the
//! runtime loop.

use e2e::lambda_runtime::{RuntimeApi, function_binary, function_env, http_api_event};
use e2e::queue_body;
use mq_core::ids::{OrgId, RepoRef};
use mq_core::settings::{QueueConfig, QueueState};
use mq_core::snapshot::Queue;
use mq_core::time::Timestamp;
use mq_store::QueueStore;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_binary_answers_an_invocation_from_dynamodb_on_moto() {
    let binary = function_binary("get-queue");
    let (env, store) = function_env(&format!("runtime{}-", std::process::id())).await;
    let queue = Queue::new(
        OrgId::parse("acme").unwrap(),
        RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main".to_owned(),
        QueueConfig {
            concurrency: 3,
            ..QueueConfig::default()
        },
        QueueState::Paused,
        Timestamp(0),
    );
    store.create_queue(&queue).await.expect("queue created");

    let event = http_api_event("getQueue", &queue_body("rocket", json!({})));
    let api = RuntimeApi::start(&event).await;
    let invocation = api.invoke_once(&binary, &env).await;

    let answer: Value = serde_json::from_str(&invocation.answer)
        .unwrap_or_else(|_| panic!("a JSON answer: {}", invocation.answer));
    assert_eq!(answer["statusCode"], 200, "{answer}");
    let body: Value = serde_json::from_str(answer["body"].as_str().expect("a body")).unwrap();
    assert_eq!(
        (&body["state"], &body["concurrency"], &body["branch"]),
        (&json!("paused"), &json!(3), &json!("main")),
        "the queue as stored: {body}"
    );
    assert!(invocation.ready <= invocation.answered);
}
