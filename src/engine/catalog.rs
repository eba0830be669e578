//! The catalog: every memory, the doc number it holds in the indexes, and
//! the secondary keys over the memories (content hash and voice, caller key, creation
//! time, scope and time, expiry time, followers, pinned ids, the shared scopes, the per-tenant
//! lexical indexes, each file's chunks, each scope's summary and the
//! summaries of each source). `Engine::set` is the only code that
//! changes a memory, and it moves every key with it, so a new key is added
//! there and stays in step by construction.

use std::borrow::{Borrow, Cow};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::duplicate::{ContentKey, DuplicateKey, Said};
use super::followers::Followed;
use super::held::HeldMemory;
use super::txn::{Txn, Undo};
use super::Engine;
use crate::codec;
use crate::env::{parse_ulid, Environment};
use crate::index::bm25::TermCounts;
use crate::index::Bm25Index;
use crate::item::{validate_item_id, Kind, MemoryItem, Role, Scope, SourceKind, Status, Tenant, Timestamp};
use crate::metadata::Metadata;
use crate::policy::Policed;
use crate::rank::Rankable;
use crate::text;

/// A memory's id as the catalog's keys hold it: one allocation shared by
/// every map and set that names the memory (`entries`, `doc_owner`,
/// `by_key`, `by_created`, `by_scope_time`), where each used to hold a
/// copy of its own.
pub(super) type Id = Arc<str>;

/// The engine's hash maps and sets (foldhash: see `crate::fast_hash`).
pub(super) use crate::fast_hash::{FastMap, FastSet};

/// A tenant as the key of a lookup in the engine's maps keyed by
/// [`Tenant`] (the lexical indexes), borrowed from a scope or a pair of
/// strings: a lookup does not copy the tenant's two strings, which every
/// memory loaded did.
pub(super) trait TenantKey {
    /// The user and the workspace.
    fn parts(&self) -> (&str, &str);
}

impl TenantKey for Tenant {
    fn parts(&self) -> (&str, &str) {
        (&self.user_id, &self.workspace_id)
    }
}

impl TenantKey for Scope {
    fn parts(&self) -> (&str, &str) {
        (&self.user_id, &self.workspace_id)
    }
}

impl TenantKey for (&str, &str) {
    fn parts(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn TenantKey + 'a> for Tenant {
    fn borrow(&self) -> &(dyn TenantKey + 'a) {
        self
    }
}

/// Hashes as [`Tenant`]'s derived `Hash` does (its two strings in order),
/// which a `Borrow` lookup requires.
impl Hash for dyn TenantKey + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (user_id, workspace_id) = self.parts();
        user_id.hash(state);
        workspace_id.hash(state);
    }
}

impl PartialEq for dyn TenantKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn TenantKey + '_ {}

/// The keys of `by_created` and `by_scope_time` held back while records
/// are applied ([`Engine::defer_time_keys`]).
#[derive(Default)]
pub(super) struct TimeKeys {
    created: Vec<(i64, Id)>,
    scope_time: Vec<(Arc<Scope>, i64, Id)>,
}

/// Every memory's entry, by its id: the shared copy (`Id`), which also
/// numbers it in `doc_owner`, rather than a `String` copy of its own.
/// Lookups take any string (`&str`, `&String`, `&Id`), so the engine's
/// ids find it as they are. An `Entry` is small (its memory is boxed), so
/// the table holds it inline.
#[derive(Default)]
pub(super) struct Entries(FastMap<Id, Entry>);

impl Entries {
    pub(super) fn get(&self, id: impl AsRef<str>) -> Option<&Entry> {
        self.0.get(id.as_ref())
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Entry> {
        self.0.get_mut(id)
    }

    pub(super) fn contains_key(&self, id: impl AsRef<str>) -> bool {
        self.0.contains_key(id.as_ref())
    }

    /// Every entry, in no order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Entry> {
        self.0.values()
    }

    /// Every memory's id, in no order.
    pub(super) fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(|id| &**id)
    }

    /// Every memory's id with its entry, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.0.iter().map(|(id, entry)| (&**id, entry))
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    #[cfg(any(test, feature = "testing"))]
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    /// Takes out `id`'s entry with its key, the id's shared copy.
    fn remove_entry(&mut self, id: &str) -> Option<(Id, Entry)> {
        self.0.remove_entry(id)
    }

    fn insert(&mut self, id: Id, entry: Entry) {
        self.0.insert(id, entry);
    }
}

/// The entry of a memory the test knows is held.
#[cfg(test)]
impl<Q: AsRef<str> + ?Sized> std::ops::Index<&Q> for Entries {
    type Output = Entry;

    fn index(&self, id: &Q) -> &Entry {
        self.get(id).expect("a memory the catalog holds")
    }
}

/// A memory as the catalog holds it: decoded (every memory a write sets),
/// or held undecoded as a store gave it ([`HeldMemory`]: a row of its
/// segment's catalog part), decoded for each reader of the whole memory
/// and never kept ([`Entry::item`]). Two
/// pointers at most, so that an entry stays small in the `entries` table,
/// whose slots are about half empty after it doubles.
pub(super) enum Held {
    Decoded(Box<MemoryItem>),
    Row(Box<dyn HeldMemory>),
}

impl Held {
    pub(super) fn item(item: MemoryItem) -> Held {
        Held::Decoded(Box::new(item))
    }

    pub(super) fn row(row: Box<dyn HeldMemory>) -> Held {
        Held::Row(row)
    }

    /// The memory's id as bytes and whether it is soft-deleted, read
    /// without decoding a held row (nor reading its id as UTF-8 again).
    pub(super) fn id_bytes_and_deleted(&self) -> (&[u8], bool) {
        match self {
            Held::Decoded(item) => (item.id.as_bytes(), item.is_deleted()),
            Held::Row(row) => (row.id_bytes(), row.is_deleted()),
        }
    }
}

/// One memory and its doc number in the lexical and vector indexes.
pub(super) struct Entry {
    memory: Held,
    pub(super) doc: u32,
    /// Bytes of the memory's record as stored (`codec::item_record_len`),
    /// counted by the first `stats` that reads the entry and kept, so a
    /// later `stats` does not read every memory's strings again (cache
    /// misses spread over the whole heap); 0 until then, which no record
    /// is. Counted lazily because an open that only answers would count
    /// every memory for nothing. Only `set` makes an entry, and a change
    /// makes a new one, so a count kept is the record's length. Atomic
    /// only so that `stats` can keep it through `&self`.
    record_len: AtomicU32,
}

impl Entry {
    fn new(memory: Held, doc: u32) -> Entry {
        Entry {
            memory,
            doc,
            record_len: AtomicU32::new(0),
        }
    }

    /// The whole memory: borrowed when the entry holds it decoded, else
    /// decoded from its row for this reader alone. Nothing decoded is
    /// kept: a reader that goes over many memories (a query's candidates,
    /// `list`, `export`, a purge) would otherwise leave each of them
    /// decoded beside its row for the life of the engine, and linear
    /// memory never shrinks (`docs/speed.md`, "Heap per memory").
    /// Readers that need only the fields below read them through their
    /// own methods, which read a held row without decoding it.
    pub(super) fn item(&self) -> Cow<'_, MemoryItem> {
        match &self.memory {
            Held::Decoded(item) => Cow::Borrowed(item),
            Held::Row(row) => Cow::Owned(row.decode()),
        }
    }

    /// The memory, when the entry holds it decoded.
    pub(super) fn decoded(&self) -> Option<&MemoryItem> {
        match &self.memory {
            Held::Decoded(item) => Some(item),
            Held::Row(_) => None,
        }
    }

    /// The memory, taken out of its entry.
    fn into_item(self) -> MemoryItem {
        match self.memory {
            Held::Decoded(item) => *item,
            Held::Row(row) => row.decode(),
        }
    }

    /// True when the memory is held undecoded.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn is_held(&self) -> bool {
        self.decoded().is_none()
    }

    /// Reads a field of the memory: from the decoded memory, or from the
    /// held row without decoding it.
    fn field<'a, T>(&'a self, decoded: impl FnOnce(&'a MemoryItem) -> T, held: impl FnOnce(&'a dyn HeldMemory) -> T) -> T {
        match &self.memory {
            Held::Decoded(item) => decoded(item),
            Held::Row(row) => held(&**row),
        }
    }

    /// The memory's scope.
    pub(super) fn scope(&self) -> &Scope {
        self.field(|item| &item.scope, |row| row.scope())
    }

    /// The memory's text.
    pub(super) fn text(&self) -> &str {
        self.field(|item| item.text.as_str(), |row| row.text())
    }

    /// The name of who said it.
    pub(super) fn speaker(&self) -> Option<&str> {
        self.field(|item| item.speaker.as_deref(), |row| row.speaker())
    }

    /// The role it was said in.
    pub(super) fn role(&self) -> Option<Role> {
        self.field(|item| item.role, |row| row.role())
    }

    /// True when the memory is soft-deleted.
    pub(super) fn is_deleted(&self) -> bool {
        self.field(MemoryItem::is_deleted, |row| row.is_deleted())
    }

    /// True when a newer memory took the memory's place (never a held
    /// row: that is a field of a row's rest).
    pub(super) fn is_superseded(&self) -> bool {
        self.field(MemoryItem::is_superseded, |_| false)
    }

    /// True for a chunk of a file (never a held row).
    pub(super) fn is_file_chunk(&self) -> bool {
        self.field(MemoryItem::is_file_chunk, |_| false)
    }

    /// The memories a summary summarizes (none for a held row).
    pub(super) fn summary_of(&self) -> &[String] {
        self.field(|item| item.summary_of.as_slice(), |_| &[])
    }

    /// The caller's key (none for a held row).
    pub(super) fn key(&self) -> Option<&str> {
        self.field(|item| item.key.as_deref(), |_| None)
    }

    /// When it was made.
    pub(super) fn created_at(&self) -> Timestamp {
        self.field(|item| item.created_at, |row| row.created_at())
    }

    /// The memory's kind.
    pub(super) fn kind(&self) -> Kind {
        self.field(|item| item.kind, |row| row.kind())
    }

    /// The memory's review status.
    pub(super) fn status(&self) -> Status {
        self.field(|item| item.status, |row| row.status())
    }

    /// True when the memory is pinned.
    pub(super) fn pinned(&self) -> bool {
        self.field(|item| item.pinned, |row| row.pinned())
    }

    /// The memory's metadata (none for a held row: a field of the rest).
    pub(super) fn metadata(&self) -> Option<&Metadata> {
        self.field(|item| item.metadata.as_ref(), |_| None)
    }

    /// The id of the memory this one follows in its conversation.
    pub(super) fn follows(&self) -> Option<&str> {
        self.field(|item| item.follows.as_deref(), |row| row.follows())
    }

    /// The key of its content hash among the duplicate keys.
    fn content_key(&self) -> ContentKey {
        match &self.memory {
            Held::Decoded(item) => ContentKey::of(&item.content_hash),
            Held::Row(row) => match row.content_hash() {
                Ok(bytes) => ContentKey::Sha256(bytes),
                Err(text) => ContentKey::of(text),
            },
        }
    }

    /// Bytes of the memory's JSON (`serde_json::to_vec` of the memory),
    /// counted without decoding a held row.
    pub(super) fn json_len(&self) -> usize {
        match &self.memory {
            Held::Decoded(item) => crate::json_len::item_json_len(item),
            Held::Row(row) => row.json_len(),
        }
    }

    /// [`MemoryItem::uses_v5_fields`], read without decoding a held row
    /// (whose fields of the rest are unset).
    pub(super) fn uses_v5_fields(&self) -> bool {
        self.field(MemoryItem::uses_v5_fields, |row| row.role().is_some() || row.speaker().is_some())
    }

    /// The length of the memory's record as stored: counted once, then
    /// kept (a length beyond `u32` is counted each time).
    pub(super) fn record_len(&self) -> usize {
        match self.record_len.load(Ordering::Relaxed) {
            0 => {
                // A held row is counted from its row, not decoded: `stats`
                // reads every memory, which would otherwise all be decoded.
                let len = codec::json_record_len(self.json_len());
                if let Ok(kept) = u32::try_from(len) {
                    self.record_len.store(kept, Ordering::Relaxed);
                }
                len
            }
            kept => kept as usize,
        }
    }

    /// The length kept, if counted yet.
    #[cfg(test)]
    fn kept_record_len(&self) -> Option<usize> {
        match self.record_len.load(Ordering::Relaxed) {
            0 => None,
            kept => Some(kept as usize),
        }
    }
}

/// Ranking's reads of an entry: a held row's without decoding it.
impl Rankable for Entry {
    fn id(&self) -> &str {
        self.field(Rankable::id, |row| row.id())
    }
    fn text(&self) -> &str {
        Entry::text(self)
    }
    fn follows(&self) -> Option<&str> {
        Entry::follows(self)
    }
    fn speaker(&self) -> Option<&str> {
        Entry::speaker(self)
    }
    fn source_kind(&self) -> SourceKind {
        self.field(Rankable::source_kind, |row| row.source_kind())
    }
}

/// The policy's reads of an entry: a held row's without decoding it.
impl Policed for Entry {
    fn scope(&self) -> &Scope {
        Entry::scope(self)
    }
    fn is_deleted(&self) -> bool {
        Entry::is_deleted(self)
    }
    fn is_superseded(&self) -> bool {
        Entry::is_superseded(self)
    }
    fn status(&self) -> Status {
        Entry::status(self)
    }
    fn is_private(&self) -> bool {
        self.field(Policed::is_private, |row| row.is_private())
    }
    fn has_pii(&self) -> bool {
        self.field(Policed::has_pii, |row| row.has_pii())
    }
    fn retention_days(&self) -> Option<u32> {
        self.field(Policed::retention_days, |row| row.retention_days())
    }
    fn is_file_chunk(&self) -> bool {
        Entry::is_file_chunk(self)
    }
    fn kind(&self) -> Kind {
        Entry::kind(self)
    }
    fn role(&self) -> Option<Role> {
        Entry::role(self)
    }
    fn has_any_tag(&self, tags: &[String]) -> bool {
        self.field(|item| item.has_any_tag(tags), |row| row.has_any_tag(tags))
    }
    fn created_at(&self) -> Timestamp {
        Entry::created_at(self)
    }
    fn metadata(&self) -> Option<&Metadata> {
        Entry::metadata(self)
    }
}

/// The entry of the memory numbered `doc` (`owners`), if any.
fn entry_at<'a>(entries: &'a Entries, owners: &[Option<Id>], doc: u32) -> Option<&'a Entry> {
    let id = owners.get(doc as usize)?.as_ref()?;
    entries.get(id)
}

/// Whether the memory numbered `doc` has `key`: read from its entry, a
/// held row undecoded. A doc with no memory has none.
fn has_key(entries: &Entries, owners: &[Option<Id>], doc: u32, key: &DuplicateKey<'_>) -> bool {
    entry_at(entries, owners, doc)
        .is_some_and(|e| key.names(e.scope(), Said::of(e.role(), e.speaker()), || e.content_key()))
}

impl Engine {
    /// Replaces (or removes, with `None`) the item stored under `id`, keeping
    /// every index in step. Returns the previous item.
    pub(super) fn set(&mut self, id: &str, new: Option<MemoryItem>) -> Option<MemoryItem> {
        self.set_counted(id, new.map(Held::item), None)
    }

    /// [`Engine::set`] given the new memory as decoded or held, and its
    /// terms as counted when it was stored (a segment's lexical part), so
    /// its text is not analysed again; `None` analyses it.
    pub(super) fn set_counted(
        &mut self,
        id: &str,
        new: Option<Held>,
        counts: Option<&TermCounts>,
    ) -> Option<MemoryItem> {
        // The id's shared copy: the old entry's key, else a new one.
        let (handle, old) = match self.entries.remove_entry(id) {
            Some((key, entry)) => (key, Some(entry)),
            None => (Id::from(id), None),
        };
        // The new entry, its doc set below: its fields are read through
        // it, whether it is decoded or held.
        let new = new.map(|memory| Entry::new(memory, 0));
        let mut doc = None;
        if let Some(old_entry) = &old {
            let d = old_entry.doc;
            // A change of a memory reads it whole (a held row is decoded).
            let item = old_entry.item();
            let key = DuplicateKey::of(self.scope_key(&item.scope), &item);
            self.by_hash.remove(self.by_hash.hash(&key), d);
            self.by_created.remove((item.created_at.0, handle.clone()));
            // Judged only once the index is built: an open sets every
            // memory, and most opens never purge.
            if let Some(index) = &mut self.by_expiry {
                if let Some(end) = self.config.retention.expires_at(&item) {
                    index.remove(&(end.0, d));
                }
            }
            let scope = key.into_scope();
            self.by_scope_time
                .remove((scope.clone(), item.created_at.0, handle.clone()));
            if let Some(k) = &item.key {
                let key = (scope.clone(), k.clone());
                if self.by_key.get(&key).map(|h| &**h) == Some(id) {
                    self.by_key.remove(&key);
                }
            }
            if !item.summary_of.is_empty() {
                if self.by_summary.get(&scope).map(String::as_str) == Some(id) {
                    self.by_summary.remove(&scope);
                }
                for source in &item.summary_of {
                    if let Some(list) = self.summaries.get_mut(source) {
                        list.retain(|s| s != id);
                        if list.is_empty() {
                            self.summaries.remove(source);
                        }
                    }
                }
            }
            self.scopes.release(scope);
            if let Some(prev) = &item.follows {
                let followed = self.followed(prev, id, d);
                self.followers.remove(followed, d);
            }
            self.pinned.remove(id);
            self.index_file_chunk(&item, false);
            let same_context = new.as_ref().is_some_and(|n| {
                n.scope().parts() == item.scope.parts()
                    && n.is_deleted() == item.is_deleted()
                    && n.follows() == item.follows.as_deref()
            });
            if !same_context {
                self.unindex_vector(d);
            }
            // A memory is indexed by its text and its speaker's name
            // (`text::said_terms`).
            let unchanged_text = new.as_ref().is_some_and(|n| {
                n.text() == item.text
                    && n.speaker() == item.speaker.as_deref()
                    && n.scope().parts() == item.scope.parts()
                    && n.is_deleted() == item.is_deleted()
            });
            if !item.is_deleted() && !unchanged_text {
                let tenant: &dyn TenantKey = &item.scope;
                if let Some(ix) = self.lexical.get_mut(tenant) {
                    ix.remove(d);
                    if ix.doc_count() == 0 {
                        self.lexical.remove(tenant);
                    }
                }
            }
            doc = Some((d, unchanged_text));
        }
        match new {
            Some(mut entry) => {
                if self.newest_ulid.as_deref() < Some(id) && parse_ulid(id).is_some() {
                    self.newest_ulid = Some(handle.clone());
                }
                let (d, already_indexed) = match doc {
                    Some(state) => state,
                    None => {
                        let d = self.allocate_doc(&handle);
                        self.followers.arrive(id, d);
                        (d, false)
                    }
                };
                entry.doc = d;
                if !entry.is_deleted() && !already_indexed {
                    // One lookup when the tenant has an index (all but its
                    // first memory).
                    let tenant: &dyn TenantKey = entry.scope();
                    let index = match self.lexical.get_mut(tenant) {
                        Some(index) => index,
                        None => self
                            .lexical
                            .entry(entry.scope().tenant())
                            .or_insert_with(|| Bm25Index::new(self.config.bm25)),
                    };
                    match counts {
                        Some(counts) => index.insert_counted(d, counts),
                        None => index.insert(d, &text::said_terms(entry.text(), entry.speaker())),
                    }
                }
                // Chunks belong to their file: they take no part in
                // duplicate detection or conversation threads.
                if entry.is_file_chunk() {
                    self.index_file_chunk(&entry.item(), true);
                } else if !entry.summary_of().is_empty() {
                    // A summary is found by its scope and its sources,
                    // never by text, and joins no conversation thread. Its
                    // sources find it even if it is superseded, so that
                    // erasing one of them still erases it.
                    if !entry.is_superseded() {
                        let scope = self.scopes.share(entry.scope());
                        self.by_summary.insert(scope, id.to_string());
                    }
                    for source in entry.summary_of() {
                        self.summaries
                            .entry(source.clone())
                            .or_default()
                            .push(id.to_string());
                    }
                } else if entry.is_superseded() {
                    // A superseded memory gave its key to its successor and
                    // takes no part in duplicates or threads: the same text
                    // said again is a new fact, not a merge into an old one.
                } else if let Some(k) = entry.key() {
                    // Keyed memories are the caller's records: found by
                    // key, never by text, and in no conversation thread.
                    let scope = self.scopes.share(entry.scope());
                    self.by_key.insert((scope, k.to_string()), handle.clone());
                } else {
                    let scope = self.scopes.share(entry.scope());
                    let voice = Said::of(entry.role(), entry.speaker());
                    let key = DuplicateKey::with_content(scope.clone(), voice, entry.content_key());
                    let (entries, owners) = (&self.entries, &self.doc_owner);
                    let is = |doc| has_key(entries, owners, doc, &key);
                    self.by_hash.insert(self.by_hash.hash(&key), d, is);
                    let key = (scope, entry.created_at().0, handle.clone());
                    match &mut self.deferred_times {
                        Some(keys) => keys.scope_time.push(key),
                        None => {
                            self.by_scope_time.insert(key);
                        }
                    }
                }
                let key = (entry.created_at().0, handle.clone());
                match &mut self.deferred_times {
                    Some(keys) => keys.created.push(key),
                    None => {
                        self.by_created.insert(key);
                    }
                }
                if let Some(index) = &mut self.by_expiry {
                    if let Some(end) = self.config.retention.expires_at(&entry.item()) {
                        index.insert((end.0, d));
                    }
                }
                if let Some(prev) = entry.follows() {
                    let followed = self.followed(prev, id, d);
                    self.followers.add(followed, d, || Id::from(prev));
                }
                if entry.pinned() {
                    self.pinned.insert(id.to_string());
                }
                self.entries.insert(handle, entry);
                self.index_vector(id);
            }
            None => {
                if let Some((d, _)) = doc {
                    self.forget_vector(d);
                    self.followers.leave(handle, d);
                    self.doc_owner[d as usize] = None;
                    self.free_docs.push(d);
                }
            }
        }
        old.map(Entry::into_item)
    }

    /// Makes room for `items` more memories in the catalog's maps, which
    /// would otherwise double (and rehash every key) about
    /// `log2(items)` times while a store's records are applied; with
    /// [`Engine::defer_time_keys`], its held keys too.
    pub(super) fn reserve_items(&mut self, items: usize) {
        self.entries.reserve(items);
        let new_docs = items.saturating_sub(self.free_docs.len());
        self.doc_owner.reserve(new_docs);
        self.followers.reserve(self.doc_owner.len() + new_docs);
        // An upper bound: chunks, keyed and superseded memories and
        // summaries take no duplicate key.
        self.by_hash.reserve(items);
        if let Some(keys) = &mut self.deferred_times {
            keys.created.reserve(items);
            keys.scope_time.reserve(items);
        }
    }

    /// Holds the keys of `by_created` and `by_scope_time` that
    /// [`Engine::set`] adds until [`Engine::build_time_keys`], which builds
    /// them into the trees at once: while a store opens, the trees are
    /// built from sorted runs instead of 100,000 inserts each, which compared
    /// ids at every level. Meanwhile nothing may read the two trees, and
    /// no memory may be set twice (`Engine::apply_counted`'s keys are
    /// distinct): a removal finds only the keys the trees already hold.
    pub(super) fn defer_time_keys(&mut self) {
        self.deferred_times = Some(TimeKeys::default());
    }

    /// Builds the keys [`Engine::defer_time_keys`] held into their trees.
    /// `by_scope_time` first, whose keys are the larger (a scope besides
    /// the time and the id): building a tree sorts its keys with scratch
    /// room the size of the list, which after an open's decode no hole
    /// holds; the smaller list's scratch then fits where the larger one's
    /// was freed instead of raising the wasm memory's mark again
    /// (`docs/speed.md`, "Heap per memory").
    pub(super) fn build_time_keys(&mut self) {
        if let Some(keys) = self.deferred_times.take() {
            self.by_scope_time.extend_new(keys.scope_time);
            self.by_created.extend_new(keys.created);
        }
    }

    /// `scope` as a key of `by_hash`, `by_key`, `by_scope_time` or `by_summary`: the shared copy, or
    /// a new one when no key holds it (so the lookup finds nothing).
    pub(super) fn scope_key(&self, scope: &Scope) -> Arc<Scope> {
        self.scopes
            .get(scope)
            .cloned()
            .unwrap_or_else(|| Arc::new(scope.clone()))
    }

    /// The memory `prev` as the followers know it: by its doc when the
    /// catalog holds it, `doc` when it is `id` (the memory `set` changes,
    /// out of `entries` meanwhile), else by its id.
    fn followed<'a>(&self, prev: &'a str, id: &str, doc: u32) -> Followed<'a> {
        if prev == id {
            return Followed::Doc(doc);
        }
        self.as_followed(prev)
    }

    /// Memory `id` as the followers know it: by its doc when the catalog
    /// holds it, else by its id.
    fn as_followed<'a>(&self, id: &'a str) -> Followed<'a> {
        match self.entries.get(id) {
            Some(entry) => Followed::Doc(entry.doc),
            None => Followed::Absent(id),
        }
    }

    /// The docs of the memories that follow memory `id` (`follows` it), in
    /// the order they were added.
    pub(super) fn follower_docs(&self, id: &str) -> impl Iterator<Item = u32> + '_ {
        self.followers.of(self.as_followed(id))
    }

    fn allocate_doc(&mut self, id: &Id) -> u32 {
        match self.free_docs.pop() {
            Some(d) => {
                self.doc_owner[d as usize] = Some(id.clone());
                d
            }
            None => {
                self.doc_owner.push(Some(id.clone()));
                (self.doc_owner.len() - 1) as u32
            }
        }
    }

    /// The id of the memory holding `key` among the exact duplicates.
    pub(super) fn duplicate_of(&self, key: &DuplicateKey<'_>) -> Option<&Id> {
        let (entries, owners) = (&self.entries, &self.doc_owner);
        let doc = self
            .by_hash
            .find(self.by_hash.hash(key), |doc| has_key(entries, owners, doc, key))?;
        owners.get(doc as usize)?.as_ref()
    }

    pub(super) fn entry_of(&self, doc: u32) -> Option<&Entry> {
        entry_at(&self.entries, &self.doc_owner, doc)
    }

    /// Holds memory `id` as `row`, its row in a segment a commit has just
    /// stored. A write leaves its memory decoded, and once a commit has
    /// stored it the segment's row takes its place, so an instance that
    /// keeps writing (a usage mark on every hit of every query) does not
    /// keep a decoded copy of every memory it ever wrote. A memory held as
    /// the row of an older segment (one a merge has just rewritten) moves
    /// to the new one too: a row keeps its whole part alive, the dead
    /// rows in it included, so rows left in the parts of rewritten
    /// segments kept every part ever read for as long as one of its
    /// memories lived, and linear memory grew with every usage mark
    /// (`docs/speed.md`, "Fourteenth session"). The row must give back the
    /// memory the engine holds: the commit's plan wrote it from that
    /// memory (a segment's writer makes a row only of a memory it gives
    /// back exactly), and nothing changed the engine since.
    pub(crate) fn hold(&mut self, id: &str, row: Box<dyn HeldMemory>) {
        if let Some(entry) = self.entries.get_mut(id) {
            debug_assert!(*entry.item() == row.decode(), "the row of `{id}` is its memory");
            entry.memory = Held::Row(row);
        }
    }

    /// The memory `id` when the engine holds it as its row, undecoded: a
    /// merge of segments writes such a row again from its fields, without
    /// decoding the memory.
    pub(crate) fn held_row(&self, id: &str) -> Option<&dyn HeldMemory> {
        match &self.entries.get(id)?.memory {
            Held::Row(row) => Some(&**row),
            Held::Decoded(_) => None,
        }
    }

    /// The id of the memory numbered `doc`.
    pub(super) fn id_of(&self, doc: u32) -> Option<&str> {
        self.doc_owner.get(doc as usize)?.as_deref()
    }

    pub(super) fn fresh_id(&self, env: &mut dyn Environment) -> String {
        loop {
            let id = env.new_id(self.newest_ulid.as_deref());
            if validate_item_id(&id).is_ok() && !self.entries.contains_key(&id) {
                return id;
            }
        }
    }

    /// The distinct terms of memory `id` with their frequencies, in the
    /// order of the lexical index's ids, as it holds them; `None` when it holds no such memory
    /// (absent, or soft-deleted): what a segment's lexical part stores.
    pub(crate) fn term_counts(&self, id: &str) -> Option<Vec<(&str, u32)>> {
        let entry = self.entries.get(id)?;
        self.lexical
            .get(entry.scope() as &dyn TenantKey)?
            .doc_terms(entry.doc)
    }

    /// [`Engine::set`] that records the undo step.
    /// Summaries listing the memory follow it ([`Engine::follow_sources`]).
    pub(super) fn write(&mut self, txn: &mut Txn, id: &str, new: Option<MemoryItem>) {
        self.write_counted(txn, id, new, None);
    }

    /// [`Engine::write`] given the new item's terms as counted already
    /// (see [`Engine::set_counted`]).
    pub(super) fn write_counted(
        &mut self,
        txn: &mut Txn,
        id: &str,
        new: Option<MemoryItem>,
        counts: Option<&TermCounts>,
    ) {
        let previous = self.set_counted(id, new.map(Held::item), counts);
        let source = previous
            .as_ref()
            .filter(|_| self.summaries.contains_key(id))
            .cloned();
        txn.undo
            .push(Undo::Item(id.to_string(), previous.map(Box::new)));
        if let Some(before) = source {
            self.follow_sources(id, &before, txn);
        }
    }
}

#[cfg(test)]
mod tests;
