//! Creating the tables of the template on a DynamoDB endpoint (local, moto, or AWS).

use crate::schema::{IndexDef, KeyElement, TableDef, tables};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    LocalSecondaryIndex, Projection, ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use mq_store::TableNames;

#[derive(Debug, thiserror::Error)]
#[error("cannot create table {table}: {message}")]
pub struct CreateError {
    pub table: String,
    pub message: String,
}

/// Creates every table of the template that does not exist yet, under `names`.
pub async fn create_missing_tables(client: &Client, names: &TableNames) -> Result<(), CreateError> {
    for def in tables() {
        let Some(name) = names.by_logical_id(&def.logical_id) else {
            continue;
        };
        create_table(client, name, &def).await?;
    }
    Ok(())
}

async fn create_table(client: &Client, name: &str, def: &TableDef) -> Result<(), CreateError> {
    let fail = |message: String| CreateError {
        table: name.to_owned(),
        message,
    };
    let p = &def.properties;
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(&p.key_schema).map_err(&fail)?));
    for a in &p.attribute_definitions {
        let attr = AttributeDefinition::builder()
            .attribute_name(&a.attribute_name)
            .attribute_type(ScalarAttributeType::from(a.attribute_type.as_str()))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        request = request.attribute_definitions(attr);
    }
    for index in &p.global_secondary_indexes {
        request = request.global_secondary_indexes(global_index(index).map_err(&fail)?);
    }
    for index in &p.local_secondary_indexes {
        request = request.local_secondary_indexes(local_index(index).map_err(&fail)?);
    }
    match request.send().await {
        Ok(_) => {}
        Err(e) if e.code() == Some("ResourceInUseException") => return Ok(()),
        Err(e) => {
            return Err(fail(format!(
                "{}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            )));
        }
    }
    if let Some(ttl) = p.time_to_live_specification.as_ref().filter(|t| t.enabled) {
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(&ttl.attribute_name)
            .enabled(true)
            .build()
            .map_err(|e| fail(e.to_string()))?;
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| {
                fail(format!(
                    "{}",
                    aws_sdk_dynamodb::error::DisplayErrorContext(e)
                ))
            })?;
    }
    Ok(())
}

fn key_schema(keys: &[KeyElement]) -> Result<Vec<KeySchemaElement>, String> {
    keys.iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(&k.attribute_name)
                .key_type(KeyType::from(k.key_type.as_str()))
                .build()
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn projection(index: &IndexDef) -> Projection {
    let mut p = Projection::builder().projection_type(ProjectionType::from(
        index.projection.projection_type.as_str(),
    ));
    for a in &index.projection.non_key_attributes {
        p = p.non_key_attributes(a);
    }
    p.build()
}

fn global_index(index: &IndexDef) -> Result<GlobalSecondaryIndex, String> {
    GlobalSecondaryIndex::builder()
        .index_name(&index.index_name)
        .set_key_schema(Some(key_schema(&index.key_schema)?))
        .projection(projection(index))
        .build()
        .map_err(|e| e.to_string())
}

fn local_index(index: &IndexDef) -> Result<LocalSecondaryIndex, String> {
    LocalSecondaryIndex::builder()
        .index_name(&index.index_name)
        .set_key_schema(Some(key_schema(&index.key_schema)?))
        .projection(projection(index))
        .build()
        .map_err(|e| e.to_string())
}

/// The AWS configuration for an AWS-compatible server on this machine (moto, DynamoDB
/// Local): its endpoint, a fixed region and placeholder credentials.
pub async fn local_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "local",
        ))
        .load()
        .await
}

/// A client for a DynamoDB-compatible endpoint on this machine (moto, DynamoDB Local).
pub async fn local_client(endpoint: &str) -> Client {
    Client::new(&local_config(endpoint).await)
}
