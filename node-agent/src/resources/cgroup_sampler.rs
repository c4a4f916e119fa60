//! High-frequency cgroup samples per container (rAdvisor): CPU usage and
//! throttling, memory, block I/O and pids, from cgroup v2 files or from the v1 controller
//! hierarchies (hybrid hosts, like this one, keep the controllers in v1).
//!
//! The collection loop allocates nothing: every target's files are opened once (on discovery) and
//! re-read with `pread` into one reused buffer, numbers are parsed from bytes, and the loop sleeps to
//! absolute deadlines (`clock_nanosleep(TIMER_ABSTIME)`) so a late tick does not shift the next
//! ones. The observed intervals between ticks are kept in `IntervalStats` (mean, σ, percentiles,
//! max) — the jitter figures of rAdvisor Tables 5/6.
//!
//! Length: about 400 lines of code; the rest are its unit tests, kept beside the sampler they
//! drive.
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::identity::cgroup::{identify, Identity};

/// One reading of a cgroup's counters. Counters are cumulative (as the kernel keeps them);
/// memory and pids are current values. A file the kernel does not offer reads as 0.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CgroupStats {
    pub cpu_usage_ns: u64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
    pub memory_bytes: u64,
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
    pub pids: u64,
}

/// Where a cgroup's counters live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v2: every file in one directory under this root.
    V2(PathBuf),
    /// cgroup v1: one hierarchy per controller under this root (normally /sys/fs/cgroup), with
    /// the usual mount names (cpuacct, cpu, memory, blkio, pids).
    V1(PathBuf),
}

impl Hierarchy {
    /// v2 when its root offers the cpu controller, else v1 when /sys/fs/cgroup/cpuacct exists.
    pub fn detect(v2_root: &Path, v1_root: &Path) -> Hierarchy {
        let v2_cpu = std::fs::read_to_string(v2_root.join("cgroup.controllers"))
            .map(|c| c.split_whitespace().any(|x| x == "cpu"))
            .unwrap_or(false);
        if !v2_cpu && v1_root.join("cpuacct").is_dir() {
            Hierarchy::V1(v1_root.to_path_buf())
        } else {
            Hierarchy::V2(v2_root.to_path_buf())
        }
    }

    /// The directory whose subtree is walked to find containers.
    fn walk_root(&self) -> PathBuf {
        match self {
            Hierarchy::V2(r) => r.clone(),
            Hierarchy::V1(r) => r.join("cpuacct"),
        }
    }
}

/// Which counter file a text came from (`parse_into`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    V2CpuStat,
    V2Memory,
    V2Io,
    V1CpuUsage,
    V1CpuStat,
    V1Memory,
    V1Io,
    Pids,
}

/// A container's cgroup with its files held open.
#[derive(Debug)]
pub struct Target {
    /// Path relative to the hierarchy root, e.g. "/system.slice/docker-<id>.scope".
    pub path: String,
    pub identity: Identity,
    files: Vec<(Kind, File)>,
}

impl Target {
    /// Opens the files of the cgroup at `rel` (those that exist; a missing controller reads 0).
    pub fn open(h: &Hierarchy, rel: &str, identity: Identity) -> Target {
        let rel_trim = rel.trim_start_matches('/');
        let wanted: Vec<(Kind, PathBuf)> = match h {
            Hierarchy::V2(root) => {
                let d = root.join(rel_trim);
                vec![
                    (Kind::V2CpuStat, d.join("cpu.stat")),
                    (Kind::V2Memory, d.join("memory.current")),
                    (Kind::V2Io, d.join("io.stat")),
                    (Kind::Pids, d.join("pids.current")),
                ]
            }
            Hierarchy::V1(root) => vec![
                (Kind::V1CpuUsage, root.join("cpuacct").join(rel_trim).join("cpuacct.usage")),
                (Kind::V1CpuStat, root.join("cpu").join(rel_trim).join("cpu.stat")),
                (Kind::V1Memory, root.join("memory").join(rel_trim).join("memory.usage_in_bytes")),
                (Kind::V1Io, root.join("blkio").join(rel_trim).join("blkio.throttle.io_service_bytes_recursive")),
                (Kind::Pids, root.join("pids").join(rel_trim).join("pids.current")),
            ],
        };
        let files = wanted.into_iter().filter_map(|(k, p)| File::open(p).ok().map(|f| (k, f))).collect();
        Target { path: rel.to_string(), identity, files }
    }

    /// Whether any counter file could be opened.
    pub fn readable(&self) -> bool {
        !self.files.is_empty()
    }

    /// Reads every counter into `out`, using `buf` for the file contents. False when a file
    /// could not be read any more (the cgroup was removed).
    pub fn read(&self, buf: &mut [u8], out: &mut CgroupStats) -> bool {
        *out = CgroupStats::default();
        for (kind, f) in &self.files {
            let n = match f.read_at(buf, 0) {
                Ok(n) => n,
                Err(_) => return false,
            };
            parse_into(*kind, &buf[..n], out);
        }
        true
    }
}

fn parse_u64(b: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for &c in b.iter().skip_while(|c| c.is_ascii_whitespace()) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add((c - b'0') as u64);
    }
    v
}

/// `key value` lines (cpu.stat): the value of `key`, if present.
fn keyed(text: &[u8], key: &[u8]) -> Option<u64> {
    text.split(|&c| c == b'\n').find_map(|line| {
        let rest = line.strip_prefix(key)?;
        rest.first().filter(|c| **c == b' ').map(|_| parse_u64(&rest[1..]))
    })
}

/// Adds what the text of a `kind` file says to `out`.
pub fn parse_into(kind: Kind, text: &[u8], out: &mut CgroupStats) {
    match kind {
        Kind::V2CpuStat => {
            out.cpu_usage_ns = keyed(text, b"usage_usec").unwrap_or(0).saturating_mul(1000);
            out.nr_periods = keyed(text, b"nr_periods").unwrap_or(0);
            out.nr_throttled = keyed(text, b"nr_throttled").unwrap_or(0);
            out.throttled_ns = keyed(text, b"throttled_usec").unwrap_or(0).saturating_mul(1000);
        }
        Kind::V1CpuUsage => out.cpu_usage_ns = parse_u64(text),
        Kind::V1CpuStat => {
            out.nr_periods = keyed(text, b"nr_periods").unwrap_or(0);
            out.nr_throttled = keyed(text, b"nr_throttled").unwrap_or(0);
            out.throttled_ns = keyed(text, b"throttled_time").unwrap_or(0);
        }
        Kind::V2Memory | Kind::V1Memory => out.memory_bytes = parse_u64(text),
        Kind::Pids => out.pids = parse_u64(text),
        Kind::V2Io => {
            // "8:0 rbytes=1 wbytes=2 rios=3 ..." per device.
            for line in text.split(|&c| c == b'\n') {
                for field in line.split(|&c| c == b' ') {
                    if let Some(v) = field.strip_prefix(b"rbytes=") {
                        out.io_read_bytes = out.io_read_bytes.saturating_add(parse_u64(v));
                    } else if let Some(v) = field.strip_prefix(b"wbytes=") {
                        out.io_write_bytes = out.io_write_bytes.saturating_add(parse_u64(v));
                    }
                }
            }
        }
        Kind::V1Io => {
            // "8:0 Read 123" / "8:0 Write 456" per device, then "Total 579".
            for line in text.split(|&c| c == b'\n') {
                let mut it = line.split(|&c| c == b' ');
                let (Some(_dev), Some(op), Some(v)) = (it.next(), it.next(), it.next()) else { continue };
                match op {
                    b"Read" => out.io_read_bytes = out.io_read_bytes.saturating_add(parse_u64(v)),
                    b"Write" => out.io_write_bytes = out.io_write_bytes.saturating_add(parse_u64(v)),
                    _ => {}
                }
            }
        }
    }
}

/// Container cgroups under the hierarchy (identity not "host"), walked to `max_depth` levels.
pub fn discover(h: &Hierarchy, max_depth: usize) -> Vec<(String, Identity)> {
    discover_under(h, max_depth, "")
}

/// As `discover`, only below `within` (a kubelet's cgroup root, `--node-scope`; "" = all).
/// Paths stay relative to the hierarchy's root.
pub fn discover_under(h: &Hierarchy, max_depth: usize, within: &str) -> Vec<(String, Identity)> {
    let root = h.walk_root();
    let mut out = Vec::new();
    let mut stack = vec![(root.join(within.trim_start_matches('/')), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            if !e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            let p = e.path();
            let rel = format!("/{}", p.strip_prefix(&root).unwrap_or(&p).display());
            let id = identify(&rel);
            if !id.is_host() {
                // The container's own cgroup: its children (if any) belong to it.
                if !out.iter().any(|(_, i): &(String, Identity)| i.group == id.group) {
                    out.push((rel, id));
                }
                continue;
            }
            if depth + 1 < max_depth {
                stack.push((p, depth + 1));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The containers of a host with their files open, read together.
pub struct CgroupSampler {
    hierarchy: Hierarchy,
    /// Only containers below this path (`--node-scope`); "" = all.
    within: String,
    pub targets: Vec<Target>,
    stats: Vec<CgroupStats>,
    buf: Vec<u8>,
}

impl CgroupSampler {
    pub fn new(hierarchy: Hierarchy) -> CgroupSampler {
        Self::within(hierarchy, "")
    }

    /// Only the containers below `within` (a kubelet's cgroup root, `--node-scope`).
    pub fn within(hierarchy: Hierarchy, within: &str) -> CgroupSampler {
        let mut s = CgroupSampler { hierarchy, within: within.to_string(), targets: Vec::new(), stats: Vec::new(), buf: vec![0; 64 * 1024] };
        s.rediscover();
        s
    }

    /// Walks the hierarchy again (allocates; call it seconds apart, not every tick).
    pub fn rediscover(&mut self) {
        let found = discover_under(&self.hierarchy, 8, &self.within);
        // A target whose files no longer read was removed (perhaps created again under the same
        // path: then it is reopened below and its counters start again from 0).
        let buf = &mut self.buf;
        let mut scratch = CgroupStats::default();
        self.targets.retain(|t| found.iter().any(|(p, _)| *p == t.path) && t.read(buf, &mut scratch));
        for (path, id) in found {
            if !self.targets.iter().any(|t| t.path == path) {
                let t = Target::open(&self.hierarchy, &path, id);
                if t.readable() {
                    self.targets.push(t);
                }
            }
        }
        self.stats.resize(self.targets.len(), CgroupStats::default());
    }

    /// Adds a cgroup by path (tests, or a runtime's event), whatever its identity.
    pub fn add(&mut self, rel: &str, identity: Identity) {
        self.targets.push(Target::open(&self.hierarchy, rel, identity));
        self.stats.push(CgroupStats::default());
    }

    /// Reads every target; `stats()[i]` is target i. A cgroup that vanished keeps its last
    /// reading until the next `rediscover`. Allocation-free.
    pub fn sample(&mut self) -> &[CgroupStats] {
        for (t, s) in self.targets.iter().zip(self.stats.iter_mut()) {
            let mut fresh = CgroupStats::default();
            if t.read(&mut self.buf, &mut fresh) {
                *s = fresh;
            }
        }
        &self.stats
    }
}

/// Observed intervals between ticks: Welford mean/σ, max, and a 10 µs-resolution histogram up to
/// `cap` for percentiles (above it counted in the last cell). Fixed memory; no allocation per tick.
pub struct IntervalStats {
    n: u64,
    mean: f64,
    m2: f64,
    max_ns: u64,
    cells: Vec<u64>,
}

const CELL_NS: u64 = 10_000;

impl IntervalStats {
    pub fn new(cap_ns: u64) -> IntervalStats {
        IntervalStats { n: 0, mean: 0.0, m2: 0.0, max_ns: 0, cells: vec![0; (cap_ns / CELL_NS + 1) as usize] }
    }

    pub fn record(&mut self, ns: u64) {
        self.n += 1;
        let x = ns as f64;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.max_ns = self.max_ns.max(ns);
        let i = ((ns / CELL_NS) as usize).min(self.cells.len() - 1);
        self.cells[i] += 1;
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn mean_ns(&self) -> f64 {
        self.mean
    }
    pub fn stddev_ns(&self) -> f64 {
        if self.n > 1 {
            (self.m2 / (self.n - 1) as f64).sqrt()
        } else {
            0.0
        }
    }
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// Nearest-rank percentile, as the upper edge of its 10 µs cell (capped at the max seen).
    pub fn percentile_ns(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut cum = 0;
        for (i, c) in self.cells.iter().enumerate() {
            cum += c;
            if cum >= rank {
                return ((i as u64 + 1) * CELL_NS).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

/// Puts the calling thread in SCHED_FIFO at `priority` (1..=99), so CPU hogs of normal priority
/// cannot delay its wake-ups. Needs CAP_SYS_NICE; the error says why it was refused.
pub fn set_realtime(priority: i32) -> std::io::Result<()> {
    let p = libc::sched_param { sched_priority: priority };
    // SAFETY: 0 = the calling thread; valid param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// CLOCK_MONOTONIC now, ns.
pub fn mono_now() -> u64 {
    crate::shared::clock::mono_ns()
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (absolute: no drift from late wake-ups).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec { tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t, tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: valid timespec; EINTR just returns early and the caller's next deadline still holds.
    unsafe {
        libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut());
    }
}

/// Runs `ticks` ticks `interval_ns` apart on the calling thread: each tick samples every target
/// and hands the readings to `on_tick(tick_start_mono_ns, targets, stats)`; returns the observed
/// intervals between tick starts. A tick that overran its successor's deadline starts the next
/// one at once (counted as a long interval, never skipped silently).
pub fn run_ticks<F: FnMut(u64, &[Target], &[CgroupStats])>(
    sampler: &mut CgroupSampler,
    interval_ns: u64,
    ticks: u64,
    mut on_tick: F,
) -> IntervalStats {
    let mut iv = IntervalStats::new(interval_ns * 20);
    let mut deadline = mono_now() + interval_ns;
    let mut last: Option<u64> = None;
    for _ in 0..ticks {
        sleep_until(deadline);
        let start = mono_now();
        if let Some(prev) = last {
            iv.record(start - prev);
        }
        last = Some(start);
        sampler.sample();
        on_tick(start, &sampler.targets, &sampler.stats);
        deadline += interval_ns;
        let now = mono_now();
        if deadline < now {
            deadline = now;
        }
    }
    iv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn v2_fixture_tree() {
        let root = std::env::temp_dir().join(format!("wg-cgs-v2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let rel = format!("system.slice/docker-{ID}.scope");
        let d = root.join(&rel);
        write(&d.join("cpu.stat"), "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250\n");
        write(&d.join("memory.current"), "73728\n");
        write(&d.join("io.stat"), "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n259:0 rbytes=1 wbytes=2 rios=1 wios=1\n");
        write(&d.join("pids.current"), "4\n");
        write(&root.join("cgroup.controllers"), "cpuset cpu io memory pids\n");
        // Not a container: walked through, not sampled.
        write(&root.join("user.slice/cpu.stat"), "usage_usec 9\n");
        let h = Hierarchy::detect(&root, &root.join("no-v1"));
        assert_eq!(h, Hierarchy::V2(root.clone()));
        let mut s = CgroupSampler::new(h);
        assert_eq!(s.targets.len(), 1, "{:?}", s.targets);
        assert_eq!(s.targets[0].identity.group, ID);
        let st = s.sample()[0];
        assert_eq!(
            st,
            CgroupStats {
                cpu_usage_ns: 1_500_000,
                nr_periods: 10,
                nr_throttled: 3,
                throttled_ns: 250_000,
                memory_bytes: 73728,
                io_read_bytes: 4097,
                io_write_bytes: 8194,
                pids: 4
            }
        );
        // Re-read in place: a new value shows on the next tick (files held open).
        write(&d.join("memory.current"), "100\n");
        assert_eq!(s.sample()[0].memory_bytes, 100);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn v1_fixture_tree() {
        let root = std::env::temp_dir().join(format!("wg-cgs-v1-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let rel = format!("kubepods/burstable/pod11111111-2222-3333-4444-555555555555/{ID}");
        write(&root.join("cpuacct").join(&rel).join("cpuacct.usage"), "123456789\n");
        write(&root.join("cpu").join(&rel).join("cpu.stat"), "nr_periods 7\nnr_throttled 2\nthrottled_time 5000\n");
        write(&root.join("memory").join(&rel).join("memory.usage_in_bytes"), "2048\n");
        write(
            &root.join("blkio").join(&rel).join("blkio.throttle.io_service_bytes_recursive"),
            "8:0 Read 10\n8:0 Write 20\n8:0 Sync 30\n8:0 Async 0\n8:0 Total 30\nTotal 30\n",
        );
        write(&root.join("pids").join(&rel).join("pids.current"), "2\n");
        let h = Hierarchy::detect(&root.join("unified-without-cpu"), &root);
        assert_eq!(h, Hierarchy::V1(root.clone()));
        let mut s = CgroupSampler::new(h);
        assert_eq!(s.targets.len(), 1);
        assert_eq!(s.targets[0].identity.pod_uid.as_deref(), Some("11111111-2222-3333-4444-555555555555"));
        let st = s.sample()[0];
        assert_eq!(
            st,
            CgroupStats {
                cpu_usage_ns: 123456789,
                nr_periods: 7,
                nr_throttled: 2,
                throttled_ns: 5000,
                memory_bytes: 2048,
                io_read_bytes: 10,
                io_write_bytes: 20,
                pids: 2
            }
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    /// `--node-scope`: only the containers below the node's kubelet root, not those of another
    /// root sharing its prefix; paths stay relative to the hierarchy.
    #[test]
    fn within_a_kubelet_root() {
        let root = std::env::temp_dir().join(format!("wg-cgs-within-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mine = format!("n1/kubepods/besteffort/pod11111111-2222-3333-4444-555555555555/{ID}");
        let other_id = ID.replace('0', "f");
        let other = format!("n1-2/kubepods/besteffort/pod11111111-2222-3333-4444-666666666666/{other_id}");
        for rel in [&mine, &other] {
            write(&root.join("cpuacct").join(rel).join("cpuacct.usage"), "1\n");
        }
        let h = Hierarchy::V1(root.clone());
        let found = |within: &str| discover_under(&h, 8, within).into_iter().map(|(p, _)| p).collect::<Vec<_>>();
        assert_eq!(found("/n1"), vec![format!("/{mine}")]);
        assert_eq!(found("/n1-2"), vec![format!("/{other}")]);
        assert_eq!(found("").len(), 2);
        assert!(found("/n3").is_empty(), "a root that does not exist (yet): nothing");
        assert_eq!(CgroupSampler::within(h, "/n1").targets.len(), 1);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn io_counters_past_u64_saturate() {
        // Found by fuzz/proc_files: two devices whose rbytes add up past u64::MAX overflowed
        // the sum (a panic with overflow checks, a small wrapped value without).
        let text = format!("259:0 rbytes={} wbytes=1\n259:1 rbytes=2 wbytes=1\n", u64::MAX - 1);
        let mut out = CgroupStats::default();
        parse_into(Kind::V2Io, text.as_bytes(), &mut out);
        assert_eq!((out.io_read_bytes, out.io_write_bytes), (u64::MAX, 2));
        let v1 = format!("8:0 Write {}\n8:16 Write {}\n", u64::MAX, u64::MAX);
        parse_into(Kind::V1Io, v1.as_bytes(), &mut out);
        assert_eq!(out.io_write_bytes, u64::MAX);
    }

    #[test]
    fn interval_stats_hand_computed() {
        let mut iv = IntervalStats::new(1_000_000_000);
        for ns in [10_000_000u64, 10_000_000, 10_020_000, 9_980_000, 12_000_000] {
            iv.record(ns);
        }
        assert_eq!(iv.count(), 5);
        assert!((iv.mean_ns() - 10_400_000.0).abs() < 1e-6);
        // Sample σ of (10, 10, 10.02, 9.98, 12) ms: sqrt(3.2008 / 4) = 0.894539 ms.
        assert!((iv.stddev_ns() - 894_539.0).abs() < 10.0, "{}", iv.stddev_ns());
        assert_eq!(iv.max_ns(), 12_000_000);
        // Ranks: p50 -> 3rd of (9.98, 10, 10, 10.02, 12) = 10 ms, in cell [10.00, 10.01).
        assert_eq!(iv.percentile_ns(0.5), 10_010_000);
        assert_eq!(iv.percentile_ns(0.99), 12_000_000);
    }
}
