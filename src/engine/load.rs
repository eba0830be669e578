//! Records into the engine: a store's records loaded one at a time as its
//! reader decodes them ([`Loader`], an open), and the records another
//! writer committed applied as one checked batch
//! ([`Engine::apply_counted`], a refresh). Both decode a record the same
//! way ([`decode`]) and apply it the same way ([`Engine::apply_record`]).

use super::catalog::Held;
use super::vectors::StoredVector;
use super::{Config, Counted, Engine, Stored};
use crate::codec;
use crate::error::{Error, Result};
use crate::files::StoredFile;
use crate::index::VectorParams;
use crate::index::bm25::TermCounts;
use crate::room;
use crate::keys::{FILE_PREFIX, ITEM_PREFIX, VECTOR_PREFIX};

/// A decoded record, or its deletion.
pub(super) enum Record<'a> {
    /// A memory, with its terms when a lexical part counted them (taken:
    /// each memory's counts are freed once its postings hold them).
    Item(&'a str, Option<Held>, Option<TermCounts>),
    Vector(&'a str, Option<StoredVector>),
    File(&'a str, Option<StoredFile>),
}

/// Decodes the record `key` holds as stored, or its deletion (`None`),
/// and checks it against its key and, for a memory, against its counted
/// terms ([`Counted`]). Whether an embedding's memory is held is for the
/// caller to check: it depends on the other records.
pub(super) fn decode(key: &str, stored: Option<Stored>, counted: Counted) -> Result<Record<'_>> {
    let corrupt = |e: codec::CodecError| e.in_record(key);
    if let Some(id) = key.strip_prefix(ITEM_PREFIX) {
        let held = match stored {
            None => return Ok(Record::Item(id, None, None)),
            Some(Stored::Bytes(bytes)) => Held::item(codec::decode_item(&bytes).map_err(corrupt)?),
            Some(Stored::Item(item)) => Held::Decoded(item),
            Some(Stored::Row(row)) => Held::row(row),
            Some(Stored::Vector(_)) => return Err(misplaced(key)),
        };
        let (held_id, deleted) = held.id_bytes_and_deleted();
        if held_id != id.as_bytes() {
            return Err(Error::Corrupt(format!(
                "record `{key}` holds memory `{}`",
                String::from_utf8_lossy(held_id)
            )));
        }
        if counted.as_ref().is_some_and(|c| c.is_some() == deleted) {
            return Err(Error::Corrupt(format!(
                "record `{key}`: the lexical part disagrees with the memory about indexing it"
            )));
        }
        return Ok(Record::Item(id, Some(held), counted.flatten()));
    }
    if let Some(id) = key.strip_prefix(VECTOR_PREFIX) {
        let vector = match stored {
            None => None,
            Some(Stored::Item(_) | Stored::Row(_)) => return Err(misplaced(key)),
            Some(Stored::Bytes(bytes)) => {
                Some(codec::decode_vector(&bytes).map_err(corrupt)?.vector)
            }
            Some(Stored::Vector(vector)) => Some(vector),
        };
        return Ok(Record::Vector(id, vector.map(StoredVector::loaded)));
    }
    if key.starts_with(FILE_PREFIX) {
        return match stored {
            None => Ok(Record::File(key, None)),
            Some(Stored::Item(_) | Stored::Row(_) | Stored::Vector(_)) => Err(misplaced(key)),
            Some(Stored::Bytes(bytes)) => {
                let file = codec::decode_file(&bytes).map_err(corrupt)?;
                if file.storage_key() != key {
                    return Err(Error::Corrupt(format!(
                        "record `{key}` holds file `{}` of another key",
                        file.path
                    )));
                }
                Ok(Record::File(key, Some(file)))
            }
        };
    }
    Err(Error::Corrupt(format!("`{key}` is not a record key")))
}

/// A decoded record (a memory's row, an embedding) found under a key of
/// another kind of record.
fn misplaced(key: &str) -> Error {
    Error::Corrupt(format!("record `{key}` is another kind of record than its key names"))
}

/// The error of an embedding whose memory the records do not hold.
pub(super) fn no_memory(id: &str) -> Error {
    Error::Corrupt(format!("record `{VECTOR_PREFIX}{id}` has no memory"))
}

impl Engine {
    /// Applies one decoded record.
    pub(super) fn apply_record(&mut self, record: Record<'_>) {
        match record {
            Record::Item(id, item, counts) => {
                self.set_counted(id, item, counts.as_ref());
            }
            Record::Vector(id, vector) => {
                self.set_vector(id, vector);
            }
            Record::File(_, Some(file)) => {
                self.set_file(&(file.scope.clone(), file.path.clone()), Some(file));
            }
            Record::File(key, None) => {
                let held = self
                    .files
                    .iter()
                    .find(|(_, file)| file.storage_key() == key)
                    .map(|(k, _)| k.clone());
                if let Some(file_key) = held {
                    self.set_file(&file_key, None);
                }
            }
        }
    }

    /// What follows applying memories: the time keys held back built into
    /// their trees, and the lexical indexes' lookups of the load freed.
    pub(super) fn end_memories(&mut self) {
        self.build_time_keys();
        for index in self.lexical.values_mut() {
            index.forget_resolved();
        }
    }
}

/// An engine loaded from a store's records one at a time, as its reader
/// decodes them: each memory and file goes into the engine at once, so the
/// decoded records of a whole store are never held beside the engine
/// being built (WebAssembly memory never shrinks: that sum would stay as
/// the store's footprint). Each embedding whose memory is in goes into its
/// tenant's vector index at once too (within a segment `item/` keys sort
/// before `vec/` keys), its row linked to no other; the few whose memory
/// comes later wait, and at the end go in, and every row is linked to its
/// predecessor's in one pass ([`Engine::link_loaded_vectors`]). The
/// indexes end as [`Engine::set_vector`] one embedding after another, in
/// key order, leaves them: the same rows, links and norms, rows perhaps
/// in another order, which no score depends on (ties go by doc). That
/// holds while no index builds a graph segment, whose graph depends on the
/// order of its rows: a store of [`VectorParams::segment_threshold`]
/// embeddings or more holds them all and loads them in key order at the
/// end, as [`Engine::apply_counted`] does (`docs/speed.md`, "The open").
///
/// Each key comes at most once, its newest version (the reader decides
/// which, `crate::layout`). Each record is checked as it comes, not the
/// whole store before anything changes as [`Engine::apply_counted`] does:
/// a load that fails drops its engine, which no one saw.
pub(crate) struct Loader {
    engine: Engine,
    /// The embeddings to load at the end, by memory id: those whose memory
    /// had not come yet, or every one past the rows loadable at once.
    vectors: Vec<(String, StoredVector)>,
    /// The embeddings the store holds, as [`Loader::new`] was told.
    embeddings: usize,
    /// The embeddings loaded as they came.
    loaded: usize,
    /// Whether embeddings still go in as they come: fewer than `limit` came.
    direct: bool,
    /// The rows below which no index builds a graph segment.
    limit: usize,
}

impl Loader {
    /// An empty engine to load a store into: `memories` of its memories
    /// come with their doc numbers ([`Loader::put`]), and `embeddings` is
    /// how many embeddings it holds (a size hint).
    pub(crate) fn new(
        config: Config,
        model_id: Option<String>,
        memories: usize,
        embeddings: usize,
    ) -> Result<Loader> {
        config.validate()?;
        let mut engine = Engine::new(config);
        engine.model_id = model_id;
        engine.defer_time_keys();
        // The catalog's maps sized once for every memory, not doubled
        // (and rehashed) as they come; its lists by doc with room for the
        // writes after the open.
        room::make_room(&mut engine.doc_owner, memories);
        engine.followers.reserve(room::with_room(memories));
        engine.reserve_items(memories);
        engine.doc_owner.resize(memories, None);
        let limit = VectorParams::default().segment_threshold;
        Ok(Loader {
            engine,
            vectors: Vec::new(),
            embeddings,
            loaded: 0,
            direct: embeddings < limit,
            limit,
        })
    }

    /// Loads the record `key` holds, with its memory's terms as counted
    /// when it was stored (see [`Counted`]). A memory takes the doc number
    /// `doc`, one of the `memories` [`Loader::new`] counted: its place
    /// among the store's memory keys in key order, as a load in key order
    /// numbers them; or, with `None`, the next doc free. Retrieval breaks
    /// ties between equal scores by doc number, so a store answers the
    /// same however its records are spread over segments.
    pub(crate) fn put(
        &mut self,
        key: &str,
        stored: Stored,
        counted: Counted,
        doc: Option<u32>,
    ) -> Result<()> {
        match decode(key, Some(stored), counted)? {
            // The time keys held back until the end find only memories
            // set once.
            Record::Item(id, ..) if self.engine.entries.contains_key(id) => {
                Err(Error::Corrupt(format!("record `{key}` is loaded twice")))
            }
            Record::Vector(id, Some(vector)) => {
                if self.direct && self.loaded + self.vectors.len() + 1 >= self.limit {
                    // More than the store said: every one goes in in key
                    // order at the end.
                    self.direct = false;
                    self.loaded = 0;
                    let taken = self.engine.unload_vectors();
                    self.vectors.extend(taken);
                }
                if self.direct && self.engine.entries.contains_key(id) {
                    let room = self.embeddings.saturating_sub(self.loaded);
                    self.engine.load_vector(id, vector, room);
                    self.loaded += 1;
                } else {
                    self.vectors.push((id.to_string(), vector));
                }
                Ok(())
            }
            record => {
                if let (Record::Item(..), Some(doc)) = (&record, doc) {
                    let free = self.engine.doc_owner.get(doc as usize).is_some_and(Option::is_none);
                    if !free {
                        return Err(Error::Corrupt(format!(
                            "record `{key}` takes doc {doc}, which another memory holds"
                        )));
                    }
                    // The one free doc: the catalog gives it to this memory.
                    self.engine.free_docs.push(doc);
                }
                self.engine.apply_record(record);
                Ok(())
            }
        }
    }

    /// The engine, once the embeddings are in.
    pub(crate) fn finish(self) -> Result<Engine> {
        let Loader {
            mut engine,
            mut vectors,
            embeddings,
            loaded,
            direct,
            ..
        } = self;
        // Docs counted but not taken (none, when the reader gave every
        // memory it counted) are free for new memories.
        engine.free_docs = (0..engine.doc_owner.len())
            .filter(|&d| engine.doc_owner[d].is_none())
            .filter_map(|d| u32::try_from(d).ok())
            .collect();
        vectors.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some((id, _)) = vectors.iter().find(|(id, _)| !engine.entries.contains_key(id)) {
            return Err(no_memory(id));
        }
        // The memories are all in: what their load held back is built (and
        // its lists freed) before the vector structures grow.
        engine.end_memories();
        if direct {
            for (id, vector) in vectors {
                let room = embeddings.saturating_sub(loaded);
                engine.load_vector(&id, vector, room);
            }
            engine.link_loaded_vectors();
            return Ok(engine);
        }
        if let Some((_, first)) = vectors.first() {
            let ids: Vec<&str> = vectors.iter().map(|(id, _)| id.as_str()).collect();
            engine.reserve_vectors(&ids, first.vector.len());
        }
        let loaded = !vectors.is_empty();
        for (id, vector) in vectors {
            engine.set_vector(&id, Some(vector));
        }
        if loaded {
            engine.drop_empty_vector_indexes();
        }
        Ok(engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::MemoryItem;
    use crate::engine::{MemoryInput, Txn};
    use crate::env::FixedEnvironment;
    use crate::index::Int8Vector;
    use crate::item::{Scope, Tenant, Timestamp};
    use crate::index::VectorIndex;
    use memtide_testkit::rng::Rng;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// Three memories of an engine, and their records by id.
    fn memories() -> Vec<MemoryItem> {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let inputs = ["coffee in berlin", "a guitar lesson", "sushi on friday"]
            .iter()
            .map(|text| MemoryInput::new(*text, Scope::workspace("alice", "home")))
            .collect();
        engine.ingest(inputs, &mut env, &mut Txn::default()).unwrap();
        let mut items: Vec<MemoryItem> = engine.items().map(std::borrow::Cow::into_owned).collect();
        items.sort_by(|a, b| a.id.cmp(&b.id));
        items
    }

    fn item(item: &MemoryItem) -> Stored {
        Stored::Item(Box::new(item.clone()))
    }

    /// Memories take the doc numbers they are given, whatever order they
    /// come in; embeddings go in once every memory is in, whichever came
    /// first.
    #[test]
    fn memories_take_the_docs_they_are_given_in_any_order() {
        let items = memories();
        let mut loader = Loader::new(Config::default(), Some("m".into()), 3, 1).unwrap();
        let vector = Int8Vector::quantize(&[0.5, -0.25, 1.0]);
        loader
            .put(&format!("vec/{}", items[1].id), Stored::Vector(vector), None, None)
            .unwrap();
        for at in [2, 0, 1] {
            let key = format!("item/{}", items[at].id);
            loader.put(&key, item(&items[at]), None, Some(at as u32)).unwrap();
        }
        let engine = loader.finish().unwrap();
        for (at, item) in items.iter().enumerate() {
            assert_eq!(engine.entries[&item.id].doc, at as u32, "{}", item.id);
        }
        assert!(engine.free_docs.is_empty());
        assert!(engine.embedding(&items[1].id).is_some());
        assert_eq!(engine.vector_docs.len(), 1);
        assert_eq!(engine.by_created.len(), 3, "the time keys are built");
    }

    /// A memory given twice, a doc another memory holds, an embedding
    /// without its memory: `CORRUPT`, never a panic.
    #[test]
    fn a_memory_twice_a_doc_taken_or_an_embedding_alone_is_corrupt() {
        let items = memories();
        let key = format!("item/{}", items[0].id);
        let mut loader = Loader::new(Config::default(), None, 2, 0).unwrap();
        loader.put(&key, item(&items[0]), None, Some(0)).unwrap();
        let twice = loader.put(&key, item(&items[0]), None, Some(1)).unwrap_err();
        assert_eq!(twice.code(), "CORRUPT");
        let other = format!("item/{}", items[1].id);
        for doc in [0, 2] {
            let taken = loader.put(&other, item(&items[1]), None, Some(doc)).unwrap_err();
            assert_eq!(taken.code(), "CORRUPT", "doc {doc}");
        }
        let vector = Int8Vector::quantize(&[1.0, 0.0]);
        let alone = format!("vec/{}", items[2].id);
        loader.put(&alone, Stored::Vector(vector), None, None).unwrap();
        let err = loader.finish().err().unwrap();
        assert_eq!(err.to_string(), no_memory(&items[2].id).to_string());
    }

    /// Memories of three tenants (a tenant is a user's workspace), with
    /// threads that cross tenants, follow themselves or follow a memory
    /// without an embedding, some soft-deleted; and embeddings for most of
    /// them (one all zeros, which the index refuses), by memory id.
    fn store() -> (Vec<MemoryItem>, Vec<(String, Int8Vector)>) {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let inputs = (0..60)
            .map(|n| {
                let user = ["alice", "bob", "carol"][n % 3];
                MemoryInput::new(format!("note {n} about topic {}", n * 7 % 11), Scope::workspace(user, "home"))
            })
            .collect();
        engine.ingest(inputs, &mut env, &mut Txn::default()).unwrap();
        let mut items: Vec<MemoryItem> = engine.items().map(std::borrow::Cow::into_owned).collect();
        items.sort_by(|a, b| a.id.cmp(&b.id));
        let mut rng = Rng(7);
        let ids: Vec<String> = items.iter().map(|item| item.id.clone()).collect();
        for (n, item) in items.iter_mut().enumerate() {
            item.follows = match rng.next_u64() % 5 {
                0 => None,
                1 => Some(ids[n].clone()),
                _ => Some(ids[rng.next_u64() as usize % ids.len()].clone()),
            };
            if n % 9 == 4 {
                item.deleted_at = Some(Timestamp(1_700_000_000_001));
            }
        }
        let mut vectors = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            if n % 7 == 3 {
                continue;
            }
            let vector: Vec<f32> = if n == 10 {
                vec![0.0; 8]
            } else {
                (0..8).map(|_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).collect()
            };
            vectors.push((id.clone(), Int8Vector::quantize(&vector)));
        }
        (items, vectors)
    }

    /// Loads the records `order` names (`Ok` a memory, `Err` an embedding,
    /// by index) into a loader of `limit` rows loadable as they come.
    fn load(items: &[MemoryItem], vectors: &[(String, Int8Vector)], order: &[std::result::Result<usize, usize>], limit: usize) -> Engine {
        let mut loader = Loader::new(Config::default(), Some("m".into()), items.len(), vectors.len()).unwrap();
        loader.limit = limit;
        loader.direct = limit > 0;
        for record in order {
            match *record {
                Ok(at) => {
                    let key = format!("item/{}", items[at].id);
                    loader.put(&key, item(&items[at]), None, Some(at as u32)).unwrap();
                }
                Err(at) => {
                    let (id, vector) = &vectors[at];
                    loader.put(&format!("vec/{id}"), Stored::Vector(vector.clone()), None, None).unwrap();
                }
            }
        }
        loader.finish().unwrap()
    }

    /// The vector state of an engine as it answers: which index holds each
    /// embedding, each row's embedding and predecessor, the embeddings held
    /// outside the indexes, and the results (scores to the bit) of queries.
    fn vector_state(engine: &Engine) -> String {
        let mut out = String::new();
        let held: BTreeMap<u32, &Arc<Tenant>> = engine.vector_docs.iter().collect();
        for (doc, tenant) in &held {
            let parts = engine.vectors[*tenant].context_parts(*doc);
            out += &format!("{doc} {tenant:?} {parts:?}\n");
        }
        let aside: BTreeMap<u32, &StoredVector> = engine.embeddings.iter().map(|(d, v)| (*d, v)).collect();
        out += &format!("aside {aside:?}\n");
        let tenants: BTreeMap<&Arc<Tenant>, &VectorIndex> = engine.vectors.iter().collect();
        let mut rng = Rng(11);
        for (tenant, index) in tenants {
            out += &format!("{tenant:?} {}\n", index.len());
            for _ in 0..5 {
                let query: Vec<f32> = (0..8).map(|_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).collect();
                let found: Vec<(u32, u32)> = index.search(&query, 50, &|_| true).into_iter().map(|(d, s)| (d, s.to_bits())).collect();
                out += &format!("{found:?}\n");
            }
        }
        out
    }

    /// Embeddings loaded as they come, whether before or after their
    /// memories, spread over segments or shuffled, or taken back out when
    /// more come than can load as they come, leave the indexes as
    /// `set_vector` one by one in key order does (the loader holding every
    /// embedding until the end, as before).
    #[test]
    fn embeddings_loaded_as_they_come_end_as_set_vector_in_key_order() {
        let (items, vectors) = store();
        let key_order: Vec<_> = (0..items.len()).map(Ok).chain((0..vectors.len()).map(Err)).collect();
        let oracle = vector_state(&load(&items, &vectors, &key_order, 0));
        assert!(oracle.matches("Some((").count() > 5, "rows linked to their predecessors:\n{oracle}");
        assert!(oracle.contains("Tenant") && !oracle.contains("aside {}"), "{oracle}");
        // Segments of a third of the records each, items before vecs in
        // each: many embeddings come before their memory.
        let mut segmented = Vec::new();
        for part in 0..3usize {
            segmented.extend((0..items.len()).filter(|n| (n * 7 + part) % 3 == 0).map(Ok));
            segmented.extend((0..vectors.len()).filter(|n| (n * 5 + part) % 3 == 1).map(Err));
        }
        assert_eq!(segmented.len(), key_order.len());
        let mut shuffled = key_order.clone();
        let mut rng = Rng(3);
        for n in (1..shuffled.len()).rev() {
            shuffled.swap(n, rng.next_u64() as usize % (n + 1));
        }
        let vectors_first: Vec<_> = (0..vectors.len()).map(Err).chain((0..items.len()).map(Ok)).collect();
        let limit = VectorParams::default().segment_threshold;
        for (name, order, limit) in [
            ("key order", &key_order, limit),
            ("segments", &segmented, limit),
            ("shuffled", &shuffled, limit),
            ("vectors first", &vectors_first, limit),
            ("taken back", &segmented, vectors.len() / 2),
        ] {
            assert_eq!(vector_state(&load(&items, &vectors, order, limit)), oracle, "{name}");
        }
    }
}
