//! Capture policies: the `<no-memory>` opt-out and `<private>` redaction.

use std::ops::Range;

/// What capturing a raw text yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capture {
    /// The text opted out with `<no-memory>`: nothing of it may be stored.
    NoMemory,
    /// The text to keep, with every private span cut out.
    Text {
        /// The remaining text ([`redact`] does not normalize it;
        /// [`super::capture`] does).
        text: String,
        /// Whether any private span was removed.
        private_removed: bool,
    },
}

const NO_MEMORY_MARKERS: [&str; 3] = ["<no-memory>", "<no-memory/>", "<no-memory />"];
const PRIVATE_OPEN: &str = "<private>";
const PRIVATE_CLOSE: &str = "</private>";

/// Applies the capture policies: `<no-memory>` opt-out and `<private>`
/// redaction.
///
/// * A text containing `<no-memory>`, `<no-memory/>` or `<no-memory />` (in
///   any ASCII letter case) yields [`Capture::NoMemory`].
/// * Every `<private>…</private>` span (tags in any ASCII letter case, across
///   lines, shortest match) is removed with its tags and replaced by one space.
///   An opener inside an open span is part of the span. An unclosed opener
///   removes everything to the end of the text; a closer without an opener
///   removes everything from the start of the text through it, as if its
///   opener had been lost.
///
/// The text is not normalized here; the caller normalizes the result. A
/// text with nothing to cut (most texts) is handed back as it is, not
/// copied.
pub fn redact(raw: String) -> Capture {
    // Every marker and tag starts with `<`.
    if !raw.contains('<') {
        return Capture::Text {
            text: raw,
            private_removed: false,
        };
    }
    let lower = raw.to_ascii_lowercase();
    if NO_MEMORY_MARKERS
        .iter()
        .any(|marker| lower.contains(marker))
    {
        return Capture::NoMemory;
    }
    let spans = private_spans(&raw);
    if spans.is_empty() {
        return Capture::Text {
            text: raw,
            private_removed: false,
        };
    }
    Capture::Text {
        text: cut_spans(&raw, &spans, false),
        private_removed: true,
    }
}

/// Removes the `<private>` spans of [`redact`] but keeps the text's lines:
/// each span becomes one space followed by the line breaks (`\n`) it held,
/// so every other line keeps its number. `<no-memory>` is left in place
/// (files keep it; their chunks that contain it are not captured).
///
/// The text is not normalized (a file keeps its bytes), but its tags are
/// looked for as [`super::capture`] looks for them, in the text without the
/// characters normalization removes: a control or zero-width character
/// inside a tag (`<private\u{200B}>`) cannot hide it. Such characters next
/// to a tag's end go with it.
pub fn remove_private_keeping_lines(raw: &str) -> String {
    // `visible` is `raw` without the removed characters; `raw_at[i]` is the
    // offset in `raw` of the byte `i` of `visible` (and `raw.len()` at its
    // end), so a span of `visible` maps to one of `raw` on char boundaries.
    let mut visible = String::with_capacity(raw.len());
    let mut raw_at = Vec::with_capacity(raw.len() + 1);
    for (at, c) in raw.char_indices().filter(|(_, c)| !super::is_removed(*c)) {
        visible.push(c);
        raw_at.extend(std::iter::repeat_n(at, c.len_utf8()));
    }
    raw_at.push(raw.len());
    let spans: Vec<Range<usize>> = private_spans(&visible)
        .into_iter()
        .map(|span| raw_at[span.start]..raw_at[span.end])
        .collect();
    cut_spans(raw, &spans, true)
}

/// The byte ranges of `raw` that private spans cover, tags included: in
/// order, disjoint, each on char boundaries (the tags are ASCII).
fn private_spans(raw: &str) -> Vec<Range<usize>> {
    // ASCII lowercasing keeps every byte offset, and the tags are ASCII, so a
    // match in `lower` is a char-boundary-aligned range of `raw` as well.
    let lower = raw.to_ascii_lowercase();
    let mut tags: Vec<(usize, bool)> = lower
        .match_indices(PRIVATE_OPEN)
        .map(|(at, _)| (at, true))
        .chain(
            lower
                .match_indices(PRIVATE_CLOSE)
                .map(|(at, _)| (at, false)),
        )
        .collect();
    tags.sort_unstable();
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut open: Option<usize> = None;
    for (at, is_open) in tags {
        let end = at + PRIVATE_CLOSE.len();
        match (open, is_open) {
            (None, true) => open = Some(at),
            // A stray closer cuts everything before it.
            (None, false) => {
                spans.clear();
                spans.push(0..end);
            }
            (Some(start), false) => {
                spans.push(start..end);
                open = None;
            }
            (Some(_), true) => {}
        }
    }
    if let Some(start) = open {
        spans.push(start..raw.len());
    }
    spans
}

/// `raw` with each span replaced by one space (and, with `keep_lines`, the
/// span's `\n`s).
fn cut_spans(raw: &str, spans: &[Range<usize>], keep_lines: bool) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut kept_from = 0;
    for span in spans {
        text.push_str(raw.get(kept_from..span.start).unwrap_or_default());
        text.push(' ');
        if keep_lines {
            let breaks = raw
                .get(span.clone())
                .unwrap_or_default()
                .matches('\n')
                .count();
            text.extend(std::iter::repeat_n('\n', breaks));
        }
        kept_from = span.end;
    }
    text.push_str(raw.get(kept_from..).unwrap_or_default());
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`redact`] as it was before a text without `<` was handed back:
    /// the oracle of the property below.
    fn redact_by_spans(raw: &str) -> Capture {
        let lower = raw.to_ascii_lowercase();
        if NO_MEMORY_MARKERS.iter().any(|marker| lower.contains(marker)) {
            return Capture::NoMemory;
        }
        let spans = private_spans(raw);
        Capture::Text {
            text: cut_spans(raw, &spans, false),
            private_removed: !spans.is_empty(),
        }
    }

    proptest! {
        /// A text is redacted as the span scan redacts it,
        /// with and without tags, markers and `<` in any case.
        #[test]
        fn an_owned_text_is_redacted_as_before(parts in prop::collection::vec(prop::sample::select(vec![
            "<private>", "</private>", "<PRIVATE>", "</Private>", "<no-memory>", "<No-Memory />",
            "<no-memory/>", "<", ">", "/", "private", "a", " ", "\n", "é",
        ]), 0..12)) {
            let raw = parts.concat();
            prop_assert_eq!(redact(raw.clone()), redact_by_spans(&raw));
        }
    }

    fn kept(raw: &str) -> (String, bool) {
        match redact(raw.to_string()) {
            Capture::Text {
                text,
                private_removed,
            } => (text, private_removed),
            Capture::NoMemory => panic!("unexpected NoMemory for {raw:?}"),
        }
    }

    #[test]
    fn text_without_tags_is_kept_verbatim() {
        assert_eq!(
            kept("  plain\r\n text  "),
            ("  plain\r\n text  ".into(), false)
        );
        assert_eq!(kept("a < private > b"), ("a < private > b".into(), false));
    }

    #[test]
    fn every_private_span_is_removed() {
        assert_eq!(
            kept("a<private>x</private>b <private>\ny\n</private>c"),
            ("a b  c".into(), true)
        );
    }

    #[test]
    fn tags_are_case_insensitive() {
        assert_eq!(
            kept("keep <PRIVATE>x</Private> this"),
            ("keep   this".into(), true)
        );
    }

    #[test]
    fn unclosed_opener_removes_the_rest() {
        assert_eq!(kept("keep <private>secret\nmore"), ("keep  ".into(), true));
    }

    #[test]
    fn stray_closer_removes_everything_before_it() {
        assert_eq!(
            kept("lost opener x</private> keep"),
            ("  keep".into(), true)
        );
        // A closer left over after a span also cuts everything before it.
        assert_eq!(
            kept("a<private>b</private>c</private>d"),
            (" d".into(), true)
        );
    }

    #[test]
    fn nested_opener_stays_inside_the_span() {
        assert_eq!(
            kept("a<private>b<private>c</private>d</private>e"),
            (" e".into(), true)
        );
    }

    #[test]
    fn empty_span_counts_as_removed() {
        assert_eq!(kept("a<private></private>b"), ("a b".into(), true));
    }

    #[test]
    fn multibyte_text_around_tags() {
        assert_eq!(
            kept("日本語<private>秘密🔒</private>é中文"),
            ("日本語 é中文".into(), true)
        );
    }

    #[test]
    fn no_memory_marker_variants_opt_out() {
        for raw in [
            "x <no-memory> y",
            "<NO-MEMORY/>",
            "text <No-Memory /> text",
            "<private><no-memory></private>",
        ] {
            assert_eq!(redact(raw.to_string()), Capture::NoMemory, "{raw:?}");
        }
        assert_eq!(kept("<no-memory"), ("<no-memory".into(), false));
        assert_eq!(kept("no-memory"), ("no-memory".into(), false));
    }

    #[test]
    fn removing_private_spans_can_keep_the_lines() {
        let raw = "a\n<private>x\ny</private>b\nc <private>z";
        assert_eq!(remove_private_keeping_lines(raw), "a\n \nb\nc  ");
        assert_eq!(kept(raw), ("a\n b\nc  ".into(), true));
        assert_eq!(
            remove_private_keeping_lines("<no-memory> x"),
            "<no-memory> x"
        );
    }

    #[test]
    fn tags_hidden_by_removed_characters_are_cut_from_files() {
        // Found by the `markdown` fuzz target: a file kept the secret of
        // `<private\u{200B}>…</private\u{1a}>`, whose tags only normalization
        // reveals (its chunks, captured, did not).
        assert_eq!(
            remove_private_keeping_lines(
                "a\n<private\u{200B}>secret\nmore</priva\u{1a}te>\u{7}b\n"
            ),
            "a\n \nb\n"
        );
        assert_eq!(
            remove_private_keeping_lines("x <\u{FEFF}private>y\u{0}"),
            "x  "
        );
        assert_eq!(
            remove_private_keeping_lines("keep\u{200B} é\u{0}"),
            "keep\u{200B} é\u{0}"
        );
    }

    fn tagged_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "<private>",
            "</private>",
            "<PRIVATE>",
            "</Private>",
            "<no-memory",
            "<private",
            "private>",
            "<",
            ">",
            "/",
            "é",
            "日本",
            "🔒",
            " ",
            "\n",
            "word",
            "\u{200B}",
            "\u{0}",
        ]);
        prop::collection::vec(pieces, 0..16).prop_map(|pieces| pieces.concat())
    }

    fn contains_private_tag(text: &str) -> bool {
        text.to_ascii_lowercase().contains("private>")
    }

    proptest! {
        #[test]
        fn never_panics(raw in any::<String>()) {
            let _ = redact(raw);
        }

        #[test]
        fn never_panics_on_tag_soup(raw in tagged_text()) {
            let _ = redact(raw);
        }

        #[test]
        fn removing_private_spans_keeps_every_line_number(raw in tagged_text()) {
            let kept = remove_private_keeping_lines(&raw);
            prop_assert_eq!(kept.matches('\n').count(), raw.matches('\n').count());
            let revealed = super::super::normalize(&kept).to_ascii_lowercase();
            prop_assert!(!revealed.contains("<private>"));
            prop_assert!(!revealed.contains("</private>"));
        }

        #[test]
        fn a_private_word_never_survives(
            prefix in prop_oneof![tagged_text(), any::<String>()],
            before in any::<String>().prop_filter("no tags", |s| !contains_private_tag(s)),
            after in tagged_text().prop_filter("no tags", |s| !contains_private_tag(s)),
            suffix in prop_oneof![tagged_text(), any::<String>()],
        ) {
            let raw = format!("{prefix}<Private>{before}SECRETWORD{after}</private>{suffix}");
            if let Capture::Text { text, private_removed } = redact(raw) {
                prop_assert!(!text.contains("SECRETWORD"));
                prop_assert!(private_removed);
            }
        }
    }
}
