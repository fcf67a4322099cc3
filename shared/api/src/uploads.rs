//! The bucket large reports are uploaded to: presigned PUT URLs, and reading an object back
//! when S3 says it arrived.

use crate::error::ApiError;
use aws_sdk_s3::presigning::PresigningConfig;
use mq_core::ids::OrgId;
use std::time::Duration;
use uuid::Uuid;

/// Where reports uploaded with a presigned URL land: `test-results/<org>/<upload key>`.
pub const OBJECT_PREFIX: &str = "test-results/";

/// How long a presigned URL stays valid.
pub const URL_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// An S3 bucket (or an S3-compatible server) holding uploaded reports.
#[derive(Clone, Debug)]
pub struct UploadBucket {
    pub client: aws_sdk_s3::Client,
    pub bucket: String,
}

impl UploadBucket {
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    /// A bucket on an S3-compatible server on this machine (moto), with placeholder
    /// credentials and path-style addressing.
    pub async fn local(endpoint: &str, bucket: &str) -> Self {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                "local", "local", None, None, "local",
            ))
            .load()
            .await;
        let s3 = aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(true)
            .build();
        Self::new(aws_sdk_s3::Client::from_conf(s3), bucket)
    }

    /// Creates the bucket if it does not exist (local servers and tests).
    pub async fn create(&self) -> Result<(), String> {
        match self
            .client
            .create_bucket()
            .bucket(&self.bucket)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let code = aws_sdk_s3::error::ProvideErrorMetadata::code(&e).unwrap_or_default();
                if code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
                    Ok(())
                } else {
                    Err(aws_sdk_s3::error::DisplayErrorContext(e).to_string())
                }
            }
        }
    }

    /// A URL that accepts one PUT of `key` until it expires.
    pub async fn presigned_put(&self, key: &str) -> Result<String, ApiError> {
        let config = PresigningConfig::expires_in(URL_LIFETIME).map_err(ApiError::internal)?;
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(config)
            .await
            .map_err(ApiError::internal)?;
        Ok(request.uri().to_owned())
    }

    /// The object's bytes; refused when larger than `max_bytes`.
    pub async fn get(&self, key: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| aws_sdk_s3::error::DisplayErrorContext(e).to_string())?;
        if out.content_length().unwrap_or_default() as u64 > max_bytes as u64 {
            return Err(format!("the object is larger than {max_bytes} bytes"));
        }
        let bytes = out.body.collect().await.map_err(|e| e.to_string())?;
        Ok(bytes.to_vec())
    }
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
