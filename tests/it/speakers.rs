//! Duplicates and who said them (`docs/memory-model.md`, "Duplicates"):
//! the same words said by two people are two memories, exactly or nearly
//! the same; the same person saying them again (or the unnamed user, in
//! any call) merges. The key is derived from stored fields, so it holds
//! after a reopen, through export and import, and for `update`.

use memtide::{
    IngestOutcome, IngestReason, ListQuery, MemoryInput, MemoryPatch, MessageOptions, Role,
};
use memtide_testkit::store::{open, records, reopen, scope, Mem};
use serde_json::{json, Value};

fn said(role: Option<Role>, speaker: Option<&str>, text: &str) -> MemoryInput {
    MemoryInput {
        role,
        speaker: speaker.map(str::to_string),
        ..MemoryInput::new(text, scope())
    }
}

fn outcomes(mem: &mut Mem, inputs: Vec<MemoryInput>) -> Vec<(IngestOutcome, Option<String>)> {
    mem.ingest(inputs)
        .unwrap()
        .into_iter()
        .map(|r| (r.outcome, r.id))
        .collect()
}

fn count(mem: &Mem) -> usize {
    mem.list(&ListQuery::default()).unwrap().items.len()
}

#[test]
fn two_speakers_saying_the_same_words_are_two_memories_in_messages() {
    let mut mem = open();
    let turns: Vec<Value> = match json!([
        {"role": "user", "name": "Caroline", "content": "I love hiking"},
        {"role": "user", "name": "Melanie", "content": "I love hiking"},
        {"role": "user", "name": "Caroline", "content": "I love hiking"},
    ]) {
        Value::Array(list) => list,
        _ => unreachable!(),
    };
    let results = mem
        .ingest_messages(&turns, &MessageOptions::new(scope()))
        .unwrap();
    let got: Vec<_> = results
        .iter()
        .map(|r| (r.result.outcome, r.result.reason))
        .collect();
    assert_eq!(
        got,
        [
            (IngestOutcome::Added, None),
            (IngestOutcome::Added, None),
            (IngestOutcome::Merged, Some(IngestReason::Duplicate)),
        ]
    );
    assert_eq!(results[2].result.id, results[0].result.id);
    let caroline = mem.get(results[0].result.id.as_ref().unwrap()).unwrap();
    let melanie = mem.get(results[1].result.id.as_ref().unwrap()).unwrap();
    assert_eq!(caroline.speaker.as_deref(), Some("Caroline"));
    assert_eq!(melanie.speaker.as_deref(), Some("Melanie"));
    assert_eq!(caroline.content_hash, melanie.content_hash);
    assert_eq!(caroline.merged_from.len(), 1);
    assert!(melanie.merged_from.is_empty());
}

#[test]
fn the_voice_is_the_speaker_else_the_role_with_no_role_the_users() {
    let mut mem = open();
    let text = "The museum opens at nine.";
    let got = outcomes(
        &mut mem,
        vec![
            said(None, None, text),
            said(Some(Role::User), None, text),
            said(Some(Role::Assistant), None, text),
            said(Some(Role::System), None, text),
            said(Some(Role::Assistant), Some("Bot"), text),
            said(Some(Role::User), Some("Bot"), text),
            said(None, Some("assistant"), text),
        ],
    );
    let kinds: Vec<_> = got.iter().map(|(o, _)| *o).collect();
    use IngestOutcome::{Added, Merged};
    assert_eq!(
        kinds,
        [Added, Merged, Added, Added, Added, Merged, Added],
        "unnamed user = no role; a name is one voice whatever the role; a name is not a role"
    );
    assert_eq!(got[1].1, got[0].1);
    assert_eq!(got[5].1, got[4].1);
    assert_eq!(count(&mem), 5);
}

#[test]
fn the_key_holds_after_a_reopen_and_a_deleted_text_is_suppressed_for_its_speaker_only() {
    let mut mem = open();
    let text = "I grew up near the sea.";
    let first = outcomes(
        &mut mem,
        vec![
            said(Some(Role::User), Some("Caroline"), text),
            said(Some(Role::User), Some("Melanie"), text),
        ],
    );
    let mut mem = reopen(mem);
    let again = outcomes(
        &mut mem,
        vec![
            said(Some(Role::User), Some("Melanie"), text),
            said(Some(Role::User), Some("Caroline"), text),
        ],
    );
    assert_eq!(
        again,
        [
            (IngestOutcome::Merged, first[1].1.clone()),
            (IngestOutcome::Merged, first[0].1.clone()),
        ]
    );
    mem.delete(first[0].1.as_ref().unwrap(), false).unwrap();
    let mut mem = reopen(mem);
    let after = mem
        .ingest(vec![
            said(Some(Role::User), Some("Caroline"), text),
            said(Some(Role::User), Some("Ingrid"), text),
        ])
        .unwrap();
    assert_eq!(after[0].outcome, IngestOutcome::Skipped);
    assert_eq!(after[0].reason, Some(IngestReason::Suppressed));
    assert_eq!(after[1].outcome, IngestOutcome::Added);
}

#[test]
fn near_duplicates_merge_only_within_one_speaker() {
    let mut mem = open();
    // Long enough that the speakers' names alone leave the term overlap
    // above the lexical gate (0.85): only the voice keeps them apart.
    let text = "Every summer we rent a small wooden cabin by the northern lake, fish for trout at dawn, and hike the ridge trail";
    let variant = format!("{text} together");
    let got = outcomes(
        &mut mem,
        vec![
            said(Some(Role::User), Some("Caroline"), text),
            said(Some(Role::User), Some("Melanie"), text),
            said(Some(Role::User), Some("Melanie"), &variant),
            said(Some(Role::User), Some("Caroline"), &variant),
        ],
    );
    let kinds: Vec<_> = got.iter().map(|(o, _)| *o).collect();
    use IngestOutcome::{Added, Merged};
    assert_eq!(kinds, [Added, Added, Merged, Merged]);
    assert_eq!(got[2].1, got[1].1);
    assert_eq!(got[3].1, got[0].1);
    assert_eq!(count(&mem), 2);
}

#[test]
fn import_merges_by_speaker_and_update_refuses_a_second_copy_of_a_voice() {
    let mut mem = open();
    let text = "We adopted a cat named Miso.";
    let ids: Vec<String> = outcomes(
        &mut mem,
        vec![
            said(Some(Role::User), Some("Caroline"), text),
            said(Some(Role::User), Some("Melanie"), text),
        ],
    )
    .into_iter()
    .map(|(_, id)| id.unwrap())
    .collect();
    let export = mem.export();

    // Into a store that holds Caroline's words only: hers merge, Melanie's
    // are added.
    // (Two memories erased first, so that hers has another id.)
    let mut other = open();
    for (_, id) in outcomes(
        &mut other,
        vec![said(None, None, "a"), said(None, None, "b")],
    ) {
        other.delete(&id.unwrap(), true).unwrap();
    }
    other
        .ingest(vec![said(Some(Role::User), Some("Caroline"), text)])
        .unwrap();
    let result = other.import(&export).unwrap();
    assert_eq!((result.added, result.merged, result.replaced), (1, 1, 0));
    assert_eq!(count(&other), 2);

    // Into an empty store: both, as they were.
    let mut fresh = open();
    fresh.import(&export).unwrap();
    assert_eq!(fresh.export(), export);

    // Melanie's memory cannot become a second copy of Caroline's, by a
    // new speaker; nor by a new text once they differ.
    let before = records(mem.storage());
    let to_caroline = MemoryPatch {
        speaker: Some("Caroline".to_string()),
        ..MemoryPatch::default()
    };
    let err = mem.update(&ids[1], to_caroline).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(err.to_string().contains(&ids[0]), "{err}");
    assert_eq!(
        records(mem.storage()),
        before,
        "a refused patch writes nothing"
    );
    let changed = MemoryPatch {
        text: Some("We adopted a dog named Miso.".to_string()),
        ..MemoryPatch::default()
    };
    mem.update(&ids[1], changed).unwrap();
    let back = MemoryPatch {
        text: Some(text.to_string()),
        speaker: Some("Caroline".to_string()),
        ..MemoryPatch::default()
    };
    assert_eq!(
        mem.update(&ids[1], back).unwrap_err().code(),
        "INVALID_INPUT"
    );
    // Said by someone else, the same text is fine.
    let to_ingrid = MemoryPatch {
        text: Some(text.to_string()),
        speaker: Some("Ingrid".to_string()),
        ..MemoryPatch::default()
    };
    mem.update(&ids[1], to_ingrid).unwrap();
}
