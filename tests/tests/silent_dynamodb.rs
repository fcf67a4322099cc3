//! A DynamoDB endpoint that takes connections and never answers, as a stalled one can: a
//! deployed function's store gives up within its timeouts and answers `Unavailable` (a
//! retryable 503), rather than waiting until Lambda ends the function.

use mq_core::ids::QueueId;
use mq_lambda::deployed::dynamodb_client;
use mq_store::{DynamoStore, QueueStore, StoreError, TableNames};
use std::net::TcpListener;
use std::time::Duration;

/// Takes connections on 127.0.0.1 and holds them open, reading nothing and answering nothing,
/// until the test ends.
fn silent_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port on loopback");
    let address = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming().flatten() {
            held.push(connection);
        }
    });
    format!("http://{address}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamodb_that_never_answers_is_unavailable_within_the_timeouts() {
    let config = mq_tables::local_config(&silent_endpoint()).await;
    let store = DynamoStore::new(dynamodb_client(&config), TableNames::with_prefix("silent-"));
    let id = QueueId::from_stored("github.com/acme/rocket#main".to_owned());
    let answer = tokio::time::timeout(Duration::from_secs(25), store.load(&id))
        .await
        .expect("the store gives up before 25 s");
    assert!(
        matches!(answer, Err(StoreError::Unavailable { .. })),
        "{answer:?}"
    );
}
