//! Target `text`: normalization, the capture policies (`<private>`,
//! `<no-memory>`) and lexical terms (`memtide::text`).
//!
//! The first byte picks a mode:
//! * even: the rest is raw text (UTF-8, lossily);
//! * odd: the rest is read (with `arbitrary`) as public pieces and secrets,
//!   and the raw text is the pieces with each secret wrapped in
//!   `<private>…</private>` and marked by a private-use character the public
//!   pieces lack: nothing of the stored form may hold that mark.
//!
//! Invariants on any raw text:
//! * `normalize` is idempotent (its documented fixed point);
//! * `capture` (what ingest stores) yields `NoMemory` exactly when the
//!   normalized text holds a `<no-memory>` marker; otherwise no
//!   `<private>`/`</private>` tag is left, and the text is the normalized
//!   raw text when there was none;
//! * the stored form is a fixed point of `capture`: capturing it again
//!   changes nothing and removes nothing — what `import` requires of an
//!   exported memory;
//! * terms are non-empty, at most 64 bytes; `term_overlap` is in `[0, 1]`
//!   and is 1 for a non-empty list with itself.

use arbitrary::{Arbitrary, Unstructured};
use memtide::text::{self, Capture};

/// Marks secret text in the odd mode.
const SECRET_MARK: char = '\u{E000}';

#[derive(Debug, Arbitrary)]
struct Pieces(Vec<(String, String)>);

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        check_raw(&String::from_utf8_lossy(rest));
        return;
    }
    let Ok(Pieces(pieces)) = Pieces::arbitrary_take_rest(Unstructured::new(rest)) else {
        return;
    };
    let mut raw = String::new();
    for (public, secret) in &pieces {
        raw.extend(public.chars().filter(|&c| c != SECRET_MARK));
        if secret.to_ascii_lowercase().contains("</private>") {
            continue;
        }
        raw.push_str("<private>");
        raw.push(SECRET_MARK);
        raw.push_str(secret);
        raw.push_str("</private>");
    }
    if let Some(stored) = check_raw(&raw) {
        assert!(!stored.contains(SECRET_MARK), "private text was kept");
    }
}

/// Checks the invariants on `raw`; returns the stored form unless the text
/// opted out.
fn check_raw(raw: &str) -> Option<String> {
    let normalized = text::normalize(raw);
    assert_eq!(text::normalize(&normalized), normalized, "normalize is not idempotent");
    assert_eq!(text::content_hash(&normalized).len(), 64);
    check_terms(raw);

    // The policies apply to the normalized text (see `text::capture`).
    let lower = normalized.to_ascii_lowercase();
    let opted_out = ["<no-memory>", "<no-memory/>", "<no-memory />"]
        .iter()
        .any(|marker| lower.contains(marker));
    let has_tags = lower.contains("<private>") || lower.contains("</private>");
    let stored = match text::capture(raw) {
        Capture::NoMemory => {
            assert!(opted_out, "NoMemory without a marker");
            return None;
        }
        Capture::Text {
            text,
            private_removed,
        } => {
            assert!(!opted_out, "a <no-memory> text was captured");
            assert_eq!(private_removed, has_tags);
            if !has_tags {
                assert_eq!(text::normalize(raw), text);
            }
            text
        }
    };
    let stored_lower = stored.to_ascii_lowercase();
    assert!(
        !stored_lower.contains("<private>") && !stored_lower.contains("</private>"),
        "a private tag survived: {stored:?}"
    );
    assert_eq!(
        text::capture(&stored),
        Capture::Text {
            text: stored.clone(),
            private_removed: false
        },
        "the stored form is not a fixed point of capture"
    );
    Some(stored)
}

fn check_terms(raw: &str) {
    let terms = text::terms(raw);
    for term in &terms {
        assert!(!term.is_empty() && term.len() <= 64, "bad term {term:?}");
    }
    let overlap = text::term_overlap(&terms, &text::terms("the coffee is hot"));
    assert!((0.0..=1.0).contains(&overlap), "overlap {overlap}");
    if !terms.is_empty() {
        assert_eq!(text::term_overlap(&terms, &terms), 1.0);
    }
}

