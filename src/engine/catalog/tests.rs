//! The catalog's tests: entries and ids in few words, followers and time
//! keys against the maps they replace, `stats`' record and embedding counts
//! after every kind of change, shared scope keys.

use std::sync::Arc;

use super::{FastMap, TenantKey};
use crate::codec;
use crate::engine::vectors::tests::HashedWords;
use crate::engine::{Config, Engine, MemoryInput, MemoryPatch, Stored, Txn};
use crate::env::{Environment, FixedEnvironment};
use crate::item::{MemoryItem, Scope, ScopeFilter, Tenant, Timestamp};

/// An entry is its memory's pointer, its doc and its record length:
/// the `entries` table holds it inline, about half its slots empty.
#[test]
fn an_entry_is_three_words() {
    assert!(std::mem::size_of::<super::Entry>() <= 3 * std::mem::size_of::<usize>());
}

#[test]
fn a_memory_id_is_one_allocation_shared_by_the_keys() {
    let mut engine = Engine::new(Config::default());
    let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let mut txn = Txn::default();
    let scope = Scope::workspace("u", "w");
    let inputs = vec![
        MemoryInput::new("the first of a thread", scope.clone()),
        MemoryInput::new("the second of a thread", scope.clone()),
    ];
    engine.ingest(inputs, &mut env, &mut txn).unwrap();
    let first = engine.doc_owner[0].clone().unwrap();
    let second = engine.doc_owner[1].clone().unwrap();
    assert_eq!(followers_of(&engine, &first), [second.to_string()], "the second follows the first");
    // entries, doc_owner, by_created, by_scope_time, this handle: the
    // followers hold doc numbers, not ids.
    assert_eq!(Arc::strong_count(&first), 5);
    assert_eq!(Arc::strong_count(&second), 5);
    let now = env.now();
    let mut txn = Txn::default();
    engine.delete(&second, true, now, &mut txn).unwrap();
    assert_eq!(Arc::strong_count(&second), 1, "erasing drops every key");
    assert!(followers_of(&engine, &first).is_empty());
    assert_eq!(Arc::strong_count(&first), 5, "nothing follows the first");
    engine.rollback(txn);
    let back = engine.doc_owner[1].clone().unwrap();
    assert_eq!(back, second);
    assert_eq!(Arc::strong_count(&back), 5, "a rollback brings them back");
    assert_eq!(followers_of(&engine, &first), [second.to_string()]);
}

/// The ids of the memories that follow `id`, in the order the engine
/// keeps them.
fn followers_of(engine: &Engine, id: &str) -> Vec<String> {
    engine
        .follower_docs(id)
        .map(|doc| engine.doc_owner[doc as usize].as_deref().expect("a follower's doc has its memory").to_string())
        .collect()
}

/// The map of growable lists the catalog used to keep, changed as
/// `Engine::set` changed it: a memory set leaves the list of the memory it
/// followed and joins the end of the list of the one it follows now,
/// whether or not the catalog holds that one.
#[derive(Default)]
struct Oracle(FastMap<String, Vec<String>>);

impl Oracle {
    fn set(&mut self, id: &str, old: Option<&str>, new: Option<&str>) {
        if let Some(prev) = old {
            if let Some(list) = self.0.get_mut(prev) {
                list.retain(|f| f != id);
                if list.is_empty() {
                    self.0.remove(prev);
                }
            }
        }
        if let Some(prev) = new {
            self.0.entry(prev.to_string()).or_default().push(id.to_string());
        }
    }
}

#[test]
fn followers_are_the_lists_a_map_of_vectors_keeps() {
    // Memories set one by one with random predecessors among 24 ids:
    // predecessors set after their followers, erased and set again (their
    // doc numbers reused by others), memories following themselves, and
    // writes rolled back.
    let mut engine = Engine::new(Config::default());
    let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let scope = Scope::workspace("u", "w");
    let mut txn = Txn::default();
    engine
        .ingest(vec![MemoryInput::new("a template", scope)], &mut env, &mut txn)
        .unwrap();
    let template = engine.items().next().unwrap().into_owned();
    engine.set(&template.id, None);
    let mut oracle = Oracle::default();
    let mut x = 12_345u64;
    let mut next = || {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let mut reused = 0;
    let mut absent_then_held = 0;
    for round in 0..3_000 {
        // A transaction of a few writes, rolled back one time in three.
        let mut txn = Txn::default();
        let mut undo = Vec::new();
        for _ in 0..(1 + next() % 3) {
            let id = format!("m{}", next() % 24);
            let old = engine.entries.get(&id).map(|e| e.item().into_owned());
            let new = match next() % 4 {
                0 => None,
                n => {
                    let mut item = old.clone().unwrap_or_else(|| template.clone());
                    item.id = id.clone();
                    item.text = format!("note {id} of round {round}");
                    item.follows = (n != 1).then(|| format!("m{}", next() % 24));
                    Some(item)
                }
            };
            if old.is_none() && new.is_some() {
                reused += usize::from(!engine.free_docs.is_empty());
                absent_then_held += usize::from(oracle.0.contains_key(&id));
            }
            let (before, after) = (old.as_ref().and_then(|i| i.follows.clone()), new.as_ref().and_then(|i| i.follows.clone()));
            engine.write(&mut txn, &id, new);
            oracle.set(&id, before.as_deref(), after.as_deref());
            undo.push((id, after, before));
        }
        if next() % 3 == 0 {
            engine.rollback(txn);
            for (id, after, before) in undo.into_iter().rev() {
                oracle.set(&id, after.as_deref(), before.as_deref());
            }
        }
        for n in 0..24 {
            let id = format!("m{n}");
            let want = oracle.0.get(&id).cloned().unwrap_or_default();
            assert_eq!(followers_of(&engine, &id), want, "round {round}: {id}");
        }
    }
    assert!(reused > 100 && absent_then_held > 100, "{reused} {absent_then_held}");
}

#[test]
fn time_keys_built_at_once_are_the_keys_inserted_one_by_one() {
    let mut engine = Engine::new(Config::default());
    let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let scopes = [
        Scope::workspace("alice", "w"),
        Scope::workspace("alice", "w").with_project("p"),
        Scope::workspace("bob", "w"),
    ];
    for round in 0..40 {
        let inputs = (0..3)
            .map(|i| {
                let text = format!("note {round} {i} about topic {}", round % 7);
                let mut input = MemoryInput::new(text, scopes[(round + i) % 3].clone());
                // Some memories dated in the past: keys out of id order.
                if round % 5 == 0 {
                    input.created_at = Some(Timestamp(1_600_000_000_000 + round as i64));
                }
                input
            })
            .collect();
        engine.ingest(inputs, &mut env, &mut Txn::default()).unwrap();
        env.advance_ms(if round % 4 == 0 { 0 } else { 1_000 });
    }
    let record = |item: &MemoryItem| (format!("item/{}", item.id), codec::encode_item(item));
    let records: Vec<_> = engine.items().map(|item| record(&item)).collect();
    let mut loaded = Engine::load(Config::default(), records, None).unwrap();
    assert_eq!(loaded.by_created, engine.by_created);
    assert_eq!(loaded.by_scope_time, engine.by_scope_time);
    assert!(loaded.deferred_times.is_none());
    // A few changes applied to a larger store (inserted one by one) and
    // many (merged): the same keys as the engine that made them.
    let ids: Vec<String> = engine.items().map(|item| item.id.clone()).collect();
    for changed in [&ids[..3], &ids[3..90]] {
        let mut txn = Txn::default();
        let mut changes = Vec::new();
        for (n, id) in changed.iter().enumerate() {
            if n % 3 == 0 {
                engine.delete(id, true, env.now(), &mut txn).unwrap();
                changes.push((format!("item/{id}"), None, None));
            } else {
                let mut item = engine.entries[id].item().into_owned();
                item.created_at = Timestamp(item.created_at.0 + 5_000 * n as i64);
                engine.set(id, Some(item.clone()));
                changes.push((format!("item/{id}"), Some(Stored::Item(Box::new(item))), None));
            }
        }
        loaded.apply_counted(changes, None).unwrap();
        assert_eq!(loaded.by_created, engine.by_created);
        assert_eq!(loaded.by_scope_time, engine.by_scope_time);
    }
}

/// Ingests `inputs`, checks the kept record lengths and returns the ids.
fn ingested_ids(
    engine: &mut Engine,
    env: &mut FixedEnvironment,
    inputs: Vec<MemoryInput>,
) -> Vec<String> {
    let ids = engine
        .ingest(inputs, env, &mut Txn::default())
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect();
    check_record_lens(engine);
    ids
}

/// Applies `patch` to `id`, then rolls it back, checking the kept record
/// lengths after each.
fn update_then_roll_back(engine: &mut Engine, id: &str, patch: MemoryPatch, now: Timestamp) {
    let mut txn = Txn::default();
    engine.update(id, patch, now, &mut txn).unwrap();
    check_record_lens(engine);
    engine.rollback(txn);
    check_record_lens(engine);
}

/// `stats` sums exactly the records (the oracle: every record written,
/// memories and embeddings), over the whole store and over one user,
/// and keeps each memory's record length once it has counted it.
fn check_record_lens(engine: &Engine) {
    let mut all = 0;
    let mut alice = 0;
    let mut embedded = 0;
    for entry in engine.entries.values() {
        let mut written = codec::encode_item(&entry.item()).len();
        if let Some(vector) = engine.embedding(&entry.item().id) {
            written += codec::encode_vector(vector).len();
            embedded += 1;
        }
        all += written;
        if entry.scope().user_id == "alice" {
            alice += written;
        }
    }
    let everyone = ScopeFilter::default();
    let stats = engine.stats(&everyone, true);
    assert_eq!((stats.stored_bytes, stats.embedded), (all, embedded));
    for entry in engine.entries.values() {
        let written = codec::encode_item(&entry.item()).len();
        assert_eq!(entry.kept_record_len(), Some(written), "{}", entry.item().id);
    }
    // Again, from the lengths kept.
    assert_eq!(engine.stats(&everyone, true).stored_bytes, all);
    let only_alice = ScopeFilter {
        user_id: Some("alice".into()),
        ..ScopeFilter::default()
    };
    assert_eq!(engine.stats(&only_alice, true).stored_bytes, alice);
}

/// The engine loaded from `engine`'s records, memories and embeddings;
/// the load counts no record length (`stats` does, later).
fn reloaded(engine: &Engine) -> Engine {
    let mut records = Vec::new();
    for item in engine.items() {
        records.push((format!("item/{}", item.id), codec::encode_item(&item)));
        if let Some(vector) = engine.embedding(&item.id) {
            records.push((format!("vec/{}", item.id), codec::encode_vector(vector)));
        }
    }
    let model = engine.model_id.clone();
    let loaded = Engine::load(Config::default(), records, model).unwrap();
    assert!(loaded.entries.values().all(|e| e.kept_record_len().is_none()));
    loaded
}

#[test]
fn stats_counts_the_records_as_every_change_leaves_them() {
    let mut engine = Engine::new(Config::default());
    let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let (alice, bob) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
    let said = |text: &str, scope: &Scope, speaker: Option<&str>| MemoryInput {
        speaker: speaker.map(str::to_string),
        tags: Some(vec!["a \"tag\"".into(), "é \\ back".into()]),
        ..MemoryInput::new(text, scope.clone())
    };
    let inputs = vec![
        said("alice said \"hello\"\nover two lines", &alice, Some("Alice")),
        said("alice likes green tea", &alice, None),
        said("bob owns a red bicycle", &bob, None),
    ];
    let ids = ingested_ids(&mut engine, &mut env, inputs);
    // The same text again: merged into the first (a nested field).
    let again = vec![said("alice likes green tea", &alice, None)];
    engine.ingest(again, &mut env, &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    let patch = MemoryPatch {
        text: Some("bob owns a blue bicycle, now".into()),
        pinned: Some(true),
        ..MemoryPatch::default()
    };
    update_then_roll_back(&mut engine, &ids[2], patch, env.now());
    let now = env.now();
    engine.delete(&ids[0], false, now, &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    engine.delete(&ids[1], true, now, &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    // Loaded from the records: the same lengths.
    check_record_lens(&reloaded(&engine));
}

#[test]
fn stats_counts_the_embeddings_as_writes_deletes_and_re_embeds_leave_them() {
    let mut engine = Engine::new(Config::default());
    let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let (alice, bob) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
    let inputs = vec![
        MemoryInput::new("alice keeps bees", alice.clone()),
        MemoryInput::new("alice likes green tea", alice.clone()),
        MemoryInput::new("bob owns a red bicycle", bob.clone()),
    ];
    let ids = ingested_ids(&mut engine, &mut env, inputs);
    // The model comes after the memories: each is embedded.
    engine
        .attach_embedder(Arc::new(HashedWords), &mut Txn::default())
        .unwrap();
    check_record_lens(&engine);
    let more = vec![MemoryInput::new("bob paints the fence blue", bob.clone())];
    engine.ingest(more, &mut env, &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    // A new text: a new record and a new embedding.
    let patch = MemoryPatch {
        text: Some("alice keeps two hives of bees".into()),
        ..MemoryPatch::default()
    };
    engine.update(&ids[0], patch, env.now(), &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    let patch = MemoryPatch {
        text: Some("bob owns a blue bicycle".into()),
        ..MemoryPatch::default()
    };
    update_then_roll_back(&mut engine, &ids[2], patch, env.now());
    // Soft-deleted: its embedding is kept outside the index.
    let now = env.now();
    engine.delete(&ids[1], false, now, &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    let loaded = reloaded(&engine);
    check_record_lens(&loaded);
    engine.delete(&ids[2], true, now, &mut Txn::default()).unwrap();
    check_record_lens(&engine);
    check_record_lens(&reloaded(&engine));
    assert_eq!(loaded.stats(&ScopeFilter::default(), true).embedded, 4);
    assert_eq!(engine.stats(&ScopeFilter::default(), true).embedded, 3);
}

#[test]
fn a_tenant_is_found_by_its_borrowed_parts() {
    let mut map: FastMap<Tenant, u32> = FastMap::default();
    let scope = Scope::workspace("alice", "home");
    map.insert(scope.tenant(), 1);
    map.insert(Scope::workspace("alicehome", "").tenant(), 2);
    assert_eq!(map.get(&scope as &dyn TenantKey), Some(&1));
    assert_eq!(map.get(&("alicehome", "") as &dyn TenantKey), Some(&2));
    assert_eq!(map.get(&("alice", "hom") as &dyn TenantKey), None);
    assert_eq!(map.get(&("", "alicehome") as &dyn TenantKey), None);
}

#[test]
fn scope_keys_share_one_copy_per_scope_and_drop_it_with_the_last_memory() {
    let mut engine = Engine::new(Config::default());
    let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let mut txn = Txn::default();
    let (alice, bob) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
    let inputs = vec![
        MemoryInput::new("alice likes green tea", alice.clone()),
        MemoryInput::new("alice plays the cello", alice.clone()),
        MemoryInput::new("bob owns a red bicycle", bob.clone()),
    ];
    let ids: Vec<String> = engine
        .ingest(inputs, &mut env, &mut txn)
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect();
    assert_eq!(engine.scopes.len(), 2);
    let shared = engine.scope_key(&alice);
    // The interner, two memories' keys in `by_scope_time`, this handle.
    assert_eq!(Arc::strong_count(&shared), 1 + 2 + 1);
    drop(shared);
    let now = env.now();
    let mut txn = Txn::default();
    engine.delete(&ids[2], true, now, &mut txn).unwrap();
    assert_eq!(engine.scopes.len(), 1, "bob's last memory is gone");
    engine.delete(&ids[0], false, now, &mut txn).unwrap();
    assert_eq!(engine.scopes.len(), 1, "a soft delete keeps the keys");
    engine.delete(&ids[0], true, now, &mut txn).unwrap();
    engine.delete(&ids[1], true, now, &mut txn).unwrap();
    assert!(engine.scopes.is_empty() && engine.by_hash.is_empty());
    engine.rollback(txn);
    assert_eq!(engine.scopes.len(), 2, "a rollback brings both back");
    assert!(engine.find_text(&bob, None, None, "bob owns a red bicycle").is_some());
}
