//! ConnectionEvent schema (the shared .avsc) and a hand-written, allocation-free
//! encoder for its binary layout in Avro single-object encoding. Tests check it
//! byte for byte against apache-avro and the shared test vectors.
pub mod budget;
pub mod cgroup;
pub mod pod;
pub mod resource;
pub mod service_mapping;
pub mod transaction;

use std::sync::OnceLock;

use anyhow::{anyhow, bail, Context, Result};
use apache_avro::rabin::Rabin;
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::capture::event::Kind;
use crate::shared::net::{NatTuple, Role};

/// The one schema file shared with the JVM side.
pub const SCHEMA_JSON: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/ConnectionEvent.avsc"));

/// Field names in schema order; `encode` writes exactly this layout, checked at start-up.
const FIELD_LAYOUT: [&str; 21] = [
    "kind", "hostId", "eventTimeNs", "localAddress", "localPort", "remoteAddress",
    "remotePort", "role", "pid", "tgid", "processStartTimeNs", "comm", "cmdline",
    "cgroupId", "containerId", "netnsInode", "socketCookie", "bytesSent", "bytesReceived", "nat",
    "keepProbability",
];

pub fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| Schema::parse_str(SCHEMA_JSON).expect("ConnectionEvent.avsc must parse"))
}

/// CRC-64-AVRO (Rabin) of the parsing canonical form, little-endian (as apache-avro emits it);
/// computed once (every decode checks it).
pub fn fingerprint() -> [u8; 8] {
    static F: OnceLock<[u8; 8]> = OnceLock::new();
    *F.get_or_init(|| rabin(schema()))
}

/// A schema's Rabin fingerprint (single-object encoding's 8 bytes).
pub(crate) fn rabin(schema: &Schema) -> [u8; 8] {
    schema.fingerprint::<Rabin>().bytes.as_slice().try_into().expect("Rabin fingerprint is 8 bytes")
}

/// One ConnectionEvent, borrowing its strings so encoding needs no allocation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventRecord<'a> {
    pub kind: Kind,
    pub host_id: &'a str,
    pub event_time_ns: i64,
    pub local_address: [u8; 16],
    pub local_port: i32,
    pub remote_address: [u8; 16],
    pub remote_port: i32,
    pub role: Role,
    pub pid: i32,
    pub tgid: i32,
    pub process_start_time_ns: i64,
    pub comm: &'a str,
    pub cmdline: Option<&'a str>,
    pub cgroup_id: i64,
    pub container_id: Option<&'a str>,
    pub netns_inode: i64,
    pub socket_cookie: i64,
    pub bytes_sent: i64,
    pub bytes_received: i64,
    pub nat: Option<NatTuple>,
    /// Share of its domain's connections load shedding kept (1.0: not sampled).
    pub keep_probability: f64,
}

/// Owned form, for decoding and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedEventRecord {
    pub kind: Kind,
    pub host_id: String,
    pub event_time_ns: i64,
    pub local_address: [u8; 16],
    pub local_port: i32,
    pub remote_address: [u8; 16],
    pub remote_port: i32,
    pub role: Role,
    pub pid: i32,
    pub tgid: i32,
    pub process_start_time_ns: i64,
    pub comm: String,
    pub cmdline: Option<String>,
    pub cgroup_id: i64,
    pub container_id: Option<String>,
    pub netns_inode: i64,
    pub socket_cookie: i64,
    pub bytes_sent: i64,
    pub bytes_received: i64,
    pub nat: Option<NatTuple>,
    /// Share of its domain's connections load shedding kept (1.0: not sampled).
    pub keep_probability: f64,
}

impl OwnedEventRecord {
    pub fn as_ref(&self) -> EventRecord<'_> {
        EventRecord {
            kind: self.kind,
            host_id: &self.host_id,
            event_time_ns: self.event_time_ns,
            local_address: self.local_address,
            local_port: self.local_port,
            remote_address: self.remote_address,
            remote_port: self.remote_port,
            role: self.role,
            pid: self.pid,
            tgid: self.tgid,
            process_start_time_ns: self.process_start_time_ns,
            comm: &self.comm,
            cmdline: self.cmdline.as_deref(),
            cgroup_id: self.cgroup_id,
            container_id: self.container_id.as_deref(),
            netns_inode: self.netns_inode,
            socket_cookie: self.socket_cookie,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            nat: self.nat,
            keep_probability: self.keep_probability,
        }
    }
}

/// Encoder with the precomputed 10-byte single-object header.
pub struct Encoder {
    header: [u8; 10],
}

impl Encoder {
    /// Checks that the parsed .avsc still has the layout this encoder writes.
    pub fn new() -> Result<Encoder> {
        Ok(Encoder { header: single_object_header(schema(), &FIELD_LAYOUT, "src/avro.rs")? })
    }

    pub fn header(&self) -> &[u8; 10] {
        &self.header
    }

    /// Clears `out` and writes header + body. No allocation once `out` has grown.
    pub fn encode(&self, e: &EventRecord<'_>, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.header);
        write_long(out, e.kind.index() as i64);
        write_str(out, e.host_id);
        write_long(out, e.event_time_ns);
        out.extend_from_slice(&e.local_address);
        write_long(out, e.local_port as i64);
        out.extend_from_slice(&e.remote_address);
        write_long(out, e.remote_port as i64);
        write_long(out, e.role.index() as i64);
        write_long(out, e.pid as i64);
        write_long(out, e.tgid as i64);
        write_long(out, e.process_start_time_ns);
        write_str(out, e.comm);
        write_opt_str(out, e.cmdline);
        write_long(out, e.cgroup_id);
        write_opt_str(out, e.container_id);
        write_long(out, e.netns_inode);
        write_long(out, e.socket_cookie);
        write_long(out, e.bytes_sent);
        write_long(out, e.bytes_received);
        write_opt_nat(out, e.nat.as_ref());
        write_double(out, e.keep_probability);
    }
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
    match nat {
        None => Value::Union(0, Box::new(Value::Null)),
        Some(n) => Value::Union(
            1,
            Box::new(Value::Record(vec![
                ("localAddress".into(), Value::Fixed(16, n.local_addr.to_vec())),
                ("localPort".into(), Value::Int(n.local_port as i32)),
                ("remoteAddress".into(), Value::Fixed(16, n.remote_addr.to_vec())),
                ("remotePort".into(), Value::Int(n.remote_port as i32)),
            ])),
        ),
    }
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

/// Decodes single-object bytes with apache-avro (fingerprint checked against the .avsc).
pub fn decode_single_object(bytes: &[u8]) -> Result<OwnedEventRecord> {
    let value = decode_datum(bytes, schema(), fingerprint())?;
    let f = RecordFields::of(&value)?;
    let (kind, role) = (f.symbol("kind")?, f.symbol("role")?);
    Ok(OwnedEventRecord {
        kind: Kind::from_symbol(kind).ok_or_else(|| anyhow!("bad kind {kind}"))?,
        host_id: f.string("hostId")?,
        event_time_ns: f.long("eventTimeNs")?,
        local_address: f.fixed16("localAddress")?,
        local_port: f.int("localPort")?,
        remote_address: f.fixed16("remoteAddress")?,
        remote_port: f.int("remotePort")?,
        role: Role::from_symbol(role).ok_or_else(|| anyhow!("bad role {role}"))?,
        pid: f.int("pid")?,
        tgid: f.int("tgid")?,
        process_start_time_ns: f.long("processStartTimeNs")?,
        comm: f.string("comm")?,
        cmdline: f.opt_string("cmdline")?,
        cgroup_id: f.long("cgroupId")?,
        container_id: f.opt_string("containerId")?,
        netns_inode: f.long("netnsInode")?,
        socket_cookie: f.long("socketCookie")?,
        bytes_sent: f.long("bytesSent")?,
        bytes_received: f.long("bytesReceived")?,
        nat: f.opt_nat("nat")?,
        keep_probability: f.double("keepProbability")?,
    })
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

/// Typed access to the fields of a decoded record, with errors naming the field.
pub(crate) struct RecordFields<'a>(&'a [(String, Value)]);

impl<'a> RecordFields<'a> {
    pub(crate) fn of(v: &'a Value) -> Result<Self> {
        match v {
            Value::Record(fields) => Ok(RecordFields(fields)),
            o => bail!("expected a record, got {o:?}"),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Result<&'a Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v).ok_or_else(|| anyhow!("missing field {name}"))
    }

    pub(crate) fn long(&self, name: &str) -> Result<i64> {
        match self.get(name)? {
            Value::Long(x) => Ok(*x),
            Value::Int(x) => Ok(*x as i64),
            o => bail!("{name}: expected long, got {o:?}"),
        }
    }

    pub(crate) fn int(&self, name: &str) -> Result<i32> {
        match self.get(name)? {
            Value::Int(x) => Ok(*x),
            o => bail!("{name}: expected int, got {o:?}"),
        }
    }

    /// An int that must be a TCP port (0..=65535): a wider value is refused, not truncated.
    pub(crate) fn port(&self, name: &str) -> Result<u16> {
        let v = self.int(name)?;
        u16::try_from(v).map_err(|_| anyhow!("{name}: {v} is not a port (0..=65535)"))
    }

    pub(crate) fn double(&self, name: &str) -> Result<f64> {
        match self.get(name)? {
            Value::Double(x) => Ok(*x),
            o => bail!("{name}: expected double, got {o:?}"),
        }
    }

    pub(crate) fn boolean(&self, name: &str) -> Result<bool> {
        match self.get(name)? {
            Value::Boolean(b) => Ok(*b),
            o => bail!("{name}: expected boolean, got {o:?}"),
        }
    }

    pub(crate) fn string(&self, name: &str) -> Result<String> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            o => bail!("{name}: expected string, got {o:?}"),
        }
    }

    pub(crate) fn symbol(&self, name: &str) -> Result<&'a str> {
        match self.get(name)? {
            Value::Enum(_, s) => Ok(s.as_str()),
            o => bail!("{name}: expected enum, got {o:?}"),
        }
    }

    pub(crate) fn fixed16(&self, name: &str) -> Result<[u8; 16]> {
        match self.get(name)? {
            Value::Fixed(16, b) => Ok(b.as_slice().try_into().expect("16 bytes")),
            o => bail!("{name}: expected fixed(16), got {o:?}"),
        }
    }

    /// The branch of a `["null", T]` union: None for null.
    fn optional(&self, name: &str) -> Result<Option<&'a Value>> {
        match self.get(name)? {
            Value::Union(_, b) => Ok(match b.as_ref() {
                Value::Null => None,
                x => Some(x),
            }),
            o => bail!("{name}: expected union, got {o:?}"),
        }
    }

    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<String>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_long(&self, name: &str) -> Result<Option<i64>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::Long(x)) => Ok(Some(*x)),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_int(&self, name: &str) -> Result<Option<i32>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::Int(x)) => Ok(Some(*x)),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_double(&self, name: &str) -> Result<Option<f64>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::Double(x)) => Ok(Some(*x)),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_nat(&self, name: &str) -> Result<Option<NatTuple>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(v) => {
                let n = RecordFields::of(v).with_context(|| name.to_string())?;
                Ok(Some(NatTuple {
                    local_addr: n.fixed16("localAddress")?,
                    local_port: n.port("localPort")?,
                    remote_addr: n.fixed16("remoteAddress")?,
                    remote_port: n.port("remotePort")?,
                }))
            }
        }
    }

    pub(crate) fn array<T>(&self, name: &str, item: impl Fn(&Value) -> Option<T>) -> Result<Vec<T>> {
        match self.get(name)? {
            Value::Array(a) => a.iter().map(|x| item(x).ok_or_else(|| anyhow!("{name}: unexpected item {x:?}"))).collect(),
            o => bail!("{name}: expected array, got {o:?}"),
        }
    }
}

/// apache-avro `Value` for a record (used by tests to compare with apache-avro's writer).
pub fn to_value(e: &EventRecord<'_>) -> Value {
    let opt = |s: Option<&str>| match s {
        None => Value::Union(0, Box::new(Value::Null)),
        Some(s) => Value::Union(1, Box::new(Value::String(s.to_string()))),
    };
    Value::Record(vec![
        ("kind".into(), Value::Enum(e.kind.index(), e.kind.symbol().into())),
        ("hostId".into(), Value::String(e.host_id.into())),
        ("eventTimeNs".into(), Value::Long(e.event_time_ns)),
        ("localAddress".into(), Value::Fixed(16, e.local_address.to_vec())),
        ("localPort".into(), Value::Int(e.local_port)),
        ("remoteAddress".into(), Value::Fixed(16, e.remote_address.to_vec())),
        ("remotePort".into(), Value::Int(e.remote_port)),
        ("role".into(), Value::Enum(e.role.index(), e.role.symbol().into())),
        ("pid".into(), Value::Int(e.pid)),
        ("tgid".into(), Value::Int(e.tgid)),
        ("processStartTimeNs".into(), Value::Long(e.process_start_time_ns)),
        ("comm".into(), Value::String(e.comm.into())),
        ("cmdline".into(), opt(e.cmdline)),
        ("cgroupId".into(), Value::Long(e.cgroup_id)),
        ("containerId".into(), opt(e.container_id)),
        ("netnsInode".into(), Value::Long(e.netns_inode)),
        ("socketCookie".into(), Value::Long(e.socket_cookie)),
        ("bytesSent".into(), Value::Long(e.bytes_sent)),
        ("bytesReceived".into(), Value::Long(e.bytes_received)),
        ("nat".into(), nat_value(e.nat.as_ref())),
        ("keepProbability".into(), Value::Double(e.keep_probability)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::net::addr16_from_ip;
    use apache_avro::GenericSingleObjectWriter;

    fn sample(i: i64) -> OwnedEventRecord {
        OwnedEventRecord {
            kind: Kind::from_index((i % 3) as u32).unwrap(),
            host_id: format!("host-{i}"),
            event_time_ns: 1_763_870_000_000_000_000 + i * 7919,
            local_address: addr16_from_ip("127.0.0.1".parse().unwrap()),
            local_port: (i * 37 % 65536) as i32,
            remote_address: addr16_from_ip("2001:db8::1".parse().unwrap()),
            remote_port: 443,
            role: Role::from_index((i % 3) as u32).unwrap(),
            pid: (i * 13) as i32,
            tgid: (i * 11) as i32,
            process_start_time_ns: i.wrapping_mul(1_000_003),
            comm: if i % 2 == 0 { "curl".into() } else { "jävä-ß".into() },
            cmdline: if i % 4 == 0 { None } else { Some(format!("app --n {i}")) },
            cgroup_id: i * 1000,
            container_id: if i % 3 == 0 { Some("ab".repeat(32)) } else { None },
            netns_inode: 4026531840 + i,
            socket_cookie: if i == 5 { i64::MAX } else { i * 999_999_937 },
            bytes_sent: if i == 6 { i64::MIN } else { i << 20 },
            bytes_received: -i,
            nat: (i % 4 == 1).then(|| NatTuple {
                local_addr: addr16_from_ip("192.0.2.1".parse().unwrap()),
                local_port: (i * 101 % 65536) as u16,
                remote_addr: addr16_from_ip("2001:db8::2".parse().unwrap()),
                remote_port: if i == 9 { 65535 } else { 8080 },
            }),
            keep_probability: [1.0, 0.25, 0.0, 1.0 / 3.0][(i % 4) as usize],
        }
    }

    #[test]
    fn encoder_matches_apache_avro_writer_and_reader() {
        let enc = Encoder::new().unwrap();
        let mut w = GenericSingleObjectWriter::new_with_capacity(schema(), 512).unwrap();
        let mut buf = Vec::new();
        for i in 0..50 {
            let rec = sample(i);
            enc.encode(&rec.as_ref(), &mut buf);
            let mut theirs = Vec::new();
            w.write_value_ref(&to_value(&rec.as_ref()), &mut theirs).unwrap();
            assert_eq!(buf, theirs, "record {i}");
            assert_eq!(decode_single_object(&buf).unwrap(), rec);
        }
    }

    #[test]
    fn header_uses_apache_avro_rabin_fingerprint() {
        let enc = Encoder::new().unwrap();
        assert_eq!(&enc.header()[..2], &[0xC3, 0x01]);
        assert_eq!(enc.header()[2..].to_vec(), schema().fingerprint::<Rabin>().bytes);
    }

    #[test]
    fn decode_rejects_wrong_fingerprint() {
        let enc = Encoder::new().unwrap();
        let mut buf = Vec::new();
        enc.encode(&sample(1).as_ref(), &mut buf);
        buf[5] ^= 0xff;
        assert!(decode_single_object(&buf).unwrap_err().to_string().contains("fingerprint"));
    }

    #[test]
    fn zigzag_edges() {
        for (v, hex) in [(0i64, vec![0u8]), (-1, vec![1]), (1, vec![2]), (-64, vec![0x7f]), (64, vec![0x80, 1])] {
            let mut out = Vec::new();
            write_long(&mut out, v);
            assert_eq!(out, hex, "{v}");
        }
    }
}
