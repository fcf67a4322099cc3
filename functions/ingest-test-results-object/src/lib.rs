//! The S3-triggered function: each object created under `test-results/` is a report uploaded
//! with a URL from `flaky-tests/upload-url`; it is ingested like a multipart upload.

use aws_lambda_events::event::s3::S3Event;
use mq_service::App;
use mq_service::test_health::objects::{ObjectOutcome, ingest_object};

/// Ingests every object of the event. A store or S3 failure fails the invocation (Lambda
/// retries it); a refused report is recorded on its upload and does not.
pub async fn handle(
    app: &App,
    event: S3Event,
) -> Result<Vec<ObjectOutcome>, mq_service::ServiceError> {
    let mut outcomes = Vec::new();
    for record in event.records {
        let Some(key) = record.s3.object.key else {
            continue;
        };
        let key = decode_key(&key);
        let outcome = ingest_object(app, &key).await?;
        tracing::info!(key = %key, outcome = ?outcome, "object handled");
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// S3 event keys are URL-encoded (`+` for a space).
fn decode_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| bytes.get(j).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_url_decoded() {
        assert_eq!(
            super::decode_key("test-results/acme/a%2Db+c"),
            "test-results/acme/a-b c"
        );
    }
}
