//! The S3 bucket (or an S3-compatible server) that holds large uploaded reports.

use async_trait::async_trait;
use aws_sdk_s3::presigning::PresigningConfig;
use mq_service::uploads::{Fetched, ReportBucket, URL_LIFETIME};

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

    /// A bucket on an S3-compatible server on this machine (moto), reached with `config`
    /// (`mq_tables::local_config`) and path-style addressing.
    pub fn local(config: &aws_config::SdkConfig, bucket: &str) -> Self {
        let s3 = aws_sdk_s3::config::Builder::from(config)
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
}

#[async_trait]
impl ReportBucket for UploadBucket {
    async fn presigned_put(&self, key: &str) -> Result<String, String> {
        let config = PresigningConfig::expires_in(URL_LIFETIME).map_err(|e| e.to_string())?;
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(config)
            .await
            .map_err(|e| aws_sdk_s3::error::DisplayErrorContext(e).to_string())?;
        Ok(request.uri().to_owned())
    }

    async fn get(&self, key: &str, max_bytes: usize) -> Result<Fetched, String> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| aws_sdk_s3::error::DisplayErrorContext(e).to_string())?;
        let size = u64::try_from(out.content_length().unwrap_or_default()).unwrap_or_default();
        if size > max_bytes as u64 {
            return Ok(Fetched::TooLarge { bytes: size });
        }
        let bytes = out.body.collect().await.map_err(|e| e.to_string())?;
        Ok(Fetched::Bytes(bytes.to_vec()))
    }
}
