//! Vectors given in a file, one per text: the native benches' way of
//! building stores with embeddings without running a model
//! (`fill_store --given-vectors`, `build_store --vectors`). Each bench
//! includes this file as a module.

use std::collections::HashMap;
use std::path::Path;

/// Each of `texts` with its vector from `path`: one vector per text, in
/// order, each `dimensions` little-endian `f32`s.
pub fn read(
    path: &Path,
    texts: &[String],
    dimensions: usize,
) -> Result<HashMap<String, Vec<f32>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let width = dimensions * 4;
    if bytes.len() != texts.len() * width {
        return Err(format!(
            "{}: {} bytes, not {} vectors of {width}",
            path.display(),
            bytes.len(),
            texts.len()
        ));
    }
    let rows = bytes.chunks_exact(width).map(|row| {
        row.chunks_exact(4)
            .map(|x| f32::from_le_bytes([x[0], x[1], x[2], x[3]]))
            .collect()
    });
    Ok(texts.iter().cloned().zip(rows).collect())
}
