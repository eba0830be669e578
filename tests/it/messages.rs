//! Chat messages as input (`ingest_messages`) and who said a memory (`role`,
//! `speaker`): the messages' order is the memories' order when they share a
//! time, the capture policies hold inside any part, retrieval filters by
//! role, ranking matches the speaker field, injected entries name who said
//! them, the fields survive a reopen, and `update` corrects them.

use memtide::env::FixedEnvironment;
use memtide::{
    HistoryKind, IngestOutcome, IngestReason, InjectQuery, ListQuery, Memory, MemoryInput,
    MemoryPatch, MessageOptions, PartType, RetrieveQuery, Role, SourceKind, Timestamp,
};
use memtide_testkit::store::{open, records, scope, T0};
use serde_json::{json, Value};

fn messages(value: Value) -> Vec<Value> {
    match value {
        Value::Array(list) => list,
        _ => panic!("not an array"),
    }
}

/// A conversation in the AI SDK's UI shape, OpenAI's and Anthropic's at
/// once, ingested in one call.
fn conversation() -> Vec<Value> {
    messages(json!([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "name": "Caroline", "content": "I adopted a greyhound named Pixel last spring."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Pixel is a lovely name for a greyhound!"},
            {"type": "tool_use", "id": "t1", "name": "note", "input": {"pet": "Pixel"}}]},
        {"role": "user", "parts": [
            {"type": "text", "text": "She sleeps on the sofa. <private>The spare key is under the mat.</private>"},
            {"type": "text", "text": "<no-memory> I am thinking about moving to Lisbon."}]},
        {"role": "assistant", "content": "Greyhounds are famous couch potatoes."},
    ]))
}

#[test]
fn a_conversation_becomes_memories_in_order_with_who_said_them() {
    let mut mem = open();
    let at = Timestamp(T0 - 86_400_000);
    let options = MessageOptions {
        created_at: Some(at),
        ..MessageOptions::new(scope())
    };
    let results = mem.ingest_messages(&conversation(), &options).unwrap();
    let places: Vec<(usize, usize)> = results.iter().map(|r| (r.message, r.part)).collect();
    assert_eq!(places, [(1, 0), (2, 0), (3, 0), (3, 1), (4, 0)]);
    assert_eq!(results[3].result.outcome, IngestOutcome::Skipped);
    assert_eq!(results[3].result.reason, Some(IngestReason::NoMemory));

    let ids: Vec<String> = results.iter().filter_map(|r| r.result.id.clone()).collect();
    assert_eq!(ids.len(), 4);
    let items: Vec<_> = ids.iter().map(|id| mem.get(id).unwrap()).collect();
    // One timestamp for all: the input order is the thread's order.
    for pair in items.windows(2) {
        assert_eq!(pair[1].follows.as_deref(), Some(pair[0].id.as_str()));
        assert_eq!(pair[1].created_at, at);
    }
    let said: Vec<(Option<Role>, Option<&str>)> = items
        .iter()
        .map(|i| (i.role, i.speaker.as_deref()))
        .collect();
    assert_eq!(
        said,
        [
            (Some(Role::User), Some("Caroline")),
            (Some(Role::Assistant), None),
            (Some(Role::User), None),
            (Some(Role::Assistant), None),
        ]
    );
    assert_eq!(items[2].text, "She sleeps on the sofa.");
    assert!(items.iter().all(|i| i.source.kind == SourceKind::Message));
    let stored = records(mem.storage());
    let bytes: Vec<u8> = stored.values().flatten().copied().collect();
    for secret in ["spare key", "Lisbon", "helpful assistant", "tool call"] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} reached storage"
        );
    }

    // The fields survive a reopen.
    let storage = mem.into_storage();
    let mut mem = Memory::open(
        storage,
        FixedEnvironment::new(Timestamp(T0)),
        Default::default(),
    )
    .unwrap();
    assert_eq!(mem.get(&ids[0]).unwrap(), items[0]);

    // Retrieval and listing filter by role.
    let query = |roles| RetrieveQuery {
        roles,
        dry_run: true,
        ..RetrieveQuery::new("greyhound Pixel", scope())
    };
    let hit_roles = |mem: &mut memtide_testkit::store::Mem, roles| -> Vec<Option<Role>> {
        mem.retrieve(&query(roles))
            .unwrap()
            .into_iter()
            .map(|h| h.item.role)
            .collect()
    };
    // Three turns hold a query term; the fourth ("She sleeps on the sofa.")
    // inherits a share of theirs (`rank.neighbourShare`).
    assert_eq!(hit_roles(&mut mem, None).len(), 4);
    assert_eq!(
        hit_roles(&mut mem, Some(vec![Role::User])),
        [Some(Role::User)]
    );
    assert_eq!(hit_roles(&mut mem, Some(vec![Role::System])), []);
    let listed = mem
        .list(&ListQuery {
            roles: Some(vec![Role::Assistant]),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(listed.items.len(), 2);
}

#[test]
fn tool_calls_and_results_are_memories_only_when_asked_for() {
    let mut mem = open();
    let options = MessageOptions {
        include: Some(vec![PartType::Text, PartType::ToolCall]),
        roles: Some(vec![Role::User, Role::Assistant, Role::System]),
        ..MessageOptions::new(scope())
    };
    let results = mem.ingest_messages(&conversation(), &options).unwrap();
    let texts: Vec<String> = results
        .iter()
        .filter_map(|r| r.result.id.as_ref())
        .map(|id| mem.get(id).unwrap().text)
        .collect();
    assert_eq!(texts[0], "You are a helpful assistant.");
    assert_eq!(texts[3], "tool call note: {\"pet\":\"Pixel\"}");
    let call = mem.get(results[3].result.id.as_ref().unwrap()).unwrap();
    assert_eq!(call.source.kind, SourceKind::Tool);
    assert_eq!(call.source.reference, "t1");
    assert_eq!(call.role, Some(Role::Assistant));
}

#[test]
fn a_bad_message_stores_nothing() {
    let mut mem = open();
    let mut list = conversation();
    list.push(json!({"role": "user", "content": 42}));
    let err = mem
        .ingest_messages(&list, &MessageOptions::new(scope()))
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(err.to_string().contains("messages[5]"), "{err}");
    let mut speaker = MessageOptions::new(scope());
    speaker.speakers = Some([(Role::User, "bad\u{7}name".to_string())].into());
    let err = mem.ingest_messages(&conversation(), &speaker).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert_eq!(mem.stats(&Default::default()).items, 0);
}

#[test]
fn the_speaker_field_ranks_like_a_name_prefix() {
    // The same two memories, once with the speaker in the field and once
    // written as `Name: text`: a question naming Melanie puts hers first
    // either way.
    for field in [true, false] {
        let mut mem = open();
        let said = |speaker: &str, text: &str| {
            if field {
                MemoryInput {
                    speaker: Some(speaker.to_string()),
                    role: Some(Role::User),
                    ..MemoryInput::new(text, scope())
                }
            } else {
                MemoryInput::new(format!("{speaker}: {text}"), scope())
            }
        };
        mem.ingest(vec![
            said("Caroline", "I painted a sunrise over the lake last week"),
            said("Melanie", "I painted the lake too"),
        ])
        .unwrap();
        let query = RetrieveQuery {
            explain: true,
            dry_run: true,
            ..RetrieveQuery::new("What did Melanie paint at the lake?", scope())
        };
        let hits = mem.retrieve(&query).unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits[0].item.text.contains("lake too"), "field: {field}");
        let factors: Vec<f32> = hits
            .iter()
            .map(|h| h.explain.unwrap().speaker_factor)
            .collect();
        assert_eq!(factors[0], 1.0);
        assert!(factors[1] < 1.0, "field: {field}");
    }
}

#[test]
fn exports_of_memories_that_record_a_speaker_are_version_3_and_round_trip() {
    let mut mem = open();
    mem.ingest(vec![MemoryInput::new("no one in particular", scope())])
        .unwrap();
    assert!(mem.export().contains("\"version\":1,"));
    mem.ingest_messages(&conversation(), &MessageOptions::new(scope()))
        .unwrap();
    let export = mem.export();
    assert!(export.contains("\"version\":3,"), "{export}");
    let mut fresh = open();
    fresh.import(&export).unwrap();
    assert_eq!(fresh.export(), export);
    let listed = fresh
        .list(&ListQuery {
            roles: Some(vec![Role::User]),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    assert!(listed
        .items
        .iter()
        .any(|i| i.speaker.as_deref() == Some("Caroline")));
}

#[test]
fn a_patch_corrects_who_said_a_memory_and_retrieval_follows() {
    let mut mem = open();
    let said = MemoryInput {
        role: Some(Role::User),
        speaker: Some("Caroline".to_string()),
        ..MemoryInput::new("I repaint my bike every spring.", scope())
    };
    let id = mem.ingest(vec![said]).unwrap()[0].id.clone().unwrap();
    let hits = |mem: &mut memtide_testkit::store::Mem, text: &str, roles| -> Vec<String> {
        let query = RetrieveQuery {
            roles,
            dry_run: true,
            ..RetrieveQuery::new(text, scope())
        };
        mem.retrieve(&query)
            .unwrap()
            .into_iter()
            .map(|h| h.item.id)
            .collect()
    };
    assert_eq!(hits(&mut mem, "Caroline", None), [id.as_str()]);

    let patch = MemoryPatch {
        role: Some(Role::Assistant),
        speaker: Some("Melanie".to_string()),
        ..MemoryPatch::default()
    };
    let item = mem.update(&id, patch).unwrap();
    assert_eq!(
        (item.role, item.speaker.as_deref()),
        (Some(Role::Assistant), Some("Melanie"))
    );
    let last = mem.history(&id).unwrap().pop().unwrap();
    assert_eq!(last.event, HistoryKind::Updated);
    assert_eq!(last.fields, ["role", "speaker"]);
    // The speaker's name is among the terms the memory is indexed by: the
    // new name finds it, the old one no more, before and after a reopen
    // (which reads the terms a segment stored).
    let check = |mem: &mut memtide_testkit::store::Mem| {
        assert_eq!(hits(mem, "Melanie", None), [id.as_str()]);
        assert!(hits(mem, "Caroline", None).is_empty());
        assert_eq!(
            hits(mem, "bike", Some(vec![Role::Assistant])),
            [id.as_str()]
        );
        assert!(hits(mem, "bike", Some(vec![Role::User])).is_empty());
    };
    check(&mut mem);
    let mut mem = Memory::open(
        mem.into_storage(),
        FixedEnvironment::new(Timestamp(T0)),
        Default::default(),
    )
    .unwrap();
    check(&mut mem);
    assert_eq!(mem.get(&id).unwrap(), item);

    // `""` removes the speaker; the role stays.
    let cleared = MemoryPatch {
        speaker: Some(String::new()),
        ..MemoryPatch::default()
    };
    let item = mem.update(&id, cleared).unwrap();
    assert_eq!((item.role, item.speaker), (Some(Role::Assistant), None));
    assert!(hits(&mut mem, "Melanie", None).is_empty());
    assert_eq!(mem.history(&id).unwrap().pop().unwrap().fields, ["speaker"]);
    // Naming the same speaker again changes nothing and records nothing.
    let events = mem.history(&id).unwrap().len();
    mem.update(
        &id,
        MemoryPatch {
            role: Some(Role::Assistant),
            ..MemoryPatch::default()
        },
    )
    .unwrap();
    assert_eq!(mem.history(&id).unwrap().len(), events);
}

#[test]
fn a_patch_refuses_a_bad_speaker_and_a_voice_for_a_file_chunk() {
    let mut mem = open();
    let id = mem
        .ingest(vec![MemoryInput::new("The tide turns at noon.", scope())])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let before = records(mem.storage());
    for bad in ["bad\u{7}name", &"x".repeat(10_000)] {
        let patch = MemoryPatch {
            speaker: Some(bad.to_string()),
            role: Some(Role::User),
            ..MemoryPatch::default()
        };
        assert_eq!(mem.update(&id, patch).unwrap_err().code(), "INVALID_INPUT");
    }
    assert_eq!(
        records(mem.storage()),
        before,
        "a refused patch writes nothing"
    );
    assert_eq!(mem.get(&id).unwrap().role, None);

    mem.sync_file(
        &scope(),
        "notes/MEMORY.md",
        "# Notes\n\nThe boat is moored at pier 4.\n",
    )
    .unwrap();
    let chunk = mem
        .list(&ListQuery::default())
        .unwrap()
        .items
        .into_iter()
        .find(|i| i.text.contains("pier 4"))
        .unwrap();
    for patch in [
        MemoryPatch {
            role: Some(Role::User),
            ..MemoryPatch::default()
        },
        MemoryPatch {
            speaker: Some("Caroline".to_string()),
            ..MemoryPatch::default()
        },
    ] {
        let err = mem.update(&chunk.id, patch).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("no role or speaker"), "{err}");
    }
}

#[test]
fn injected_entries_name_who_said_them() {
    let mut mem = open();
    mem.ingest_messages(&conversation(), &MessageOptions::new(scope()))
        .unwrap();
    let retrieve = RetrieveQuery {
        min_relevance: Some(0.0),
        ..RetrieveQuery::new("greyhound Pixel sofa couch", scope())
    };
    let query = InjectQuery::new(retrieve, 1_000);
    let block = mem.inject(&query).unwrap().block;
    // Caroline by name, the assistant by role, the unnamed user by nothing.
    assert!(
        block.contains(") Caroline: I adopted a greyhound named Pixel"),
        "{block}"
    );
    assert!(
        block.contains(") assistant: Pixel is a lovely name"),
        "{block}"
    );
    assert!(
        block.contains(") assistant: Greyhounds are famous couch potatoes."),
        "{block}"
    );
    assert!(block.contains(") She sleeps on the sofa."), "{block}");
}
