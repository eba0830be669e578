//! Markdown documents cut into line-ranged chunks for indexing.
//!
//! [`chunk_markdown`] cuts a document into chunks of whole lines, each at
//! most [`ChunkParams::max_tokens`] tokens, repeating the last
//! [`ChunkParams::overlap_lines`] lines of a chunk at the start of the next
//! so a passage cut at a boundary is still found whole in one of them.
//!
//! * Lines are those of [`str::lines`], numbered from 1 (a final line break
//!   does not start another line; `\r\n` counts as one break).
//! * A fenced code block (a line opening with three or more backticks or
//!   tildes, indented by at most three spaces, through the line closing it
//!   with at least as many of the same character, or the end of the
//!   document) is never cut, unless it alone exceeds the bound; then it is
//!   cut between lines like ordinary text. Overlap never starts inside a
//!   block either.
//! * A single line longer than the bound is cut between words (between
//!   characters for a word that alone exceeds it); its pieces all carry
//!   that line's number.
//! * Leading and trailing blank lines of a chunk are left out of it, and a
//!   chunk of blank lines only is dropped: every non-blank line is in at
//!   least one chunk.
//!
//! Token counts are summed line by line, each line costing its own count
//! plus the count of one line break; the finished chunk is counted again and
//! cut shorter should a counter not be additive, so every chunk holds at
//! most `max_tokens` tokens by the counter given.

use serde::{Deserialize, Serialize};

use super::tokens::TokenCounter;

/// How documents are cut into chunks. In JSON every field is optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ChunkParams {
    /// Most tokens in one chunk (default 256: the MiniLM model embeds at
    /// most 256 tokens, so a longer chunk's tail would be invisible to
    /// semantic search). Values below 1 count as 1.
    pub max_tokens: usize,
    /// Lines a chunk repeats from the end of the one before (default 2).
    pub overlap_lines: usize,
}

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            max_tokens: 256,
            overlap_lines: 2,
        }
    }
}

/// One chunk of a document: lines `start_line..=end_line` (1-based), or a
/// piece of the single line `start_line == end_line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The lines joined by `\n` (without line breaks at either end).
    pub text: String,
}

/// Consecutive lines that stay in one chunk: one line, or a whole fenced
/// block that fits the bound. Line indices are 0-based and inclusive.
#[derive(Debug, Clone, Copy)]
struct Unit {
    first: usize,
    last: usize,
    tokens: usize,
}

impl Unit {
    fn line_count(&self) -> usize {
        self.last + 1 - self.first
    }
}

/// Cuts `document` into chunks; see the module documentation.
pub fn chunk_markdown(
    document: &str,
    params: ChunkParams,
    counter: &dyn TokenCounter,
) -> Vec<Chunk> {
    let max_tokens = params.max_tokens.max(1);
    let lines: Vec<&str> = document.lines().collect();
    let break_cost = counter.count("\n");
    let line_tokens: Vec<usize> = lines
        .iter()
        .map(|line| counter.count(line).saturating_add(break_cost))
        .collect();
    let units = units(&lines, &line_tokens, max_tokens);

    let mut chunks = Vec::new();
    let mut start = 0;
    while start < units.len() {
        let mut end = start;
        let mut tokens = units[start].tokens;
        while let Some(next) = units.get(end + 1) {
            if tokens.saturating_add(next.tokens) > max_tokens {
                break;
            }
            tokens += next.tokens;
            end += 1;
        }
        emit(
            &lines,
            &units[start..=end],
            max_tokens,
            counter,
            &mut chunks,
        );
        let Some(next) = units.get(end + 1) else {
            break;
        };
        // Step back over whole units for the overlap, as long as they fit
        // beside the next unit; the next chunk always gains a new unit.
        let mut back = end + 1;
        let mut overlap_lines = 0;
        let mut overlap_tokens = next.tokens;
        while back > start + 1 {
            let unit = &units[back - 1];
            if overlap_lines + unit.line_count() > params.overlap_lines
                || overlap_tokens.saturating_add(unit.tokens) > max_tokens
            {
                break;
            }
            overlap_lines += unit.line_count();
            overlap_tokens += unit.tokens;
            back -= 1;
        }
        start = back;
    }
    chunks
}

/// Groups lines into units: a fenced block that fits the bound is one
/// unit, every other line its own.
fn units(lines: &[&str], line_tokens: &[usize], max_tokens: usize) -> Vec<Unit> {
    let mut units = Vec::with_capacity(lines.len());
    let mut index = 0;
    while index < lines.len() {
        let last = match fence_opening(lines[index]) {
            Some(fence) => (index + 1..lines.len())
                .find(|&i| closes_fence(lines[i], fence))
                .unwrap_or(lines.len() - 1),
            None => index,
        };
        let tokens = line_tokens[index..=last]
            .iter()
            .fold(0usize, |sum, t| sum.saturating_add(*t));
        if tokens <= max_tokens || last == index {
            units.push(Unit {
                first: index,
                last,
                tokens,
            });
        } else {
            units.extend((index..=last).map(|i| Unit {
                first: i,
                last: i,
                tokens: line_tokens[i],
            }));
        }
        index = last + 1;
    }
    units
}

/// The fence character and run length a line opens a fenced block with.
fn fence_opening(line: &str) -> Option<(char, usize)> {
    let rest = strip_indent(line)?;
    let marker = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.chars().take_while(|c| *c == marker).count();
    // A backtick fence's info string may not hold backticks.
    let info = &rest[run..];
    (run >= 3 && !(marker == '`' && info.contains('`'))).then_some((marker, run))
}

/// True when `line` closes a block opened by `fence`.
fn closes_fence(line: &str, (marker, run): (char, usize)) -> bool {
    strip_indent(line).is_some_and(|rest| {
        let len = rest.chars().take_while(|c| *c == marker).count();
        len >= run && rest[len * marker.len_utf8()..].trim().is_empty()
    })
}

/// The line without up to three spaces of indentation; `None` when it is
/// indented more (an indented code line, not a fence).
fn strip_indent(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    (line.len() - rest.len() <= 3).then_some(rest)
}

/// Adds the chunk of `units` to `chunks`: blank lines at either end left
/// out, cut shorter from the end while a non-additive counter finds it over
/// the bound, and a single over-long line cut into pieces.
fn emit(
    lines: &[&str],
    units: &[Unit],
    max_tokens: usize,
    counter: &dyn TokenCounter,
    chunks: &mut Vec<Chunk>,
) {
    let (Some(first), Some(last)) = (units.first(), units.last()) else {
        return;
    };
    let is_blank = |i: &usize| lines[*i].trim().is_empty();
    let Some(start) = (first.first..=last.last).find(|i| !is_blank(i)) else {
        return;
    };
    let Some(mut end) = (start..=last.last).rev().find(|i| !is_blank(i)) else {
        return;
    };
    // Overlap plus blank lines only: nothing the previous chunk lacks.
    if chunks
        .last()
        .is_some_and(|previous| previous.end_line as usize > end && start < end)
    {
        return;
    }
    loop {
        let text = lines[start..=end].join("\n");
        if start == end {
            for piece in split_line(&text, max_tokens, counter) {
                chunks.push(chunk(start, end, piece.to_string()));
            }
            return;
        }
        if counter.count(&text) <= max_tokens {
            chunks.push(chunk(start, end, text));
            return;
        }
        // The last unit that starts before `end` ends the shorter chunk.
        end = units
            .iter()
            .rev()
            .map(|unit| unit.first)
            .find(|&first| first <= end && first > start)
            .map_or(start, |first| first - 1);
        while end > start && lines[end].trim().is_empty() {
            end -= 1;
        }
    }
}

fn chunk(start: usize, end: usize, text: String) -> Chunk {
    let number = |i: usize| u32::try_from(i + 1).unwrap_or(u32::MAX);
    Chunk {
        start_line: number(start),
        end_line: number(end),
        text,
    }
}

/// Cuts one line into pieces of at most `max_tokens` tokens: between words
/// where it can, between characters inside a word that alone is too long.
fn split_line<'a>(line: &'a str, max_tokens: usize, counter: &dyn TokenCounter) -> Vec<&'a str> {
    if counter.count(line) <= max_tokens {
        return vec![line];
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < line.len() {
        let rest = &line[start..];
        let mut end = fitting_prefix(rest, max_tokens, counter, word_ends(rest));
        if end == 0 {
            end = fitting_prefix(rest, max_tokens, counter, char_ends(rest));
        }
        let end = end.max(rest.chars().next().map_or(1, char::len_utf8));
        if !rest[..end].trim().is_empty() {
            pieces.push(&rest[..end]);
        }
        start += end;
    }
    pieces
}

/// The longest of the candidate prefix lengths (ascending) whose text fits
/// the bound, found by binary search; 0 when none does.
fn fitting_prefix(
    text: &str,
    max_tokens: usize,
    counter: &dyn TokenCounter,
    ends: Vec<usize>,
) -> usize {
    let fits = ends.partition_point(|&end| counter.count(&text[..end]) <= max_tokens);
    fits.checked_sub(1).map_or(0, |i| ends[i])
}

/// Byte offsets just after each word and the whitespace that follows it.
fn word_ends(text: &str) -> Vec<usize> {
    let mut ends: Vec<usize> = text
        .char_indices()
        .zip(text.chars().skip(1))
        .filter(|((_, c), next)| c.is_whitespace() && !next.is_whitespace())
        .map(|((at, c), _)| at + c.len_utf8())
        .collect();
    ends.push(text.len());
    ends
}

/// Byte offsets just after each character.
fn char_ends(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(at, c)| at + c.len_utf8())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::tokens::EstimatedTokens;
    use proptest::prelude::*;

    use crate::text::tokens::test_counters::PerChar;

    fn params(max_tokens: usize, overlap_lines: usize) -> ChunkParams {
        ChunkParams {
            max_tokens,
            overlap_lines,
        }
    }

    fn ranges(chunks: &[Chunk]) -> Vec<(u32, u32)> {
        chunks.iter().map(|c| (c.start_line, c.end_line)).collect()
    }

    #[test]
    fn short_lines_chunk_with_the_exact_overlap() {
        // Ten lines of 9 characters: 10 tokens each with the line break.
        let doc: String = (1..=10).map(|i| format!("line {i:>4}\n")).collect();
        let chunks = chunk_markdown(&doc, params(40, 1), &PerChar);
        assert_eq!(ranges(&chunks), [(1, 4), (4, 7), (7, 10)]);
        assert_eq!(chunks[0].text, "line    1\nline    2\nline    3\nline    4");
        let no_overlap = chunk_markdown(&doc, params(40, 0), &PerChar);
        assert_eq!(ranges(&no_overlap), [(1, 4), (5, 8), (9, 10)]);
    }

    #[test]
    fn a_fenced_block_that_fits_is_never_cut() {
        let doc = "intro one\nintro two\n```rust\nfn a() {}\nfn b() {}\n```\nafter\n";
        // The block (lines 3-6) costs 10+10+10+4 = 34 tokens; 40 fit.
        let chunks = chunk_markdown(doc, params(40, 1), &PerChar);
        for c in &chunks {
            let inside = (3..=6).filter(|l| (c.start_line..=c.end_line).contains(l));
            let count = inside.count();
            assert!(
                count == 0 || count == 4,
                "{:?} cuts the block",
                ranges(&chunks)
            );
        }
        assert!(chunks
            .iter()
            .any(|c| c.text.contains("```rust\nfn a() {}\nfn b() {}\n```")));
    }

    #[test]
    fn a_block_larger_than_the_bound_is_cut_between_lines() {
        let body: String = (0..20).map(|i| format!("let x{i} = {i};\n")).collect();
        let doc = format!("~~~\n{body}~~~\n");
        let chunks = chunk_markdown(&doc, params(50, 0), &PerChar);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| PerChar.count(&c.text) <= 50));
        assert_eq!(chunks.first().map(|c| c.start_line), Some(1));
        assert_eq!(chunks.last().map(|c| c.end_line), Some(22));
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end_and_indented_fences_do_not_open() {
        assert_eq!(fence_opening("```"), Some(('`', 3)));
        assert_eq!(fence_opening("   ~~~~ text"), Some(('~', 4)));
        assert_eq!(fence_opening("    ```"), None);
        assert_eq!(fence_opening("``` a`b"), None);
        assert_eq!(fence_opening("``"), None);
        assert!(closes_fence("````  ", ('`', 3)));
        assert!(!closes_fence("``", ('`', 3)));
        assert!(!closes_fence("``` x", ('`', 3)));
        let doc = "a\n```\nb\nc";
        let chunks = chunk_markdown(doc, params(100, 0), &PerChar);
        assert_eq!(ranges(&chunks), [(1, 4)]);
    }

    #[test]
    fn a_long_line_is_cut_into_pieces_of_that_line() {
        let long = "word ".repeat(50);
        let doc = format!("first\n{long}\nlast");
        let chunks = chunk_markdown(&doc, params(30, 0), &PerChar);
        let pieces: Vec<&Chunk> = chunks.iter().filter(|c| c.start_line == 2).collect();
        assert!(pieces.len() > 1);
        assert!(pieces
            .iter()
            .all(|c| c.end_line == 2 && c.text.chars().count() <= 30));
        let joined: String = pieces.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined.trim_end(), long.trim_end());
        // A word longer than the bound is cut between characters.
        let word = "x".repeat(75);
        let chunks = chunk_markdown(&word, params(30, 0), &PerChar);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.iter().map(|c| c.text.len()).sum::<usize>(), 75);
    }

    #[test]
    fn blank_lines_are_trimmed_and_empty_documents_have_no_chunks() {
        assert!(chunk_markdown("", ChunkParams::default(), &EstimatedTokens).is_empty());
        assert!(chunk_markdown("\n  \n\n", ChunkParams::default(), &EstimatedTokens).is_empty());
        let chunks = chunk_markdown(
            "\n\n# Title\n\ntext\n\n",
            ChunkParams::default(),
            &EstimatedTokens,
        );
        assert_eq!(ranges(&chunks), [(3, 5)]);
        assert_eq!(chunks[0].text, "# Title\n\ntext");
        let crlf = chunk_markdown("a\r\nb\r\n", ChunkParams::default(), &EstimatedTokens);
        assert_eq!(crlf[0].text, "a\nb");
    }

    /// Random Markdown: prose, headings, blank lines, long lines and fenced
    /// blocks (some unclosed).
    fn document() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            4 => "[a-z]{1,8}( [a-z]{1,8}){0,6}",
            1 => Just(String::new()),
            1 => "# [a-z ]{1,20}",
            1 => "[a-z]{1,12}( [a-z]{1,12}){10,40}",
            1 => "[a-z]{60,120}",
            1 => "(```|~~~)[a-z]{0,4}",
            1 => "  [a-z(){};= ]{1,30}",
        ];
        prop::collection::vec(line, 0..60).prop_map(|lines| lines.join("\n"))
    }

    /// Lines `first..=last` (0-based) of every fenced block in `lines`.
    fn fenced_blocks(lines: &[&str]) -> Vec<(usize, usize)> {
        let mut blocks = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            if let Some(fence) = fence_opening(lines[i]) {
                let end = (i + 1..lines.len())
                    .find(|&j| closes_fence(lines[j], fence))
                    .unwrap_or(lines.len() - 1);
                blocks.push((i, end));
                i = end + 1;
            } else {
                i += 1;
            }
        }
        blocks
    }

    fn check_chunks(doc: &str, p: ChunkParams, counter: &dyn TokenCounter) {
        let lines: Vec<&str> = doc.lines().collect();
        let chunks = chunk_markdown(doc, p, counter);
        let mut covered = vec![false; lines.len()];
        for c in &chunks {
            let (s, e) = (c.start_line as usize, c.end_line as usize);
            assert!(
                1 <= s && s <= e && e <= lines.len(),
                "{s}-{e} of {}",
                lines.len()
            );
            assert!(
                counter.count(&c.text) <= p.max_tokens.max(1),
                "over the bound: {c:?}"
            );
            if s == e {
                assert!(lines[s - 1].contains(&c.text), "{c:?}");
            } else {
                assert_eq!(c.text, lines[s - 1..e].join("\n"));
            }
            assert!(!lines[s - 1].trim().is_empty() && !lines[e - 1].trim().is_empty());
            covered[s - 1..e].iter_mut().for_each(|x| *x = true);
        }
        for (i, line) in lines.iter().enumerate() {
            assert!(
                covered[i] || line.trim().is_empty(),
                "line {} uncovered",
                i + 1
            );
        }
        for pair in chunks.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(b.start_line >= a.start_line, "chunks go forward");
            assert!(b.end_line >= a.end_line);
            if b.start_line <= a.end_line && a.start_line < a.end_line && b.start_line < b.end_line
            {
                let overlap = (a.end_line - b.start_line + 1) as usize;
                assert!(
                    overlap <= p.overlap_lines,
                    "overlap {overlap} > {}",
                    p.overlap_lines
                );
            }
        }
        for (first, last) in fenced_blocks(&lines) {
            let cost: usize = lines[first..=last]
                .iter()
                .map(|l| counter.count(l) + counter.count("\n"))
                .sum();
            if cost > p.max_tokens {
                continue;
            }
            for c in &chunks {
                let (s, e) = (c.start_line as usize - 1, c.end_line as usize - 1);
                let disjoint = e < first || s > last;
                // Whole: every non-blank line of the block is in the chunk.
                let whole =
                    (first..=last).all(|l| (s..=e).contains(&l) || lines[l].trim().is_empty());
                assert!(disjoint || whole, "chunk {s}-{e} cuts block {first}-{last}");
            }
        }
    }

    proptest! {
        #[test]
        fn chunks_cover_every_line_within_the_bound_without_cutting_fences(
            doc in document(),
            max_tokens in 1usize..200,
            overlap_lines in 0usize..4,
        ) {
            check_chunks(&doc, params(max_tokens, overlap_lines), &EstimatedTokens);
            check_chunks(&doc, params(max_tokens * 3, overlap_lines), &PerChar);
        }
    }
}
