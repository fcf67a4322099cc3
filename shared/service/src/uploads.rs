//! The bucket large reports are uploaded to, as the service sees it: presigned PUT URLs, and
//! reading an object back when the bucket says it arrived. The S3 adapter is in `mq-lambda`.

use async_trait::async_trait;
use mq_core::ids::OrgId;
use std::time::Duration;
use uuid::Uuid;

/// Where reports uploaded with a presigned URL land: `test-results/<org>/<upload key>`.
pub const OBJECT_PREFIX: &str = "test-results/";

/// How long a presigned URL stays valid.
pub const URL_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// An object read back from the bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    Bytes(Vec<u8>),
    /// Larger than the reader takes: its size, and nothing read.
    TooLarge {
        bytes: u64,
    },
}

/// A bucket holding uploaded reports. Errors are messages for the log.
#[async_trait]
pub trait ReportBucket: Send + Sync {
    /// A URL that accepts one PUT of `key` until [`URL_LIFETIME`] has passed.
    async fn presigned_put(&self, key: &str) -> Result<String, String>;

    /// The object's bytes, or only its size when it is larger than `max_bytes`.
    async fn get(&self, key: &str, max_bytes: usize) -> Result<Fetched, String>;
}

/// The object key of an upload.
pub fn object_key(org: &OrgId, upload: Uuid) -> String {
    format!("{OBJECT_PREFIX}{org}/{upload}")
}

/// The organisation and upload key of an object key; `None` for other objects.
pub fn parse_object_key(key: &str) -> Option<(OrgId, Uuid)> {
    let rest = key.strip_prefix(OBJECT_PREFIX)?;
    let (org, upload) = rest.split_once('/')?;
    Some((OrgId::parse(org).ok()?, Uuid::parse_str(upload).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_round_trip() {
        let org = OrgId::parse("acme").unwrap();
        let key = object_key(&org, Uuid::from_u128(7));
        assert_eq!(
            key,
            "test-results/acme/00000000-0000-0000-0000-000000000007"
        );
        assert_eq!(parse_object_key(&key), Some((org, Uuid::from_u128(7))));
        assert_eq!(parse_object_key("elsewhere/acme/x"), None);
        assert_eq!(parse_object_key("test-results/Bad Org/x"), None);
    }
}
