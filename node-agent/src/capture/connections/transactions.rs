//! Network transactions (PowerThesis §3.3.1, Fig. 3.4): the log-linear bucket scheme shared with
//! the kernel (`txn_bucket` in src/capture/connections/connections.bpf.c), exact histogram merging and
//! percentiles, and the per-connection figures the capture thread hands over (`ConnTxn`; its
//! TransactionStats record and encoder are in `output::avro::transaction`).
use std::sync::Arc;

use crate::capture::connections::http_route::HttpRoute;
use crate::shared::net::NatTuple;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
