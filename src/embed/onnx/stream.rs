//! The ONNX file decoded into its protobuf a window at a time.
//!
//! Why: in WebAssembly the model's linear memory never shrinks, so its
//! size is the loading's high-water mark. Copied in whole, the file (as
//! large as the weights) would sit in linear memory beside the protobuf
//! decoded from it, twice the weights at once. Read through [`Chunks`], the
//! host keeps the file and only a window of it is copied in at a time; a
//! large field (a weight tensor's bytes) is copied straight into its own
//! buffer. The file's SHA-256 (the model's id) is taken on the way, so the
//! file is read once.
//!
//! A field of [`LEFT_FROM`] bytes or more (in MiniLM, only the word table)
//! is not copied in at all: it is hashed as it streams past and decoded as
//! a short placeholder naming where it is in the file ([`Left`]). Whoever
//! takes the field reads it when it is needed, once tract has typed and
//! optimized the graph, so that it is not under the transients of that
//! work and its pieces can go into the holes they leave (`docs/speed.md`,
//! "Sixteenth session"). Any placeholder no one takes is read back into
//! its tensor before tract sees the graph ([`Left::restore`]).
//!
use prost::bytes::{Buf, Bytes};
use prost::Message;
use sha2::{Digest, Sha256};
use tract_onnx::pb::{GraphProto, ModelProto};

/// Bytes copied in at a time, besides the large fields.
const WINDOW: usize = 64 * 1024;

/// An ONNX file the model is read from, by offset, wherever its bytes are
/// (a host's buffer, a `Vec`).
pub trait OnnxFile {
    /// The file's length in bytes.
    fn len(&self) -> usize;

    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the bytes from `offset` into `into`: `offset + into.len()`
    /// is at most [`OnnxFile::len`].
    fn read_at(&self, offset: usize, into: &mut [u8]);
}

impl OnnxFile for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn read_at(&self, offset: usize, into: &mut [u8]) {
        if let Some(bytes) = self.get(offset..offset + into.len()) {
            into.copy_from_slice(bytes);
        }
    }
}

impl OnnxFile for Vec<u8> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn read_at(&self, offset: usize, into: &mut [u8]) {
        self.as_slice().read_at(offset, into);
    }
}

/// Bytes from which [`decode`] leaves a field in the file: the word table
/// of a BERT-sized vocabulary (11.2 MiB for MiniLM's 30,522 × 384 int8
/// codes, 47 MiB as `f32`), above any single other weight of such a model
/// (a 1,536 × 384 `f32` matrix is 2.25 MiB).
pub const LEFT_FROM: usize = 4 << 20;

/// A field's bytes in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: usize,
    pub len: usize,
}

/// What a field left in the file decodes as: these bytes, then the field's
/// place among the fields left, 4 bytes little-endian.
const PLACEHOLDER: [u8; 12] = *b"memtide:left";
const PLACEHOLDER_LEN: usize = PLACEHOLDER.len() + 4;

/// The fields a [`decode`] left in the file, named by their placeholders.
#[derive(Debug, Default)]
pub struct Left {
    spans: Vec<Span>,
}

impl Left {
    /// Where the field that `bytes` stand for is, when they are one of
    /// this decode's placeholders.
    pub fn span_of(&self, bytes: &[u8]) -> Option<Span> {
        self.spans.get(self.place_of(bytes)?).copied()
    }

    fn place_of(&self, bytes: &[u8]) -> Option<usize> {
        let place = bytes.strip_prefix(&PLACEHOLDER)?;
        let place = u32::from_le_bytes(place.try_into().ok()?) as usize;
        (place < self.spans.len()).then_some(place)
    }

    /// Reads back from `file` every field whose placeholder an initializer
    /// of `graph` holds. True when every field left is then accounted for,
    /// read back here or among `taken` (fields whoever took them reads);
    /// false when a placeholder is somewhere else in the model (a tensor
    /// of a node's attribute, say), which only decoding again with nothing
    /// left can give back.
    pub fn restore<F: OnnxFile + ?Sized>(
        &self,
        graph: &mut GraphProto,
        taken: &[Span],
        file: &F,
    ) -> bool {
        let mut found: Vec<bool> = self.spans.iter().map(|span| taken.contains(span)).collect();
        for tensor in &mut graph.initializer {
            if let Some(place) = self.place_of(&tensor.raw_data) {
                let span = self.spans[place];
                let mut bytes = vec![0; span.len];
                file.read_at(span.offset, &mut bytes);
                tensor.raw_data = bytes;
                found[place] = true;
            }
        }
        found.into_iter().all(|found| found)
    }
}

/// A decoded file: the protobuf, the file's SHA-256 and the fields left in
/// the file.
#[derive(Debug)]
pub struct Decoded {
    pub proto: ModelProto,
    pub digest: [u8; 32],
    pub left: Left,
}

/// The protobuf of `file` and the file's SHA-256, with every field of
/// `left_from` bytes or more left in the file (`usize::MAX`: none).
///
/// A field copied in that looks like a placeholder (16 bytes starting
/// with its 12) would be taken for one, so a decode that meets one and
/// left something decodes again with nothing left.
pub fn decode<F: OnnxFile + ?Sized>(
    file: &F,
    left_from: usize,
) -> Result<Decoded, prost::DecodeError> {
    let mut chunks = Chunks::new(file, left_from);
    let proto = ModelProto::decode(&mut chunks)?;
    // `decode` reads to the end; what it left (nothing) is hashed too.
    let rest = chunks.remaining();
    chunks.advance(rest);
    if chunks.ambiguous && !chunks.left.spans.is_empty() {
        return decode(file, usize::MAX);
    }
    Ok(Decoded {
        proto,
        digest: chunks.hash.finalize().into(),
        left: chunks.left,
    })
}

/// A [`Buf`] over an [`OnnxFile`]: a window of the file in memory, read
/// forward, every byte hashed once as it is consumed.
struct Chunks<'a, F: ?Sized> {
    file: &'a F,
    /// The file's bytes from `start`.
    window: Vec<u8>,
    start: usize,
    /// Offset of the next byte to consume, within the window or at its end
    /// (only at the file's end: the window is refilled as it runs out).
    next: usize,
    hash: Sha256,
    /// Fields of this many bytes or more are left in the file.
    left_from: usize,
    left: Left,
    /// A field copied in looked like a placeholder.
    ambiguous: bool,
}

impl<'a, F: OnnxFile + ?Sized> Chunks<'a, F> {
    fn new(file: &'a F, left_from: usize) -> Chunks<'a, F> {
        let mut chunks = Chunks {
            file,
            window: Vec::new(),
            start: 0,
            next: 0,
            hash: Sha256::new(),
            left_from,
            left: Left::default(),
            ambiguous: false,
        };
        chunks.refill();
        chunks
    }

    /// The window's unconsumed bytes.
    fn unread(&self) -> &[u8] {
        self.window
            .get(self.next - self.start..)
            .unwrap_or_default()
    }

    /// Reads the window from `next` if it is used up.
    fn refill(&mut self) {
        if !self.unread().is_empty() {
            return;
        }
        let len = WINDOW.min(self.file.len() - self.next);
        self.window.resize(len, 0);
        if len > 0 {
            self.file.read_at(self.next, &mut self.window);
        }
        self.start = self.next;
    }

    /// Consumes up to `count` bytes of the window.
    fn consume_window(&mut self, count: usize) -> usize {
        let from = self.next - self.start;
        let taken = count.min(self.window.len() - from);
        self.hash.update(&self.window[from..from + taken]);
        self.next += taken;
        taken
    }
}

impl<F: OnnxFile + ?Sized> Buf for Chunks<'_, F> {
    fn remaining(&self) -> usize {
        self.file.len() - self.next
    }

    fn chunk(&self) -> &[u8] {
        self.unread()
    }

    /// Past the end stops at the end (prost checks lengths before it
    /// advances, so that is never asked).
    fn advance(&mut self, count: usize) {
        let mut count = count.min(self.remaining());
        while count > 0 {
            count -= self.consume_window(count);
            self.refill();
        }
    }

    /// A large field straight into its own buffer, not through the window;
    /// one of [`LEFT_FROM`] bytes or more hashed through the window and
    /// left in the file, its placeholder in its place.
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        let len = len.min(self.remaining());
        if len >= self.left_from {
            let place = self.left.spans.len() as u32;
            self.left.spans.push(Span {
                offset: self.next,
                len,
            });
            self.advance(len);
            let mut placeholder = PLACEHOLDER.to_vec();
            placeholder.extend_from_slice(&place.to_le_bytes());
            return Bytes::from(placeholder);
        }
        let mut bytes = Vec::with_capacity(len);
        let from = self.next - self.start;
        let head = len.min(self.window.len() - from);
        bytes.extend_from_slice(&self.window[from..from + head]);
        self.consume_window(head);
        if bytes.len() < len {
            bytes.resize(len, 0);
            self.file.read_at(self.next, &mut bytes[head..]);
            self.hash.update(&bytes[head..]);
            self.next += len - head;
        }
        self.refill();
        self.ambiguous |= bytes.len() == PLACEHOLDER_LEN && bytes.starts_with(&PLACEHOLDER);
        Bytes::from(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use tract_onnx::pb::{AttributeProto, NodeProto, TensorProto};

    /// A file that records the reads made of it.
    struct Recorded<'a> {
        bytes: &'a [u8],
        reads: RefCell<Vec<(usize, usize)>>,
    }

    impl OnnxFile for Recorded<'_> {
        fn len(&self) -> usize {
            self.bytes.len()
        }

        fn read_at(&self, offset: usize, into: &mut [u8]) {
            self.reads.borrow_mut().push((offset, into.len()));
            self.bytes.read_at(offset, into);
        }
    }

    #[test]
    fn the_file_is_read_once_in_windows_and_hashed_whole() {
        let large = TensorProto {
            name: "large".into(),
            raw_data: (0..3 * WINDOW + 5).map(|i| i as u8).collect(),
            ..TensorProto::default()
        };
        let small = TensorProto {
            name: "small".into(),
            raw_data: vec![7; 10],
            ..TensorProto::default()
        };
        let proto = ModelProto {
            producer_name: "test".into(),
            graph: Some(GraphProto {
                initializer: vec![small, large],
                ..GraphProto::default()
            }),
            ..ModelProto::default()
        };
        let bytes = proto.encode_to_vec();
        let file = Recorded {
            bytes: &bytes,
            reads: RefCell::new(Vec::new()),
        };
        let Decoded {
            proto: decoded,
            digest,
            left,
        } = decode(&file, usize::MAX).unwrap();
        assert_eq!(decoded, proto);
        assert_eq!(digest, <[u8; 32]>::from(Sha256::digest(&bytes)));
        assert!(left.spans.is_empty());
        // Every byte read exactly once, in order: the first window, then
        // the rest of the large field (the file's last bytes) in one read.
        let reads = file.reads.into_inner();
        assert_eq!(reads.len(), 2, "{reads:?}");
        assert_eq!(reads[0], (0, WINDOW));
        assert_eq!(reads[1], (WINDOW, bytes.len() - WINDOW));
    }

    #[test]
    fn an_empty_or_cut_file_is_a_decode_error_or_empty() {
        let proto = ModelProto {
            producer_name: "x".repeat(2 * WINDOW),
            ..ModelProto::default()
        };
        let bytes = proto.encode_to_vec();
        assert!(decode(&bytes[..bytes.len() / 2], usize::MAX).is_err());
        assert!(decode(&bytes[..bytes.len() / 2], 16).is_err());
        let empty = decode(&[][..], 16).unwrap();
        assert_eq!(empty.proto, ModelProto::default());
        assert_eq!(empty.digest, <[u8; 32]>::from(Sha256::digest([])));
    }

    fn tensor(name: &str, raw_data: Vec<u8>) -> TensorProto {
        TensorProto {
            name: name.into(),
            raw_data,
            ..TensorProto::default()
        }
    }

    fn model(initializer: Vec<TensorProto>, node: Vec<NodeProto>) -> ModelProto {
        ModelProto {
            graph: Some(GraphProto {
                initializer,
                node,
                ..GraphProto::default()
            }),
            ..ModelProto::default()
        }
    }

    fn bytes_of(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn a_large_field_is_left_in_the_file_hashed_and_read_back_once() {
        let large = 3 * WINDOW + 5;
        let proto = model(
            vec![
                tensor("small", bytes_of(100, 1)),
                tensor("first", bytes_of(large, 2)),
                tensor("second", bytes_of(large + 1, 3)),
            ],
            Vec::new(),
        );
        let bytes = proto.encode_to_vec();
        let file = Recorded {
            bytes: &bytes,
            reads: RefCell::new(Vec::new()),
        };
        let mut decoded = decode(&file, large).unwrap();
        assert_eq!(decoded.digest, <[u8; 32]>::from(Sha256::digest(&bytes)));
        // Nothing larger than a window was copied in: the two fields
        // streamed past, a window at a time.
        let reads = file.reads.replace(Vec::new());
        assert!(reads.iter().all(|&(_, len)| len <= WINDOW), "{reads:?}");
        assert_eq!(
            reads.iter().map(|&(_, len)| len).sum::<usize>(),
            bytes.len()
        );
        let graph = decoded.proto.graph.as_mut().unwrap();
        assert_eq!(
            graph.initializer[0],
            proto.graph.as_ref().unwrap().initializer[0]
        );
        let first = decoded
            .left
            .span_of(&graph.initializer[1].raw_data)
            .unwrap();
        let second = decoded
            .left
            .span_of(&graph.initializer[2].raw_data)
            .unwrap();
        assert_eq!((first.len, second.len), (large, large + 1));
        assert_eq!(&bytes[first.offset..][..first.len], &bytes_of(large, 2)[..]);
        assert_eq!(
            &bytes[second.offset..][..second.len],
            &bytes_of(large + 1, 3)[..]
        );
        assert_eq!(decoded.left.span_of(b"memtide:left\x02\0\0\0"), None);
        // Taken out of the graph by someone else, the first is not read;
        // the second is read back in one read.
        let mut without_first = graph.clone();
        without_first.initializer.remove(1);
        assert!(decoded.left.restore(&mut without_first, &[first], &file));
        assert_eq!(file.reads.take(), [(second.offset, second.len)]);
        assert_eq!(
            without_first.initializer[1].raw_data,
            bytes_of(large + 1, 3)
        );
        // Not taken, it must be in the graph: else a field is missing.
        let mut missing = graph.clone();
        missing.initializer.remove(1);
        assert!(!decoded.left.restore(&mut missing, &[], &file));
        // Both in the graph: both read back, and the model is whole again.
        assert!(decoded.left.restore(graph, &[], &file));
        assert_eq!(decoded.proto, proto);
    }

    #[test]
    fn a_field_left_outside_the_initializers_is_not_restored() {
        let large = 2 * WINDOW;
        let constant = NodeProto {
            op_type: "Constant".into(),
            attribute: vec![AttributeProto {
                name: "value".into(),
                t: Some(tensor("c", bytes_of(large, 4))),
                ..AttributeProto::default()
            }],
            ..NodeProto::default()
        };
        let proto = model(vec![tensor("w", bytes_of(large, 5))], vec![constant]);
        let bytes = proto.encode_to_vec();
        let mut decoded = decode(&bytes, large).unwrap();
        let graph = decoded.proto.graph.as_mut().unwrap();
        assert!(!decoded.left.restore(graph, &[], &bytes));
        // Decoded with nothing left, it is the model.
        assert_eq!(decode(&bytes, usize::MAX).unwrap().proto, proto);
    }

    #[test]
    fn a_field_that_looks_like_a_placeholder_is_decoded_with_nothing_left() {
        let mut lookalike = PLACEHOLDER.to_vec();
        lookalike.extend_from_slice(&0u32.to_le_bytes());
        let large = 2 * WINDOW;
        let proto = model(
            vec![
                tensor("large", bytes_of(large, 6)),
                tensor("lookalike", lookalike),
            ],
            Vec::new(),
        );
        let bytes = proto.encode_to_vec();
        let decoded = decode(&bytes, large).unwrap();
        assert!(decoded.left.spans.is_empty());
        assert_eq!(decoded.proto, proto);
        assert_eq!(decoded.digest, <[u8; 32]>::from(Sha256::digest(&bytes)));
        // Without the large field nothing is left, and the look-alike is
        // its bytes.
        let small = model(
            vec![tensor(
                "lookalike",
                proto.graph.unwrap().initializer[1].raw_data.clone(),
            )],
            Vec::new(),
        );
        let decoded = decode(&small.encode_to_vec()[..], large).unwrap();
        assert_eq!(decoded.proto, small);
    }
}
