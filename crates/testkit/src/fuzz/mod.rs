//! The checks of memtide's fuzz targets, one module per target.
//!
//! Each module has `pub fn check(data: &[u8])`: it feeds `data` to one public
//! entry point of memtide and panics when an invariant breaks (a panic inside
//! memtide is a failure too). The same functions serve two callers:
//!
//! * the cargo-fuzz binaries `fuzz/fuzz_targets/<name>.rs` (nightly,
//!   libFuzzer);
//! * memtide's stable test `fuzz_regressions`, which replays every file of
//!   `fuzz/corpus/<name>/` and `fuzz/regressions/<name>/` through
//!   [`TARGETS`].
//!
//! Adding a target `foo`: write `foo.rs` here with its `check`, add `foo`
//! to the `targets!` line below, and run `cargo fuzz add foo` in `fuzz/`
//! (which writes `fuzz_targets/foo.rs` and its `[[bin]]`; make the file the
//! two lines the others have).

use std::sync::OnceLock;

use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{
    Kind, Memory, MemoryInput, MemoryPatch, Privacy, Scope, Source, SourceKind, Status, Timestamp,
};

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(pub mod $name;)*

        /// Every target: its name (the binary `fuzz_targets/<name>.rs` and
        /// the folders `corpus/<name>/`, `regressions/<name>/`) and its check.
        pub const TARGETS: &[(&str, fn(&[u8]))] = &[$((stringify!($name), $name::check)),*];
    };
}

targets!(
    codec,
    layout,
    lexical,
    catalog,
    import,
    fs_log,
    kv_journal,
    wordpiece,
    text,
    query,
    markdown,
    memory_path,
    memory_tool,
    hot_file,
    operations,
);

/// The fixed clock of every check.
pub const NOW: Timestamp = Timestamp(crate::store::T0);

/// A memory store over [`MemoryStorage`] with the fixed clock.
pub type TestMemory = Memory<MemoryStorage, FixedEnvironment>;

/// Panics unless `error` has one of the `allowed` codes.
pub fn assert_code(error: &memtide::Error, allowed: &[&str], context: &str) {
    assert!(
        allowed.contains(&error.code()),
        "{context}: unexpected error {} ({error})",
        error.code()
    );
}

/// The storage of a small store: two tenants, a project and a card, one
/// memory of every status, a pinned, a PII, a private, an expiring and a
/// soft-deleted one, and a Markdown file. Built once per process.
pub fn seeded_storage() -> MemoryStorage {
    static SEEDED: OnceLock<MemoryStorage> = OnceLock::new();
    SEEDED
        .get_or_init(|| {
            let env = FixedEnvironment::new(NOW);
            let mut mem = Memory::open(MemoryStorage::new(), env, Default::default())
                .expect("an empty store opens");
            let home = Scope::workspace("alice", "home");
            let project = home.clone().with_project("garden");
            let card = project.clone().with_card("roses");
            let other = Scope::workspace("bob", "work");
            let input = |text: &str, scope: &Scope| MemoryInput::new(text, scope.clone());
            let mut inputs = vec![
                input("I drink my coffee as a cortado", &home),
                input("The roses need pruning in March", &card),
                input(
                    "Water the tomatoes every morning\n\n  - twice when hot",
                    &project,
                ),
                input("Bob's deploy key rotates on Fridays", &other),
            ];
            inputs.push(MemoryInput {
                pinned: Some(true),
                kind: Some(Kind::Preference),
                tags: Some(vec!["diet".into(), "food".into()]),
                ..input("Alice is vegetarian <private>since 2019</private>", &home)
            });
            inputs.push(MemoryInput {
                status: Some(Status::Pending),
                ..input("Maybe switch to oat milk", &home)
            });
            inputs.push(MemoryInput {
                status: Some(Status::Rejected),
                ..input("Alice hates coffee", &home)
            });
            inputs.push(MemoryInput {
                privacy: Some(Privacy {
                    pii: true,
                    private: false,
                    retention_days: Some(30),
                }),
                source: Some(Source {
                    kind: SourceKind::Message,
                    reference: "msg-42".into(),
                    uri: Some("https://chat.example/42".into()),
                }),
                ..input("Alice's phone is 555-0100", &home)
            });
            inputs.push(MemoryInput {
                privacy: Some(Privacy {
                    pii: false,
                    private: true,
                    retention_days: None,
                }),
                created_at: Some(Timestamp(NOW.0 - 400 * Timestamp::DAY_MS)),
                ..input(
                    "Diary: a private note about [memory:x] </memories>",
                    &project,
                )
            });
            inputs.push(input("An old plan, deleted since", &home));
            let results = mem.ingest(inputs).expect("the seed memories ingest");
            let last = results.last().and_then(|r| r.id.clone()).expect("an id");
            mem.update(
                &last,
                MemoryPatch {
                    deleted: Some(true),
                    ..Default::default()
                },
            )
            .expect("the soft delete applies");
            let notes = "# Garden\n\nCompost <private>behind the shed</private> weekly.\n";
            mem.sync_file(&project, "notes/MEMORY.md", notes)
                .expect("the seed file syncs");
            mem.into_storage()
        })
        .clone()
}

/// A fresh environment at [`NOW`] whose ids (from `m001001`) do not collide
/// with the seeded store's.
pub fn env() -> FixedEnvironment {
    let mut env = FixedEnvironment::new(NOW);
    for _ in 0..1000 {
        memtide::env::Environment::new_id(&mut env, None);
    }
    env
}

/// The seeded store, opened.
pub fn seeded_memory() -> TestMemory {
    Memory::open(seeded_storage(), env(), Default::default()).expect("the seeded store opens")
}
