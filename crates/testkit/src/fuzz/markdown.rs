//! Target `markdown`: the Markdown chunker (`text::markdown::chunk_markdown`)
//! and the private-span removal files get (`text::remove_private_keeping_lines`),
//! then `Memory::sync_file`, which stores the file and indexes its chunks.
//!
//! The first byte picks a mode, the next two the [`ChunkParams`]
//! (`max_tokens` from 1 to 1024, `overlap_lines` from 0 to 5):
//! * even: the rest is the document (UTF-8, lossily);
//! * odd: the rest is read (with `arbitrary`) as public pieces and secrets;
//!   the document is the pieces with each secret wrapped in
//!   `<private>…</private>`, where a character normalization removes (a
//!   zero-width or control character) may sit inside either tag, and each
//!   secret is marked by a private-use character the public pieces lack.
//!
//! Invariants, with the estimate token counter:
//! * chunks have `1 <= startLine <= endLine <= lines`, go forward, start and
//!   end on non-blank lines; a chunk of several lines is exactly those lines
//!   joined by `\n`, a chunk of one line is that line or a piece of it;
//! * every non-blank line is in a chunk (a line cut into pieces: the pieces
//!   hold all its non-space characters, in order); two chunks of several
//!   lines share at most `overlap_lines` lines;
//! * every chunk holds at most `max_tokens` tokens (the module promises it
//!   for every chunk: an over-long line is cut into pieces);
//! * a fenced block whose lines fit the bound is never cut: a chunk either
//!   misses it or holds all of its non-blank lines;
//! * chunking is deterministic;
//! * `remove_private_keeping_lines` keeps the number of line breaks and
//!   leaves no `<private>` / `</private>` tag, not even one that only
//!   normalization would reveal;
//! * after `sync_file`, neither the stored file nor any of its chunks holds
//!   a secret's mark, and the chunks are those of the stored content.

use arbitrary::{Arbitrary, Unstructured};
use memtide::{EstimatedTokens, TokenCounter};
use memtide::storage::MemoryStorage;
use memtide::text::markdown::{chunk_markdown, Chunk, ChunkParams};
use memtide::text::{self, Capture};
use memtide::{Memory, Scope};

/// Marks secret text in the odd mode.
const SECRET_MARK: char = '\u{E000}';

/// Characters `text::normalize` removes.
const HIDDEN: [char; 8] = [
    '\u{200B}', '\u{2060}', '\u{FEFF}', '\u{0}', '\u{7}', '\u{1A}', '\u{7F}', '\u{85}',
];

#[derive(Debug, Arbitrary)]
struct Secret {
    public: String,
    secret: String,
    /// Where a hidden character goes inside the opener and the closer, and
    /// which one.
    hide: (u8, u8, u8),
}

/// See the module documentation.
pub fn check(data: &[u8]) {
    let [mode, bound, overlap, rest @ ..] = data else {
        return;
    };
    let params = ChunkParams {
        max_tokens: match *bound {
            b @ 0..=127 => usize::from(b) + 1,
            b => usize::from(b - 127) * 8,
        },
        overlap_lines: usize::from(*overlap % 6),
    };
    if mode % 2 == 0 {
        let document = String::from_utf8_lossy(rest);
        check_chunks(&document, params);
        check_file(&document, params);
        return;
    }
    let Ok(pieces) = Vec::<Secret>::arbitrary_take_rest(Unstructured::new(rest)) else {
        return;
    };
    let mut document = String::new();
    for Secret {
        public,
        secret,
        hide: (at, which, at_close),
    } in &pieces
    {
        document.extend(public.chars().filter(|&c| c != SECRET_MARK));
        // A closer inside the secret (visible or hidden) ends the span early.
        if text::normalize(secret)
            .to_ascii_lowercase()
            .contains("</private>")
        {
            continue;
        }
        let hidden = HIDDEN[usize::from(*which) % HIDDEN.len()];
        document.push_str(&with_char_at("<private>", *at, hidden));
        document.push(SECRET_MARK);
        document.push_str(secret);
        document.push_str(&with_char_at("</private>", *at_close, hidden));
    }
    check_chunks(&document, params);
    let (stored, chunks) = check_file(&document, params);
    assert!(
        !stored.contains(SECRET_MARK),
        "a private span is kept in the file: {stored:?}"
    );
    for chunk in chunks {
        assert!(
            !chunk.contains(SECRET_MARK),
            "a private span is kept in a chunk: {chunk:?}"
        );
    }
}

/// `tag` with `c` inserted before its byte `at` (modulo its length).
fn with_char_at(tag: &str, at: u8, c: char) -> String {
    let at = usize::from(at) % (tag.len() + 1);
    format!("{}{c}{}", &tag[..at], &tag[at..])
}

/// The chunker's invariants on `document`.
fn check_chunks(document: &str, params: ChunkParams) {
    let counter = EstimatedTokens;
    let lines: Vec<&str> = document.lines().collect();
    let chunks = chunk_markdown(document, params, &counter);
    assert_eq!(
        chunk_markdown(document, params, &counter),
        chunks,
        "chunking is not deterministic"
    );
    let is_blank = |line: &str| line.trim().is_empty();
    for chunk in &chunks {
        let (start, end) = (chunk.start_line as usize, chunk.end_line as usize);
        assert!(
            1 <= start && start <= end && end <= lines.len(),
            "lines {start}-{end} of {}",
            lines.len()
        );
        assert!(
            counter.count(&chunk.text) <= params.max_tokens,
            "over the bound of {}: {chunk:?}",
            params.max_tokens
        );
        assert!(!is_blank(lines[start - 1]) && !is_blank(lines[end - 1]));
        if start < end {
            assert_eq!(chunk.text, lines[start - 1..end].join("\n"), "{chunk:?}");
        } else {
            assert!(lines[start - 1].contains(&chunk.text), "{chunk:?}");
        }
    }
    for pair in chunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.start_line <= b.start_line && a.end_line <= b.end_line,
            "chunks go back: {a:?} then {b:?}"
        );
        if a.start_line < a.end_line && b.start_line < b.end_line && b.start_line <= a.end_line {
            let shared = (a.end_line - b.start_line + 1) as usize;
            assert!(
                shared <= params.overlap_lines,
                "{shared} lines overlap, more than {}",
                params.overlap_lines
            );
        }
    }
    for (index, line) in lines.iter().enumerate() {
        if !is_blank(line) {
            assert!(is_covered(&chunks, index + 1, line), "line {} uncovered", index + 1);
        }
    }
    for (first, last) in fenced_blocks(&lines) {
        let cost = lines[first..=last]
            .iter()
            .map(|line| counter.count(line) + counter.count("\n"))
            .sum::<usize>();
        if cost > params.max_tokens {
            continue;
        }
        for chunk in &chunks {
            let (start, end) = (chunk.start_line as usize - 1, chunk.end_line as usize - 1);
            let misses = end < first || start > last;
            let whole = (first..=last).all(|i| (start..=end).contains(&i) || is_blank(lines[i]));
            assert!(
                misses || whole,
                "lines {}-{} cut the fenced block {}-{}",
                start + 1,
                end + 1,
                first + 1,
                last + 1
            );
        }
    }
}

/// True when line `number` is in a chunk of several lines, is a chunk of
/// its own, or is covered by the pieces cut from it.
fn is_covered(chunks: &[Chunk], number: usize, line: &str) -> bool {
    let number = u32::try_from(number).unwrap_or(u32::MAX);
    let mut pieces = String::new();
    for chunk in chunks {
        if chunk.start_line <= number && number <= chunk.end_line {
            if chunk.start_line < chunk.end_line || chunk.text == line {
                return true;
            }
            pieces.push_str(&chunk.text);
        }
    }
    let visible = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    visible(&pieces) == visible(line)
}

/// Lines `first..=last` (0-based) of every fenced block, as the chunker's
/// documentation (and CommonMark) define them.
fn fenced_blocks(lines: &[&str]) -> Vec<(usize, usize)> {
    // The fence character, its run and the text after it, for a line of at
    // most three spaces of indentation starting with three `` ` `` or `~`.
    let fence = |line: &str| -> Option<(char, usize, String)> {
        let body = line.trim_start_matches(' ');
        let marker = body.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let after = body.trim_start_matches(marker);
        let run = body.len() - after.len();
        (line.len() - body.len() <= 3 && run >= 3).then(|| (marker, run, after.to_string()))
    };
    let mut blocks = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let opening = fence(lines[index]).filter(|(marker, _, info)| *marker == '~' || !info.contains('`'));
        let Some((marker, run, _)) = opening else {
            index += 1;
            continue;
        };
        let last = (index + 1..lines.len())
            .find(|&i| {
                fence(lines[i])
                    .is_some_and(|(m, r, rest)| m == marker && r >= run && rest.trim().is_empty())
            })
            .unwrap_or(lines.len() - 1);
        blocks.push((index, last));
        index = last + 1;
    }
    blocks
}

/// Syncs `document` as a file of a fresh store and checks the file record
/// and its chunks; returns the stored content and the chunks' texts.
fn check_file(document: &str, params: ChunkParams) -> (String, Vec<String>) {
    let kept = text::remove_private_keeping_lines(document);
    assert_eq!(
        kept.matches('\n').count(),
        document.matches('\n').count(),
        "removing private spans moved lines"
    );
    let revealed = text::normalize(&kept).to_ascii_lowercase();
    assert!(
        !revealed.contains("<private>") && !revealed.contains("</private>"),
        "a private tag is left in {kept:?}"
    );

    let config = memtide::Config {
        chunking: params,
        ..Default::default()
    };
    let mut mem = Memory::open(MemoryStorage::new(), super::env(), config).expect("a store opens");
    let scope = Scope::workspace("alice", "home");
    let path = "/notes/MEMORY.md";
    if let Err(error) = mem.sync_file(&scope, path, document) {
        super::assert_code(&error, &["TOO_LARGE"], "sync_file");
        return (kept, Vec::new());
    }
    let stored = mem.file(&scope, path).expect("the synced file").content;
    assert_eq!(stored, kept, "the file record is not the content without private spans");
    let chunks: Vec<String> = mem
        .engine()
        .chunks_of_file(&scope, path)
        .iter()
        .map(|item| item.text.clone())
        .collect();
    let expected: Vec<String> = chunk_markdown(&stored, params, &EstimatedTokens)
        .into_iter()
        .filter_map(|chunk| match text::capture(&chunk.text) {
            Capture::Text { text, .. } if !text.is_empty() => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, expected, "the chunks are not those of the stored content");
    (stored, chunks)
}
