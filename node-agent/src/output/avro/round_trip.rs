//! Test scaffolding of the record types' encoder tests: each encoder is checked byte for byte
//! against apache-avro's single-object writer, and its decoder reads the bytes back.
use std::fmt::Debug;

use anyhow::Result;
use apache_avro::types::Value;
use apache_avro::{GenericSingleObjectWriter, Schema};

/// For each sample: `encode` writes exactly what apache-avro writes of `to_value(sample)`, and
/// `decode` gives the sample back.
pub(crate) fn assert_matches_apache_avro<R: PartialEq + Debug>(
    schema: &Schema,
    samples: impl IntoIterator<Item = R>,
    mut encode: impl FnMut(&R, &mut Vec<u8>),
    to_value: impl Fn(&R) -> Value,
    decode: impl Fn(&[u8]) -> Result<R>,
) {
    let mut w = GenericSingleObjectWriter::new_with_capacity(schema, 512).unwrap();
    let mut buf = Vec::new();
    for (i, r) in samples.into_iter().enumerate() {
        encode(&r, &mut buf);
        let mut theirs = Vec::new();
        w.write_value_ref(&to_value(&r), &mut theirs).unwrap();
        assert_eq!(buf, theirs, "sample {i}");
        assert_eq!(decode(&buf).unwrap(), r, "sample {i}");
    }
}

/// `bytes` (a good encoding) with one byte of its writer fingerprint changed is refused, and the
/// error names the fingerprint.
pub(crate) fn assert_refuses_other_fingerprint<R: Debug>(mut bytes: Vec<u8>, decode: impl Fn(&[u8]) -> Result<R>) {
    bytes[4] ^= 0xff;
    let e = decode(&bytes).unwrap_err().to_string();
    assert!(e.contains("fingerprint"), "{e}");
}
