//! The command's plumbing: how a failure is told, files read and written
//! atomically, standard input read within its limit and parsed as JSON or
//! JSON Lines, and JSON printed.

use std::io::{self, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use memtide::Error;

/// Largest standard input accepted, in bytes.
pub(crate) const MAX_STDIN_BYTES: usize = 256 * 1024 * 1024;

/// Why a command failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The library refused the operation.
    Memtide(Error),
    /// Reading stdin or writing stdout failed.
    Io(io::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Memtide(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// The path a file given on the command line is stored under: as given,
/// with `\` as `/` and without leading `./`.
pub(crate) fn stored_path(file: &Path) -> String {
    let path = file.to_string_lossy().replace('\\', "/");
    let mut trimmed = path.as_str();
    while let Some(rest) = trimmed.strip_prefix("./") {
        trimmed = rest;
    }
    trimmed.to_string()
}

/// Reads a UTF-8 text file.
pub(crate) fn read_text_file(file: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(file)?;
    String::from_utf8(bytes)
        .map_err(|e| Error::invalid(format!("{} is not UTF-8 text: {e}", file.display())).into())
}

/// Reads a UTF-8 text file; a missing file reads as empty.
pub(crate) fn read_text_file_or_empty(file: &Path) -> Result<String, Failure> {
    match read_text_file(file) {
        Err(Failure::Io(e)) if e.kind() == ErrorKind::NotFound => Ok(String::new()),
        other => other,
    }
}

/// Replaces `file` with `text` through a temporary file and a rename, so a
/// reader never sees half of it.
pub(crate) fn write_file_atomically(file: &Path, text: &str) -> Result<(), Failure> {
    let mut temporary = file.as_os_str().to_owned();
    temporary.push(".memtide-tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, file)?;
    Ok(())
}

/// Texts embedded per call of the model; each call sorts its texts by length
/// and runs them in bounded sub-batches, so this only bounds the output held.
#[cfg(feature = "semantic")]
const EMBED_CHUNK: usize = 1024;

/// One line of `embed`'s input.
#[cfg(feature = "semantic")]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmbedRequest {
    text: String,
}

/// The line `embed` prints per input.
#[cfg(feature = "semantic")]
#[derive(Serialize)]
pub(crate) struct EmbedOutput<'a> {
    ids: Vec<u32>,
    embedding: &'a [f32],
}

/// Embeds every text of `input` (JSON Lines, all parsed before the model
/// loads) with the model in `model_dir`.
#[cfg(feature = "semantic")]
pub(crate) fn embed(
    model_dir: &Path,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    use memtide::embed::{Embedder, MiniLm};

    let lines: Vec<Line<EmbedRequest>> = parse_json_lines(&read_limited(input, MAX_STDIN_BYTES)?)?;
    let texts: Vec<String> = lines.into_iter().map(|line| line.value.text).collect();
    let model = MiniLm::from_dir(model_dir)?;
    for chunk in texts.chunks(EMBED_CHUNK) {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let embeddings = model.embed_batch(&chunk)?;
        for (text, embedding) in chunk.iter().zip(&embeddings) {
            let ids = model.token_ids(text);
            print_json(out, &EmbedOutput { ids, embedding })?;
        }
    }
    Ok(())
}

/// Reads all of `input`, refusing more than `limit` bytes.
pub(crate) fn read_limited(input: &mut dyn Read, limit: usize) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    input.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(Error::TooLarge {
            what: "standard input".into(),
            size: bytes.len(),
            limit,
        }
        .into());
    }
    Ok(bytes)
}

/// One parsed request and the 1-based line it came from.
pub(crate) struct Line<T> {
    pub(crate) number: usize,
    pub(crate) value: T,
}

/// Checks every parsed line with `check` before anything runs, naming the
/// first bad line; returns the values.
pub(crate) fn check_lines<T>(
    lines: Vec<Line<T>>,
    check: impl Fn(&T) -> Result<(), Error>,
) -> Result<Vec<T>, Error> {
    lines
        .into_iter()
        .map(|line| {
            check(&line.value).map_err(|e| e.at(&format!("line {}", line.number)))?;
            Ok(line.value)
        })
        .collect()
}

/// Parses JSON Lines, skipping blank lines; the first bad line fails the
/// whole input with `line N: …` (1-based, blank lines counted).
pub(crate) fn parse_json_lines<T: DeserializeOwned>(bytes: &[u8]) -> Result<Vec<Line<T>>, Error> {
    let mut values = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = serde_json::from_slice(line).map_err(|e| {
            // Each line is its own document: drop serde's "at line 1".
            let full = e.to_string();
            let location = format!(" at line {} column {}", e.line(), e.column());
            let message = full.strip_suffix(&location).unwrap_or(&full);
            Error::invalid(format!(
                "line {}: {message} at column {}",
                index + 1,
                e.column()
            ))
        })?;
        values.push(Line {
            number: index + 1,
            value,
        });
    }
    Ok(values)
}

/// Prints one value as a compact JSON line.
/// Standard input as one JSON object of type `T`.
pub(crate) fn parse_object<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(bytes).map_err(|e| {
        Error::invalid(format!(
            "standard input is not the JSON object expected: {e}"
        ))
        .into()
    })
}

pub(crate) fn print_json(out: &mut dyn Write, value: &impl Serialize) -> Result<(), Failure> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_beyond_the_limit_is_refused() {
        assert_eq!(read_limited(&mut &b"abcd"[..], 4).unwrap(), b"abcd");
        match read_limited(&mut &b"abcde"[..], 4) {
            Err(Failure::Memtide(e)) => assert_eq!(e.code(), "TOO_LARGE"),
            other => panic!("expected TOO_LARGE, got {other:?}"),
        }
    }

    #[test]
    fn json_lines_skip_blank_lines_and_name_the_bad_line() {
        let lines = parse_json_lines::<u32>(b"1\n\n  \r\n2\n").unwrap();
        let numbered: Vec<(usize, u32)> = lines.iter().map(|l| (l.number, l.value)).collect();
        assert_eq!(numbered, [(1, 1), (4, 2)]);
        let error = parse_json_lines::<u32>(b"1\n\n[\n4").err().unwrap();
        assert_eq!(error.code(), "INVALID_INPUT");
        let message = error.to_string();
        assert!(message.contains("line 3: "), "{message}");
        assert!(!message.contains("at line 1"), "{message}");
    }
}
