//! Free-form metadata on a memory: a JSON object the caller attaches and
//! filters on. memtide never interprets it; it checks its size (the limit
//! `maxMetadataBytes`, `TOO_LARGE` past it) and answers equality filters.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A memory's metadata, or a filter on it: a JSON object.
pub type Metadata = Map<String, Value>;

/// Checks metadata against the size limit: the bytes of its compact JSON.
pub fn check_size(metadata: &Metadata, limit: usize) -> Result<()> {
    // Serializing a map of JSON values cannot fail.
    let size = serde_json::to_vec(metadata).map(|v| v.len()).unwrap_or(0);
    if size > limit {
        return Err(Error::TooLarge {
            what: "metadata".into(),
            size,
            limit,
        });
    }
    Ok(())
}

/// Metadata as stored: an empty object is no metadata.
pub fn normalize(metadata: Option<Metadata>) -> Option<Metadata> {
    metadata.filter(|m| !m.is_empty())
}

/// True when `metadata` holds every key of `filter` with an equal value
/// ([`json_eq`]); an absent or empty filter matches everything.
pub fn matches(metadata: Option<&Metadata>, filter: Option<&Metadata>) -> bool {
    let Some(filter) = filter.filter(|f| !f.is_empty()) else {
        return true;
    };
    let Some(metadata) = metadata else {
        return false;
    };
    filter
        .iter()
        .all(|(key, want)| metadata.get(key).is_some_and(|have| json_eq(have, want)))
}

/// JSON equality, with numbers compared by value: `1` equals `1.0`, as in
/// JavaScript (serde_json tells an integer from a float).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x
                    .iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Metadata {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn filters_need_every_key_equal() {
        let m = object(json!({"project": "kite", "n": 1, "deep": {"a": [1, 2]}}));
        let yes = object(json!({"project": "kite", "n": 1.0}));
        let deep = object(json!({"deep": {"a": [1.0, 2]}}));
        let no = object(json!({"project": "kite", "n": 2}));
        let missing = object(json!({"other": null}));
        assert!(matches(Some(&m), Some(&yes)));
        assert!(matches(Some(&m), Some(&deep)));
        assert!(!matches(Some(&m), Some(&no)));
        assert!(!matches(Some(&m), Some(&missing)));
        assert!(!matches(None, Some(&yes)));
        assert!(matches(None, None));
        assert!(matches(None, Some(&Map::new())));
    }

    #[test]
    fn size_is_the_compact_json() {
        let m = object(json!({"k": "v"}));
        assert!(check_size(&m, 9).is_ok());
        let err = check_size(&m, 8).unwrap_err();
        assert_eq!(err.code(), "TOO_LARGE");
    }
}
