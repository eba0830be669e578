//! The integers of a segment's binary parts (`docs/format.md`, section
//! 2.2): unsigned LEB128, at most ten bytes for a `u64` and five for a
//! `u32`, and a reader that refuses truncation and overlong encodings
//! without panicking.

use crate::codec::CodecError;

/// Appends `value` as unsigned LEB128.
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes [`put_varint`] writes for `value`.
pub(super) fn varint_len(value: u64) -> usize {
    // One byte per started group of seven bits (at least one).
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends a string as its varint byte length and its UTF-8 bytes.
pub(super) fn put_str(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// Reads a part; errors name the part (`what`).
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, at: 0, what }
    }

    /// An error of this part.
    pub(super) fn bad(&self, message: &str) -> CodecError {
        CodecError::Payload(format!("{}: {message}", self.what))
    }

    /// True when every byte has been read.
    pub(super) fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// Bytes read so far: where the next one is.
    pub(super) fn position(&self) -> usize {
        self.at
    }

    /// Bytes not read yet.
    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// A varint of at most ten bytes.
    #[inline]
    pub(super) fn varint64(&mut self) -> Result<u64, CodecError> {
        self.leb(10)
    }

    /// A varint of at most five bytes, at most `u32::MAX`.
    #[inline]
    pub(super) fn varint(&mut self) -> Result<u32, CodecError> {
        let value = self.leb(5)?;
        u32::try_from(value).map_err(|_| self.bad("a varint past u32"))
    }

    /// Most varints of a segment (term ids, counts, lengths, dictionary
    /// indexes) are below 128: one byte, read here without a loop or a
    /// call; the others go to [`Reader::leb_long`]. An open reads dozens
    /// per memory.
    #[inline]
    fn leb(&mut self, max_bytes: u32) -> Result<u64, CodecError> {
        match self.bytes.get(self.at) {
            Some(&byte) if byte < 0x80 => {
                self.at += 1;
                Ok(u64::from(byte))
            }
            _ => self.leb_long(max_bytes),
        }
    }

    #[inline(never)]
    fn leb_long(&mut self, max_bytes: u32) -> Result<u64, CodecError> {
        let mut value: u64 = 0;
        for shift in 0..max_bytes {
            let byte = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| self.bad("truncated"))?;
            self.at += 1;
            let bits = u64::from(byte & 0x7f);
            if shift == 9 && bits > 1 {
                return Err(self.bad("a varint past u64"));
            }
            value |= bits << (7 * shift);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.bad("a varint too long"))
    }

    pub(super) fn take(&mut self, len: usize) -> Result<&'a [u8], CodecError> {
        let end = self.at.checked_add(len).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| self.bad("truncated"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub(super) fn byte(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    /// A string written by [`put_str`].
    pub(super) fn str(&mut self) -> Result<&'a str, CodecError> {
        let bytes = self.str_bytes()?;
        std::str::from_utf8(bytes).map_err(|_| self.bad("a string is not UTF-8"))
    }

    /// The bytes of a string written by [`put_str`], not checked as UTF-8:
    /// for a string read (and checked) before, only compared as bytes.
    pub(super) fn str_bytes(&mut self) -> Result<&'a [u8], CodecError> {
        let len = self.varint64()?;
        let len = usize::try_from(len).map_err(|_| self.bad("truncated"))?;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_overlong_encodings() {
        for value in [0, 1, 127, 128, 300, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(varint_len(value), out.len(), "{value}");
            let mut reader = Reader::new(&out, "t");
            assert_eq!(reader.varint64().unwrap(), value);
            assert!(reader.done());
        }
        // Every length of encoding, at its edges.
        for bits in 0..64 {
            for value in [(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 1] {
                let mut out = Vec::new();
                put_varint(&mut out, value);
                out.push(0x55);
                let mut reader = Reader::new(&out, "t");
                assert_eq!(reader.varint64().unwrap(), value);
                assert_eq!(reader.byte().unwrap(), 0x55, "the reader stops after the varint");
            }
        }
        let mut big = Vec::new();
        put_varint(&mut big, u64::from(u32::MAX) + 1);
        assert!(Reader::new(&big, "t").varint().is_err());
        assert!(Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], "t").varint().is_err());
        let overlong = [0xffu8; 10];
        assert!(Reader::new(&overlong, "t").varint64().is_err());
        let past = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new(&past, "t").varint64().is_err());
        assert!(Reader::new(&[0x80], "t").varint64().is_err());
        assert!(Reader::new(&[2, 0xff, 0xfe], "t").str().is_err());
    }
}
