//! Table definitions, read from the SAM template: the one place they are written down.

use serde::Deserialize;
use serde_norway::Value;

/// The deployment template, compiled in.
pub const TEMPLATE: &str = include_str!("../../../template.yaml");

/// A DynamoDB table as the template declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    /// The logical id in the template (`QueuesTable`).
    pub logical_id: String,
    pub properties: TableProperties,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TableProperties {
    pub attribute_definitions: Vec<AttributeDef>,
    pub key_schema: Vec<KeyElement>,
    #[serde(default)]
    pub global_secondary_indexes: Vec<IndexDef>,
    #[serde(default)]
    pub local_secondary_indexes: Vec<IndexDef>,
    pub time_to_live_specification: Option<TimeToLive>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeDef {
    pub attribute_name: String,
    pub attribute_type: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeyElement {
    pub attribute_name: String,
    pub key_type: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct IndexDef {
    pub index_name: String,
    pub key_schema: Vec<KeyElement>,
    pub projection: Projection,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Projection {
    pub projection_type: String,
    #[serde(default)]
    pub non_key_attributes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TimeToLive {
    pub attribute_name: String,
    pub enabled: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("template.yaml is not valid YAML: {0}")]
    Yaml(#[from] serde_norway::Error),
    #[error("template.yaml has no Resources")]
    NoResources,
}

/// Every `AWS::DynamoDB::Table` of a template, in template order.
pub fn tables_in(template: &str) -> Result<Vec<TableDef>, SchemaError> {
    let doc: Value = serde_norway::from_str(template)?;
    let resources = doc
        .get("Resources")
        .and_then(Value::as_mapping)
        .ok_or(SchemaError::NoResources)?;
    let mut tables = Vec::new();
    for (name, resource) in resources {
        if resource.get("Type").and_then(Value::as_str) != Some("AWS::DynamoDB::Table") {
            continue;
        }
        let properties = resource.get("Properties").cloned().unwrap_or(Value::Null);
        tables.push(TableDef {
            logical_id: name.as_str().unwrap_or_default().to_owned(),
            properties: serde_norway::from_value(properties)?,
        });
    }
    Ok(tables)
}

/// The tables of the compiled-in template.
pub fn tables() -> Vec<TableDef> {
    // The template is part of the build; a broken one fails `every_table_is_read` below.
    tables_in(TEMPLATE).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mq_store::tables::TABLES;

    #[test]
    fn every_table_is_read() {
        let tables = tables_in(TEMPLATE).expect("template parses");
        let ids: Vec<&str> = tables.iter().map(|t| t.logical_id.as_str()).collect();
        let expected: Vec<&str> = TABLES.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn queues_table_has_its_indexes() {
        let queues = tables()
            .into_iter()
            .find(|t| t.logical_id == "QueuesTable")
            .unwrap();
        let names: Vec<&str> = queues
            .properties
            .global_secondary_indexes
            .iter()
            .map(|i| i.index_name.as_str())
            .collect();
        assert_eq!(
            names,
            ["org-index", "repo-index", "work-index", "sha-index"]
        );
        let ttl = queues.properties.time_to_live_specification.unwrap();
        assert_eq!(ttl.attribute_name, "expires_at");
    }

    /// README promises every table is on demand, recoverable to a point in time, protected
    /// from deletion and kept when the stack goes.
    #[test]
    fn every_table_is_durable() {
        let doc: Value = serde_norway::from_str(TEMPLATE).unwrap();
        let resources = doc.get("Resources").and_then(Value::as_mapping).unwrap();
        for (name, resource) in resources {
            if resource.get("Type").and_then(Value::as_str) != Some("AWS::DynamoDB::Table") {
                continue;
            }
            let name = name.as_str().unwrap();
            let props = &resource["Properties"];
            assert_eq!(
                props["BillingMode"].as_str(),
                Some("PAY_PER_REQUEST"),
                "{name}"
            );
            assert_eq!(
                props["DeletionProtectionEnabled"].as_bool(),
                Some(true),
                "{name}"
            );
            let pitr = &props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"];
            assert_eq!(pitr.as_bool(), Some(true), "{name}");
            assert_eq!(
                resource["DeletionPolicy"].as_str(),
                Some("Retain"),
                "{name}"
            );
            assert_eq!(
                props["SSESpecification"]["SSEEnabled"].as_bool(),
                Some(true),
                "{name}"
            );
        }
    }

    #[test]
    fn every_index_key_attribute_is_defined() {
        for table in tables() {
            let defined: Vec<&str> = table
                .properties
                .attribute_definitions
                .iter()
                .map(|a| a.attribute_name.as_str())
                .collect();
            let p = &table.properties;
            let keys = p
                .key_schema
                .iter()
                .chain(
                    p.global_secondary_indexes
                        .iter()
                        .flat_map(|i| &i.key_schema),
                )
                .chain(p.local_secondary_indexes.iter().flat_map(|i| &i.key_schema));
            for k in keys {
                assert!(
                    defined.contains(&k.attribute_name.as_str()),
                    "{}: {}",
                    table.logical_id,
                    k.attribute_name
                );
            }
        }
    }
}
