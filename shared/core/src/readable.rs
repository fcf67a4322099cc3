//! Stored lists read by a version of the service older than the one that wrote them (during a
//! deployment, functions of two versions run side by side; after a rollback, the older one
//! reads what the newer one wrote). An element the reader cannot decode (an outcome code it
//! does not know) is left out, instead of making the whole item unreadable.

use serde::{Deserialize, Deserializer};

/// Deserializes a list, keeping the elements this version can decode. For
/// `#[serde(deserialize_with = "readable::list")]`.
pub fn list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let all = Vec::<Element<T>>::deserialize(deserializer)?;
    Ok(all
        .into_iter()
        .filter_map(|element| match element {
            Element::Readable(value) => Some(value),
            Element::Unreadable(_) => None,
        })
        .collect())
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Element<T> {
    Readable(T),
    Unreadable(serde::de::IgnoredAny),
}

#[cfg(test)]
mod tests {
    use crate::health::{Outcome, ResultRecord};
    use crate::time::Timestamp;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "super::list")]
        history: Vec<ResultRecord>,
    }

    #[test]
    fn an_element_of_a_newer_version_is_left_out_and_the_rest_kept() {
        let record = |o: &str| json!({ "c": "abc", "s": true, "o": o, "t": 5, "u": "u1" });
        let stored = json!({ "history": [record("P"), record("Z"), record("F")] });
        let read: Holder = serde_json::from_value(stored).unwrap();
        let outcomes: Vec<Outcome> = read.history.iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes, [Outcome::Passed, Outcome::Failed]);
        assert_eq!(read.history[0].at, Timestamp(5));
    }

    #[test]
    fn a_list_that_is_not_a_list_is_still_an_error() {
        let stored = json!({ "history": "P" });
        assert!(serde_json::from_value::<Holder>(stored).is_err());
    }
}
