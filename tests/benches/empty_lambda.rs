//! The baseline of the cold start benchmark: a `lambda_runtime` function that answers every
//! invocation with its event. It runs only under a Lambda runtime API
//! (`AWS_LAMBDA_RUNTIME_API`); run by `cargo bench` without one, it returns at once.

use lambda_http::lambda_runtime::{self, LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_none() {
        return Ok(());
    }
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<_, lambda_runtime::Error>(event.payload)
    }))
    .await
}
