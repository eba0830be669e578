//! Chat messages as input: the message shapes of OpenAI's Chat Completions,
//! Anthropic's Messages and the Vercel AI SDK (`ModelMessage`, and
//! `UIMessage` with its `parts`) turned into memories, one per part, in the
//! messages' order.
//!
//! The parsing lives here, in the engine crate, so the JavaScript package,
//! the CLI and the component read messages the same way. What a part
//! becomes:
//!
//! | part | memory text | `source` |
//! |---|---|---|
//! | text (`text`, `input_text`, `output_text`, `refusal`, a string `content`) | the text | `message`, the message's `id` |
//! | reasoning (`reasoning`, `thinking`) | the text | `message` |
//! | tool call (`tool-call`, `tool_use`, OpenAI `tool_calls`, a UI tool part's input) | `tool call NAME: INPUT` | `tool`, the call's id |
//! | tool result (`tool-result`, `tool_result`, a `tool` message, a UI tool part's output) | `tool result NAME: OUTPUT` | `tool`, the call's id |
//! | image (`image`, `image_url`, `input_image`) | `[image URL]` (an `http(s)` address; else the media type) | `message` |
//! | file (`file`, `document`, `input_file`) | `[file NAME URL]` | `message` |
//!
//! Only text parts are kept unless [`MessageOptions::include`] says
//! otherwise, and only the messages of users and assistants unless
//! [`MessageOptions::roles`] says otherwise. Parts of other types
//! (`step-start`, `source-url`, `data-…`, audio, redacted thinking) are
//! never memories. Each memory is an ordinary ingest input, so `<private>`
//! spans and `<no-memory>` work inside any part, and duplicates merge.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::engine::{IngestResult, MemoryInput};
use crate::error::{Error, Result};
use crate::item::{Kind, Privacy, Role, Scope, Source, SourceKind, Status, Timestamp};
use crate::text;

/// A sort of message part that can become a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartType {
    /// What was said.
    Text,
    /// A model's reasoning.
    Reasoning,
    /// A call of a tool (its name and input).
    ToolCall,
    /// What a tool returned.
    ToolResult,
    /// An image (its address).
    Image,
    /// A file or document (its name and address).
    File,
}

/// How [`messages_to_inputs`] turns messages into memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageOptions {
    /// Where the memories belong.
    pub scope: Scope,
    /// The parts that become memories (default `["text"]`).
    #[serde(default)]
    pub include: Option<Vec<PartType>>,
    /// The roles whose messages are kept (default `["user", "assistant"]`:
    /// a system prompt is an instruction, not something said). Tool
    /// messages carry tool results and are kept when `include` asks for
    /// them.
    #[serde(default)]
    pub roles: Option<Vec<Role>>,
    /// The speaker of each role's messages when a message names none (an
    /// OpenAI message's `name` wins).
    #[serde(default)]
    pub speakers: Option<BTreeMap<Role, String>>,
    /// Kind of every memory (default `episodic`).
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Review status of every memory (default `approved`).
    #[serde(default)]
    pub status: Option<Status>,
    /// Labels of every memory.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Privacy markers of every memory.
    #[serde(default)]
    pub privacy: Option<Privacy>,
    /// When the messages were said, for those without a `createdAt` of
    /// their own (default: now). Messages sharing a time keep their order.
    #[serde(default)]
    pub created_at: Option<Timestamp>,
}

impl MessageOptions {
    /// Options with every optional field at its default.
    pub fn new(scope: Scope) -> Self {
        MessageOptions {
            scope,
            include: None,
            roles: None,
            speakers: None,
            kind: None,
            status: None,
            tags: None,
            privacy: None,
            created_at: None,
        }
    }
}

/// What ingest did with one part of one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageIngestResult {
    /// The message's index in the input.
    pub message: usize,
    /// The part's index in the message (0 for a string `content`; OpenAI's
    /// `tool_calls` follow the content's parts).
    pub part: usize,
    /// What ingest did with it.
    #[serde(flatten)]
    pub result: IngestResult,
}

/// An ingest input made from one part of one message.
pub struct PlannedInput {
    /// The message's index.
    pub message: usize,
    /// The part's index in the message.
    pub part: usize,
    /// The input.
    pub input: MemoryInput,
}

/// The ingest inputs `messages` make under `options`, in order. Fails with
/// `INVALID_INPUT` naming the message (`messages[3].role: …`) for a value
/// that is not a message of a known shape.
pub fn messages_to_inputs(messages: &[Value], options: &MessageOptions) -> Result<Vec<PlannedInput>> {
    options.scope.validate()?;
    let include = options.include.as_deref().unwrap_or(&[PartType::Text]);
    let roles = options
        .roles
        .as_deref()
        .unwrap_or(&[Role::User, Role::Assistant]);
    let mut planned = Vec::new();
    for (m, value) in messages.iter().enumerate() {
        let at = |e: Error| e.at(&format!("messages[{m}]"));
        let message = Message::parse(value).map_err(at)?;
        if message.role.is_some_and(|r| !roles.contains(&r)) {
            continue;
        }
        let speaker = message.name.clone().or_else(|| {
            let role = message.role?;
            options.speakers.as_ref()?.get(&role).cloned()
        });
        let created_at = message.created_at.or(options.created_at);
        for part in &message.parts {
            if !include.contains(&part.kind) || text::is_blank(&part.text) {
                continue;
            }
            let source = Source {
                kind: part.source_kind(),
                reference: part.reference.clone().or_else(|| message.id.clone()).unwrap_or_default(),
                uri: None,
            };
            // A tool result is the tool's, not the speaker's.
            let (role, speaker) = match part.kind {
                PartType::ToolResult => (None, None),
                _ => (message.role, speaker.clone()),
            };
            planned.push(PlannedInput {
                message: m,
                part: part.index,
                input: MemoryInput {
                    kind: options.kind,
                    status: options.status,
                    source: Some(source),
                    tags: options.tags.clone(),
                    privacy: options.privacy,
                    created_at,
                    role,
                    speaker,
                    ..MemoryInput::new(part.text.clone(), options.scope.clone())
                },
            });
        }
    }
    Ok(planned)
}

/// One message, read from any of the shapes.
struct Message {
    /// `None` for a tool message.
    role: Option<Role>,
    name: Option<String>,
    id: Option<String>,
    created_at: Option<Timestamp>,
    parts: Vec<Part>,
}

/// One part of a message that could become a memory.
struct Part {
    kind: PartType,
    /// Where it was in the message.
    index: usize,
    text: String,
    /// The tool call's id, for tool parts.
    reference: Option<String>,
}

impl Part {
    fn source_kind(&self) -> SourceKind {
        match self.kind {
            PartType::ToolCall | PartType::ToolResult => SourceKind::Tool,
            _ => SourceKind::Message,
        }
    }
}

impl Message {
    fn parse(value: &Value) -> Result<Message> {
        let Value::Object(object) = value else {
            return Err(Error::invalid("a message must be an object"));
        };
        let role = match string(object, "role")? {
            Some("user") => Some(Role::User),
            Some("assistant") => Some(Role::Assistant),
            Some("system" | "developer") => Some(Role::System),
            Some("tool" | "function") => None,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "role: `{}` is not a message role (user, assistant, system, developer, tool)",
                    other.chars().take(64).collect::<String>()
                )))
            }
            None => return Err(Error::invalid("role: missing")),
        };
        let created_at = string(object, "createdAt")?
            .map(|t| Timestamp::parse_rfc3339(t).map_err(|e| e.at("createdAt")))
            .transpose()?;
        let mut parts = Vec::new();
        // A UIMessage's `parts` hold what it says (AI SDK 4 also kept a
        // flattened `content` beside them).
        let body = object.get("parts").or_else(|| object.get("content"));
        match body {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                let kind = if role.is_none() {
                    PartType::ToolResult
                } else {
                    PartType::Text
                };
                let text = match kind {
                    PartType::ToolResult => tool_text("tool result", string(object, "name")?, s),
                    _ => s.clone(),
                };
                parts.push(Part {
                    kind,
                    index: 0,
                    text,
                    reference: string(object, "tool_call_id")?.map(str::to_string),
                });
            }
            Some(Value::Array(blocks)) => {
                for (index, block) in blocks.iter().enumerate() {
                    let found =
                        read_block(block, role.is_none()).map_err(|e| e.at(&format!("parts[{index}]")))?;
                    parts.extend(found.into_iter().map(|(kind, text, reference)| Part {
                        kind,
                        index,
                        text,
                        reference,
                    }));
                }
            }
            Some(_) => return Err(Error::invalid("content must be a string or an array of parts")),
        }
        // OpenAI: an assistant's calls sit beside its content.
        if let Some(Value::Array(calls)) = object.get("tool_calls") {
            let first = parts.iter().map(|p| p.index + 1).max().unwrap_or(0);
            for (i, call) in calls.iter().enumerate() {
                let function = call.get("function");
                let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
                let input = function.and_then(|f| f.get("arguments")).map(plain_text);
                parts.push(Part {
                    kind: PartType::ToolCall,
                    index: first + i,
                    text: tool_text("tool call", name, &input.unwrap_or_default()),
                    reference: call.get("id").and_then(Value::as_str).map(str::to_string),
                });
            }
        }
        Ok(Message {
            role,
            name: string(object, "name")?.filter(|_| role.is_some()).map(str::to_string),
            id: string(object, "id")?.map(str::to_string),
            created_at,
            parts,
        })
    }
}

/// What one part or content block holds: its type, its text and the tool
/// call's id.
type Found = (PartType, String, Option<String>);

/// What one part or content block holds; a UI tool part may hold a call and
/// its result.
fn read_block(block: &Value, in_tool_message: bool) -> Result<Vec<Found>> {
    let Value::Object(object) = block else {
        // OpenAI allows no bare strings here, but a string part is plainly
        // text.
        return match block {
            Value::String(s) => Ok(vec![(PartType::Text, s.clone(), None)]),
            _ => Err(Error::invalid("a part must be an object")),
        };
    };
    let Some(kind) = string(object, "type")? else {
        return Err(Error::invalid("type: missing"));
    };
    let text_of = |names: &[&str]| first(object, names).map(plain_text).unwrap_or_default();
    let call_id = first(object, &["toolCallId", "tool_use_id", "id", "call_id"])
        .and_then(Value::as_str)
        .map(str::to_string);
    let name = first(object, &["toolName", "name"]).and_then(Value::as_str);
    let found = match kind {
        "text" | "input_text" | "output_text" => {
            let kind = if in_tool_message {
                PartType::ToolResult
            } else {
                PartType::Text
            };
            vec![(kind, text_of(&["text"]), None)]
        }
        "refusal" => vec![(PartType::Text, text_of(&["refusal"]), None)],
        "reasoning" | "thinking" => vec![(PartType::Reasoning, text_of(&["text", "thinking"]), None)],
        "tool-call" | "tool_use" | "function_call" => vec![(
            PartType::ToolCall,
            tool_text("tool call", name, &text_of(&["input", "arguments", "args"])),
            call_id,
        )],
        "tool-result" | "tool_result" | "function_call_output" => vec![(
            PartType::ToolResult,
            tool_text("tool result", name, &text_of(&["output", "content", "result"])),
            call_id,
        )],
        "image" | "image_url" | "input_image" => vec![(PartType::Image, image_text(object), None)],
        "file" | "document" | "input_file" => vec![(PartType::File, file_text(object), None)],
        // A UI message's tool invocation: `tool-NAME`, or `dynamic-tool`
        // with a `toolName`.
        ui if ui.starts_with("tool-") || ui == "dynamic-tool" => {
            let name = name.or_else(|| ui.strip_prefix("tool-"));
            let mut found = Vec::new();
            if let Some(input) = object.get("input").filter(|v| !v.is_null()) {
                found.push((
                    PartType::ToolCall,
                    tool_text("tool call", name, &plain_text(input)),
                    call_id.clone(),
                ));
            }
            if let Some(output) = object.get("output").filter(|v| !v.is_null()) {
                found.push((
                    PartType::ToolResult,
                    tool_text("tool result", name, &plain_text(output)),
                    call_id,
                ));
            }
            found
        }
        // step-start, source-url, data-…, input_audio, redacted_thinking:
        // nothing a memory holds.
        _ => Vec::new(),
    };
    Ok(found)
}

/// The first of the fields `names` an object has.
fn first<'a>(object: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| object.get(*n))
}

/// A string field of a message or part; a value of another type is refused.
fn string<'a>(object: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::invalid(format!("{key} must be a string"))),
    }
}

/// The text a value holds: a string as is, text parts joined, a typed
/// output (`{type: "text" | "json", value}`) by its value, anything else
/// as compact JSON.
fn plain_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(plain_text)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(object) => match (object.get("type").and_then(Value::as_str), object.get("text"), object.get("value")) {
            (Some("text"), Some(text), _) => plain_text(text),
            (Some(_), None, Some(inner)) => plain_text(inner),
            // Images and files inside a result carry no text.
            (Some("image" | "image_url" | "file" | "media" | "document"), _, _) => String::new(),
            _ => value.to_string(),
        },
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn tool_text(what: &str, name: Option<&str>, body: &str) -> String {
    match name {
        Some(name) => format!("{what} {name}: {body}"),
        None => format!("{what}: {body}"),
    }
}

/// The address of an image or file when it is a web address; inline data
/// (`data:` URLs, base64) says nothing a memory could hold.
fn web_address(object: &Map<String, Value>) -> Option<&str> {
    let candidates = [
        object.get("url"),
        object.get("image_url").and_then(|u| u.get("url").or(Some(u))),
        object.get("image"),
        object.get("data"),
        object.get("file_url"),
        object.get("source").and_then(|s| s.get("url")),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|u| u.starts_with("https://") || u.starts_with("http://"))
}

fn media_type(object: &Map<String, Value>) -> Option<&str> {
    object
        .get("mediaType")
        .or_else(|| object.get("mimeType"))
        .or_else(|| object.get("source").and_then(|s| s.get("media_type")))
        .and_then(Value::as_str)
}

fn image_text(object: &Map<String, Value>) -> String {
    let what = web_address(object).or_else(|| media_type(object));
    match what {
        Some(what) => format!("[image {what}]"),
        None => "[image]".to_string(),
    }
}

fn file_text(object: &Map<String, Value>) -> String {
    let name = ["filename", "title", "name"]
        .iter()
        .find_map(|k| object.get(*k))
        .or_else(|| object.get("file").and_then(|f| f.get("filename")))
        .and_then(Value::as_str);
    let words: Vec<&str> = [name, web_address(object), media_type(object)]
        .into_iter()
        .flatten()
        .collect();
    if words.is_empty() {
        "[file]".to_string()
    } else {
        format!("[file {}]", words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plan(messages: Value, options: MessageOptions) -> Vec<(usize, usize, String, Option<Role>)> {
        let Value::Array(messages) = messages else {
            panic!("not an array")
        };
        messages_to_inputs(&messages, &options)
            .unwrap()
            .into_iter()
            .map(|p| (p.message, p.part, p.input.text, p.input.role))
            .collect()
    }

    fn options() -> MessageOptions {
        MessageOptions::new(Scope::workspace("u", "w"))
    }

    fn all_parts() -> MessageOptions {
        MessageOptions {
            include: Some(vec![
                PartType::Text,
                PartType::Reasoning,
                PartType::ToolCall,
                PartType::ToolResult,
                PartType::Image,
                PartType::File,
            ]),
            roles: Some(vec![Role::User, Role::Assistant, Role::System]),
            ..options()
        }
    }

    #[test]
    fn openai_messages_keep_text_and_name_and_leave_tools_out_by_default() {
        let messages = json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "name": "Caroline", "content": "I adopted a cat named Miso."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
            {"role": "user", "content": [
                {"type": "text", "text": "Look at her:"},
                {"type": "image_url", "image_url": {"url": "https://example.com/miso.png"}}]},
        ]);
        let planned = plan(messages.clone(), options());
        assert_eq!(
            planned,
            [
                (1, 0, "I adopted a cat named Miso.".into(), Some(Role::User)),
                (4, 0, "Look at her:".into(), Some(Role::User)),
            ]
        );
        let Value::Array(list) = messages.clone() else { unreachable!() };
        let inputs = messages_to_inputs(&list, &options()).unwrap();
        assert_eq!(inputs[0].input.speaker.as_deref(), Some("Caroline"));
        assert_eq!(inputs[1].input.speaker, None);

        let planned = plan(messages, all_parts());
        let texts: Vec<&str> = planned.iter().map(|p| p.2.as_str()).collect();
        assert_eq!(
            texts,
            [
                "You are terse.",
                "I adopted a cat named Miso.",
                "tool call get_weather: {\"city\":\"Oslo\"}",
                "tool result: rain",
                "Look at her:",
                "[image https://example.com/miso.png]",
            ]
        );
        assert_eq!(planned[3].3, None, "a tool result is no one's");
        let Value::Array(list) = json!([{"role": "tool", "tool_call_id": "call_1", "content": "rain"}]) else { unreachable!() };
        let planned = messages_to_inputs(&list, &all_parts()).unwrap();
        let source = planned[0].input.source.as_ref().unwrap();
        assert_eq!((source.kind, source.reference.as_str()), (SourceKind::Tool, "call_1"));
    }

    #[test]
    fn anthropic_blocks_are_read() {
        let messages = json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this file?"},
                {"type": "document", "title": "notes.pdf", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants a summary.", "signature": "x"},
                {"type": "text", "text": "It lists groceries."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "milk"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "2 litres"}]}]},
        ]);
        assert_eq!(
            plan(messages.clone(), options()),
            [
                (0, 0, "What is in this file?".into(), Some(Role::User)),
                (1, 1, "It lists groceries.".into(), Some(Role::Assistant)),
            ]
        );
        let texts: Vec<String> = plan(messages, all_parts()).into_iter().map(|p| p.2).collect();
        assert_eq!(
            texts,
            [
                "What is in this file?",
                "[file notes.pdf application/pdf]",
                "The user wants a summary.",
                "It lists groceries.",
                "tool call lookup: {\"q\":\"milk\"}",
                "tool result: 2 litres",
            ]
        );
    }

    #[test]
    fn ai_sdk_model_and_ui_messages_are_read() {
        let messages = json!([
            {"role": "user", "content": [{"type": "text", "text": "Book a table for two."}]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "Need a time."},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "book", "input": {"people": 2}},
                {"type": "text", "text": "Booked for 8pm."}]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "book", "output": {"type": "json", "value": {"ok": true}}}]},
            {"id": "u9", "role": "user", "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Thanks! <private>my card is 4111</private>"},
                {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAAA"}]},
            {"id": "a9", "role": "assistant", "parts": [
                {"type": "tool-weather", "toolCallId": "w1", "state": "output-available", "input": {"city": "Rome"}, "output": "sunny"},
                {"type": "text", "text": "Enjoy the sun."},
                {"type": "data-progress", "data": {}}]},
        ]);
        assert_eq!(
            plan(messages.clone(), options()),
            [
                (0, 0, "Book a table for two.".into(), Some(Role::User)),
                (1, 2, "Booked for 8pm.".into(), Some(Role::Assistant)),
                (3, 1, "Thanks! <private>my card is 4111</private>".into(), Some(Role::User)),
                (4, 1, "Enjoy the sun.".into(), Some(Role::Assistant)),
            ]
        );
        let texts: Vec<String> = plan(messages.clone(), all_parts()).into_iter().map(|p| p.2).collect();
        assert_eq!(
            texts,
            [
                "Book a table for two.",
                "Need a time.",
                "tool call book: {\"people\":2}",
                "Booked for 8pm.",
                "tool result book: {\"ok\":true}",
                "Thanks! <private>my card is 4111</private>",
                "[file image/png]",
                "tool call weather: {\"city\":\"Rome\"}",
                "tool result weather: sunny",
                "Enjoy the sun.",
            ]
        );
        let Value::Array(list) = messages else { unreachable!() };
        let inputs = messages_to_inputs(&list, &options()).unwrap();
        assert_eq!(inputs[2].input.source.as_ref().unwrap().reference, "u9");
    }

    #[test]
    fn speakers_times_and_roles_come_from_the_options_unless_a_message_sets_them() {
        let messages = json!([
            {"role": "user", "content": "hi", "createdAt": "2024-05-01T10:00:00Z"},
            {"role": "assistant", "content": "hello"},
            {"role": "system", "content": "be brief"},
        ]);
        let Value::Array(list) = messages else { unreachable!() };
        let at = Timestamp::parse_rfc3339("2024-06-01T00:00:00Z").unwrap();
        let options = MessageOptions {
            speakers: Some([(Role::User, "Ann".to_string()), (Role::Assistant, "Bot".to_string())].into()),
            created_at: Some(at),
            roles: Some(vec![Role::User, Role::Assistant]),
            ..options()
        };
        let inputs = messages_to_inputs(&list, &options).unwrap();
        assert_eq!(inputs.len(), 2, "system left out");
        assert_eq!(inputs[0].input.speaker.as_deref(), Some("Ann"));
        assert_eq!(inputs[1].input.speaker.as_deref(), Some("Bot"));
        assert_eq!(
            inputs[0].input.created_at,
            Some(Timestamp::parse_rfc3339("2024-05-01T10:00:00Z").unwrap())
        );
        assert_eq!(inputs[1].input.created_at, Some(at));
    }

    #[test]
    fn malformed_messages_are_refused_with_their_place() {
        let refused = |messages: Value| {
            let Value::Array(list) = messages else { unreachable!() };
            match messages_to_inputs(&list, &options()) {
                Err(Error::InvalidInput(m)) => m,
                other => panic!("accepted: {:?}", other.map(|p| p.len())),
            }
        };
        assert!(refused(json!(["hi"])).starts_with("messages[0]: "));
        assert!(refused(json!([{"role": "user", "content": "a"}, {"role": "narrator", "content": "b"}]))
            .starts_with("messages[1]: role: `narrator`"));
        assert!(refused(json!([{"content": "a"}])).contains("role: missing"));
        assert!(refused(json!([{"role": "user", "content": 3}])).contains("content must be"));
        assert!(refused(json!([{"role": "user", "content": [{"text": "x"}]}])).contains("parts[0]: type: missing"));
        assert!(refused(json!([{"role": "user", "content": "a", "createdAt": "yesterday"}])).contains("createdAt"));
        let bad_scope = MessageOptions::new(Scope::workspace("", "w"));
        assert!(messages_to_inputs(&[], &bad_scope).is_err());
    }
}
