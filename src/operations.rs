//! An extractor's operations: what an app's model decided to do with the
//! memories a conversation touches (mem0's add / update / delete / none),
//! as a JSON schema every host shares (`docs/memory-model.md`,
//! "Extraction"), and the lenient reading of a model's reply that finds
//! them in it.
//!
//! The engine calls no model: a host asks its model, passes the reply (or
//! the operations it built) here, and [`crate::Engine::apply_operations`]
//! checks them against what the model was shown and applies them in one
//! commit. Whatever is wrong with a reply is [`Error::InvalidOperations`].

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::item::{Kind, Scope};
use crate::metadata::Metadata;

/// One operation of an extractor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", deny_unknown_fields)]
pub enum Operation {
    /// Store a new memory in the request's scope. With a `key` a memory
    /// of that scope holds, the new memory supersedes that one.
    Add {
        /// The memory's text.
        text: String,
        /// Its kind (default `fact`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<Kind>,
        /// Its tags.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tags: Option<Vec<String>>,
        /// Its key in the scope.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// Its metadata (a JSON object).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
    },
    /// Store `text` as a new memory that supersedes memory `id` (in `id`'s
    /// scope; kind, tags, key, metadata and privacy default to `id`'s).
    Update {
        /// The memory that changed: one the extractor was shown.
        id: String,
        /// The new text.
        text: String,
        /// The new kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<Kind>,
        /// The new tags.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tags: Option<Vec<String>>,
        /// The new key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// The new metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
    },
    /// Soft-delete memory `id` (one the extractor was shown): it leaves
    /// retrieval and its text stays suppressed; erasing is the user's call
    /// (`delete(id, { hard: true })`).
    Delete {
        /// The memory to delete.
        id: String,
    },
    /// Nothing worth remembering.
    None {},
}

/// What [`crate::Engine::apply_operations`] checks and applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperationsRequest {
    /// Where `add` stores; every id named must be visible from it (its
    /// own memories and those of its ancestors, every session of it).
    pub scope: Scope,
    /// The ids the extractor was shown (the related memories): `update`
    /// and `delete` may name only these.
    #[serde(default)]
    pub allowed: Vec<String>,
    /// The operations, applied in order, all or none.
    pub operations: Vec<Operation>,
}

/// A memory that a newer one took the place of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Supersession {
    /// The old memory, now superseded.
    pub id: String,
    /// The memory that took its place.
    pub by: String,
}

/// What [`crate::Engine::apply_operations`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationsResult {
    /// The memories `add` and `update` stored, in order.
    pub added: Vec<String>,
    /// The existing memories an `add` was merged into as a duplicate.
    pub merged: Vec<String>,
    /// The memories superseded, each with its successor.
    pub superseded: Vec<Supersession>,
    /// The memories `delete` soft-deleted.
    pub deleted: Vec<String>,
}

/// Reads the operations in a model's reply: a JSON array of operations, an
/// object `{"operations": [...]}`, or one operation object, alone or inside
/// a Markdown code fence or surrounding prose (the first JSON value of one
/// of those shapes wins). A reply longer than `max_bytes`, without such a
/// value, or whose value is not valid operations is
/// [`Error::InvalidOperations`].
pub fn parse_operations(reply: &str, max_bytes: usize) -> Result<Vec<Operation>> {
    if reply.len() > max_bytes {
        return Err(Error::InvalidOperations(format!(
            "the reply is {} bytes; the limit is {max_bytes}",
            reply.len()
        )));
    }
    let mut first_error = None;
    // The values inside a JSON value are part of it, not candidates.
    let mut scanned_to = 0;
    for (start, _) in reply.match_indices(['[', '{']) {
        if start < scanned_to {
            continue;
        }
        let mut values =
            serde_json::Deserializer::from_str(&reply[start..]).into_iter::<serde_json::Value>();
        let Some(Ok(value)) = values.next() else {
            continue;
        };
        scanned_to = start + values.byte_offset();
        match from_value(value) {
            Ok(Some(ops)) => return Ok(ops),
            Ok(None) => continue,
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        Error::InvalidOperations(
            "the reply holds no JSON array or object of operations".to_string(),
        )
    }))
}

/// The operations a JSON value holds, `None` when it has none of the
/// shapes of [`parse_operations`] (prose in brackets, another object).
fn from_value(value: serde_json::Value) -> Result<Option<Vec<Operation>>> {
    let list = match value {
        serde_json::Value::Array(list) => list,
        serde_json::Value::Object(mut object) => match object.remove("operations") {
            Some(serde_json::Value::Array(list)) if object.is_empty() => list,
            Some(_) => {
                return Err(Error::InvalidOperations(
                    "`operations` must be the object's only field, an array".to_string(),
                ))
            }
            None if object.contains_key("op") => vec![serde_json::Value::Object(object)],
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    // An array of something else than objects is prose (`[1]`, `[sic]`).
    if !list.is_empty() && !list.iter().all(serde_json::Value::is_object) {
        return Ok(None);
    }
    list.into_iter()
        .enumerate()
        .map(|(i, op)| {
            serde_json::from_value(op)
                .map_err(|e| Error::InvalidOperations(format!("operations[{i}]: {e}")))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<Vec<Operation>>) -> &'static str {
        result.map(|_| "OK").unwrap_or_else(|e| e.code())
    }

    #[test]
    fn operations_are_found_in_fences_and_prose() {
        let add = Operation::Add {
            text: "Takes flat whites".into(),
            kind: Some(Kind::Preference),
            tags: None,
            key: None,
            metadata: None,
        };
        let plain = r#"[{"op":"add","text":"Takes flat whites","kind":"preference"}]"#;
        assert_eq!(parse_operations(plain, 1000).unwrap(), vec![add.clone()]);
        let fenced = format!("Here you go [as asked]:\n```json\n{plain}\n```\nDone.");
        assert_eq!(parse_operations(&fenced, 1000).unwrap(), vec![add.clone()]);
        let wrapped = r#"{"operations":[{"op":"add","text":"Takes flat whites","kind":"preference"},{"op":"none"}]}"#;
        assert_eq!(
            parse_operations(wrapped, 1000).unwrap(),
            vec![add.clone(), Operation::None {}]
        );
        let single = r#"Sure. {"op":"delete","id":"m1"} is all."#;
        assert_eq!(
            parse_operations(single, 1000).unwrap(),
            vec![Operation::Delete { id: "m1".into() }]
        );
        assert_eq!(parse_operations("[]", 10).unwrap(), vec![]);
    }

    #[test]
    fn malformed_replies_are_invalid_operations() {
        for reply in [
            "I could not find anything.",
            r#"[{"op":"rename","id":"m1"}]"#,
            r#"[{"op":"add"}]"#,
            r#"[{"op":"add","text":"x","colour":"red"}]"#,
            r#"[{"op":"none","why":"nothing"}]"#,
            r#"{"operations":{"op":"none"}}"#,
            r#"[{"op":"delete","id":7}]"#,
        ] {
            assert_eq!(code(parse_operations(reply, 1000)), "INVALID_OPERATIONS", "{reply}");
        }
        assert_eq!(code(parse_operations(&"[] ".repeat(10), 20)), "INVALID_OPERATIONS");
    }
}
