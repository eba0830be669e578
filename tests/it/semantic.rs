//! The engine's semantic layer with a small deterministic embedder (so these
//! tests need no model file): hybrid retrieval, persisted embeddings, model
//! changes, re-embedding on edits (of the text or the speaker), the
//! semantic near-duplicate gate.
//! `tests/portable/embed_golden.rs` covers the real MiniLM.

use std::sync::Arc;

use memtide::codec;
use memtide::embed::Embedder;
use memtide::env::FixedEnvironment;
use memtide::storage::{MemoryStorage, Storage};
use memtide::{
    IngestOutcome, IngestReason, Memory, MemoryInput, MemoryPatch, RetrieveQuery, Role, Scope,
    ScopeFilter, Timestamp,
};
use memtide_testkit::faults::FailingStorage;
use memtide_testkit::store::{holds, legacy_store, records, T0};

const DIMS: usize = 32;

/// Embeds a text as the normalized sum of one-hot vectors of its words'
/// concepts; words of one synonym group share a concept, other words of
/// three letters or fewer are ignored (a crude stopword list).
struct ConceptEmbedder {
    id: String,
}

const SYNONYMS: &[&[&str]] = &[
    &["car", "automobile", "vehicle", "sedan"],
    &["doctor", "physician", "gp"],
    &["work", "job", "employed", "engineer"],
];

fn concept(word: &str) -> Option<usize> {
    if let Some(group) = SYNONYMS.iter().position(|g| g.contains(&word)) {
        return Some(group);
    }
    if word.len() <= 3 {
        return None;
    }
    let hash = word
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    Some(SYNONYMS.len() + hash as usize % (DIMS - SYNONYMS.len()))
}

impl Embedder for ConceptEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dimensions(&self) -> usize {
        DIMS
    }
    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = [0.0f32; DIMS];
                for word in t.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                    if let Some(c) = concept(word) {
                        v[c] += 1.0;
                    }
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

fn model(id: &str) -> Arc<dyn Embedder> {
    Arc::new(ConceptEmbedder { id: id.to_string() })
}

fn ws() -> Scope {
    Scope::workspace("u", "w")
}

fn open<S: Storage>(storage: S) -> Memory<S, FixedEnvironment> {
    Memory::open(
        storage,
        FixedEnvironment::new(Timestamp(T0)),
        Default::default(),
    )
    .unwrap()
}

fn add<S: Storage>(mem: &mut Memory<S, FixedEnvironment>, text: &str) -> String {
    mem.ingest(vec![MemoryInput::new(text, ws())])
        .unwrap()
        .remove(0)
        .id
        .unwrap()
}

fn top<S: Storage>(mem: &mut Memory<S, FixedEnvironment>, text: &str) -> Vec<String> {
    let query = RetrieveQuery {
        dry_run: true,
        explain: true,
        ..RetrieveQuery::new(text, ws())
    };
    mem.retrieve(&query)
        .unwrap()
        .into_iter()
        .map(|h| h.item.id)
        .collect()
}

fn vector_keys(storage: &MemoryStorage) -> Vec<String> {
    records(storage)
        .into_keys()
        .filter(|k| k.starts_with("vec/"))
        .collect()
}

#[test]
fn hybrid_retrieval_finds_meaning_without_shared_words() {
    let mut mem = open(MemoryStorage::new());
    let car = add(&mut mem, "my sedan is parked in the garage");
    add(&mut mem, "the garden needs watering");
    assert!(
        top(&mut mem, "where is the automobile").is_empty(),
        "lexical mode has no match"
    );
    assert_eq!(mem.stats(&ScopeFilter::default()).retrieval_mode, "lexical");

    assert_eq!(mem.set_embedder(model("concepts-v1")).unwrap(), 2);
    let stats = mem.stats(&ScopeFilter::default());
    assert_eq!(
        (stats.retrieval_mode.as_str(), stats.embedded),
        ("hybrid", 2)
    );
    assert_eq!(stats.token_counting, "tokenizer");
    assert_eq!(top(&mut mem, "where is the automobile")[0], car);
    let hit = mem
        .retrieve(&RetrieveQuery {
            dry_run: true,
            explain: true,
            ..RetrieveQuery::new("where is the automobile", ws())
        })
        .unwrap()
        .remove(0);
    let explained = hit.explain.unwrap();
    assert_eq!(explained.lexical, 0.0);
    assert!(explained.semantic.unwrap() > 0.3);
}

#[test]
fn embeddings_persist_and_a_store_never_mixes_models() {
    let mut mem = open(MemoryStorage::new());
    mem.set_embedder(model("concepts-v1")).unwrap();
    let a = add(&mut mem, "the physician said to rest");
    let b = add(&mut mem, "my job starts at nine");
    assert_eq!(vector_keys(mem.storage()).len(), 2);

    let mut reopened = open(mem.storage().clone());
    let stats = reopened.stats(&ScopeFilter::default());
    assert_eq!(stats.embedded, 2);
    assert_eq!(stats.model.as_deref(), Some("concepts-v1"));
    assert_eq!(stats.retrieval_mode, "lexical", "no model attached yet");
    assert_eq!(
        reopened.set_embedder(model("concepts-v1")).unwrap(),
        0,
        "same model: nothing to redo"
    );
    assert_eq!(top(&mut reopened, "what did the doctor say")[0], a);

    let mut other = open(mem.storage().clone());
    assert_eq!(
        other.set_embedder(model("concepts-v2")).unwrap(),
        2,
        "another model re-embeds all"
    );
    assert_eq!(
        other.stats(&ScopeFilter::default()).model.as_deref(),
        Some("concepts-v2")
    );
    let again = open(other.storage().clone());
    assert_eq!(
        again.stats(&ScopeFilter::default()).model.as_deref(),
        Some("concepts-v2")
    );
    assert_eq!(top(&mut other, "when does work start")[0], b);
}

#[test]
fn edits_re_embed_and_hard_deletes_erase_the_vector() {
    let mut mem = open(MemoryStorage::new());
    mem.set_embedder(model("concepts-v1")).unwrap();
    let id = add(&mut mem, "I see my gp on mondays");
    assert_eq!(top(&mut mem, "doctor appointment")[0], id);
    mem.update(
        &id,
        MemoryPatch {
            text: Some("I wash the sedan on mondays".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(top(&mut mem, "vehicle cleaning")[0], id);
    assert!(
        top(&mut mem, "physician").is_empty(),
        "the old embedding is gone"
    );

    mem.delete(&id, false).unwrap();
    assert!(top(&mut mem, "vehicle cleaning").is_empty());
    assert_eq!(
        vector_keys(mem.storage()).len(),
        1,
        "a soft delete keeps the vector for a restore"
    );
    mem.delete(&id, true).unwrap();
    assert!(vector_keys(mem.storage()).is_empty());
    assert_eq!(
        open(mem.storage().clone())
            .stats(&ScopeFilter::default())
            .items,
        0
    );
}

/// The stored vector record of the one memory `mem` holds that says `text`
/// with `speaker` (ingested so, in a store of its own, when `mem` is `None`).
fn said_vector(
    mem: Option<&Memory<MemoryStorage, FixedEnvironment>>,
    text: &str,
    speaker: Option<&str>,
) -> Vec<u8> {
    let fresh;
    let mem = match mem {
        Some(mem) => mem,
        None => {
            let mut other = open(MemoryStorage::new());
            other.set_embedder(model("concepts-v1")).unwrap();
            let input = MemoryInput {
                speaker: speaker.map(str::to_string),
                ..MemoryInput::new(text, ws())
            };
            other.ingest(vec![input]).unwrap();
            fresh = other;
            &fresh
        }
    };
    let mut vectors: Vec<Vec<u8>> = records(mem.storage())
        .into_iter()
        .filter(|(k, _)| k.starts_with("vec/"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(vectors.len(), 1);
    vectors.remove(0)
}

#[test]
fn a_new_speaker_re_embeds_the_memory_as_said_by_them() {
    let text = "We drove the sedan to the coast";
    let mut mem = open(MemoryStorage::new());
    mem.set_embedder(model("concepts-v1")).unwrap();
    let input = MemoryInput {
        speaker: Some("Caroline".into()),
        ..MemoryInput::new(text, ws())
    };
    let id = mem.ingest(vec![input]).unwrap().remove(0).id.unwrap();
    let caroline = said_vector(Some(&mem), text, Some("Caroline"));
    assert_eq!(caroline, said_vector(None, text, Some("Caroline")));
    for speaker in [Some("Melanie"), None] {
        let patch = MemoryPatch {
            speaker: Some(speaker.unwrap_or_default().to_string()),
            ..Default::default()
        };
        mem.update(&id, patch).unwrap();
        let stored = said_vector(Some(&mem), text, speaker);
        assert_ne!(stored, caroline);
        assert_eq!(stored, said_vector(None, text, speaker), "{speaker:?}");
    }
}

#[test]
fn an_upsert_stores_the_inputs_speaker_and_role_and_re_embeds_the_text_as_said() {
    let text = "We drove the sedan to the coast";
    let mut mem = open(MemoryStorage::new());
    mem.set_embedder(model("concepts-v1")).unwrap();
    let keyed = |speaker: Option<&str>, role| MemoryInput {
        key: Some("trip".into()),
        speaker: speaker.map(str::to_string),
        role,
        ..MemoryInput::new(text, ws())
    };
    let first = mem.upsert(vec![keyed(Some("Caroline"), Some(Role::User))]);
    let id = first.unwrap().remove(0).id.unwrap();
    for (speaker, role) in [(Some("Melanie"), Some(Role::Assistant)), (None, None)] {
        let result = mem.upsert(vec![keyed(speaker, role)]).unwrap().remove(0);
        assert_eq!(result.outcome, IngestOutcome::Replaced);
        assert_eq!(result.id.as_deref(), Some(id.as_str()));
        let item = mem.get(&id).unwrap();
        assert_eq!((item.speaker.as_deref(), item.role), (speaker, role));
        let stored = said_vector(Some(&mem), text, speaker);
        assert_eq!(stored, said_vector(None, text, speaker), "{speaker:?}");
        let replaced = mem.history(&id).unwrap().pop().unwrap();
        assert_eq!(replaced.fields, ["role", "speaker"]);
    }
}

/// A new text's embedding replaces the old text's as the text does: the
/// old one is erased also from a segment that does not hold the memory.
#[test]
fn a_new_text_erases_the_old_embedding_from_every_segment() {
    let mut mem = open(MemoryStorage::new());
    let topics = ["garden", "violin", "sushi", "marathon", "berlin", "guitar"];
    let mut inputs = vec![MemoryInput::new("We drove the sedan to the coast", ws())];
    inputs.extend((0..300).map(|i| {
        let text = format!(
            "note {i}: we talked about {} and {} on day {}",
            topics[i % 6],
            topics[(i / 6) % 6],
            i % 31
        );
        MemoryInput::new(text, ws())
    }));
    let id = mem.ingest(inputs).unwrap()[0].id.clone().unwrap();
    // The embeddings are written by a commit of their own, to a segment
    // apart from the texts'.
    mem.set_embedder(model("concepts-v1")).unwrap();
    let key = format!("vec/{id}");
    let old = records(mem.storage()).remove(&key).unwrap();
    assert!(holds(mem.storage(), &old));
    let text = "We flew over the mountains";
    let patch = MemoryPatch {
        text: Some(text.into()),
        ..Default::default()
    };
    mem.update(&id, patch).unwrap();
    assert!(
        !holds(mem.storage(), &old),
        "the replaced text's embedding remains"
    );
    let new = records(mem.storage()).remove(&key).unwrap();
    assert_eq!(new, said_vector(None, text, None));
}

/// The record format version of the stored record `key`.
fn record_version(storage: &MemoryStorage, key: &str) -> u16 {
    let value = records(storage).remove(key).unwrap();
    u16::from_le_bytes([value[4], value[5]])
}

/// The store of `mem` as builds before int8 vector records and the
/// segmented layout left it: a key per record, each vector record holding
/// the `f32` embedding of `embedder` (version 1), the manifest's digest
/// covering those bytes.
fn with_f32_vector_records(
    mem: &Memory<MemoryStorage, FixedEnvironment>,
    embedder: &dyn Embedder,
) -> MemoryStorage {
    let mut stored = records(mem.storage());
    for (key, value) in stored.iter_mut() {
        if let Some(id) = key.strip_prefix("vec/") {
            let text = mem.get(id).unwrap().text;
            let vector = embedder.embed_batch(&[text.as_str()]).unwrap().remove(0);
            let mut payload = (vector.len() as u32).to_le_bytes().to_vec();
            vector
                .iter()
                .for_each(|x| payload.extend_from_slice(&x.to_le_bytes()));
            *value = codec::encode(codec::RecordType::Vector, 1, &payload);
        }
    }
    legacy_store(&stored, Some(embedder.model_id()))
}

#[test]
fn f32_vector_records_of_older_builds_are_read_and_migrated_to_int8() {
    let embedder = model("concepts-v1");
    let mut mem = open(MemoryStorage::new());
    mem.set_embedder(embedder.clone()).unwrap();
    let car = add(&mut mem, "my sedan is parked in the garage");
    let gp = add(&mut mem, "I see my gp on mondays");
    let job = add(&mut mem, "my job starts at nine");
    assert_eq!(record_version(mem.storage(), &format!("vec/{car}")), 3);
    let legacy = with_f32_vector_records(&mem, embedder.as_ref());
    assert_eq!(record_version(&legacy, &format!("vec/{car}")), 1);
    assert!(legacy.get(&format!("vec/{car}")).unwrap().is_some());

    // Opening migrates: every vector is written as int8 codes, in the
    // segmented layout, and no key of the old layout is left.
    let mut old = open(legacy);
    let storage = old.storage().clone();
    assert!(storage
        .entries()
        .all(|(k, _)| k == "meta/manifest" || k.starts_with("seg/")));
    for id in [&car, &gp, &job] {
        assert_eq!(record_version(&storage, &format!("vec/{id}")), 3);
    }
    let stats = old.stats(&ScopeFilter::default());
    assert_eq!(stats.embedded, 3);
    assert_eq!(old.set_embedder(embedder).unwrap(), 0, "same model");
    assert_eq!(top(&mut old, "where is the automobile")[0], car);
    assert_eq!(top(&mut old, "what did the physician say")[0], gp);

    let patch = MemoryPatch {
        text: Some("I wash the automobile on mondays".into()),
        ..Default::default()
    };
    old.update(&gp, patch).unwrap();
    old.delete(&car, true).unwrap();
    let storage = old.storage().clone();
    assert_eq!(vector_keys(&storage).len(), 2);
    let mut reopened = open(storage);
    assert_eq!(reopened.stats(&ScopeFilter::default()).embedded, 2);
    reopened.set_embedder(model("concepts-v1")).unwrap();
    assert_eq!(top(&mut reopened, "vehicle cleaning")[0], gp);
    assert_eq!(top(&mut reopened, "when does work start")[0], job);
}

#[test]
fn the_semantic_gate_merges_paraphrases_but_keeps_changed_values() {
    let mut mem = open(MemoryStorage::new());
    mem.set_embedder(model("concepts-v1")).unwrap();
    let first = add(&mut mem, "I work at Acme as an engineer");
    let paraphrase = mem
        .ingest(vec![MemoryInput::new(
            "I work at Acme as engineer, my job",
            ws(),
        )])
        .unwrap()
        .remove(0);
    assert_eq!(paraphrase.outcome, IngestOutcome::Merged);
    assert_eq!(paraphrase.reason, Some(IngestReason::NearDuplicate));
    assert_eq!(paraphrase.id, Some(first));

    add(&mut mem, "I drink cortado every morning");
    let changed = mem
        .ingest(vec![MemoryInput::new(
            "I drink flat white every morning",
            ws(),
        )])
        .unwrap()
        .remove(0);
    assert_eq!(
        changed.outcome,
        IngestOutcome::Added,
        "a changed value is a new memory"
    );
}

#[test]
fn a_failed_model_change_leaves_the_old_model_and_vectors() {
    let mut mem = open(FailingStorage::new(MemoryStorage::new()));
    mem.set_embedder(model("concepts-v1")).unwrap();
    let id = add(&mut mem, "the sedan needs new tyres");
    let before = mem.export();
    let storage = mem.into_storage();
    // Every commit from here on fails.
    storage.trigger.arm_sticky(0);
    let mut mem = open(storage);
    assert_eq!(
        mem.set_embedder(model("concepts-v2")).unwrap_err().code(),
        "STORAGE"
    );
    let stats = mem.stats(&ScopeFilter::default());
    assert_eq!(stats.model.as_deref(), Some("concepts-v1"));
    assert_eq!(
        stats.retrieval_mode, "lexical",
        "the failed attach was rolled back"
    );
    assert_eq!(mem.export(), before);
    assert_eq!(top(&mut mem, "sedan tyres")[0], id);
}

/// A question that asks to confirm or infer ("Would…?") fuses its lexical
/// and semantic evidence with `rank.hypothesisLexicalWeight` (0.2), a
/// question asking to recall with `rank.lexicalWeight` (0.4): step 1 of
/// every hit's breakdown, through the engine's own BM25, coverage and
/// cosine. The weight is checked like the lexical weight.
#[test]
fn a_hypothesis_question_fuses_with_its_own_lexical_weight() {
    let open_with = |hypothesis: f32| {
        let mut config = memtide::Config::default();
        config.rank.hypothesis_lexical_weight = hypothesis;
        Memory::open(
            MemoryStorage::new(),
            FixedEnvironment::new(Timestamp(T0)),
            config,
        )
    };
    let fused_with = |hypothesis: f32, question: &str| -> Vec<f32> {
        let mut mem = open_with(hypothesis).unwrap();
        mem.set_embedder(model("concepts")).unwrap();
        for text in [
            "my sedan broke down again",
            "I drive to work every morning",
            "the physician called about the results",
        ] {
            add(&mut mem, text);
        }
        let query = RetrieveQuery {
            dry_run: true,
            explain: true,
            ..RetrieveQuery::new(question, ws())
        };
        let hits = mem.retrieve(&query).unwrap();
        let explained: Vec<_> = hits.iter().map(|h| h.explain.unwrap()).collect();
        let best = explained.iter().map(|b| b.lexical).fold(0.0f32, f32::max);
        assert!(best > 0.0 && explained.len() >= 2, "{explained:?}");
        // The weight that reproduces each hit's step-1 score.
        explained
            .iter()
            .map(|b| {
                let lexical = b.lexical / best + 0.2 * b.coverage;
                let cos = b.semantic.unwrap().max(0.0);
                (b.combined - cos) / (lexical - cos)
            })
            .collect()
    };
    let close = |weights: &[f32], w: f32| weights.iter().all(|x| (x - w).abs() < 1e-4);
    let hypothesis = fused_with(0.2, "Would she drive a car to work?");
    assert!(close(&hypothesis, 0.2), "{hypothesis:?}");
    let recall = fused_with(0.2, "Which car does she drive to work?");
    assert!(close(&recall, 0.4), "{recall:?}");
    let same = fused_with(0.4, "Would she drive a car to work?");
    assert!(close(&same, 0.4), "{same:?}");
    for refused in [1.5, -0.1, f32::NAN] {
        let code = open_with(refused).err().map(|e| e.code());
        assert_eq!(code, Some("INVALID_INPUT"), "{refused}");
    }
}
