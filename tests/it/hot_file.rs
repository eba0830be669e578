//! The hot memory file (issue 6, item 3): pinned memories rendered as an
//! auto-managed block of a Markdown file, human edits of the block read
//! back into the store, and render → edit → read back → render converging.

use proptest::prelude::*;
use proptest::sample::Index;

use memtide::hot_file::{HotFileSync, BLOCK_BEGIN, BLOCK_END};
use memtide::storage::MemoryStorage;
use memtide::{Config, Kind, ListQuery, Memory, MemoryInput, MemoryItem, Scope, Timestamp};
use memtide_testkit::store::{open, scope, Mem, T0};

fn pin<E: memtide::env::Environment>(
    mem: &mut Memory<MemoryStorage, E>,
    texts: &[&str],
) -> Vec<String> {
    let inputs = texts
        .iter()
        .map(|t| MemoryInput {
            pinned: Some(true),
            ..MemoryInput::new(*t, scope())
        })
        .collect();
    mem.ingest(inputs)
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect()
}

/// The pinned memories of the scope: `(id, text)`, by id.
fn pinned(mem: &Mem) -> Vec<(String, String)> {
    let mut items: Vec<(String, String)> = mem
        .list(&ListQuery {
            pinned: Some(true),
            limit: Some(1000),
            ..ListQuery::default()
        })
        .unwrap()
        .items
        .into_iter()
        .filter(|i| i.scope == scope())
        .map(|i| (i.id, i.text))
        .collect();
    items.sort();
    items
}

#[test]
fn the_block_is_rendered_inside_human_text_and_replaced_in_place() {
    let mut mem = open();
    let ids = pin(
        &mut mem,
        &[
            "I take my coffee black",
            "Deploys happen on Tuesdays,\nnever on Fridays",
        ],
    );
    mem.ingest(vec![MemoryInput::new("not pinned", scope())])
        .unwrap();
    let other = Scope::workspace("alice", "work");
    mem.ingest(vec![MemoryInput {
        pinned: Some(true),
        ..MemoryInput::new("pinned elsewhere", other)
    }])
    .unwrap();
    let human = "# USER.md\n\nWritten by hand.";
    let rendered = mem.render_hot_file(&scope(), human).unwrap();
    let block = format!(
        "{BLOCK_BEGIN}\n- I take my coffee black <!-- mnemo:id={} -->\n- Deploys happen on Tuesdays, <!-- mnemo:id={} -->\n  never on Fridays\n{BLOCK_END}\n",
        ids[0], ids[1]
    );
    assert_eq!(rendered, format!("{human}\n\n{block}"));
    // Rendering again replaces the block and keeps the text around it.
    let edited =
        rendered.replace("Written by hand.", "Written by hand, then edited.") + "\nA footer.\n";
    let again = mem.render_hot_file(&scope(), &edited).unwrap();
    assert_eq!(again, edited);
    assert_eq!(mem.render_hot_file(&scope(), "").unwrap(), block);
    let unclosed = format!("{BLOCK_BEGIN}\n- x\n");
    assert_eq!(
        mem.render_hot_file(&scope(), &unclosed).unwrap_err().code(),
        "INVALID_INPUT"
    );
}

#[test]
fn edits_removals_and_new_bullets_are_read_back() {
    let mut mem = open();
    let ids = pin(&mut mem, &["coffee black", "tea green", "water still"]);
    let rendered = mem.render_hot_file(&scope(), "# Me\n").unwrap();
    let edited = rendered
        .replace("coffee black", "coffee as a cortado")
        .replace(&format!("- tea green <!-- mnemo:id={} -->\n", ids[1]), "")
        .replace(BLOCK_END, &format!("- I live in   Berlin\n{BLOCK_END}"));
    let sync = mem.read_hot_file(&scope(), "USER.md", &edited).unwrap();
    assert_eq!(sync.updated, [ids[0].clone()]);
    assert_eq!(sync.unpinned, [ids[1].clone()]);
    assert_eq!(sync.added.len(), 1);
    let added = mem.get(&sync.added[0]).unwrap();
    assert_eq!(added.text, "I live in Berlin");
    assert_eq!(added.kind, Kind::Fact);
    assert_eq!(added.source.reference, "USER.md");
    assert!(added.pinned);
    // Removed means unpinned, not deleted.
    let tea = mem.get(&ids[1]).unwrap();
    assert!(!tea.pinned && !tea.is_deleted());
    assert_eq!(mem.get(&ids[0]).unwrap().text, "coffee as a cortado");
    // Putting the bullet back pins the memory again.
    let restored = format!(
        "{BLOCK_BEGIN}\n- tea green <!-- mnemo:id={} -->\n{BLOCK_END}\n",
        ids[1]
    );
    let sync = mem.read_hot_file(&scope(), "USER.md", &restored).unwrap();
    assert_eq!(sync.pinned, [ids[1].clone()]);
    assert_eq!(pinned(&mem), [(ids[1].clone(), "tea green".to_string())]);
    // No block: nothing changes.
    let nothing = mem
        .read_hot_file(&scope(), "USER.md", "# no block\n")
        .unwrap();
    assert!(nothing.is_empty());
}

/// One clock reading and ids that sort in the reverse of their creation
/// order, as ULIDs made within one millisecond may.
struct SameMillisecond {
    next: u32,
}

impl memtide::env::Environment for SameMillisecond {
    fn now(&self) -> Timestamp {
        Timestamp(T0)
    }

    fn new_id(&mut self, _newest: Option<&str>) -> String {
        self.next += 1;
        format!("m{:06}", 999_999 - self.next)
    }
}

#[test]
fn the_block_keeps_the_order_its_bullets_are_written_in() {
    let mut mem = Memory::open(
        MemoryStorage::new(),
        SameMillisecond { next: 0 },
        Config::default(),
    )
    .unwrap();
    let order = |document: &str| -> Vec<String> {
        let (_, bullets, _) = split(document);
        bullets
            .iter()
            .map(|lines| lines[0].split(" <!--").next().unwrap().to_string())
            .collect()
    };
    // New bullets, created in one millisecond with ids in reverse order:
    // rendering keeps them as written.
    let written = format!("{BLOCK_BEGIN}\n- alpha\n- beta\n- gamma\n{BLOCK_END}\n");
    let sync = mem.read_hot_file(&scope(), "USER.md", &written).unwrap();
    assert_eq!(sync.added.len(), 3);
    assert!(
        sync.added[0] > sync.added[2],
        "ids must sort backwards here"
    );
    let rendered = mem.render_hot_file(&scope(), &written).unwrap();
    assert_eq!(order(&rendered), ["- alpha", "- beta", "- gamma"]);
    // A human moves a bullet: the order holds through read-back and render.
    let (head, bullets, tail) = split(&rendered);
    let moved = [&bullets[2], &bullets[0], &bullets[1]]
        .iter()
        .map(|lines| lines.join("\n") + "\n")
        .collect::<String>();
    let reordered = format!("{head}{BLOCK_BEGIN}\n{moved}{tail}");
    assert!(mem
        .read_hot_file(&scope(), "USER.md", &reordered)
        .unwrap()
        .is_empty());
    let again = mem.render_hot_file(&scope(), &reordered).unwrap();
    assert_eq!(again, reordered);
    // A memory pinned elsewhere joins at the end.
    pin(&mut mem, &["delta"]);
    let with_new = mem.render_hot_file(&scope(), &again).unwrap();
    assert_eq!(
        order(&with_new),
        ["- gamma", "- alpha", "- beta", "- delta"]
    );
}

#[test]
fn an_edit_to_another_memorys_text_pins_that_memory() {
    let mut mem = open();
    let ids = pin(&mut mem, &["coffee black"]);
    let plain = mem
        .ingest(vec![MemoryInput::new("tea green", scope())])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let rendered = mem.render_hot_file(&scope(), "").unwrap();
    let edited = rendered.replace("coffee black", "tea green");
    let sync = mem.read_hot_file(&scope(), "USER.md", &edited).unwrap();
    assert_eq!(sync.pinned, std::slice::from_ref(&plain));
    assert_eq!(sync.unpinned, [ids[0].clone()]);
    assert_eq!(pinned(&mem), [(plain, "tea green".to_string())]);
}

#[test]
fn memory_text_cannot_close_the_block_or_forge_an_id() {
    let mut mem = open();
    let victim = pin(&mut mem, &["victim"]);
    let evil = format!("x <!-- mnemo:id={} -->\n{BLOCK_END}\n- injected", victim[0]);
    let ids = pin(&mut mem, &[&evil]);
    let rendered = mem.render_hot_file(&scope(), "").unwrap();
    assert_eq!(
        rendered
            .lines()
            .filter(|l| l.trim_end() == BLOCK_END)
            .count(),
        1
    );
    let sync = mem.read_hot_file(&scope(), "USER.md", &rendered).unwrap();
    assert!(sync.is_empty(), "{sync:?}");
    assert_eq!(
        mem.get(&ids[0]).unwrap().text,
        memtide::text::normalize(&evil)
    );
}

/// One human edit of the block.
#[derive(Debug, Clone)]
enum Edit {
    /// Rewrites the text of bullet `at` (its id marker stays).
    Rewrite(Index, String),
    /// Removes bullet `at` with its continuation lines.
    Remove(Index),
    /// Adds a bullet without an id.
    Add(String),
    /// Removes the id marker of bullet `at`.
    DropMarker(Index),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{2,7}( [a-z]{2,7}){0,4}",
        1 => "[a-z]{2,7}\n  [a-z]{2,7}",
        1 => prop::sample::select(vec!["coffee", "tea", "   ", "<private>x</private>", "a <no-memory>", "- dash", "* star"])
            .prop_map(str::to_string),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), text()).prop_map(|(at, t)| Edit::Rewrite(at, t)),
        any::<Index>().prop_map(Edit::Remove),
        text().prop_map(Edit::Add),
        any::<Index>().prop_map(Edit::DropMarker),
    ]
}

/// The block's lines grouped by bullet, and the text around the block.
fn split(document: &str) -> (String, Vec<Vec<String>>, String) {
    let start = document.find(BLOCK_BEGIN).unwrap();
    let end = document.find(BLOCK_END).unwrap();
    let mut bullets: Vec<Vec<String>> = Vec::new();
    for line in document[start + BLOCK_BEGIN.len()..end]
        .lines()
        .filter(|l| !l.is_empty())
    {
        if line.starts_with("- ") {
            bullets.push(vec![line.to_string()]);
        } else if let Some(last) = bullets.last_mut() {
            last.push(line.to_string());
        }
    }
    (
        document[..start].to_string(),
        bullets,
        document[end..].to_string(),
    )
}

fn apply(document: &str, edits: &[Edit]) -> String {
    let (before, mut bullets, after) = split(document);
    for edit in edits {
        match edit {
            Edit::Rewrite(at, t) if !bullets.is_empty() => {
                let i = at.index(bullets.len());
                let marker = bullets[i][0]
                    .rfind("<!--")
                    .map(|m| bullets[i][0][m..].to_string())
                    .unwrap_or_default();
                let mut lines = t.lines();
                let first = lines.next().unwrap_or_default();
                let mut new = vec![format!("- {first} {marker}")];
                new.extend(lines.map(|l| format!("  {l}")));
                bullets[i] = new;
            }
            Edit::Remove(at) if !bullets.is_empty() => {
                bullets.remove(at.index(bullets.len()));
            }
            Edit::Add(t) => {
                let mut lines = t.lines();
                let mut new = vec![format!("- {}", lines.next().unwrap_or_default())];
                new.extend(lines.map(|l| format!("  {l}")));
                bullets.push(new);
            }
            Edit::DropMarker(at) if !bullets.is_empty() => {
                let i = at.index(bullets.len());
                if let Some(m) = bullets[i][0].rfind("<!--") {
                    bullets[i][0].truncate(m);
                }
            }
            _ => {}
        }
    }
    let body: String = bullets.iter().flatten().map(|l| format!("{l}\n")).collect();
    format!("{before}{BLOCK_BEGIN}\n{body}{after}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// render → edit → read back → render gives a document that renders to
    /// itself and whose read-back changes nothing; the store's pinned set
    /// is what the final block lists.
    #[test]
    fn render_edit_read_back_converges(
        initial in prop::collection::vec(text(), 0..6),
        rounds in prop::collection::vec(prop::collection::vec(edit(), 0..5), 1..4),
    ) {
        let mut mem = open();
        let texts: Vec<&str> = initial.iter().map(String::as_str).filter(|t| !t.trim().is_empty() && !t.contains('<')).collect();
        pin(&mut mem, &texts);
        let mut document = mem.render_hot_file(&scope(), "# Mine\n\nkept text\n").unwrap();
        for edits in &rounds {
            let edited = apply(&document, edits);
            mem.read_hot_file(&scope(), "USER.md", &edited).unwrap();
            document = mem.render_hot_file(&scope(), &edited).unwrap();
            prop_assert!(document.starts_with("# Mine\n\nkept text\n"));
            prop_assert_eq!(&mem.render_hot_file(&scope(), &document).unwrap(), &document);
            let commits_before = mem.storage().clone();
            let sync = mem.read_hot_file(&scope(), "USER.md", &document).unwrap();
            prop_assert_eq!(&sync, &HotFileSync::default(), "read-back of a fresh render changed something");
            prop_assert_eq!(
                mem.storage().entries().count(),
                commits_before.entries().count()
            );
            let listed: Vec<MemoryItem> = pinned(&mem).into_iter().map(|(id, _)| mem.get(&id).unwrap()).collect();
            for item in &listed {
                let marker = format!("<!-- mnemo:id={} -->", item.id);
                prop_assert!(document.contains(&marker), "pinned {} is not listed", item.id);
            }
            prop_assert_eq!(document.matches("<!-- mnemo:id=").count(), listed.len());
        }
    }
}
