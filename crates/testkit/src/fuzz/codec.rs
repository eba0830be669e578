//! Target `codec`: the record codec (`memtide::codec`).
//!
//! The first byte picks a mode:
//! * even: the rest is a stored record. Every decoder returns a value or a
//!   typed error; whatever decodes re-encodes to a record that decodes to
//!   the same value.
//! * odd: the rest is a payload, wrapped in a record of the type the byte
//!   names (so the payload decoders run past the checksum). The record
//!   decodes to exactly that type and payload, then as in the even mode.

use memtide::codec::{self, RecordType};

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        check_record(rest);
    } else {
        let record_type = match mode / 2 % 4 {
            0 => RecordType::Item,
            1 => RecordType::Manifest,
            2 => RecordType::Vector,
            _ => RecordType::File,
        };
        let record = codec::encode(record_type, codec::version_for(true), rest);
        assert_eq!(codec::decode(&record), Ok((record_type, rest)));
        check_record(&record);
    }
}

fn check_record(bytes: &[u8]) {
    if let Ok((record_type, payload)) = codec::decode(bytes) {
        let again = codec::encode(record_type, codec::version_for(true), payload);
        assert_eq!(codec::decode(&again), Ok((record_type, payload)));
    }
    if let Ok(item) = codec::decode_item(bytes) {
        assert_eq!(codec::decode_item(&codec::encode_item(&item)), Ok(item));
    }
    if let Ok(manifest) = codec::decode_manifest(bytes) {
        let again = codec::decode_manifest(&codec::encode_manifest(&manifest));
        assert_eq!(again, Ok(manifest));
    }
    if let Ok(decoded) = codec::decode_vector(bytes) {
        let scale = decoded.vector.scale();
        assert!(scale.is_finite() && scale >= 0.0);
        let again = codec::decode_vector(&codec::encode_vector(&decoded.vector));
        let vector = decoded.vector;
        assert_eq!(again, Ok(codec::DecodedVector { vector, legacy: false }));
    }
    if let Ok(file) = codec::decode_file(bytes) {
        assert_eq!(codec::decode_file(&codec::encode_file(&file)), Ok(file));
    }
}
