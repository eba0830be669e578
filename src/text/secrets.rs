//! Secrets and personal data at capture: credentials are cut out of a text
//! and replaced by [`SECRET_MARKER`], the rest of the text is kept; emails,
//! phone numbers and payment card numbers mark it as holding PII.
//!
//! The detector is a hand-written scanner (no regular expressions: the
//! engine runs in WebAssembly, where every dependency is bytes to load). It
//! looks for what is a credential by its shape, not by guessing:
//!
//! * provider keys by their documented prefixes (OpenAI and Anthropic `sk-`,
//!   AWS `AKIA`/`ASIA`, GitHub `ghp_`/`github_pat_`…, Stripe `sk_live_`…,
//!   Slack `xoxb-`… and its webhook URLs, Google `AIza`, `ya29.`,
//!   `GOCSPX-`);
//! * JSON Web Tokens (`eyJ….eyJ….…`);
//! * PEM private keys, from `-----BEGIN … PRIVATE KEY-----` to its end line
//!   (or the end of the text when it is cut off);
//! * the password of a URL (`postgres://user:password@host`);
//! * the value of an assignment whose name is a credential word
//!   (`password=…`, `API_KEY: …`, `"token": "…"`), and a token of high
//!   entropy within a few words after such a word (`my api key is 9f8a…`).
//!
//! An ordinary sentence has none of these shapes; the LoCoMo development
//! turns are the false-positive test (`tests/it/secrets.rs`).

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// What capture does with credentials and personal data (`secrets` in the
/// config). Both are on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// Replace credentials by [`SECRET_MARKER`] before anything is stored.
    pub redact: bool,
    /// Mark a memory whose text holds an email address, a phone number or
    /// a card number as `pii`.
    pub mark_pii: bool,
}

impl Default for SecretsConfig {
    fn default() -> Self {
        SecretsConfig {
            redact: true,
            mark_pii: true,
        }
    }
}

/// What replaces each credential in a stored text.
pub const SECRET_MARKER: &str = "[secret]";

/// A text with its credentials replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scrubbed {
    /// The text, each credential replaced by [`SECRET_MARKER`].
    pub text: String,
    /// How many credentials were replaced.
    pub secrets: usize,
}

/// Replaces every credential of `text` by [`SECRET_MARKER`]. A text without
/// any (most texts) is handed back as it is, not copied. The marker is not
/// taken for a credential, so scrubbing a scrubbed text changes nothing.
pub fn scrub(text: String) -> Scrubbed {
    let spans = secret_spans(&text, &Present::of(&text));
    if spans.is_empty() {
        return Scrubbed { text, secrets: 0 };
    }
    replace_spans(&text, &spans, false)
}

/// [`scrub`] keeping the text's lines: a credential spanning lines (a PEM
/// key) becomes the marker followed by the line breaks it held, so a file's
/// line numbers stay right.
pub fn scrub_keeping_lines(text: &str) -> Scrubbed {
    scrub_with(text, true)
}

fn scrub_with(text: &str, keep_lines: bool) -> Scrubbed {
    scrub_present(text, keep_lines, &Present::of(text))
}

/// What a text holds that the scanners look for, found in one pass each:
/// a scanner whose marker the text cannot hold finds nothing and is
/// skipped.
struct Present {
    /// (A superset of) the bytes the text holds. Most texts lack `-`, `_`
    /// or the capitals of the providers' prefixes; each skipped search is
    /// a pass over the text saved.
    bytes: ByteSet,
    /// Whether the text may hold a credential word ([`KEY_WORDS`]): the
    /// assignments and the tokens after such a word are looked for only
    /// then. That scan tried every word of every text, and most texts
    /// name no credential.
    credential_words: bool,
}

impl Present {
    fn of(text: &str) -> Self {
        Present {
            bytes: ByteSet::of(text),
            credential_words: holds_key_word_root(text),
        }
    }
}

/// [`scrub_with`] given what `text` may hold ([`Present`]).
fn scrub_present(text: &str, keep_lines: bool, present: &Present) -> Scrubbed {
    replace_spans(text, &secret_spans(text, present), keep_lines)
}

/// The byte ranges of `text`'s credentials: sorted, disjoint, on char
/// boundaries.
fn secret_spans(text: &str, present: &Present) -> Vec<Range<usize>> {
    let bytes = &present.bytes;
    let mut spans = Vec::new();
    if bytes.has_all("-----BEGIN ") {
        pem_blocks(text, &mut spans);
    }
    provider_keys(text, bytes, &mut spans);
    if bytes.has_all("://") {
        url_passwords(text, &mut spans);
    }
    if present.credential_words {
        assignments_and_context(text, &mut spans);
    }
    merge(spans)
}

/// `text` with each span replaced by [`SECRET_MARKER`] (and, with
/// `keep_lines`, the line breaks it held).
fn replace_spans(text: &str, spans: &[Range<usize>], keep_lines: bool) -> Scrubbed {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for span in spans {
        out.push_str(text.get(from..span.start).unwrap_or_default());
        out.push_str(SECRET_MARKER);
        if keep_lines {
            let breaks = text.get(span.clone()).unwrap_or_default().matches('\n').count();
            out.extend(std::iter::repeat_n('\n', breaks));
        }
        from = span.end;
    }
    out.push_str(text.get(from..).unwrap_or_default());
    Scrubbed {
        text: out,
        secrets: spans.len(),
    }
}

/// True when `text` holds an email address, a phone number or a payment
/// card number (Luhn-checked).
pub fn has_pii(text: &str) -> bool {
    // The digit runs are found once for both checks that read them.
    has_email(text) || {
        let runs = digit_runs(text);
        runs.iter().any(is_phone) || runs.iter().any(is_card)
    }
}

/// The set of bytes a text holds.
struct ByteSet([u64; 4]);

impl ByteSet {
    fn of(text: &str) -> Self {
        let mut set = [0u64; 4];
        for &b in text.as_bytes() {
            set[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        ByteSet(set)
    }

    /// True when the set holds every byte of `marker`.
    fn has_all(&self, marker: &str) -> bool {
        marker
            .bytes()
            .all(|b| self.0[usize::from(b >> 6)] & (1 << (b & 63)) != 0)
    }
}

/// Sorted, disjoint, on char boundaries (every bound the scanners produce
/// sits next to an ASCII byte or at an end of the text).
fn merge(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.retain(|s| s.start < s.end);
    spans.sort_by_key(|s| (s.start, s.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// True when the byte before `at` does not continue a word.
fn starts_word(bytes: &[u8], at: usize) -> bool {
    at == 0 || !is_word_byte(bytes[at - 1])
}

/// The end of the run of bytes from `at` that `allowed` accepts.
fn run_end(bytes: &[u8], at: usize, allowed: impl Fn(u8) -> bool) -> usize {
    let mut end = at;
    while end < bytes.len() && allowed(bytes[end]) {
        end += 1;
    }
    end
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A provider's key: its prefix, the bytes its body may hold and the
/// shortest body.
struct Provider {
    prefix: &'static str,
    body: fn(u8) -> bool,
    min_body: usize,
}

fn upper_or_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn alnum_underscore(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The documented key formats. A body must also hold a digit (a key is
/// random; a hyphenated word after `sk-` is not a key).
const PROVIDERS: &[Provider] = &[
    // OpenAI (`sk-…`, `sk-proj-…`) and Anthropic (`sk-ant-api03-…`).
    Provider {
        prefix: "sk-",
        body: is_key_byte,
        min_body: 20,
    },
    // AWS access key ids: exactly 16 more upper-case letters or digits.
    Provider {
        prefix: "AKIA",
        body: upper_or_digit,
        min_body: 16,
    },
    Provider {
        prefix: "ASIA",
        body: upper_or_digit,
        min_body: 16,
    },
    // GitHub tokens.
    Provider {
        prefix: "ghp_",
        body: alnum,
        min_body: 30,
    },
    Provider {
        prefix: "gho_",
        body: alnum,
        min_body: 30,
    },
    Provider {
        prefix: "ghu_",
        body: alnum,
        min_body: 30,
    },
    Provider {
        prefix: "ghs_",
        body: alnum,
        min_body: 30,
    },
    Provider {
        prefix: "ghr_",
        body: alnum,
        min_body: 30,
    },
    Provider {
        prefix: "github_pat_",
        body: alnum_underscore,
        min_body: 20,
    },
    // Stripe secret and restricted keys, webhook secrets.
    Provider {
        prefix: "sk_live_",
        body: alnum,
        min_body: 10,
    },
    Provider {
        prefix: "sk_test_",
        body: alnum,
        min_body: 10,
    },
    Provider {
        prefix: "rk_live_",
        body: alnum,
        min_body: 10,
    },
    Provider {
        prefix: "rk_test_",
        body: alnum,
        min_body: 10,
    },
    Provider {
        prefix: "whsec_",
        body: alnum,
        min_body: 20,
    },
    // Slack tokens.
    Provider {
        prefix: "xoxb-",
        body: is_key_byte,
        min_body: 10,
    },
    Provider {
        prefix: "xoxp-",
        body: is_key_byte,
        min_body: 10,
    },
    Provider {
        prefix: "xoxa-",
        body: is_key_byte,
        min_body: 10,
    },
    Provider {
        prefix: "xoxr-",
        body: is_key_byte,
        min_body: 10,
    },
    Provider {
        prefix: "xoxs-",
        body: is_key_byte,
        min_body: 10,
    },
    Provider {
        prefix: "xoxe-",
        body: is_key_byte,
        min_body: 10,
    },
    Provider {
        prefix: "xapp-",
        body: is_key_byte,
        min_body: 10,
    },
    // Google API keys, OAuth access tokens and client secrets.
    Provider {
        prefix: "AIza",
        body: is_key_byte,
        min_body: 35,
    },
    Provider {
        prefix: "ya29.",
        body: is_key_byte,
        min_body: 20,
    },
    Provider {
        prefix: "GOCSPX-",
        body: is_key_byte,
        min_body: 20,
    },
];

fn provider_keys(text: &str, present: &ByteSet, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for provider in PROVIDERS.iter().filter(|p| present.has_all(p.prefix)) {
        for (at, _) in text.match_indices(provider.prefix) {
            if !starts_word(bytes, at) {
                continue;
            }
            let body = at + provider.prefix.len();
            let end = run_end(bytes, body, provider.body);
            let body_bytes = &bytes[body..end];
            if body_bytes.len() >= provider.min_body && body_bytes.iter().any(u8::is_ascii_digit)
            {
                spans.push(at..end);
            }
        }
    }
    // Slack incoming webhooks: the path after `/services/` is the secret.
    const SLACK_HOOK: &str = "hooks.slack.com/services/";
    let hooks = present
        .has_all(SLACK_HOOK)
        .then(|| text.match_indices(SLACK_HOOK));
    for (at, _) in hooks.into_iter().flatten() {
        let body = at + SLACK_HOOK.len();
        let end = run_end(bytes, body, |b| is_key_byte(b) || b == b'/');
        if end - body >= 10 {
            spans.push(body..end);
        }
    }
    if present.has_all("eyJ.") {
        jwts(text, spans);
    }
}

fn is_base64url(b: u8) -> bool {
    is_key_byte(b)
}

/// `eyJ<header>.eyJ<payload>.<signature>`: a JSON header and payload in
/// base64url (`{"` encodes as `eyJ`).
fn jwts(text: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices("eyJ") {
        if !starts_word(bytes, at) {
            continue;
        }
        let header_end = run_end(bytes, at, is_base64url);
        if header_end - at < 10 || bytes.get(header_end) != Some(&b'.') {
            continue;
        }
        let payload = header_end + 1;
        if !text[payload..].starts_with("eyJ") {
            continue;
        }
        let payload_end = run_end(bytes, payload, is_base64url);
        if payload_end - payload < 10 {
            continue;
        }
        let mut end = payload_end;
        if bytes.get(payload_end) == Some(&b'.') {
            end = run_end(bytes, payload_end + 1, is_base64url);
        }
        spans.push(at..end);
    }
}

/// `-----BEGIN [RSA |EC |OPENSSH |ENCRYPTED ]PRIVATE KEY-----` through its
/// `-----END … PRIVATE KEY-----` line, or to the end of the text.
fn pem_blocks(text: &str, spans: &mut Vec<Range<usize>>) {
    const BEGIN: &str = "-----BEGIN ";
    const END: &str = "-----END ";
    const TAIL: &str = "PRIVATE KEY-----";
    let mut from = 0;
    while let Some(found) = text[from..].find(BEGIN) {
        let at = from + found;
        let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
        let header = &text[at..line_end];
        if !header.contains(TAIL) {
            from = at + BEGIN.len();
            continue;
        }
        let end = text[line_end..]
            .find(END)
            .map(|n| line_end + n)
            .and_then(|e| text[e..].find(TAIL).map(|n| e + n + TAIL.len()))
            .unwrap_or(text.len());
        spans.push(at..end);
        from = end;
    }
}

/// The password of `scheme://user:password@host`.
fn url_passwords(text: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices("://") {
        let authority = at + 3;
        let end = run_end(bytes, authority, |b| {
            !b.is_ascii_whitespace() && !matches!(b, b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>')
        });
        let part = &text[authority..end];
        let Some(at_sign) = part.rfind('@') else {
            continue;
        };
        let Some(colon) = part[..at_sign].find(':') else {
            continue;
        };
        if at_sign > colon + 1 {
            spans.push(authority + colon + 1..authority + at_sign);
        }
    }
}

/// Words that name a credential: an assignment to a name ending in one of
/// them (`DB_PASSWORD=…`) or a long random token shortly after one is a
/// secret.
const KEY_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "key",
    "credential",
    "credentials",
    "bearer",
    "authorization",
    "auth",
];

/// Roots such that every word of [`KEY_WORDS`] holds one (a test checks
/// it): a name that ends in a credential word holds its root.
const KEY_WORD_ROOTS: &[&str] = &[
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "bearer",
    "auth",
];

/// For each byte, the roots of [`KEY_WORD_ROOTS`] that start with it in
/// either case, one bit each.
const ROOT_STARTS: [u8; 256] = {
    assert!(KEY_WORD_ROOTS.len() <= 8, "one bit per root");
    let mut starts = [0u8; 256];
    let mut i = 0;
    while i < KEY_WORD_ROOTS.len() {
        let first = KEY_WORD_ROOTS[i].as_bytes()[0];
        starts[first as usize] |= 1 << i;
        starts[first.to_ascii_uppercase() as usize] |= 1 << i;
        i += 1;
    }
    starts
};

/// True when `text` holds one of [`KEY_WORD_ROOTS`] in any ASCII letter
/// case: otherwise no word of it names a credential. One pass; at each
/// byte only the roots that start with it are compared.
fn holds_key_word_root(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, &b)| {
        let mut roots = ROOT_STARTS[usize::from(b)];
        while roots != 0 {
            let root = KEY_WORD_ROOTS[roots.trailing_zeros() as usize].as_bytes();
            if bytes
                .get(at..at + root.len())
                .is_some_and(|word| word.eq_ignore_ascii_case(root))
            {
                return true;
            }
            roots &= roots - 1;
        }
        false
    })
}

/// Names whose value is a secret whatever it looks like (a password may be
/// a plain word).
const PASSWORD_WORDS: &[&str] = &["password", "passwd", "passphrase", "pwd"];

/// Does an assignment's name end in a credential word (`api_key`,
/// `DB_PASSWORD`, `client-secret`, `accessToken`)?
fn names_credential(name: &str) -> Option<bool> {
    // Compared without case, in place: this runs for every word of every
    // text ingested. `last` is the name's last run of ASCII letters and
    // digits (the bytes of a non-ASCII character are none of them).
    let bytes = name.as_bytes();
    let end = bytes
        .iter()
        .rposition(u8::is_ascii_alphanumeric)
        .map_or(0, |at| at + 1);
    let start = bytes[..end]
        .iter()
        .rposition(|b| !b.is_ascii_alphanumeric())
        .map_or(0, |at| at + 1);
    let last = &bytes[start..end];
    let ends_with = |w: &str| {
        last.len() >= w.len() && last[last.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
    };
    // camelCase names end in a capitalized word: `accessToken`.
    let tail = KEY_WORDS.iter().find(|w| {
        ends_with(w) && (last.len() == w.len() || camel_tail(name, w.len()))
    })?;
    Some(PASSWORD_WORDS.contains(tail))
}

/// True when the last `len` letters of `name` (ignoring trailing quotes)
/// start with an upper-case letter after a lower-case one (`accessToken`),
/// or the whole name is one lower-case word (`apikey` is the word).
fn camel_tail(name: &str, len: usize) -> bool {
    let name = name.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    let bytes = name.as_bytes();
    if bytes.len() <= len {
        return true;
    }
    let first = bytes[bytes.len() - len];
    first.is_ascii_uppercase() && bytes[bytes.len() - len - 1].is_ascii_lowercase()
}

/// Bytes a token value may hold.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.' | b'~')
}

/// A random-looking token: at least 16 bytes of token characters, letters
/// and digits both, and at least 3 bits of entropy per character.
fn is_high_entropy(token: &str) -> bool {
    let bytes = token.as_bytes();
    if bytes.len() < 16 || !bytes.iter().all(|&b| is_token_byte(b)) {
        return false;
    }
    let digits = bytes.iter().any(u8::is_ascii_digit);
    let letters = bytes.iter().any(u8::is_ascii_alphabetic);
    digits && letters && entropy(bytes) >= 3.0
}

/// Shannon entropy of the bytes, in bits per byte.
fn entropy(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// A whitespace-separated word of the text with its byte range.
struct Word<'a> {
    text: &'a str,
    start: usize,
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push(Word {
                    text: &text[s..i],
                    start: s,
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(Word {
            text: &text[s..],
            start: s,
        });
    }
    out
}

/// The range of `word` without the quotes, brackets and sentence
/// punctuation around it.
fn core(word: &Word<'_>) -> Range<usize> {
    let is_wrap = |c: char| {
        matches!(
            c,
            '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';'
        )
    };
    let trimmed_start = word.text.trim_start_matches(is_wrap);
    let start = word.start + (word.text.len() - trimmed_start.len());
    let mut trimmed = trimmed_start.trim_end_matches(is_wrap);
    // A sentence's full stop, colon or question mark is not part of a token.
    trimmed = trimmed.trim_end_matches(['.', ':', '!', '?']);
    trimmed = trimmed.trim_end_matches(is_wrap);
    start..start + trimmed.len()
}

/// How many words after a credential word a random token is still taken
/// as its value (`my token for the nightly sync is 7Fh2…`).
const CONTEXT_WORDS: usize = 6;

/// Assignments (`name=value`, `name: value`, `"name": "value"`) to a
/// credential name, and high-entropy tokens shortly after a credential
/// word.
fn assignments_and_context(text: &str, spans: &mut Vec<Range<usize>>) {
    let words = words(text);
    // Words left in which a token counts as a credential's value, and
    // whether that credential is a password (any value counts after
    // an explicit `password:`).
    let mut context = 0usize;
    let mut pending_password = false;
    // After a password word (`my wifi password is Tr0ub4dor&3`), a word
    // that looks made up (digits or symbols) is its value.
    let mut near_password = false;
    for word in &words {
        let range = core(word);
        let token = &text[range.clone()];
        if word.text.contains(SECRET_MARKER) {
            // Already scrubbed: a value that is the marker is done.
            context = 0;
            pending_password = false;
            continue;
        }
        // `name=value` or `name:value` inside one word.
        if let Some(sep) = token.find(['=', ':']) {
            let (name, value) = (&token[..sep], &token[sep + 1..]);
            let value = value.trim_start_matches(['=', ':', '"', '\'']);
            let value_start = range.end - value.len();
            if !token.contains("://") {
                if let Some(is_password) = names_credential(name) {
                    if !value.is_empty() && (is_password || is_high_entropy(value)) {
                        spans.push(value_start..range.end);
                        context = 0;
                        pending_password = false;
                        continue;
                    }
                    if value.is_empty() {
                        // `password: hunter2`: the value is the next word.
                        context = CONTEXT_WORDS;
                        pending_password = is_password;
                        continue;
                    }
                }
            }
        }
        if context > 0 {
            if pending_password && !token.is_empty() && is_assigned_password(word.text) {
                spans.push(range.clone());
                context = 0;
                pending_password = false;
                continue;
            }
            if is_high_entropy(token) || (near_password && looks_like_password(token)) {
                spans.push(range.clone());
                context = 0;
                pending_password = false;
                continue;
            }
            context -= 1;
            pending_password = false;
        }
        if context == 0 {
            near_password = false;
        }
        if let Some(is_password) = names_credential(token) {
            context = CONTEXT_WORDS;
            near_password = is_password;
            // Only `password:` (a word ending in a separator) makes the next
            // word a password whatever it is.
            pending_password = is_password && word.text.trim_end_matches(['"', '\'']).ends_with([':', '=']);
        }
    }
}

/// A password-like word: at least 6 bytes with a digit or a symbol in it.
fn looks_like_password(token: &str) -> bool {
    token.len() >= 6
        && token
            .bytes()
            .any(|b| b.is_ascii_digit() || (b.is_ascii_punctuation() && b != b'\''))
}

/// A word after `password:` is its value unless it is a connective.
fn is_assigned_password(word: &str) -> bool {
    !matches!(
        word.to_ascii_lowercase().as_str(),
        "is" | "was" | "=" | ":" | "-" | "of" | "for" | "the" | "a" | "an"
    )
}

fn has_email(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices('@').any(|(at, _)| {
        let local = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-'))
            .count();
        if local == 0 {
            return false;
        }
        let end = run_end(bytes, at + 1, |b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'));
        let domain = text[at + 1..end].trim_end_matches(['.', '-']);
        let mut labels = domain.split('.');
        let first = labels.next().unwrap_or_default();
        let tld = domain.rsplit('.').next().unwrap_or_default();
        domain.contains('.')
            && !first.is_empty()
            && tld.len() >= 2
            && tld.bytes().all(|b| b.is_ascii_alphabetic())
            && labels.all(|l| !l.is_empty())
    })
}

/// Runs of digits joined by single separators (`-`, ` `, `.`, `(`, `)`),
/// each with its digits and the lengths of its groups.
struct DigitRun {
    leading_plus: bool,
    digits: Vec<u8>,
    groups: Vec<usize>,
    parenthesized_first: bool,
}

fn digit_runs(text: &str) -> Vec<DigitRun> {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit() || bytes[i] == b'+' || bytes[i] == b'(';
        if !starts || (i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.')) {
            i += 1;
            continue;
        }
        let leading_plus = bytes[i] == b'+';
        let parenthesized_first = bytes[i] == b'(';
        let mut j = i + usize::from(leading_plus || parenthesized_first);
        let mut digits = Vec::new();
        let mut groups = Vec::new();
        let mut group = 0;
        while j < bytes.len() {
            let b = bytes[j];
            if b.is_ascii_digit() {
                digits.push(b - b'0');
                group += 1;
                j += 1;
            } else if matches!(b, b'-' | b' ' | b'.' | b')' | b'(')
                && group > 0
                && bytes.get(j + 1).is_some_and(|n| n.is_ascii_digit() || (b == b')' && *n == b' '))
            {
                groups.push(group);
                group = 0;
                j += 1;
                // `) ` in `(415) 555-0100`.
                if b == b')' && bytes.get(j) == Some(&b' ') {
                    j += 1;
                }
            } else {
                break;
            }
        }
        if group > 0 {
            groups.push(group);
        }
        // A run glued to letters (`A1234…`, `1234abc`) is not a number.
        let glued = bytes.get(j).is_some_and(|b| b.is_ascii_alphabetic());
        if !glued && !digits.is_empty() {
            runs.push(DigitRun {
                leading_plus,
                digits,
                groups,
                parenthesized_first,
            });
        }
        i = j.max(i + 1);
    }
    runs
}

/// `+44 20 7946 0958` (a `+` and 8 to 15 digits in groups), or the North
/// American `415-555-0100`, `(415) 555-0100`, `1-415-555-0100`.
fn is_phone(run: &DigitRun) -> bool {
    let n = run.digits.len();
    if run.leading_plus {
        return (8..=15).contains(&n) && run.groups.len() >= 2;
    }
    let g = run.groups.as_slice();
    matches!(g, [3, 3, 4]) || matches!(g, [1, 3, 3, 4]) && run.digits[0] == 1 && !run.parenthesized_first
}

/// 13 to 19 digits, bare or in groups, that pass the Luhn check.
fn is_card(run: &DigitRun) -> bool {
    let n = run.digits.len();
    !run.leading_plus
        && (13..=19).contains(&n)
        && (run.groups.len() == 1 || run.groups.iter().all(|&g| (4..=6).contains(&g)))
        && luhn(&run.digits)
}

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 {
                    doubled - 9
                } else {
                    doubled
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests;
