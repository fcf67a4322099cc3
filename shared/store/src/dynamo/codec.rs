//! Conversion between domain values and DynamoDB items.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

pub(crate) type Item = HashMap<String, AttributeValue>;

/// A value's fields as item attributes, plus the given key attributes.
pub(crate) fn to_item<T: Serialize>(
    value: &T,
    keys: &[(&str, AttributeValue)],
) -> Result<Item, StoreError> {
    let mut item: Item = serde_dynamo::to_item(value).map_err(StoreError::internal)?;
    for (name, v) in keys {
        item.insert((*name).to_owned(), v.clone());
    }
    Ok(item)
}

/// A value read back from an item (key and index attributes are ignored).
pub(crate) fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(StoreError::internal)
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The string value of an attribute, if it is one.
pub(crate) fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

/// A key of one string attribute (a table without sort key).
pub(crate) fn hash_key(name: &str, value: &str) -> Item {
    HashMap::from([(name.to_owned(), s(value))])
}

/// A key of two string attributes.
pub(crate) fn key(pk: &str, sk: &str) -> Item {
    HashMap::from([
        (super::keys::PK.to_owned(), s(pk)),
        (super::keys::SK.to_owned(), s(sk)),
    ])
}

/// A value read back from an item, if there is one.
pub(crate) fn from_optional_item<T: DeserializeOwned>(
    item: Option<Item>,
) -> Result<Option<T>, StoreError> {
    item.map(from_item).transpose()
}

/// The values read back from items, in their order.
pub(crate) fn from_items<T: DeserializeOwned>(items: Vec<Item>) -> Result<Vec<T>, StoreError> {
    items.into_iter().map(from_item).collect()
}
