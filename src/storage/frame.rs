//! The frame: a checksummed list of key puts and deletes, the unit of the
//! native directory log (`store.log`) and of the journal of [`super::KvStorage`].
//! `docs/format.md` (section 3.1) specifies the layout.

use super::{validate_key, StorageError};

pub(crate) const FRAME_MAGIC: [u8; 4] = *b"MNLG";
pub(crate) const FRAME_VERSION: u16 = 1;
/// Magic, version, frame length and op count.
pub(crate) const FRAME_HEADER_LEN: usize = 14;
/// The CRC-32.
pub(crate) const FRAME_TRAILER_LEN: usize = 4;
pub(crate) const MIN_FRAME_LEN: usize = FRAME_HEADER_LEN + FRAME_TRAILER_LEN;
pub(crate) const TAG_DELETE: u8 = 0;
pub(crate) const TAG_PUT: u8 = 1;

/// One operation of a frame: a put (`Some(value)`) or a delete of a key.
pub(crate) type Op<'a> = (&'a str, Option<&'a [u8]>);
/// An [`Op`] with its key as bytes ([`parse_frame_bytes`]).
pub(crate) type ByteOp<'a> = (&'a [u8], Option<&'a [u8]>);

/// Encoded size of one op inside a frame.
pub(crate) fn op_len(key: &str, value: Option<&[u8]>) -> u64 {
    let value_len = value.map_or(0, |v| 4 + v.len() as u64);
    4 + key.len() as u64 + 1 + value_len
}

/// Encodes ops as one frame; no ops encode to nothing (an empty log).
pub(crate) fn encode_frame(ops: &[Op<'_>]) -> Result<Vec<u8>, StorageError> {
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    let op_bytes: u64 = ops.iter().map(|&(k, v)| op_len(k, v)).sum();
    let total = op_bytes + MIN_FRAME_LEN as u64;
    let (Ok(total), Ok(count)) = (u32::try_from(total), u32::try_from(ops.len())) else {
        return Err(StorageError::Backend(format!(
            "a frame is limited to 4 GiB, this one would be {total} bytes"
        )));
    };
    // Every length below is at most `total`, so it fits a u32.
    let mut frame = Vec::with_capacity(total as usize);
    frame.extend_from_slice(&FRAME_MAGIC);
    frame.extend_from_slice(&FRAME_VERSION.to_le_bytes());
    frame.extend_from_slice(&total.to_le_bytes());
    frame.extend_from_slice(&count.to_le_bytes());
    for &(key, value) in ops {
        frame.extend_from_slice(&(key.len() as u32).to_le_bytes());
        frame.extend_from_slice(key.as_bytes());
        match value {
            Some(v) => {
                frame.push(TAG_PUT);
                frame.extend_from_slice(&(v.len() as u32).to_le_bytes());
                frame.extend_from_slice(v);
            }
            None => frame.push(TAG_DELETE),
        }
    }
    let crc = crc32fast::hash(&frame);
    frame.extend_from_slice(&crc.to_le_bytes());
    Ok(frame)
}

pub(crate) fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([field[0], field[1], field[2], field[3]]))
}

/// The length a frame header at the start of `bytes` declares, when the
/// header is present, starts with the magic and declares a possible length.
pub(crate) fn declared_frame_len(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < FRAME_HEADER_LEN || bytes[..4] != FRAME_MAGIC {
        return None;
    }
    let len = usize::try_from(read_u32(bytes, 6)?).ok()?;
    (len >= MIN_FRAME_LEN).then_some(len)
}

/// The length of the frame at the start of `bytes` when it is whole and its
/// checksum matches.
pub(crate) fn intact_frame_len(bytes: &[u8]) -> Option<usize> {
    let len = declared_frame_len(bytes)?;
    let frame = bytes.get(..len)?;
    let crc_at = len - FRAME_TRAILER_LEN;
    (read_u32(frame, crc_at)? == crc32fast::hash(&frame[..crc_at])).then_some(len)
}

/// A checked read position inside one frame.
struct FrameReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> FrameReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("an op runs past the frame end at byte {}", self.pos))?;
        let taken = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(taken)
    }

    fn len_field(&mut self) -> Result<usize, String> {
        let field = self.take(4)?;
        let len = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
        usize::try_from(len).map_err(|_| format!("length {len} does not fit in memory"))
    }
}

/// Decodes the ops of an intact frame.
pub(crate) fn parse_frame(frame: &[u8]) -> Result<Vec<Op<'_>>, String> {
    parse_frame_bytes(frame)?
        .into_iter()
        .map(|(key, value)| {
            let key = std::str::from_utf8(key).map_err(|_| "a key is not UTF-8".to_string())?;
            validate_key(key).map_err(|e| e.to_string())?;
            Ok((key, value))
        })
        .collect()
}

/// The ops of an intact frame with each key as its bytes, not checked to
/// be a key: for a frame [`parse_frame`] has read before (the layout
/// reader lists a segment's keys once, then decodes its values).
pub(crate) fn parse_frame_bytes(frame: &[u8]) -> Result<Vec<ByteOp<'_>>, String> {
    let version = u16::from_le_bytes([frame[4], frame[5]]);
    if version != FRAME_VERSION {
        return Err(format!(
            "log format version {version} is not supported (this build reads {FRAME_VERSION})"
        ));
    }
    let count = read_u32(frame, 10).unwrap_or(0);
    let mut reader = FrameReader {
        bytes: &frame[FRAME_HEADER_LEN..frame.len() - FRAME_TRAILER_LEN],
        pos: 0,
    };
    let mut ops = Vec::new();
    for _ in 0..count {
        let key_len = reader.len_field()?;
        let key = reader.take(key_len)?;
        let value = match reader.take(1)?[0] {
            TAG_PUT => {
                let value_len = reader.len_field()?;
                Some(reader.take(value_len)?)
            }
            TAG_DELETE => None,
            tag => return Err(format!("unknown op tag {tag}")),
        };
        ops.push((key, value));
    }
    if reader.pos != reader.bytes.len() {
        return Err(format!(
            "{} bytes follow the last op",
            reader.bytes.len() - reader.pos
        ));
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_of(ops: &[Op<'_>]) -> Vec<u8> {
        encode_frame(ops).unwrap()
    }

    #[test]
    fn frames_round_trip_with_the_documented_layout() {
        let frame = frame_of(&[("k", Some(b"v")), ("gone", None)]);
        assert_eq!(&frame[..4], b"MNLG");
        assert_eq!(u16::from_le_bytes([frame[4], frame[5]]), 1);
        assert_eq!(read_u32(&frame, 6), Some(frame.len() as u32));
        assert_eq!(read_u32(&frame, 10), Some(2));
        assert_eq!(intact_frame_len(&frame), Some(frame.len()));
        let ops = parse_frame(&frame).unwrap();
        assert_eq!(ops, [("k", Some(&b"v"[..])), ("gone", None)]);
        assert!(frame_of(&[]).is_empty());
    }
}
