//! ConnectionEvent (schemas/avro/ConnectionEvent.avsc): one kernel observation of a connection
//! (opened, snapshot, closed) with its process and container, and its allocation-free encoder.
use anyhow::{anyhow, Result};
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::capture::event::Kind;
use crate::output::avro::{nat_value, opt_str_value, write_double, write_long, write_opt_nat, write_opt_str, write_str, RecordSchema, SingleObjectWriter};
use crate::shared::net::{NatTuple, Role};

/// Field names in schema order; `encode` writes exactly this layout, checked at start-up.
const FIELD_LAYOUT: [&str; 21] = [
    "kind", "hostId", "eventTimeNs", "localAddress", "localPort", "remoteAddress",
    "remotePort", "role", "pid", "tgid", "processStartTimeNs", "comm", "cmdline",
    "cgroupId", "containerId", "netnsInode", "socketCookie", "bytesSent", "bytesReceived", "nat",
    "keepProbability",
];

static SCHEMA: RecordSchema =
    RecordSchema::new("ConnectionEvent", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/ConnectionEvent.avsc")), &FIELD_LAYOUT, file!());

pub fn schema() -> &'static Schema {
    SCHEMA.schema()
}

pub fn fingerprint() -> [u8; 8] {
    SCHEMA.fingerprint()
}

/// One ConnectionEvent, its fields listed once for both forms: `S` is its string type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectionEventOf<S> {
    pub kind: Kind,
    pub host_id: S,
    pub event_time_ns: i64,
    pub local_address: [u8; 16],
    pub local_port: i32,
    pub remote_address: [u8; 16],
    pub remote_port: i32,
    pub role: Role,
    pub pid: i32,
    pub tgid: i32,
    pub process_start_time_ns: i64,
    pub comm: S,
    pub cmdline: Option<S>,
    pub cgroup_id: i64,
    pub container_id: Option<S>,
    pub netns_inode: i64,
    pub socket_cookie: i64,
    pub bytes_sent: i64,
    pub bytes_received: i64,
    pub nat: Option<NatTuple>,
    /// Share of its domain's connections load shedding kept (1.0: not sampled).
    pub keep_probability: f64,
}

/// Borrowed form, so encoding needs no allocation.
pub type EventRecord<'a> = ConnectionEventOf<&'a str>;

/// Owned form, for decoding and tests.
pub type OwnedEventRecord = ConnectionEventOf<String>;

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
    w: SingleObjectWriter,
}

impl Encoder {
    /// Checks that the parsed .avsc still has the layout this encoder writes.
    pub fn new() -> Result<Encoder> {
        Ok(Encoder { w: SCHEMA.writer()? })
    }

    pub fn header(&self) -> &[u8; 10] {
        self.w.header()
    }

    /// Clears `out` and writes header + body. No allocation once `out` has grown.
    pub fn encode(&self, e: &EventRecord<'_>, out: &mut Vec<u8>) {
        self.w.begin(out);
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

/// Decodes single-object bytes with apache-avro (fingerprint checked against the .avsc).
pub fn decode_single_object(bytes: &[u8]) -> Result<OwnedEventRecord> {
    SCHEMA.decode(bytes, |f| {
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
    })
}

/// apache-avro `Value` for a record (used by tests to compare with apache-avro's writer).
pub fn to_value(e: &EventRecord<'_>) -> Value {
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
        ("cmdline".into(), opt_str_value(e.cmdline)),
        ("cgroupId".into(), Value::Long(e.cgroup_id)),
        ("containerId".into(), opt_str_value(e.container_id)),
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
    use apache_avro::rabin::Rabin;
    use crate::output::avro::round_trip::{assert_matches_apache_avro, assert_refuses_other_fingerprint};

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
        assert_matches_apache_avro(schema(), (0..50).map(sample), |r, out| enc.encode(&r.as_ref(), out), |r| to_value(&r.as_ref()), decode_single_object);
    }

    #[test]
    fn header_uses_apache_avro_rabin_fingerprint() {
        let enc = Encoder::new().unwrap();
        assert_eq!(&enc.header()[..2], &[0xC3, 0x01]);
        assert_eq!(enc.header()[2..].to_vec(), schema().fingerprint::<Rabin>().bytes);
    }

    #[test]
    fn decode_rejects_wrong_fingerprint() {
        let mut buf = Vec::new();
        Encoder::new().unwrap().encode(&sample(1).as_ref(), &mut buf);
        assert_refuses_other_fingerprint(buf, decode_single_object);
    }
}
