//! The word-embedding table's int8 codes, taken out of the graph by
//! [`super::rewrites::gather_before_dequantize`], which memtide gathers the
//! input's rows from.
//!
//! The table is read once tract has typed and optimized the graph, in
//! pieces of about [`PIECE_BYTES`]: in WebAssembly the model's linear memory
//! never shrinks, and tract's transients leave holes among the plan's
//! weights that pieces fill where one 11 MiB buffer would go on top
//! (`docs/speed.md`, "Sixteenth session").

use super::stream::{OnnxFile, Span};

/// Bytes of a piece of the table, at most (one row at least).
const PIECE_BYTES: usize = 8 * 1024;

/// Where the table's codes are until it is read: in memory (a table below
/// [`super::stream::LEFT_FROM`], or the graph still read them), or left in
/// the file.
#[derive(Debug)]
enum Codes {
    Held(Vec<u8>),
    Left(Span),
}

/// The table's codes before they are read: its width and where they are.
#[derive(Debug)]
pub struct WordCodes {
    width: usize,
    codes: Codes,
}

impl WordCodes {
    /// Codes held in memory, `width` to a row.
    pub(super) fn held(width: usize, bytes: Vec<u8>) -> WordCodes {
        WordCodes {
            width,
            codes: Codes::Held(bytes),
        }
    }

    /// Codes left in the file at `span`, `width` to a row.
    pub(super) fn left(width: usize, span: Span) -> WordCodes {
        WordCodes {
            width,
            codes: Codes::Left(span),
        }
    }

    /// Codes per row: the embedding's width.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Where the codes are in the file, when they were left there.
    pub fn left_span(&self) -> Option<Span> {
        match self.codes {
            Codes::Left(span) => Some(span),
            Codes::Held(_) => None,
        }
    }

    /// The table, its codes read from `file` if they were left there (the
    /// file the decode that left them read).
    pub fn read<F: OnnxFile + ?Sized>(self, file: &F) -> WordTable {
        let width = self.width.max(1);
        let piece_rows = (PIECE_BYTES / width).max(1);
        let piece_len = piece_rows * width;
        let len = match &self.codes {
            Codes::Held(bytes) => bytes.len(),
            Codes::Left(span) => span.len,
        };
        let rows = len / width;
        let pieces = (0..rows.div_ceil(piece_rows))
            .map(|piece| {
                let start = piece * piece_len;
                let end = (start + piece_len).min(rows * width);
                let mut codes = vec![0u8; end - start];
                match &self.codes {
                    // `end` is within the codes: `rows` are whole rows of them.
                    Codes::Held(bytes) => {
                        if let Some(held) = bytes.get(start..end) {
                            codes.copy_from_slice(held);
                        }
                    }
                    Codes::Left(span) => file.read_at(span.offset + start, &mut codes),
                }
                // Same size and alignment: the bytes are reused in place.
                codes.into_iter().map(|byte| byte as i8).collect()
            })
            .collect();
        WordTable {
            width,
            piece_rows,
            rows,
            pieces,
        }
    }
}

/// The word-embedding table's int8 codes, row by row, `width` codes each,
/// in pieces of `piece_rows` rows.
#[derive(Debug)]
pub struct WordTable {
    width: usize,
    piece_rows: usize,
    rows: usize,
    pieces: Vec<Box<[i8]>>,
}

impl WordTable {
    /// Codes per row: the embedding's width.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The rows of `ids`, one after the other; `None` if an id is not a
    /// row of the table.
    pub fn gather(&self, ids: &[i64]) -> Option<Vec<i8>> {
        let mut gathered = Vec::with_capacity(ids.len() * self.width);
        for &id in ids {
            let row = usize::try_from(id).ok().filter(|&row| row < self.rows)?;
            let piece = self.pieces.get(row / self.piece_rows)?;
            let start = (row % self.piece_rows) * self.width;
            gathered.extend_from_slice(piece.get(start..start + self.width)?);
        }
        Some(gathered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `rows` rows of `width` codes, each code its row and
    /// column mixed, as bytes.
    fn codes(rows: usize, width: usize) -> Vec<u8> {
        (0..rows * width)
            .map(|i| ((i / width) * 7 + (i % width) * 13) as u8)
            .collect()
    }

    fn row(bytes: &[u8], width: usize, id: usize) -> Vec<i8> {
        bytes[id * width..][..width]
            .iter()
            .map(|&b| b as i8)
            .collect()
    }

    #[test]
    fn rows_are_gathered_across_pieces_held_or_read_from_the_file() {
        // Widths that divide a piece, that leave a remainder, and one
        // wider than a piece (a row a piece).
        for width in [384, 100, PIECE_BYTES + 3] {
            let rows = 3 * (PIECE_BYTES / width).max(1) + 2;
            let bytes = codes(rows, width);
            let mut file = vec![9u8; 17];
            file.extend_from_slice(&bytes);
            file.extend_from_slice(&[9; 5]);
            let span = Span {
                offset: 17,
                len: bytes.len(),
            };
            let read = WordCodes::left(width, span).read(&file);
            let held = WordCodes::held(width, bytes.clone()).read(&[][..]);
            for table in [&read, &held] {
                assert_eq!(table.width(), width);
                assert_eq!(table.pieces.len(), rows.div_ceil(table.piece_rows));
                assert!(table
                    .pieces
                    .iter()
                    .all(|piece| piece.len() <= PIECE_BYTES.max(width)));
                let ids = [
                    0,
                    1,
                    rows - 1,
                    table.piece_rows - 1,
                    table.piece_rows,
                    2,
                    rows - 2,
                ];
                let ids: Vec<i64> = ids.iter().map(|&id| id as i64).collect();
                let want: Vec<i8> = ids
                    .iter()
                    .flat_map(|&id| row(&bytes, width, id as usize))
                    .collect();
                assert_eq!(table.gather(&ids).unwrap(), want, "width {width}");
                assert_eq!(table.gather(&[rows as i64]), None);
                assert_eq!(table.gather(&[-1]), None);
                assert_eq!(table.gather(&[]).unwrap(), Vec::<i8>::new());
            }
        }
    }

    #[test]
    fn an_empty_table_gathers_nothing() {
        let table = WordCodes::held(4, Vec::new()).read(&[][..]);
        assert!(table.pieces.is_empty());
        assert_eq!(table.gather(&[0]), None);
    }
}
