//! Network transactions (thesis §3.3.1, Fig. 3.4): the log-linear bucket scheme shared with
//! the kernel (`txn_bucket` in src/capture/connections/connections.bpf.c), exact histogram merging and
//! percentiles, and the TransactionStats record (schemas/avro/TransactionStats.avsc) with its
//! allocation-free encoder (Avro single-object encoding).
use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, bail, Result};
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::capture::connections::http_route::HttpRoute;
use crate::output::avro::{decode_datum, nat_value, single_object_header, write_long, write_opt_nat, write_str, RecordFields};
use crate::shared::net::NatTuple;

pub const SCHEMA_JSON: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/TransactionStats.avsc"));

/// s: bits of the value kept below the leading one (TXN_SUB_BITS in connections.h).
pub const SUB_BUCKET_BITS: u32 = 7;
/// Values below this are their own bucket (exact).
const EXACT_BELOW: u64 = 2 << SUB_BUCKET_BITS;
/// Largest bucket index (u64::MAX).
pub const MAX_BUCKET: u32 = ((63 - SUB_BUCKET_BITS + 1) << SUB_BUCKET_BITS) | ((1 << SUB_BUCKET_BITS) - 1);

/// Bucket of a duration in ns: `v` if `v < 2^(s+1)`, else `((e - s + 1) << s) | m` with
/// `e = floor(log2 v)` and `m` the `s` bits below the leading one.
pub fn bucket_of(v: u64) -> u32 {
    if v < EXACT_BELOW {
        return v as u32;
    }
    let e = 63 - v.leading_zeros();
    let m = ((v >> (e - SUB_BUCKET_BITS)) as u32) & ((1 << SUB_BUCKET_BITS) - 1);
    ((e - SUB_BUCKET_BITS + 1) << SUB_BUCKET_BITS) | m
}

/// Smallest value in bucket `b`.
pub fn bucket_lower(b: u32) -> u64 {
    if (b as u64) < EXACT_BELOW {
        return b as u64;
    }
    let e = (b >> SUB_BUCKET_BITS) + SUB_BUCKET_BITS - 1;
    let m = (b & ((1 << SUB_BUCKET_BITS) - 1)) as u64;
    ((1u64 << SUB_BUCKET_BITS) + m) << (e - SUB_BUCKET_BITS)
}

/// Largest value in bucket `b` (inclusive).
pub fn bucket_upper(b: u32) -> u64 {
    if (b as u64) < EXACT_BELOW {
        return b as u64;
    }
    let e = (b >> SUB_BUCKET_BITS) + SUB_BUCKET_BITS - 1;
    bucket_lower(b) + ((1u64 << (e - SUB_BUCKET_BITS)) - 1)
}

/// Midpoint of bucket `b` (within 2^-(s+1) of any value in it).
pub fn bucket_mid(b: u32) -> u64 {
    let (l, u) = (bucket_lower(b), bucket_upper(b));
    l + (u - l) / 2
}

/// A sparse histogram: (bucket, count), buckets strictly ascending, counts > 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    pub cells: Vec<(u32, u64)>,
}

impl Histogram {
    pub fn total(&self) -> u64 {
        self.cells.iter().map(|c| c.1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Adds `n` observations to bucket `b`.
    pub fn add(&mut self, b: u32, n: u64) {
        if n == 0 {
            return;
        }
        match self.cells.binary_search_by_key(&b, |c| c.0) {
            Ok(i) => self.cells[i].1 += n,
            Err(i) => self.cells.insert(i, (b, n)),
        }
    }

    pub fn record(&mut self, value_ns: u64) {
        self.add(bucket_of(value_ns), 1);
    }

    /// Exact merge: bucket-wise addition.
    pub fn merge(&mut self, other: &Histogram) {
        // A few cells into many (a short connection's into a merged record): in place.
        if other.cells.len() <= 4 {
            for &(b, n) in &other.cells {
                self.add(b, n);
            }
            return;
        }
        let mut out = Vec::with_capacity(self.cells.len() + other.cells.len());
        let (mut i, mut j) = (0, 0);
        let (a, b) = (&self.cells, &other.cells);
        while i < a.len() || j < b.len() {
            if j == b.len() || (i < a.len() && a[i].0 < b[j].0) {
                out.push(a[i]);
                i += 1;
            } else if i == a.len() || b[j].0 < a[i].0 {
                out.push(b[j]);
                j += 1;
            } else {
                out.push((a[i].0, a[i].1 + b[j].1));
                i += 1;
                j += 1;
            }
        }
        self.cells = out;
    }

    /// Nearest-rank percentile bucket: the first bucket whose cumulative count reaches
    /// `ceil(q * total)` (at least 1). `None` when empty. `q` in [0, 1].
    pub fn percentile_bucket(&self, q: f64) -> Option<u32> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut cum = 0;
        for &(b, n) in &self.cells {
            cum += n;
            if cum >= rank {
                return Some(b);
            }
        }
        self.cells.last().map(|c| c.0)
    }

    /// Split into the schema's parallel arrays.
    pub fn to_arrays(&self) -> (Vec<i32>, Vec<i64>) {
        (self.cells.iter().map(|c| c.0 as i32).collect(), self.cells.iter().map(|c| c.1 as i64).collect())
    }

    pub fn from_arrays(buckets: &[i32], counts: &[i64]) -> Histogram {
        let mut h = Histogram::default();
        for (b, n) in buckets.iter().zip(counts) {
            h.add(*b as u32, *n as u64);
        }
        h
    }
}

/// What the capture thread hands over per connection per interval (boot clock, raw identity).
#[derive(Debug, Clone, PartialEq)]
pub struct ConnTxn {
    pub interval_start_boot_ns: u64,
    pub interval_end_boot_ns: u64,
    pub role: TxnRole,
    pub cookie: u64,
    pub proc_start_ns: u64,
    pub cgroup_id: u64,
    pub tgid: u32,
    pub netns: u32,
    pub local_addr: [u8; 16],
    pub local_port: u16,
    pub remote_addr: [u8; 16],
    pub remote_port: u16,
    pub comm: [u8; 16],
    pub closed: bool,
    /// Connections merged into this one (client port masked, cookie 0) when above 1 or masked.
    pub connections: u64,
    pub transactions: u64,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub client_rtt: Histogram,
    pub server_time: Histogram,
    /// The HTTP/1.x part of the role's histogram, per route (route order is the kernel's).
    pub routes: Vec<RouteTxn>,
    /// The connection past this host's NAT (CLIENT records of translated connections).
    pub nat: Option<NatTuple>,
}

/// Transactions of one route of one connection in one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteTxn {
    pub route: Arc<HttpRoute>,
    pub latency: Histogram,
}

impl ConnTxn {
    pub fn comm_str(&self) -> &str {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        std::str::from_utf8(&self.comm[..end]).unwrap_or("?")
    }

    /// The histogram of this connection's role.
    pub fn latency(&self) -> &Histogram {
        match self.role {
            TxnRole::Client => &self.client_rtt,
            TxnRole::Server => &self.server_time,
        }
    }

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

    /// The endpoints correlation uses: past the NAT when there was one.
    pub fn key_endpoints(&self) -> (crate::shared::net::Endpoint, crate::shared::net::Endpoint) {
        crate::shared::net::past_nat(self.nat.as_ref(), (self.local_addr, self.local_port), (self.remote_addr, self.remote_port))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TxnRole {
    #[default]
    Client,
    Server,
}

impl TxnRole {
    pub fn symbol(self) -> &'static str {
        ["CLIENT", "SERVER"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<TxnRole> {
        [TxnRole::Client, TxnRole::Server].into_iter().find(|x| x.symbol() == s)
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

pub fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| Schema::parse_str(SCHEMA_JSON).expect("TransactionStats.avsc must parse"))
}

pub fn fingerprint() -> [u8; 8] {
    static F: OnceLock<[u8; 8]> = OnceLock::new();
    *F.get_or_init(|| crate::output::avro::rabin(schema()))
}

pub struct TxnEncoder {
    header: [u8; 10],
}

impl TxnEncoder {
    pub fn new() -> Result<TxnEncoder> {
        Ok(TxnEncoder { header: single_object_header(schema(), &FIELD_LAYOUT, "src/transactions.rs")? })
    }

    /// Clears `out`, writes header + body; no allocation once `out` has grown.
    pub fn encode(&self, r: &TxnRecord, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.header);
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
    let value = decode_datum(bytes, schema(), fingerprint())?;
    let f = RecordFields::of(&value)?;
    let hist = |b: &str, c: &str| decode_histogram(&f, b, c);
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
    use apache_avro::GenericSingleObjectWriter;

    /// Values to sweep: every value below 2^16, then a geometric sweep with neighbours, to u64::MAX.
    fn sweep() -> Vec<u64> {
        let mut v: Vec<u64> = (0..65536).collect();
        let mut x = 65536f64;
        while x < 1.8e19 {
            let y = x as u64;
            v.extend([y - 1, y, y + 1]);
            x *= 1.0013;
        }
        for e in 16..64 {
            let p = 1u64 << e;
            v.extend([p - 1, p, p + 1]);
        }
        v.push(u64::MAX);
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn bucket_error_bound_and_bounds_contain_value() {
        let mut worst = 0f64;
        for v in sweep() {
            let b = bucket_of(v);
            let (l, u) = (bucket_lower(b), bucket_upper(b));
            assert!(l <= v && v <= u, "{v} not in bucket {b} [{l}, {u}]");
            if v > 0 {
                let rel = (v - l) as f64 / v as f64;
                assert!(rel <= 1.0 / 128.0, "{v}: relative error {rel} vs lower bound");
                let mid = bucket_mid(b) as f64;
                let rel_mid = (mid - v as f64).abs() / v as f64;
                assert!(rel_mid <= 1.0 / 256.0 + 1e-12, "{v}: midpoint error {rel_mid}");
                worst = worst.max(rel);
            }
        }
        assert!(worst < 0.008, "worst relative error {worst}");
        assert_eq!(bucket_of(u64::MAX), MAX_BUCKET);
        assert!(MAX_BUCKET <= u16::MAX as u32, "bucket fits the kernel's u16 key");
    }

    #[test]
    fn buckets_monotonic_and_contiguous() {
        let mut prev_b = 0u32;
        let mut prev_v = 0u64;
        for v in sweep() {
            let b = bucket_of(v);
            assert!(b >= prev_b, "bucket_of not monotonic at {v} ({b} < {prev_b} at {prev_v})");
            prev_b = b;
            prev_v = v;
        }
        // Buckets tile the u64 range without gaps or overlaps.
        for b in 0..MAX_BUCKET {
            assert_eq!(bucket_upper(b) + 1, bucket_lower(b + 1), "gap after bucket {b}");
            assert_eq!(bucket_of(bucket_lower(b)), b);
            assert_eq!(bucket_of(bucket_upper(b)), b);
        }
        assert_eq!(bucket_upper(MAX_BUCKET), u64::MAX);
        // Exact region and the kernel's formula at known points.
        assert_eq!((bucket_of(0), bucket_of(255), bucket_of(256), bucket_of(257), bucket_of(258)), (0, 255, 256, 256, 257));
        assert_eq!(bucket_lower(bucket_of(5_000_000)), 4_980_736); // 152 << 15
    }

    #[test]
    fn merge_is_exact_bucketwise_addition() {
        // Deterministic pseudo-random values; merged parts == one histogram of all values.
        let mut s = 0x9E3779B97F4A7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut all = Histogram::default();
        let mut parts = vec![Histogram::default(); 5];
        for i in 0..20_000 {
            let v = next() % (1 + (next() % 10_000_000_000));
            all.record(v);
            parts[i % 5].record(v);
        }
        let mut merged = Histogram::default();
        for p in &parts {
            merged.merge(p);
        }
        assert_eq!(merged, all);
        assert_eq!(merged.total(), 20_000);
        // Merge order does not matter.
        let mut rev = Histogram::default();
        for p in parts.iter().rev() {
            rev.merge(p);
        }
        assert_eq!(rev, all);
        assert!(all.cells.windows(2).all(|w| w[0].0 < w[1].0));
        let (b, c) = all.to_arrays();
        assert_eq!(Histogram::from_arrays(&b, &c), all);
    }

    #[test]
    fn percentile_nearest_rank() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile_bucket(0.5), None);
        // 100 values: 1..=100 (exact buckets).
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.percentile_bucket(0.5), Some(50));
        assert_eq!(h.percentile_bucket(0.9), Some(90));
        assert_eq!(h.percentile_bucket(0.99), Some(99));
        assert_eq!(h.percentile_bucket(1.0), Some(100));
        assert_eq!(h.percentile_bucket(0.0), Some(1));
        // 70 at 5 ms, 30 at 20 ms: p50 in the 5 ms bucket, p90 in the 20 ms bucket.
        let mut h = Histogram::default();
        h.add(bucket_of(5_000_000), 70);
        h.add(bucket_of(20_000_000), 30);
        assert_eq!(h.percentile_bucket(0.5), Some(bucket_of(5_000_000)));
        assert_eq!(h.percentile_bucket(0.7), Some(bucket_of(5_000_000)));
        assert_eq!(h.percentile_bucket(0.71), Some(bucket_of(20_000_000)));
        assert_eq!(h.percentile_bucket(0.99), Some(bucket_of(20_000_000)));
        // Against exact nearest-rank percentiles of raw values: same bucket.
        let vals: Vec<u64> = (0..1000u64).map(|i| 1_000 + i * i * 37).collect();
        let mut h = Histogram::default();
        vals.iter().for_each(|v| h.record(*v));
        for q in [0.5, 0.75, 0.9, 0.99, 0.999] {
            let rank = (q * 1000f64).ceil() as usize;
            let exact = vals[rank - 1];
            let b = h.percentile_bucket(q).unwrap();
            assert_eq!(b, bucket_of(exact), "q={q}");
            assert!((bucket_mid(b) as f64 - exact as f64).abs() / exact as f64 <= 1.0 / 256.0);
        }
    }

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
        let mut w = GenericSingleObjectWriter::new_with_capacity(schema(), 512).unwrap();
        let mut buf = Vec::new();
        for i in 0..20 {
            let r = sample(i);
            enc.encode(&r, &mut buf);
            let mut theirs = Vec::new();
            w.write_value_ref(&to_value(&r), &mut theirs).unwrap();
            assert_eq!(buf, theirs, "record {i}");
            assert_eq!(decode_single_object(&buf).unwrap(), r);
        }
    }
}
