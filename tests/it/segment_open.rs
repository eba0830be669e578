//! Opening a store segment by segment (`src/layout/read.rs`): each
//! segment's newest versions go into the engine as the segment is decoded.
//! A key whose newer version a newer segment or the log holds opens as that
//! version, embeddings included; damage found in the last segment, after
//! the others went into an engine, fails the open with `CORRUPT`, and an
//! instance that meets it on a refresh keeps what it had.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use memtide::codec::{self, RecordType};
use memtide::env::FixedEnvironment;
use memtide::storage::{KvStorage, MemoryStorage, Storage};
use memtide::{
    block_on, AsyncMemory, Memory, MemoryInput, MemoryPatch, RetrieveQuery, Scope, Timestamp,
};
use memtide_testkit::faults::MapKv;
use memtide_testkit::store::T0;

use crate::progress::CountingEmbedder;

fn env() -> FixedEnvironment {
    FixedEnvironment::new(Timestamp(T0))
}

fn home() -> Scope {
    Scope::workspace("alice", "home")
}

/// A memory of about 150 bytes, with a word of its own (`w<i>x`).
fn note(i: usize) -> MemoryInput {
    let topics = ["coffee", "berlin", "guitar", "marathon", "sushi", "violin"];
    let text = format!(
        "note w{i}x: we talked about {} and {} on day {}, and we agreed to meet again at the usual place",
        topics[i % 6],
        topics[(i / 6) % 6],
        i % 31
    );
    MemoryInput::new(text, home())
}

fn segments(storage: &MemoryStorage) -> Vec<String> {
    storage
        .entries()
        .map(|(k, _)| k.to_string())
        .filter(|k| k.starts_with("seg/"))
        .collect()
}

/// An export without its time.
fn contents(export: &str) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_str(export).unwrap();
    value.as_object_mut().unwrap().remove("exportedAt");
    value
}

/// What retrieval answers, without marking any memory as used: ids and
/// scores, in order.
fn answers<S: Storage>(mem: &mut Memory<S, FixedEnvironment>, text: &str) -> Vec<(String, f32)> {
    let mut query = RetrieveQuery::new(text, home());
    query.dry_run = true;
    query.limit = Some(20);
    mem.retrieve(&query)
        .unwrap()
        .into_iter()
        .map(|hit| (hit.item.id, hit.score))
        .collect()
}

fn embedder() -> Arc<CountingEmbedder> {
    Arc::new(CountingEmbedder {
        embedded: Arc::new(AtomicUsize::new(0)),
    })
}

/// A keyed memory (`k<i>`), of its `round`: from the first, tagged with
/// it (a new text would erase the earlier versions instead of overriding
/// them).
fn keyed(i: usize, round: usize) -> MemoryInput {
    let mut input = note(i);
    if round > 0 {
        input.tags = Some(vec![format!("round-{round}")]);
    }
    input.key = Some(format!("k{i}"));
    input
}

/// A store whose first segment holds versions that a newer segment and
/// the log override: memories tagged, a memory's tags changed again, one
/// soft-deleted. The
/// reopened store holds each memory as its newest version says, and
/// answers as the store that wrote it, embeddings and lexical index alike.
#[test]
fn keys_overridden_by_newer_segments_and_the_log_open_as_their_newest_version() {
    let mut mem = Memory::open(MemoryStorage::new(), env(), Default::default()).unwrap();
    mem.set_embedder(embedder()).unwrap();
    // Batches above the direct-write threshold: a segment each.
    let ids: Vec<String> = mem
        .upsert((0..400).map(|i| keyed(i, 0)).collect())
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect();
    mem.upsert((0..100).map(|i| keyed(i, 1)).collect()).unwrap();
    // In the log: a third version of a memory (its first in the first
    // segment, its second in the second), and a soft delete.
    let patch = MemoryPatch {
        tags: Some(vec!["final".into()]),
        ..Default::default()
    };
    mem.update(&ids[0], patch).unwrap();
    mem.delete(&ids[300], false).unwrap();
    // A newer segment of new memories.
    mem.ingest((400..560).map(note).collect()).unwrap();
    let storage = mem.storage().clone();
    assert_eq!(segments(&storage).len(), 3, "{:?}", segments(&storage));
    let first_segment = storage.get(&segments(&storage)[0]).unwrap().unwrap();
    let in_first = |needle: &str| {
        first_segment
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    };
    assert!(
        in_first("note w0x:") && !in_first("round-1"),
        "the first segment still holds the versions the second overrides"
    );
    let manifest = storage.get("meta/manifest").unwrap().unwrap();
    assert!(
        manifest.windows(5).any(|w| w == b"item/"),
        "the log holds records"
    );

    let mut reopened = Memory::open(storage, env(), Default::default()).unwrap();
    let model = embedder();
    reopened.set_embedder(model.clone()).unwrap();
    assert_eq!(
        model.embedded.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "every memory's embedding was loaded"
    );
    assert_eq!(contents(&reopened.export()), contents(&mem.export()));
    assert_eq!(reopened.get(&ids[0]).unwrap().tags, ["final"]);
    assert_eq!(reopened.get(&ids[99]).unwrap().tags, ["round-1"]);
    assert!(reopened.get(&ids[100]).unwrap().tags.is_empty());
    assert!(reopened.get(&ids[300]).unwrap().deleted_at.is_some());
    for text in [
        "note w0x",
        "w7x coffee round",
        "w300x guitar",
        "coffee berlin day 3",
        "sushi violin meet again",
        "w450x",
    ] {
        assert_eq!(
            answers(&mut reopened, text),
            answers(&mut mem, text),
            "{text}"
        );
    }
}

/// A segment record with its checksum recomputed around `payload`, and the
/// manifest naming it with that checksum: damage only decoding finds.
fn with_segment(storage: &mut MemoryStorage, key: &str, payload: &[u8], version: u16) {
    let record = codec::encode(RecordType::Segment, version, payload);
    let manifest = storage.get("meta/manifest").unwrap().unwrap();
    let (_, body) = codec::decode(&manifest).unwrap();
    let json_len = u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&body[4..4 + json_len]).unwrap();
    let number: u64 = key.trim_start_matches("seg/").parse().unwrap();
    let named = header["segments"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["number"] == number)
        .unwrap();
    named["bytes"] = record.len().into();
    named["crc32"] = u32::from_le_bytes(record[record.len() - 4..].try_into().unwrap()).into();
    let json = serde_json::to_vec(&header).unwrap();
    let mut rebuilt = (json.len() as u32).to_le_bytes().to_vec();
    rebuilt.extend_from_slice(&json);
    rebuilt.extend_from_slice(&body[4 + json_len..]);
    let manifest = codec::encode(
        RecordType::Manifest,
        codec::record_version(&manifest),
        &rebuilt,
    );
    let mut batch = memtide::storage::Batch::new();
    batch.put(key.to_string(), record);
    batch.put("meta/manifest".to_string(), manifest);
    storage.commit(&batch).unwrap();
}

/// The newest segment's last catalog row made to hold another memory's
/// id (its checksums recomputed): `decode_segment` finds it only once
/// every other segment went into the engine. The open fails with
/// `CORRUPT` naming that segment; an instance that finds it among another
/// writer's commits on a refresh reports it and keeps the memories it had,
/// whole.
#[test]
fn a_damaged_newest_segment_fails_the_open_and_a_refresh_keeps_what_it_had() {
    let kv: MapKv = MapKv::default();
    let open = || {
        let storage = block_on(KvStorage::open(kv.clone())).unwrap().unwrap();
        block_on(AsyncMemory::open(storage, env(), Default::default()))
            .unwrap()
            .unwrap()
    };
    let mut writer = open();
    let mut ingest = |from: usize| {
        let results = block_on(writer.ingest((from..from + 200).map(note).collect()))
            .unwrap()
            .unwrap();
        results.last().unwrap().id.clone().unwrap()
    };
    ingest(0);
    let held_last = ingest(200);
    let mut reader = open();
    let before = contents(&reader.export());
    let last_id = ingest(400);
    // The store as a `MemoryStorage`, to damage.
    let mut damaged = MemoryStorage::new();
    let mut batch = memtide::storage::Batch::new();
    for (key, value) in kv.map().iter() {
        batch.put(key.clone(), value.clone());
    }
    damaged.commit(&batch).unwrap();
    let newest = segments(&damaged).last().unwrap().clone();
    let record = damaged.get(&newest).unwrap().unwrap();
    let (_, payload) = codec::decode(&record).unwrap();
    // The row's id comes after the frame (its key) and the lexical part:
    // its last occurrence in the payload.
    let at = payload
        .windows(last_id.len())
        .rposition(|w| w == last_id.as_bytes())
        .unwrap();
    let mut payload = payload.to_vec();
    let end = at + last_id.len() - 1;
    payload[end] = if payload[end] == b'Z' { b'Y' } else { b'Z' };
    with_segment(
        &mut damaged,
        &newest,
        &payload,
        codec::record_version(&record),
    );

    let err = Memory::open(damaged.clone(), env(), Default::default())
        .err()
        .unwrap();
    assert_eq!(err.code(), "CORRUPT");
    let message = err.to_string();
    assert!(
        message.contains(&newest) && message.contains(&last_id),
        "{message}"
    );

    // The reader holds the other segments: a refresh reads the damaged one
    // alone, and fails.
    for (key, value) in damaged.entries() {
        kv.insert(key.to_string(), value.to_vec());
    }
    let err = block_on(reader.refresh()).and_then(|r| r).unwrap_err();
    assert_eq!(err.code(), "CORRUPT");
    assert_eq!(err.to_string(), message);
    assert_eq!(contents(&reader.export()), before);
    // Answered from what it holds (a dry run writes nothing, so it does
    // not meet the damage again).
    let mut query = RetrieveQuery::new("note w399x", home());
    query.dry_run = true;
    let hits = block_on(reader.retrieve(&query)).unwrap().unwrap();
    assert_eq!(hits[0].item.id, held_last);
}
