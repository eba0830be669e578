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

use prost::bytes::{Buf, Bytes};
use prost::Message;
use sha2::{Digest, Sha256};
use tract_onnx::pb::ModelProto;

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

/// The protobuf of `file` and the file's SHA-256.
pub fn decode<F: OnnxFile + ?Sized>(
    file: &F,
) -> Result<(ModelProto, [u8; 32]), prost::DecodeError> {
    let mut chunks = Chunks::new(file);
    let proto = ModelProto::decode(&mut chunks)?;
    // `decode` reads to the end; what it left (nothing) is hashed too.
    let rest = chunks.remaining();
    chunks.advance(rest);
    Ok((proto, chunks.hash.finalize().into()))
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
}

impl<'a, F: OnnxFile + ?Sized> Chunks<'a, F> {
    fn new(file: &'a F) -> Chunks<'a, F> {
        let mut chunks = Chunks {
            file,
            window: Vec::new(),
            start: 0,
            next: 0,
            hash: Sha256::new(),
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

    /// A large field straight into its own buffer, not through the window.
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        let len = len.min(self.remaining());
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
        Bytes::from(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

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
        use tract_onnx::pb::{GraphProto, TensorProto};
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
        let (decoded, hash) = decode(&file).unwrap();
        assert_eq!(decoded, proto);
        assert_eq!(hash, <[u8; 32]>::from(Sha256::digest(&bytes)));
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
        assert!(decode(&bytes[..bytes.len() / 2]).is_err());
        let (empty, hash) = decode(&[][..]).unwrap();
        assert_eq!(empty, ModelProto::default());
        assert_eq!(hash, <[u8; 32]>::from(Sha256::digest([])));
    }
}
