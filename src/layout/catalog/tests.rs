//! The catalog part's tests: rows give back every field, held rows answer
//! as their decoded memories, and a row counts its JSON as serde_json
//! writes it.

use super::decode::with_rest;
use super::*;
use crate::codec::CodecError;
use crate::item::{MergeRecord, ScopeFilter, Source};
use crate::layout::varint::Reader;
use crate::text::hex;
use crate::json_len::flat_json_len;
use crate::layout::format::COMPACT_ROWS_VERSION;
use crate::policy::Policed;
use crate::rank::Rankable;
use proptest::prelude::*;

/// The memories of a part, each held row decoded.
fn decode_catalog(bytes: &[u8], rows: usize) -> Result<Vec<MemoryItem>, CodecError> {
    let rows = super::decode_catalog(bytes, rows, COMPACT_ROWS_VERSION)?;
    Ok(rows.iter().map(CatalogRow::to_item).collect())
}

/// What a held row answers without decoding, against its memory.
fn held_fields(row: &HeldRow) -> MemoryItem {
    let item = row.decode();
    let hash = match row.content_hash() {
        Ok(bytes) => hex(&bytes),
        Err(text) => text.to_string(),
    };
    MemoryItem {
        id: String::from_utf8(row.id_bytes().to_vec()).unwrap(),
        text: row.text().to_string(),
        scope: row.scope().clone(),
        kind: row.kind(),
        status: row.status(),
        role: row.role(),
        speaker: row.speaker().map(str::to_string),
        pinned: row.pinned(),
        deleted_at: item.deleted_at.filter(|_| row.is_deleted()),
        created_at: row.created_at(),
        follows: row.follows().map(str::to_string),
        content_hash: hash,
        privacy: Privacy {
            pii: row.has_pii(),
            private: row.is_private(),
            retention_days: row.retention_days(),
        },
        ..item
    }
}

fn plain() -> MemoryItem {
    MemoryItem::stored_example()
}

/// A memory ingested twice (an exact duplicate merged into it) is held as
/// its row, as one ingested once is: its rest holds the merge alone, which
/// none of the engine's keys read. It was decoded and kept decoded: a
/// store whose texts had all come twice opened 3.8 times slower and took
/// 43 MiB more at 100,000 (`docs/speed.md`, "Fourteenth session").
#[test]
fn a_memory_with_merged_duplicates_alone_is_held() {
    let merge: MergeRecord = serde_json::from_value(serde_json::json!({
        "source": { "kind": "message", "ref": "chat-7" },
        "mergedAt": "2026-11-20T10:00:00Z",
        "createdAt": "2026-11-20T09:59:00Z",
    }))
    .unwrap();
    let merged = MemoryItem { merged_from: vec![merge.clone(), merge], ..plain() };
    let part = encode_catalog(&[&merged]);
    let rows = super::decode_catalog(&part, 1, COMPACT_ROWS_VERSION).unwrap();
    let [CatalogRow::Held(row)] = rows.as_slice() else {
        panic!("a memory with merged duplicates alone is not held");
    };
    assert_eq!(row.decode(), merged);
    assert_eq!(row.json_len(), serde_json::to_vec(&merged).unwrap().len());
    // Any other field of the rest beside them: decoded, as before.
    let with_metadata = MemoryItem { metadata: Some(Default::default()), ..merged.clone() };
    let withdrawn = MemoryItem { withdrawn: true, ..merged };
    for item in [with_metadata, withdrawn] {
        let rows = super::decode_catalog(&encode_catalog(&[&item]), 1, COMPACT_ROWS_VERSION).unwrap();
        assert!(matches!(rows.as_slice(), [CatalogRow::Decoded(decoded)] if **decoded == item), "{item:?}");
    }
}

/// Every field set, including those the rest holds.
fn full() -> MemoryItem {
    serde_json::from_value(serde_json::json!({
        "id": "m2", "text": "東京 note\nwith lines", "kind": "document",
        "scope": {"userId": "u", "workspaceId": "w", "projectId": "p", "cardId": "c", "sessionId": "s"},
        "status": "pending", "pinned": true,
        "source": {"kind": "file", "ref": "/notes/a.md", "uri": "file:///notes/a.md"},
        "contentHash": "not-hex", "role": "assistant", "speaker": "Caroline",
        "tags": ["house", "garden", "house"],
        "privacy": {"pii": true, "private": true, "retentionDays": 30},
        "createdAt": "2023-11-14T22:13:20.000Z", "updatedAt": "2023-11-14T22:14:20.000Z",
        "lastUsedAt": "2023-11-14T22:15:20.000Z", "usageCount": 18446744073709551615u64,
        "mergedFrom": [{"source": {"kind": "manual", "ref": ""},
            "mergedAt": "2023-11-14T22:14:20.000Z", "createdAt": "2023-11-14T22:14:20.000Z",
            "text": "variant"}],
        "follows": "m1", "deletedAt": "2023-11-14T22:16:20.000Z",
        "sourceLines": {"start": 3, "end": 9}, "key": "k/1",
        "metadata": {"a": [1, {"b": null}]}
    }))
    .unwrap()
}

/// Memories with any field set or not: strings from a pool large
/// enough that a part's dictionary indexes take two bytes, content
/// hashes hex or not, times in and out of years 1..=9999, the
/// `withdrawn` mark, and the fields a row keeps in its JSON rest
/// (metadata with floats among them).
fn item_strategy() -> impl Strategy<Value = MemoryItem> {
    let word = || (0u32..400).prop_map(|i| format!("w{i}"));
    let optional_word = || proptest::option::of(word());
    let time = || prop_oneof![9 => 0i64..4_000_000_000_000, 1 => proptest::num::i64::ANY];
    let hash = prop_oneof![
        proptest::array::uniform32(proptest::num::u8::ANY).prop_map(|b| hex(&b)),
        "[0-9A-Fa-fx]{0,66}",
    ];
    let names = (
        "[a-z0-9]{1,6}",
        "[a-z 東京]{0,30}",
        word(),
        word(),
        optional_word(),
        optional_word(),
        optional_word(),
        word(),
        optional_word(),
        hash,
        optional_word(),
        proptest::collection::vec(word(), 0..4),
    );
    let marks = (
        0..Kind::ALL.len(),
        0..STATUSES.len(),
        0..SOURCE_KINDS.len(),
        0..=ROLES.len(),
        proptest::num::u8::ANY,
        proptest::option::of(proptest::num::u32::ANY),
        proptest::num::u64::ANY,
        proptest::option::of((proptest::num::u32::ANY, proptest::num::u32::ANY)),
    );
    let times = (time(), time(), proptest::option::of(time()), proptest::option::of(time()));
    let rest = (
        proptest::option::of(optional_word()),
        proptest::option::of(proptest::num::f64::ANY),
        0u8..8,
        proptest::bool::ANY,
    );
    (names, marks, times, rest).prop_map(|(names, marks, times, rest)| {
        let (id, text, user, workspace, project, card, session, reference, uri, content_hash, speaker, tags) =
            names;
        let (kind, status, source_kind, role, bits, retention_days, usage_count, lines) = marks;
        let (created, updated, last_used, deleted) = times;
        let (follows_or_key, metadata, extra, withdrawn) = rest;
        let bit = |n: u8| bits & (1 << n) != 0;
        let mut item = MemoryItem {
            id,
            text,
            kind: Kind::ALL[kind],
            scope: Scope {
                user_id: user,
                workspace_id: workspace,
                project_id: project,
                card_id: card,
                session_id: session,
            },
            status: STATUSES[status],
            pinned: bit(0),
            source: Source {
                kind: SOURCE_KINDS[source_kind],
                reference,
                uri,
            },
            content_hash,
            role: role.checked_sub(1).map(|r| ROLES[r]),
            speaker,
            tags,
            privacy: Privacy {
                pii: bit(1),
                private: bit(2),
                retention_days,
            },
            created_at: Timestamp(created),
            // Most memories are never updated: the row then leaves the
            // update time out.
            updated_at: Timestamp(if bit(5) { created } else { updated }),
            last_used_at: last_used.map(Timestamp),
            usage_count,
            merged_from: Vec::new(),
            follows: follows_or_key.clone().flatten().filter(|_| bit(3)),
            deleted_at: deleted.map(Timestamp),
            source_lines: lines.map(|(start, end)| LineRange { start, end }),
            key: follows_or_key.flatten().filter(|_| bit(4)),
            metadata: None,
            history: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            supersedes: Vec::new(),
            summary_of: Vec::new(),
            withdrawn,
        };
        if let Some(value) = metadata {
            let mut fields = serde_json::Map::new();
            fields.insert("x".into(), serde_json::json!(value));
            item.metadata = Some(fields);
        }
        let made = Timestamp(1_700_000_000_000);
        match extra {
            1 => item.merged_from.push(crate::item::MergeRecord {
                source: Source::default(),
                merged_at: made,
                created_at: made,
                text: Some("variant".into()),
            }),
            2 => item.superseded_at = Some(made),
            3 => item.superseded_by = Some("m9".into()),
            4 => item.supersedes.push("m8".into()),
            5 => item.summary_of.push("m7".into()),
            6 => item.history.push(crate::history::HistoryEvent {
                event: crate::history::HistoryKind::Deleted,
                at: made,
                fields: Vec::new(),
                status: None,
                pinned: None,
                other: None,
            }),
            _ => {}
        }
        item
    })
}

/// Memories as [`item_strategy`] makes them, some following the one
/// before them in the list (as a conversation's do, which a row then
/// names by a flag when that one is the row before it).
fn items_strategy(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<MemoryItem>> {
    let links = proptest::collection::vec(proptest::bool::ANY, len.end);
    (proptest::collection::vec(item_strategy(), len), links).prop_map(|(mut items, links)| {
        for i in 1..items.len() {
            if links[i] {
                items[i].follows = Some(items[i - 1].id.clone());
            }
        }
        items
    })
}

proptest::proptest! {
    /// Each row pushed is sized as it would be in a part of its own,
    /// whatever the dictionary it joins; a row taken back leaves the
    /// part the others make.
    #[test]
    fn rows_are_sized_as_alone_and_taken_back_cleanly(
        items in items_strategy(1..60),
        taken in proptest::collection::vec(proptest::bool::ANY, 60),
    ) {
        let mut writer = CatalogWriter::default();
        let mut kept: Vec<&MemoryItem> = Vec::new();
        for (item, take_back) in items.iter().zip(&taken) {
            if let Some(len) = writer.push(item) {
                prop_assert_eq!(len, row_len(item));
                if *take_back {
                    writer.pop();
                } else {
                    kept.push(item);
                }
            }
        }
        prop_assert_eq!(writer.finish(), encode_catalog(&kept));
    }
}

proptest::proptest! {
    /// A row is kept exactly when it gives its memory back: the
    /// oracle is the check the writer made before (the row encoded
    /// alone, decoded and compared), and a part of the rows kept
    /// gives back their memories.
    #[test]
    fn rows_are_kept_exactly_when_they_give_the_memory_back(
        items in items_strategy(1..40),
    ) {
        let mut writer = CatalogWriter::default();
        let mut kept: Vec<MemoryItem> = Vec::new();
        for item in &items {
            let alone = decode_catalog(&encode_catalog(&[item]), 1);
            let gives_back = alone.as_deref().ok() == Some(std::slice::from_ref(item));
            prop_assert_eq!(writer.push(item).is_some(), gives_back, "{:?}", item);
            if gives_back {
                kept.push(item.clone());
            }
        }
        let part = writer.finish();
        prop_assert_eq!(decode_catalog(&part, kept.len()).unwrap(), kept.clone());
        // Held exactly when the memory is its binary fields alone, with
        // merged duplicates or not, and then each field read without
        // decoding is the memory's.
        let rows = super::decode_catalog(&part, kept.len(), COMPACT_ROWS_VERSION).unwrap();
        for (row, item) in rows.iter().zip(&kept) {
            let but_merges = MemoryItem { merged_from: Vec::new(), ..item.clone() };
            let holdable = !but_merges.has_rare_fields()
                && !item.withdrawn
                && item.key.is_none()
                && !item.is_file_chunk();
            match row {
                CatalogRow::Held(row) => {
                    prop_assert!(holdable, "{:?}", item);
                    prop_assert_eq!(&held_fields(row), item);
                    prop_assert_eq!(row.is_deleted(), item.is_deleted());
                    // Each tag it has, and none: a tag filter reads the row.
                    for tag in item.tags.iter().chain([&"w400".to_string()]) {
                        let query = ["w401".to_string(), tag.clone()];
                        prop_assert_eq!(row.has_any_tag(&query), item.tags.contains(tag));
                    }
                    prop_assert!(!row.has_any_tag(&[]));
                }
                CatalogRow::Decoded(_) => prop_assert!(!holdable, "{:?}", item),
            }
        }
    }
}

/// The JSON length [`flat_json_len`] counts from each row of `part`
/// (of `rows` rows) read in place.
fn rows_json_lens(part: &[u8], rows: usize) -> Vec<Option<usize>> {
    let mut reader = Reader::new(part, "catalog part");
    let count = reader.varint64().unwrap();
    let strings: Vec<&str> = (0..count).map(|_| reader.str().unwrap()).collect();
    assert_eq!(reader.varint64().unwrap(), rows as u64);
    let mut previous = None;
    (0..rows)
        .map(|_| {
            let at = reader.position();
            let view = parse_row(&mut reader, &strings, previous, ALL_FLAGS).unwrap();
            previous = Some((view.id, at));
            flat_json_len(&view)
        })
        .collect()
}

proptest::proptest! {
    /// A row counts its memory's JSON from its fields read in place, as
    /// `serde_json` writes the memory (strings with every escape among
    /// them); a row with a rest leaves the count to writing the memory;
    /// a held row counts it without decoding.
    #[test]
    fn rows_count_their_json_as_serde_json_writes_it(
        items in items_strategy(1..30),
        texts in proptest::collection::vec("[\\x00-\\x7f東é]{0,24}", 30),
    ) {
        let items: Vec<MemoryItem> = items
            .into_iter()
            .zip(texts)
            .map(|(mut item, text)| {
                if let Some(tag) = item.tags.first_mut() {
                    tag.clone_from(&text);
                }
                if item.speaker.is_some() {
                    item.speaker = Some(text.clone());
                }
                item.text = text;
                item
            })
            .collect();
        let mut writer = CatalogWriter::default();
        let kept: Vec<&MemoryItem> = items.iter().filter(|item| writer.push(item).is_some()).collect();
        let part = writer.finish();
        for (counted, item) in rows_json_lens(&part, kept.len()).into_iter().zip(&kept) {
            let nested = item.has_rare_fields() || item.withdrawn;
            let json = serde_json::to_vec(item).unwrap().len();
            prop_assert_eq!(counted, (!nested).then_some(json), "{:?}", item);
        }
        for (row, item) in super::decode_catalog(&part, kept.len(), COMPACT_ROWS_VERSION).unwrap().iter().zip(&kept) {
            if let CatalogRow::Held(row) = row {
                prop_assert_eq!(row.json_len(), serde_json::to_vec(item).unwrap().len());
            }
        }
    }
}

/// What a row does not give back, each alone: the memory stays a JSON
/// record.
#[test]
fn rows_that_would_lose_a_field_are_not_kept() {
    let mut withdrawn = plain();
    withdrawn.withdrawn = true;
    let mut withdrawn_with_history = full();
    withdrawn_with_history.withdrawn = true;
    let mut out_of_range = plain();
    out_of_range.updated_at = Timestamp(i64::MAX);
    let mut float = full();
    float.metadata = Some(serde_json::from_str(r#"{"x": 0.30000000000000004}"#).unwrap());
    let plain = plain();
    let mut writer = CatalogWriter::default();
    assert_eq!(writer.push(&withdrawn), None);
    assert!(writer.push(&withdrawn_with_history).is_some());
    assert_eq!(writer.push(&out_of_range), None);
    assert!(writer.push(&plain).is_some());
    let part = writer.finish();
    assert_eq!(decode_catalog(&part, 2).unwrap(), [withdrawn_with_history, plain.clone()]);
    // A float the rest's JSON reads back as another is caught by
    // reading the rest back (whether this one is depends on the JSON
    // parser's rounding: the check decides, not an assumption).
    let back = decode_catalog(&encode_catalog(&[&float]), 1).ok();
    let mut writer = CatalogWriter::default();
    assert_eq!(writer.push(&float).is_some(), back.as_deref() == Some(&[float.clone()][..]));
}

#[test]
fn rows_give_back_every_field() {
    let items = [plain(), full(), plain()];
    let refs: Vec<&MemoryItem> = items.iter().collect();
    let part = encode_catalog(&refs);
    assert_eq!(decode_catalog(&part, 3).unwrap(), items);
    assert!(decode_catalog(&part, 2).is_err());
    // The scope's strings are written once.
    let carol = part.windows(5).filter(|w| w == b"carol").count();
    assert_eq!(carol, 1);
    let mut writer = CatalogWriter::default();
    for item in &refs {
        assert_eq!(writer.push(item), Some(row_len(item)));
    }
    assert_eq!(writer.finish(), part);
    assert!(decode_catalog(&encode_catalog(&[]), 0).unwrap().is_empty());
}

/// A conversation's turns each follow the turn before, which is the row
/// before theirs: format 7 names it by a flag instead of writing its id
/// again, and leaves out an update time that is the creation time.
#[test]
fn rows_name_the_row_before_them_and_leave_out_an_unchanged_update_time() {
    let first = plain();
    let second = MemoryItem {
        id: "01HZY0000000000000000000B2".into(),
        follows: Some(first.id.clone()),
        ..plain()
    };
    // Follows a memory that is not the row before it: its id is written.
    let third = MemoryItem {
        id: "01HZY0000000000000000000B3".into(),
        follows: Some(first.id.clone()),
        updated_at: Timestamp(first.created_at.0 + 1),
        ..plain()
    };
    assert_eq!(first.updated_at, first.created_at);
    let items = [first.clone(), second.clone(), third.clone()];
    let part = encode_catalog(&items.iter().collect::<Vec<_>>());
    assert_eq!(decode_catalog(&part, 3).unwrap(), items);
    // The first id is written twice (its row, the third's follows): the
    // second's follows is the flag alone.
    let id_count = |part: &[u8]| part.windows(first.id.len()).filter(|w| *w == first.id.as_bytes()).count();
    assert_eq!(id_count(&part), 2);
    // Each row alone writes whom it follows, and only the third its
    // update time.
    assert_eq!(id_count(&encode_catalog(&[&second])), 1);
    assert_eq!(row_len(&third), row_len(&second) + 8);
    // Following another memory than the row before writes its id.
    let other = "01HZY0000000000000000000ZZ";
    let elsewhere = MemoryItem {
        follows: Some(other.into()),
        ..second.clone()
    };
    let linked = encode_catalog(&[&first, &second]).len();
    assert_eq!(encode_catalog(&[&first, &elsewhere]).len(), linked + 1 + other.len());
    // Held, the second row answers whom it follows from the row before it,
    // and decodes and counts its JSON as its memory.
    let rows = super::decode_catalog(&part, 3, COMPACT_ROWS_VERSION).unwrap();
    for (row, item) in rows.iter().zip(&items) {
        let CatalogRow::Held(row) = row else {
            panic!("{} is not held", item.id);
        };
        assert_eq!(row.follows(), item.follows.as_deref());
        assert_eq!(&row.decode(), item);
        assert_eq!(row.json_len(), serde_json::to_vec(item).unwrap().len());
    }
    // A part of format 6 may not use the flags.
    let error = super::decode_catalog(&part, 3, crate::layout::format::CATALOG_VERSION).err();
    assert!(error.is_some_and(|e| e.to_string().contains("unknown flags")));
    // The first row has no row before it to follow.
    let mut writer = CatalogWriter::after(&first.id);
    writer.push(&second);
    let unlinked = writer.finish();
    let error = super::decode_catalog(&unlinked, 1, COMPACT_ROWS_VERSION).err();
    assert!(error.is_some_and(|e| e.to_string().contains("the first row follows")));
}

#[test]
fn a_record_length_is_counted_without_encoding_it() {
    let mut keyed = plain();
    keyed.key = Some("k".to_string());
    for item in [plain(), full(), keyed] {
        assert_eq!(
            crate::codec::item_record_len(&item),
            crate::codec::encode_item(&item).len()
        );
    }
}

#[test]
fn damaged_parts_are_refused_without_panicking() {
    let items = [plain(), full()];
    let refs: Vec<&MemoryItem> = items.iter().collect();
    let part = encode_catalog(&refs);
    for end in 0..part.len() {
        assert!(decode_catalog(&part[..end], 2).is_err(), "cut at {end}");
    }
    let mut longer = part.clone();
    longer.push(0);
    assert!(decode_catalog(&longer, 2).is_err());
    for i in 0..part.len() {
        for bit in 0..8 {
            let mut bad = part.clone();
            bad[i] ^= 1 << bit;
            let _ = decode_catalog(&bad, 2);
        }
    }
    // A rest may not hold a field the row holds.
    assert!(with_rest(plain(), r#"{"text":"x"}"#).is_err());
    assert!(with_rest(plain(), r#"{"unknown":1}"#).is_err());
}

/// A query's side of the policy as owned values ([`Visibility`] borrows),
/// made around one memory so that most rules can go either way.
#[derive(Debug, Clone)]
struct QuerySide {
    /// 0: the memory's scope; 1: its workspace; 2: its workspace, another
    /// session; 3: another user's.
    scope: u8,
    all_sessions: bool,
    include_pending: bool,
    include_pii: bool,
    kinds: Option<Vec<usize>>,
    roles: Option<Vec<usize>>,
    /// Words, and whether the memory's first tag is among them.
    tags: Option<(Vec<u32>, bool)>,
    /// Offsets from the memory's creation, in days.
    since: Option<i64>,
    until: Option<i64>,
    now: i64,
    /// When set and the memory keeps itself some days: the query is made
    /// that many days after its creation, plus this (-1, 0 or 1).
    near_own_end: Option<i64>,
    /// The store's retention: its days, and a rule for the memory's
    /// workspace (absent, `null` or days).
    days: Option<u32>,
    rule: Option<Option<u32>>,
    metadata: bool,
}

fn query_side() -> impl Strategy<Value = QuerySide> {
    let days = || -400i64..400;
    let flags = (0u8..4, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY);
    let filters = (
        proptest::option::of(proptest::collection::vec(0..Kind::ALL.len(), 0..3)),
        proptest::option::of(proptest::collection::vec(0..ROLES.len(), 0..3)),
        proptest::option::of((proptest::collection::vec(0u32..400, 0..3), proptest::bool::ANY)),
    );
    let times = (
        proptest::option::of(days()),
        proptest::option::of(days()),
        days(),
        proptest::option::of(-1i64..=1),
    );
    let retention = (
        proptest::option::of(0u32..300),
        proptest::option::of(proptest::option::of(0u32..300)),
    );
    (flags, filters, times, retention).prop_map(|(flags, filters, times, retention)| {
        let (scope, all_sessions, include_pending, include_pii, metadata) = flags;
        let (kinds, roles, tags) = filters;
        let (since, until, now, near_own_end) = times;
        let (days, rule) = retention;
        QuerySide {
            scope,
            all_sessions,
            include_pending,
            include_pii,
            kinds,
            roles,
            tags,
            since,
            until,
            now,
            near_own_end,
            days,
            rule,
            metadata,
        }
    })
}

proptest::proptest! {
    /// A held row answers the policy (`crate::policy::check`) and
    /// ranking's reads (`Rankable`) as its memory does, read in place:
    /// whatever the query's scope, filters, time and the store's
    /// retention.
    #[test]
    fn held_rows_answer_the_policy_and_ranking_as_their_memories(
        items in items_strategy(1..20),
        sides in proptest::collection::vec(query_side(), 8),
    ) {
        use crate::policy::{check, Visibility};
        use crate::retention::{RetentionConfig, ScopeRetention};
        let held: Vec<&MemoryItem> = items
            .iter()
            .filter(|item| {
                let alone = decode_catalog(&encode_catalog(&[item]), 1);
                alone.as_deref().ok() == Some(std::slice::from_ref(*item))
            })
            .collect();
        let part = encode_catalog(&held);
        let rows = super::decode_catalog(&part, held.len(), COMPACT_ROWS_VERSION).unwrap();
        let day = Timestamp::DAY_MS;
        for (row, item) in rows.iter().zip(held) {
            let CatalogRow::Held(row) = row else { continue };
            prop_assert_eq!(Rankable::id(row), item.id.as_str());
            prop_assert_eq!(Rankable::text(row), item.text.as_str());
            prop_assert_eq!(Rankable::follows(row), item.follows.as_deref());
            prop_assert_eq!(Rankable::speaker(row), item.speaker.as_deref());
            prop_assert_eq!(row.is_turn(), item.is_turn());
            for side in &sides {
                let mut scope = item.scope.clone();
                match side.scope {
                    0 => {}
                    1 => (scope.project_id, scope.card_id, scope.session_id) = (None, None, None),
                    2 => scope.session_id = Some("another".into()),
                    _ => scope.user_id = format!("{}-other", scope.user_id),
                }
                let kinds: Option<Vec<Kind>> = side.kinds.as_ref().map(|k| k.iter().map(|&i| Kind::ALL[i]).collect());
                let roles: Option<Vec<Role>> = side.roles.as_ref().map(|r| r.iter().map(|&i| ROLES[i]).collect());
                let tags: Option<Vec<String>> = side.tags.as_ref().map(|(words, own)| {
                    let first = item.tags.first().filter(|_| *own).cloned();
                    words.iter().map(|w| format!("w{w}")).chain(first).collect()
                });
                let retention = RetentionConfig {
                    days: side.days,
                    scopes: side.rule.map(|days| ScopeRetention {
                        scope: ScopeFilter {
                            user_id: Some(item.scope.user_id.clone()),
                            workspace_id: Some(item.scope.workspace_id.clone()),
                            ..ScopeFilter::default()
                        },
                        days: Some(days),
                        capture: true,
                    }).into_iter().collect(),
                };
                let mut wanted = crate::metadata::Metadata::new();
                wanted.insert("x".into(), serde_json::json!(1));
                let at = |offset: i64| Timestamp(item.created_at.0.saturating_add(offset.saturating_mul(day)));
                let own_end = item.privacy.retention_days.zip(side.near_own_end);
                let now = own_end.map_or(side.now, |(days, plus)| i64::from(days) + plus);
                let vis = Visibility {
                    scope: &scope,
                    now: at(now),
                    retention: &retention,
                    all_sessions: side.all_sessions,
                    include_pending: side.include_pending,
                    include_pii: side.include_pii,
                    kinds: kinds.as_deref(),
                    roles: roles.as_deref(),
                    tags: tags.as_deref(),
                    since: side.since.map(at),
                    until: side.until.map(at),
                    metadata: side.metadata.then_some(&wanted),
                };
                prop_assert_eq!(check(row, &vis), check(item, &vis), "{:?} {:?}", item, side);
            }
        }
    }
}

/// A held row is what an opened store keeps of most memories: its fields
/// beside the row fill one 48-byte allocation (the padding took the
/// source kind, which ranking reads).
#[test]
fn a_held_row_is_48_bytes() {
    assert!(std::mem::size_of::<HeldRow>() <= 48, "{}", std::mem::size_of::<HeldRow>());
}
