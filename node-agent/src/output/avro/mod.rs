//! Avro single-object encoding for every record the agent publishes or reads: the shared helper
//! each record type's module is built on (`RecordSchema`: its .avsc parsed once, its fingerprint,
//! the header of an encoder whose field layout is checked at start, the bounded decoder), the
//! allocation-free writers of Avro's primitive types, and typed access to decoded fields. Tests
//! check each encoder byte for byte against apache-avro and the shared test vectors.
pub mod budget;
pub mod cgroup;
pub mod connection;
pub mod pod;
pub mod resource;
pub mod service_mapping;
pub mod transaction;

mod fields;
#[cfg(test)]
mod round_trip;

use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use apache_avro::rabin::Rabin;
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::shared::net::NatTuple;

pub(crate) use fields::RecordFields;

/// One record type's schema as its encoder and decoder use it: the .avsc (one file shared with the
/// JVM side) parsed once, its fingerprint computed once, and the field layout its encoder writes.
pub struct RecordSchema {
    name: &'static str,
    json: &'static str,
    /// Field names in schema order, exactly as the encoder writes them.
    layout: &'static [&'static str],
    /// The encoder's source file, named when the .avsc and the layout disagree.
    encoder: &'static str,
    parsed: OnceLock<Schema>,
    fingerprint: OnceLock<[u8; 8]>,
}

impl RecordSchema {
    pub const fn new(name: &'static str, json: &'static str, layout: &'static [&'static str], encoder: &'static str) -> RecordSchema {
        RecordSchema { name, json, layout, encoder, parsed: OnceLock::new(), fingerprint: OnceLock::new() }
    }

    pub fn schema(&self) -> &Schema {
        self.parsed.get_or_init(|| Schema::parse_str(self.json).unwrap_or_else(|e| panic!("{}.avsc must parse: {e}", self.name)))
    }

    /// CRC-64-AVRO (Rabin) of the parsing canonical form, little-endian (as apache-avro emits
    /// it); every decode checks it.
    pub fn fingerprint(&self) -> [u8; 8] {
        *self.fingerprint.get_or_init(|| rabin(self.schema()))
    }

    /// The writer of this record type, once the parsed .avsc is found to have exactly the
    /// encoder's layout (an encoder built at start refuses a schema it does not write).
    pub fn writer(&self) -> Result<SingleObjectWriter> {
        Ok(SingleObjectWriter { header: single_object_header(self.schema(), self.layout, self.encoder)? })
    }

    /// Decodes single-object bytes with apache-avro (marker, writer fingerprint and bounds
    /// checked) and reads the record out of its fields.
    pub(crate) fn decode<T>(&self, bytes: &[u8], read: impl FnOnce(&RecordFields<'_>) -> Result<T>) -> Result<T> {
        let value = decode_datum(bytes, self.schema(), self.fingerprint())?;
        read(&RecordFields::of(&value)?)
    }
}

/// Starts each record of one type: the 10-byte single-object header (marker, fingerprint).
pub struct SingleObjectWriter {
    header: [u8; 10],
}

impl SingleObjectWriter {
    pub fn header(&self) -> &[u8; 10] {
        &self.header
    }

    /// Clears `out` and writes the header; the record's fields follow. No allocation once `out`
    /// has grown.
    pub fn begin(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.header);
    }
}

/// A schema's Rabin fingerprint (single-object encoding's 8 bytes).
fn rabin(schema: &Schema) -> [u8; 8] {
    schema.fingerprint::<Rabin>().bytes.as_slice().try_into().expect("Rabin fingerprint is 8 bytes")
}

/// `["null", {localAddress, localPort, remoteAddress, remotePort}]`, the layout of both
/// ConnectionEvent.nat and TransactionStats.nat.
pub(crate) fn write_opt_nat(out: &mut Vec<u8>, nat: Option<&NatTuple>) {
    match nat {
        None => write_long(out, 0),
        Some(n) => {
            write_long(out, 1);
            out.extend_from_slice(&n.local_addr);
            write_long(out, n.local_port as i64);
            out.extend_from_slice(&n.remote_addr);
            write_long(out, n.remote_port as i64);
        }
    }
}

/// apache-avro `Value` of an optional NAT tuple (tests).
pub(crate) fn nat_value(nat: Option<&NatTuple>) -> Value {
    opt_value(nat, |n| {
        Value::Record(vec![
            ("localAddress".into(), Value::Fixed(16, n.local_addr.to_vec())),
            ("localPort".into(), Value::Int(n.local_port as i32)),
            ("remoteAddress".into(), Value::Fixed(16, n.remote_addr.to_vec())),
            ("remotePort".into(), Value::Int(n.remote_port as i32)),
        ])
    })
}

/// apache-avro `Value` of a `["null", T]` union, `value` giving T's (the `to_value` functions
/// tests compare the encoders with).
pub(crate) fn opt_value<T>(v: Option<T>, value: impl FnOnce(T) -> Value) -> Value {
    match v {
        None => Value::Union(0, Box::new(Value::Null)),
        Some(x) => Value::Union(1, Box::new(value(x))),
    }
}

/// apache-avro `Value` of a `["null", "string"]` union.
pub(crate) fn opt_str_value(s: Option<&str>) -> Value {
    opt_value(s, |s| Value::String(s.to_string()))
}

/// Zig-zag varint (Avro int and long share it).
pub(crate) fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

pub(crate) fn write_double(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    write_long(out, s.len() as i64);
    out.extend_from_slice(s.as_bytes());
}

/// Union ["null","string"]: branch index, then the value.
pub(crate) fn write_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => write_long(out, 0),
        Some(s) => {
            write_long(out, 1);
            write_str(out, s);
        }
    }
}

/// The 10-byte single-object header (marker, fingerprint) of an encoder that writes `layout`,
/// after checking that the parsed .avsc still has exactly those fields in that order.
pub(crate) fn single_object_header(schema: &Schema, layout: &[&str], encoder: &str) -> Result<[u8; 10]> {
    let Schema::Record(rec) = schema else { bail!("schema is not a record") };
    let names: Vec<&str> = rec.fields.iter().map(|f| f.name.as_str()).collect();
    if names != layout {
        bail!("{}.avsc fields {names:?} differ from the encoder layout {layout:?}; update {encoder}", rec.name.name);
    }
    let fp = schema.fingerprint::<Rabin>();
    let mut header = [0u8; 10];
    header[0] = 0xC3;
    header[1] = 0x01;
    header[2..].copy_from_slice(&fp.bytes);
    Ok(header)
}

/// Union ["null","long"] (an int is the same varint): branch index, then the value.
pub(crate) fn write_opt_long(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => write_long(out, 0),
        Some(x) => {
            write_long(out, 1);
            write_long(out, x);
        }
    }
}

/// Union ["null","double"].
pub(crate) fn write_opt_double(out: &mut Vec<u8>, v: Option<f64>) {
    match v {
        None => write_long(out, 0),
        Some(x) => {
            write_long(out, 1);
            write_double(out, x);
        }
    }
}

/// The largest record the decoders take: Kafka delivers no larger value by default
/// (message.max.bytes, 1 MB).
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// apache-avro's bound on any one string or bytes length and array or map block count. Its
/// default (512 MiB) let a 23-byte record allocate 100 MB for a string it did not carry, and it
/// reserves a block before reading it: count x 56 bytes for an array (6.1 GB from 247 bytes) and
/// a hash table of count x 80 bytes for a map (162 MiB from 110 bytes under a 1 MiB bound), both
/// found by fuzz/avro_records. Under 256 KiB a block reserves at most 14 MiB (array) or 42 MiB
/// (map), untouched and freed with the error; the longest honest string, a command line, fits.
pub const MAX_LENGTH_BYTES: usize = 256 << 10;

/// Sets apache-avro's process-wide bound (its first call wins) and returns the bound in force:
/// the agent calls it at start, and every decode calls it again before decoding.
pub fn limit_decoder_allocations() -> usize {
    apache_avro::util::max_allocation_bytes(MAX_LENGTH_BYTES)
}

/// Checks the single-object header (marker, writer fingerprint) and decodes the body with
/// apache-avro against `schema`; shared by the decoders of every record type.
pub(crate) fn decode_datum(bytes: &[u8], schema: &Schema, fingerprint: [u8; 8]) -> Result<Value> {
    if bytes.len() > MAX_RECORD_BYTES {
        bail!("record of {} bytes is larger than {MAX_RECORD_BYTES}", bytes.len());
    }
    let bound = limit_decoder_allocations();
    if bound > MAX_LENGTH_BYTES {
        bail!("apache-avro allows lengths up to {bound}, not {MAX_LENGTH_BYTES}: it decoded before limit_decoder_allocations()");
    }
    if bytes.len() < 10 || bytes[0] != 0xC3 || bytes[1] != 0x01 {
        bail!("not Avro single-object encoding (missing C3 01 marker)");
    }
    if bytes[2..10] != fingerprint {
        bail!("unknown writer schema fingerprint {:02x?}", &bytes[2..10]);
    }
    let mut body = &bytes[10..];
    let value = apache_avro::from_avro_datum(schema, &mut body, None).context("avro decode")?;
    if !body.is_empty() {
        bail!("{} trailing bytes after the record", body.len());
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_edges() {
        for (v, hex) in [(0i64, vec![0u8]), (-1, vec![1]), (1, vec![2]), (-64, vec![0x7f]), (64, vec![0x80, 1])] {
            let mut out = Vec::new();
            write_long(&mut out, v);
            assert_eq!(out, hex, "{v}");
        }
    }
}
