//! TransactionStats (schemas/avro/TransactionStats.avsc): the record of one connection's
//! transactions in one interval, filled from the capture's `ConnTxn`, and its allocation-free
//! encoder (Avro single-object encoding), checked against apache-avro and the shared vectors.
use anyhow::{anyhow, bail, Result};
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::capture::connections::transactions::{ConnTxn, Histogram, TxnRole, SUB_BUCKET_BITS};
use crate::output::avro::{nat_value, write_long, write_opt_nat, write_str, RecordFields, RecordSchema, SingleObjectWriter};
use crate::shared::net::NatTuple;

impl ConnTxn {
    /// Fills `rec` (reused between calls) for publishing; `key` gets the canonical
    /// connection key (contracts.md, same as ConnectionEvent's).
    pub fn fill_record(&self, host_id: &str, boot_to_unix_ns: i64, rec: &mut TxnRecord, key: &mut String) {
        rec.host_id.clear();
        rec.host_id.push_str(host_id);
        rec.interval_start_ns = (self.interval_start_boot_ns as i64).saturating_add(boot_to_unix_ns);
        rec.interval_end_ns = (self.interval_end_boot_ns as i64).saturating_add(boot_to_unix_ns);
        rec.role = self.role;
        rec.local_address = self.local_addr;
        rec.local_port = self.local_port;
        rec.remote_address = self.remote_addr;
        rec.remote_port = self.remote_port;
        rec.tgid = self.tgid as i32;
        rec.process_start_time_ns = self.proc_start_ns as i64;
        rec.comm.clear();
        rec.comm.push_str(self.comm_str());
        rec.cgroup_id = self.cgroup_id as i64;
        rec.netns_inode = self.netns as i64;
        rec.socket_cookie = self.cookie as i64;
        rec.closed = self.closed;
        rec.connections = self.connections as i64;
        rec.nat = self.nat;
        rec.transactions = self.transactions as i64;
        rec.request_bytes = self.request_bytes as i64;
        rec.response_bytes = self.response_bytes as i64;
        rec.sub_bucket_bits = SUB_BUCKET_BITS as i32;
        rec.client_rtt.cells.clear();
        rec.client_rtt.cells.extend_from_slice(&self.client_rtt.cells);
        rec.server_time.cells.clear();
        rec.server_time.cells.extend_from_slice(&self.server_time.cells);
        // Entries (and their strings) are reused between records.
        rec.http_routes.truncate(self.routes.len());
        while rec.http_routes.len() < self.routes.len() {
            rec.http_routes.push(RouteRecord::default());
        }
        for (dst, src) in rec.http_routes.iter_mut().zip(&self.routes) {
            dst.method.clear();
            dst.method.push_str(src.route.method);
            dst.path.clear();
            dst.path.push_str(&src.route.path);
            dst.path_truncated = src.route.truncated;
            dst.transactions = src.latency.total() as i64;
            dst.latency.cells.clear();
            dst.latency.cells.extend_from_slice(&src.latency.cells);
        }
        let role = match self.role {
            TxnRole::Client => crate::shared::net::Role::Client,
            TxnRole::Server => crate::shared::net::Role::Server,
        };
        let ((la, lp), (ra, rp)) = self.key_endpoints();
        crate::shared::net::canonical_key(key, role, (&la, lp), (&ra, rp));
    }

}

/// One TransactionStats record (per connection per interval with transactions).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TxnRecord {
    pub host_id: String,
    pub interval_start_ns: i64,
    pub interval_end_ns: i64,
    pub role: TxnRole,
    pub local_address: [u8; 16],
    pub local_port: u16,
    pub remote_address: [u8; 16],
    pub remote_port: u16,
    pub tgid: i32,
    pub process_start_time_ns: i64,
    pub comm: String,
    pub cgroup_id: i64,
    pub netns_inode: i64,
    pub socket_cookie: i64,
    pub closed: bool,
    pub transactions: i64,
    pub request_bytes: i64,
    pub response_bytes: i64,
    pub sub_bucket_bits: i32,
    pub client_rtt: Histogram,
    pub server_time: Histogram,
    pub http_routes: Vec<RouteRecord>,
    pub connections: i64,
    pub nat: Option<NatTuple>,
}

/// One HttpRouteStats of a record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RouteRecord {
    pub method: String,
    pub path: String,
    pub path_truncated: bool,
    pub transactions: i64,
    pub latency: Histogram,
}

const FIELD_LAYOUT: [&str; 26] = [
    "hostId", "intervalStartNs", "intervalEndNs", "role", "localAddress", "localPort", "remoteAddress",
    "remotePort", "tgid", "processStartTimeNs", "comm", "cgroupId", "netnsInode", "socketCookie", "closed",
    "transactions", "requestBytes", "responseBytes", "subBucketBits", "clientRttBuckets", "clientRttCounts",
    "serverTimeBuckets", "serverTimeCounts", "httpRoutes", "connections", "nat",
];

static SCHEMA: RecordSchema = RecordSchema::new("TransactionStats", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/TransactionStats.avsc")), &FIELD_LAYOUT, file!());

pub fn schema() -> &'static Schema {
    SCHEMA.schema()
}

pub fn fingerprint() -> [u8; 8] {
    SCHEMA.fingerprint()
}

pub struct TxnEncoder {
    w: SingleObjectWriter,
}

impl TxnEncoder {
    pub fn new() -> Result<TxnEncoder> {
        Ok(TxnEncoder { w: SCHEMA.writer()? })
    }

    /// Clears `out`, writes header + body; no allocation once `out` has grown.
    pub fn encode(&self, r: &TxnRecord, out: &mut Vec<u8>) {
        self.w.begin(out);
        write_str(out, &r.host_id);
        write_long(out, r.interval_start_ns);
        write_long(out, r.interval_end_ns);
        write_long(out, r.role as i64);
        out.extend_from_slice(&r.local_address);
        write_long(out, r.local_port as i64);
        out.extend_from_slice(&r.remote_address);
        write_long(out, r.remote_port as i64);
        write_long(out, r.tgid as i64);
        write_long(out, r.process_start_time_ns);
        write_str(out, &r.comm);
        write_long(out, r.cgroup_id);
        write_long(out, r.netns_inode);
        write_long(out, r.socket_cookie);
        out.push(u8::from(r.closed));
        write_long(out, r.transactions);
        write_long(out, r.request_bytes);
        write_long(out, r.response_bytes);
        write_long(out, r.sub_bucket_bits as i64);
        write_histogram(out, &r.client_rtt);
        write_histogram(out, &r.server_time);
        // Avro arrays: one block of n items, then the 0 terminator (empty: just 0).
        if !r.http_routes.is_empty() {
            write_long(out, r.http_routes.len() as i64);
            for h in &r.http_routes {
                write_str(out, &h.method);
                write_str(out, &h.path);
                out.push(u8::from(h.path_truncated));
                write_long(out, h.transactions);
                write_histogram(out, &h.latency);
            }
        }
        write_long(out, 0);
        write_long(out, r.connections);
        write_opt_nat(out, r.nat.as_ref());
    }
}

/// A histogram as two parallel Avro arrays (bucket indexes, counts).
fn write_histogram(out: &mut Vec<u8>, h: &Histogram) {
    let n = h.cells.len() as i64;
    if n > 0 {
        write_long(out, n);
        for c in &h.cells {
            write_long(out, c.0 as i64);
        }
        write_long(out, 0);
        write_long(out, n);
        for c in &h.cells {
            write_long(out, c.1 as i64);
        }
    } else {
        write_long(out, 0);
    }
    write_long(out, 0);
}

fn decode_histogram(f: &RecordFields<'_>, b: &str, c: &str) -> Result<Histogram> {
    let buckets = f.array(b, |x| if let Value::Int(i) = x { Some(*i) } else { None })?;
    let counts = f.array(c, |x| if let Value::Long(i) = x { Some(*i) } else { None })?;
    if buckets.len() != counts.len() {
        bail!("{b} and {c} differ in length");
    }
    Ok(Histogram { cells: buckets.iter().zip(&counts).map(|(b, c)| (*b as u32, *c as u64)).collect() })
}

pub fn decode_single_object(bytes: &[u8]) -> Result<TxnRecord> {
    SCHEMA.decode(bytes, |f| {
        let hist = |b: &str, c: &str| decode_histogram(f, b, c);
        let routes = f.array("httpRoutes", |x| Some(x.clone()))?;
        let http_routes = routes
            .iter()
            .map(|v| {
                let r = RecordFields::of(v)?;
                Ok(RouteRecord {
                    method: r.string("method")?,
                    path: r.string("path")?,
                    path_truncated: r.boolean("pathTruncated")?,
                    transactions: r.long("transactions")?,
                    latency: decode_histogram(&r, "latencyBuckets", "latencyCounts")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(TxnRecord {
            host_id: f.string("hostId")?,
            interval_start_ns: f.long("intervalStartNs")?,
            interval_end_ns: f.long("intervalEndNs")?,
            role: TxnRole::from_symbol(f.symbol("role")?).ok_or_else(|| anyhow!("role"))?,
            local_address: f.fixed16("localAddress")?,
            local_port: f.port("localPort")?,
            remote_address: f.fixed16("remoteAddress")?,
            remote_port: f.port("remotePort")?,
            tgid: f.int("tgid")?,
            process_start_time_ns: f.long("processStartTimeNs")?,
            comm: f.string("comm")?,
            cgroup_id: f.long("cgroupId")?,
            netns_inode: f.long("netnsInode")?,
            socket_cookie: f.long("socketCookie")?,
            closed: f.boolean("closed")?,
            transactions: f.long("transactions")?,
            request_bytes: f.long("requestBytes")?,
            response_bytes: f.long("responseBytes")?,
            sub_bucket_bits: f.int("subBucketBits")?,
            client_rtt: hist("clientRttBuckets", "clientRttCounts")?,
            server_time: hist("serverTimeBuckets", "serverTimeCounts")?,
            http_routes,
            connections: f.long("connections")?,
            nat: f.opt_nat("nat")?,
        })
    })
}

/// apache-avro `Value` of a record (tests compare with apache-avro's writer).
pub fn to_value(r: &TxnRecord) -> Value {
    let (cb, cc) = r.client_rtt.to_arrays();
    let (sb, sc) = r.server_time.to_arrays();
    let ia = |v: Vec<i32>| Value::Array(v.into_iter().map(Value::Int).collect());
    let la = |v: Vec<i64>| Value::Array(v.into_iter().map(Value::Long).collect());
    Value::Record(vec![
        ("hostId".into(), Value::String(r.host_id.clone())),
        ("intervalStartNs".into(), Value::Long(r.interval_start_ns)),
        ("intervalEndNs".into(), Value::Long(r.interval_end_ns)),
        ("role".into(), Value::Enum(r.role as u32, r.role.symbol().into())),
        ("localAddress".into(), Value::Fixed(16, r.local_address.to_vec())),
        ("localPort".into(), Value::Int(r.local_port as i32)),
        ("remoteAddress".into(), Value::Fixed(16, r.remote_address.to_vec())),
        ("remotePort".into(), Value::Int(r.remote_port as i32)),
        ("tgid".into(), Value::Int(r.tgid)),
        ("processStartTimeNs".into(), Value::Long(r.process_start_time_ns)),
        ("comm".into(), Value::String(r.comm.clone())),
        ("cgroupId".into(), Value::Long(r.cgroup_id)),
        ("netnsInode".into(), Value::Long(r.netns_inode)),
        ("socketCookie".into(), Value::Long(r.socket_cookie)),
        ("closed".into(), Value::Boolean(r.closed)),
        ("transactions".into(), Value::Long(r.transactions)),
        ("requestBytes".into(), Value::Long(r.request_bytes)),
        ("responseBytes".into(), Value::Long(r.response_bytes)),
        ("subBucketBits".into(), Value::Int(r.sub_bucket_bits)),
        ("clientRttBuckets".into(), ia(cb)),
        ("clientRttCounts".into(), la(cc)),
        ("serverTimeBuckets".into(), ia(sb)),
        ("serverTimeCounts".into(), la(sc)),
        (
            "httpRoutes".into(),
            Value::Array(
                r.http_routes
                    .iter()
                    .map(|h| {
                        let (b, c) = h.latency.to_arrays();
                        Value::Record(vec![
                            ("method".into(), Value::String(h.method.clone())),
                            ("path".into(), Value::String(h.path.clone())),
                            ("pathTruncated".into(), Value::Boolean(h.path_truncated)),
                            ("transactions".into(), Value::Long(h.transactions)),
                            ("latencyBuckets".into(), ia(b)),
                            ("latencyCounts".into(), la(c)),
                        ])
                    })
                    .collect(),
            ),
        ),
        ("connections".into(), Value::Long(r.connections)),
        ("nat".into(), nat_value(r.nat.as_ref())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::avro::round_trip::assert_matches_apache_avro;

    pub(crate) fn sample(i: i64) -> TxnRecord {
        let mut c = Histogram::default();
        let mut s = Histogram::default();
        for k in 0..(i as u64 % 4) * 3 {
            c.record(100_000 + k * 1_000_003 * i as u64);
            s.record(5_000_000 + k * 7);
        }
        TxnRecord {
            host_id: format!("host-{i}"),
            interval_start_ns: 1_763_870_000_000_000_000 + i,
            interval_end_ns: 1_763_870_001_000_000_000 + i,
            role: if i % 2 == 0 { TxnRole::Client } else { TxnRole::Server },
            local_address: [i as u8; 16],
            local_port: (i * 1000) as u16,
            remote_address: [0xfe; 16],
            remote_port: 65535,
            tgid: i as i32 * 7,
            process_start_time_ns: i * 1_000_003,
            comm: if i % 3 == 0 { "curl".into() } else { "jävä".into() },
            cgroup_id: i << 33,
            netns_inode: 4026531840,
            socket_cookie: -i,
            closed: i % 2 == 1,
            transactions: c.total() as i64 + s.total() as i64,
            request_bytes: i * 100,
            response_bytes: i64::MAX - i,
            sub_bucket_bits: 7,
            http_routes: (0..i % 3)
                .map(|k| RouteRecord {
                    method: ["GET", "POST"][k as usize % 2].into(),
                    path: format!("/api/v{k}/ü{{id}}"),
                    path_truncated: k == 1,
                    transactions: (if i % 2 == 0 { &c } else { &s }).total() as i64,
                    latency: if i % 2 == 0 { c.clone() } else { s.clone() },
                })
                .collect(),
            client_rtt: if i % 2 == 0 { c } else { Histogram::default() },
            server_time: if i % 2 == 1 { s } else { Histogram::default() },
            connections: 1 + (i % 5) * 1000,
            nat: (i % 2 == 0).then_some(NatTuple {
                local_addr: [0xc0; 16],
                local_port: if i % 4 == 0 { 0 } else { 61000 },
                remote_addr: [i as u8 ^ 0x55; 16],
                remote_port: 8080,
            }),
        }
    }

    #[test]
    fn encoder_matches_apache_avro() {
        let enc = TxnEncoder::new().unwrap();
        assert_matches_apache_avro(schema(), (0..20).map(sample), |r, out| enc.encode(r, out), to_value, decode_single_object);
    }
}
