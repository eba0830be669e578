//! Target `hot_file`: the hot memory file (`Memory::render_hot_file`,
//! `Memory::read_hot_file`) of `alice/home` in the ten-memory store.
//!
//! The first byte picks a mode:
//! * even: the rest is the document (UTF-8, lossily);
//! * odd: the rest is read (with `arbitrary`) as lines: block markers (exact
//!   or with trailing spaces), bullets with or without the id marker of a
//!   memory of the store, continuation lines, blank and free lines.
//!
//! Invariants:
//! * `render` fails (`INVALID_INPUT`) exactly when the document opens a
//!   block it never closes, and is idempotent otherwise;
//! * `read_hot_file` of any document gives `Ok`, or `INVALID_INPUT` /
//!   `TOO_LARGE` and changes nothing;
//! * whatever it read, rendering the document then reading the render back
//!   changes nothing, and rendering again gives the same document: render →
//!   read back → render converges;
//! * the store reopens to the same memories.

use arbitrary::{Arbitrary, Unstructured};
use memtide::hot_file::{BLOCK_BEGIN, BLOCK_END};
use memtide::{ListQuery, Memory, Scope};

use super::TestMemory;

const PATH: &str = "/notes/MEMORY.md";

#[derive(Debug, Arbitrary)]
enum Line {
    Begin(bool),
    End(bool),
    Bullet { marker: Option<u8>, text: String },
    Continuation(String),
    Blank,
    Free(String),
}

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut mem = super::seeded_memory();
    let document = if mode % 2 == 0 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        let Ok(lines) = Vec::<Line>::arbitrary_take_rest(Unstructured::new(rest)) else {
            return;
        };
        let ids: Vec<String> = mem
            .list(&ListQuery::default())
            .expect("the store lists")
            .items
            .into_iter()
            .map(|item| item.id)
            .collect();
        lines
            .iter()
            .map(|line| match line {
                Line::Begin(spaced) => format!("{BLOCK_BEGIN}{}\n", if *spaced { " " } else { "" }),
                Line::End(spaced) => format!("{BLOCK_END}{}\n", if *spaced { "\t" } else { "" }),
                Line::Bullet { marker, text } => match marker {
                    Some(i) => {
                        let id = ids.get(usize::from(*i) % ids.len().max(1));
                        format!("- {text} <!-- mnemo:id={} -->\n", id.map_or("m0", |id| id))
                    }
                    None => format!("- {text}\n"),
                },
                Line::Continuation(text) => format!("  {text}\n"),
                Line::Blank => "\n".to_string(),
                Line::Free(text) => format!("{text}\n"),
            })
            .collect()
    };
    check_document(&mut mem, &document);
}

fn check_document(mem: &mut TestMemory, document: &str) {
    let scope = Scope::workspace("alice", "home");
    let unclosed = opens_without_closing(document);
    match mem.render_hot_file(&scope, document) {
        Ok(rendered) => {
            assert!(!unclosed, "rendered a document with an unclosed block");
            let again = mem.render_hot_file(&scope, &rendered).expect("a render renders");
            assert_eq!(again, rendered, "render is not idempotent");
        }
        Err(error) => {
            super::assert_code(&error, &["INVALID_INPUT"], "render");
            assert!(unclosed, "render refused a document: {error}");
        }
    }

    let before = mem.export();
    if let Err(error) = mem.read_hot_file(&scope, PATH, document) {
        super::assert_code(&error, &["INVALID_INPUT", "TOO_LARGE"], "read_hot_file");
        assert_eq!(mem.export(), before, "a failed read-back changed the store");
    }
    check_reopens(mem);
    if unclosed {
        return;
    }
    // Converges: render, read the render back (nothing to do), render again.
    let rendered = mem.render_hot_file(&scope, document).expect("renders");
    let sync = mem
        .read_hot_file(&scope, PATH, &rendered)
        .expect("a render reads back");
    assert!(sync.is_empty(), "reading a render back changed {sync:?}\n{rendered}");
    let again = mem.render_hot_file(&scope, &rendered).expect("renders");
    assert_eq!(again, rendered, "render → read back → render moved");
    check_reopens(mem);
}

/// True when a line that is exactly the begin marker (trailing whitespace
/// aside) has no end marker line after it.
fn opens_without_closing(document: &str) -> bool {
    let mut lines = document.split('\n').map(str::trim_end);
    lines.any(|line| line == BLOCK_BEGIN) && !lines.any(|line| line == BLOCK_END)
}

fn check_reopens(mem: &TestMemory) {
    let reopened = Memory::open(mem.storage().clone(), super::env(), Default::default())
        .expect("the store reopens");
    assert_eq!(reopened.export(), mem.export(), "the store reopens differently");
}
