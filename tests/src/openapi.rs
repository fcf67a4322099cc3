//! The OpenAPI document (`openapi/openapi.json`) as a checker of real responses: the status
//! must be documented for the operation, the content type must be the documented one, and a
//! JSON body must validate against the documented schema (formats included).

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// An operation as the document names it: `POST /createQueue`.
pub type Operation = String;

/// The document, and the (operation, status) pairs checked so far.
pub struct Contract {
    doc: Value,
    checked: Mutex<BTreeMap<Operation, BTreeSet<u16>>>,
}

impl Default for Contract {
    fn default() -> Self {
        Self::load()
    }
}

impl Contract {
    /// The document the gateway serves.
    pub fn load() -> Self {
        let doc =
            serde_json::from_str(mq_http::openapi::OPENAPI_JSON).expect("the document is JSON");
        Self {
            doc,
            checked: Mutex::new(BTreeMap::new()),
        }
    }

    /// Every operation of the document.
    pub fn operations(&self) -> Vec<Operation> {
        let mut ops = Vec::new();
        for (path, item) in self.doc["paths"].as_object().into_iter().flatten() {
            for method in item.as_object().into_iter().flatten().map(|(m, _)| m) {
                ops.push(format!("{} {path}", method.to_ascii_uppercase()));
            }
        }
        ops
    }

    /// Whether `status` is documented for the operation.
    pub fn documents(&self, method: &str, path: &str, status: u16) -> bool {
        self.response(method, path, status).is_some()
    }

    /// Checks one response; `Err` says what drifted from the document.
    pub fn check(
        &self,
        method: &str,
        path: &str,
        status: u16,
        content_type: &str,
        body: &[u8],
    ) -> Result<(), String> {
        let op = format!("{} {path}", method.to_ascii_uppercase());
        let response = self
            .response(method, path, status)
            .ok_or_else(|| format!("{op}: status {status} is not documented"))?;
        self.checked
            .lock()
            .unwrap()
            .entry(op.clone())
            .or_default()
            .insert(status);
        let Some(content) = response["content"].as_object() else {
            return Ok(());
        };
        let essence = |t: &str| t.split(';').next().unwrap_or_default().trim().to_owned();
        let (media, spec) = content
            .iter()
            .find(|(media, _)| essence(media) == essence(content_type))
            .ok_or_else(|| {
                format!("{op} {status}: content type {content_type} is not documented")
            })?;
        if essence(media) != "application/json" {
            return std::str::from_utf8(body)
                .map(|_| ())
                .map_err(|_| format!("{op} {status}: the {media} body is not text"));
        }
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| format!("{op} {status}: the body is not JSON: {e}"))?;
        self.validate(&spec["schema"], &value)
            .map_err(|e| format!("{op} {status}: {e}; body: {value}"))
    }

    /// The (operation, statuses) pairs checked so far.
    pub fn checked(&self) -> BTreeMap<Operation, BTreeSet<u16>> {
        self.checked.lock().unwrap().clone()
    }

    /// Operations of the document without a checked `200`.
    pub fn unchecked_successes(&self) -> Vec<Operation> {
        let checked = self.checked();
        self.operations()
            .into_iter()
            .filter(|op| !checked.get(op).is_some_and(|s| s.contains(&200)))
            .collect()
    }

    fn response(&self, method: &str, path: &str, status: u16) -> Option<Value> {
        let op = &self.doc["paths"][path][method.to_ascii_lowercase()];
        let response = op["responses"].get(status.to_string())?;
        Some(self.resolve(response))
    }

    fn resolve(&self, value: &Value) -> Value {
        match value["$ref"].as_str() {
            Some(pointer) => self
                .doc
                .pointer(pointer.trim_start_matches('#'))
                .cloned()
                .unwrap_or(Value::Null),
            None => value.clone(),
        }
    }

    /// Validates `value` against a schema of the document (its `$ref`s resolve in it).
    pub fn validate(&self, schema: &Value, value: &Value) -> Result<(), String> {
        let mut root = schema.clone();
        if let Some(object) = root.as_object_mut() {
            object.insert("components".into(), self.doc["components"].clone());
            object.insert(
                "$schema".into(),
                json!("https://json-schema.org/draft/2020-12/schema"),
            );
        }
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&root)
            .map_err(|e| format!("the schema does not compile: {e}"))?;
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("at {}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}
