//! CPU accounting from `sched:sched_switch` / `sched:sched_process_exec` (src/capture/sched/sched.bpf.c):
//! on-CPU ns (and HT-weighted cycles where hardware counters exist) per thread, aggregated
//! in the kernel as cumulative counters that only the CPU a thread leaves writes. User space
//! reads them while the programs run, adds the slice still running on each CPU, takes
//! differences between reads, and sums threads into processes (tgid + start time).
//!
//! Reading is allocation-free once the tables have grown: raw `bpf_map_get_next_key` /
//! `bpf_map_lookup_elem` into stack buffers, exit records drained from a ring buffer into
//! a reused vector.
use std::collections::HashMap;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use crate::capture::bpf::{bpf_err, CaptureError};
use crate::shared::clock::mono_ns;

mod skel {
    include!(concat!(env!("OUT_DIR"), "/sched.skel.rs"));
}
use skel::*;

pub const MAX_SOCKETS: usize = 4;
const NO_SIBLING: u32 = u32::MAX;

/// Tracepoints the CPU programs attach to (tp_btf).
pub const TRACEPOINTS: [&str; 2] = ["sched:sched_switch", "sched:sched_process_exec"];

pub type ThreadStat = types::thread_stat;
const _: () = assert!(size_of::<ThreadStat>() == 152);
const _: () = assert!(size_of::<types::cpu_state>() == 72);

// ---------------------------------------------------------------- topology

/// CPU numbers a kernel can have (x86_64's largest NR_CPUS); larger ones in a list are left out
/// (a range is expanded: "0-4294967295" would be 16 GiB).
pub const MAX_CPUS: u32 = 8192;

/// "0-3,8,10-11" -> [0,1,2,3,8,10,11]
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    out.extend(a..=b.min(MAX_CPUS - 1));
                }
            }
            None => {
                if let Ok(a) = part.trim().parse() {
                    if a < MAX_CPUS {
                        out.push(a)
                    }
                }
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTopo {
    /// physical_package_id, folded into 0..MAX_SOCKETS.
    pub socket: u32,
    /// The other hardware thread of the same core, if any.
    pub sibling: Option<u32>,
}

/// Topology of CPUs 0..n from `<root>/cpuN/topology/{physical_package_id,thread_siblings_list}`
/// (root normally /sys/devices/system/cpu). Missing files: socket 0, no sibling.
pub fn read_topology(root: &Path, n: usize) -> Vec<CpuTopo> {
    (0..n as u32)
        .map(|cpu| {
            let dir = root.join(format!("cpu{cpu}/topology"));
            let socket = std::fs::read_to_string(dir.join("physical_package_id"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .map(|s| (s.max(0) as u32) % MAX_SOCKETS as u32)
                .unwrap_or(0);
            let sibling = std::fs::read_to_string(dir.join("thread_siblings_list"))
                .ok()
                .and_then(|s| parse_cpu_list(&s).into_iter().find(|&c| c != cpu));
            CpuTopo { socket, sibling }
        })
        .collect()
}

/// Eq. 2.1/3.1 as applied per slice in the kernel: of `dc` cycles counted on a logical CPU
/// during a slice of `slice_ns`, the share while the HT sibling was busy (`overlap_ns`,
/// by time) counts `HT_r / 2`, the rest fully. `ht_ratio_milli` = HT_r * 1000.
/// Integer arithmetic identical to sched.bpf.c (overlap share resolved to 1/1024).
pub fn weighted_cycles(dc: u64, slice_ns: u64, overlap_ns: u64, ht_ratio_milli: u32) -> u64 {
    let overlap = overlap_ns.min(slice_ns);
    // Overlap fraction in 1/1024ths first, so long slices cannot overflow (dc · overlap would).
    let frac = (overlap * 1024).checked_div(slice_ns).unwrap_or(0);
    let ov = dc / 1024 * frac + (dc % 1024) * frac / 1024;
    (dc - ov) + ov * ht_ratio_milli as u64 / 2000
}

// ---------------------------------------------------------------- perf counters

/// perf_event_attr, only the leading fields set (the rest zero; size 128 = VER8-compatible).
fn perf_open(config: u64, cpu: u32) -> std::io::Result<OwnedFd> {
    let mut attr = [0u64; 16];
    attr[0] = 128u64 << 32; // type PERF_TYPE_HARDWARE (0) | size 128 << 32
    attr[1] = config;
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), -1i32, cpu as i32, -1i32, 0u64) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Per-CPU hardware cycles and instructions counters, or the reason they are absent; with them,
/// the last-level cache references and misses where the CPU counts those too.
pub struct HwCounters {
    pub cycles: Vec<OwnedFd>,
    pub instructions: Vec<OwnedFd>,
    /// (references, misses) per CPU, or why they are absent (cycles are used without them).
    pub cache: Result<(Vec<OwnedFd>, Vec<OwnedFd>), String>,
}

pub fn open_hw_counters(ncpus: usize) -> Result<HwCounters, String> {
    let mut hw = HwCounters { cycles: Vec::new(), instructions: Vec::new(), cache: Ok((Vec::new(), Vec::new())) };
    for cpu in 0..ncpus as u32 {
        let c = perf_open(0 /* PERF_COUNT_HW_CPU_CYCLES */, cpu).map_err(|e| format!("cycles on cpu {cpu}: {e}"))?;
        let i = perf_open(1 /* PERF_COUNT_HW_INSTRUCTIONS */, cpu).map_err(|e| format!("instructions on cpu {cpu}: {e}"))?;
        hw.cycles.push(c);
        hw.instructions.push(i);
    }
    hw.cache = open_cache_counters(ncpus);
    Ok(hw)
}

fn open_cache_counters(ncpus: usize) -> Result<(Vec<OwnedFd>, Vec<OwnedFd>), String> {
    let (mut refs, mut misses) = (Vec::new(), Vec::new());
    for cpu in 0..ncpus as u32 {
        refs.push(perf_open(2 /* PERF_COUNT_HW_CACHE_REFERENCES */, cpu).map_err(|e| format!("cache references on cpu {cpu}: {e}"))?);
        misses.push(perf_open(3 /* PERF_COUNT_HW_CACHE_MISSES */, cpu).map_err(|e| format!("cache misses on cpu {cpu}: {e}"))?);
    }
    Ok((refs, misses))
}

// ---------------------------------------------------------------- collector

#[derive(Debug, Clone)]
pub struct SchedOptions {
    pub thread_entries: u32,
    /// HT_r of Eq. 3.1 (e.g. 1.1 for Sandy/Ivy Bridge).
    pub ht_ratio: f64,
    /// Try hardware counters (perf_event_open); on failure on-CPU time is the weight.
    pub use_counters: bool,
    pub sys_cpu_root: std::path::PathBuf,
}

impl Default for SchedOptions {
    fn default() -> Self {
        SchedOptions {
            thread_entries: 32768,
            ht_ratio: 1.1,
            use_counters: true,
            sys_cpu_root: "/sys/devices/system/cpu".into(),
        }
    }
}

/// One process's figures for an interval (sum of its threads).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcCpu {
    pub tgid: u32,
    pub proc_start_ns: u64,
    pub comm: [u8; 16],
    pub cgroup_id: u64,
    pub threads: u32,
    pub oncpu_ns: [u64; MAX_SOCKETS],
    pub wcycles: [u64; MAX_SOCKETS],
    pub cycles: u64,
    pub instructions: u64,
    pub cache_references: u64,
    pub cache_misses: u64,
}

impl ProcCpu {
    pub fn oncpu_total(&self) -> u64 {
        self.oncpu_ns.iter().sum()
    }
    pub fn comm_str(&self) -> &str {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        std::str::from_utf8(&self.comm[..end]).unwrap_or("?")
    }
}

/// What one `collect` saw.
#[derive(Debug, Default)]
pub struct CpuInterval {
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    /// Processes with on-CPU time in the interval.
    pub procs: Vec<ProcCpu>,
    pub exits: u64,
    pub threads_tracked: u64,
}

#[derive(Clone, Copy)]
struct Prev {
    /// Observed (completed + running slice), kept monotonic.
    oncpu: [u64; MAX_SOCKETS],
    /// Completed slices only, as the kernel holds them: a drop means a recreated entry.
    raw_oncpu: u64,
    wcyc: [u64; MAX_SOCKETS],
    cycles: u64,
    instr: u64,
    cref: u64,
    cmiss: u64,
    gen: u64,
}

/// Counters for the metrics endpoint.
#[derive(Debug, Default, Clone, Copy)]
pub struct SchedStats {
    pub switches: u64,
    pub exits: u64,
    pub ringbuf_drops: u64,
    pub map_full: u64,
    /// Live threads the full LRU thread map evicted (their counts so far are lost): inserts read
    /// before a scan, minus deletes read after it, minus the entries it found. A lower bound,
    /// exact when the map is quiet.
    pub map_evictions: u64,
}

// Indexes of `sstats` (enum sched_stat_idx in src/capture/sched/sched.h).
const SSTAT_SWITCHES: u32 = 0;
const SSTAT_EXITS: u32 = 1;
const SSTAT_RINGBUF_DROPS: u32 = 2;
const SSTAT_MAP_FULL: u32 = 3;
const SSTAT_INSERTS: u32 = 4;
const SSTAT_DELETES: u32 = 5;

struct ExitRing {
    rb: *mut libbpf_sys::ring_buffer,
    sink: *mut Vec<ThreadStat>,
}

unsafe extern "C" fn on_exit_record(ctx: *mut libc::c_void, data: *mut libc::c_void, size: libbpf_sys::size_t) -> i32 {
    if (size as usize) >= size_of::<ThreadStat>() {
        let sink = &mut *(ctx as *mut Vec<ThreadStat>);
        sink.push(std::ptr::read_unaligned(data as *const ThreadStat));
    }
    0
}

impl Drop for ExitRing {
    fn drop(&mut self) {
        unsafe {
            libbpf_sys::ring_buffer__free(self.rb);
            drop(Box::from_raw(self.sink));
        }
    }
}

/// Loaded sched programs plus the user-space thread table. Not Send (the skeleton is not):
/// create and use it on one thread.
pub struct CpuCollector {
    skel: SchedSkel<'static>,
    ring: ExitRing,
    _hw: Option<HwCounters>,
    /// Why hardware counters are not used (None = they are).
    pub counters_absent: Option<String>,
    /// Why cache references and misses are not counted, or None when they are.
    pub cache_absent: Option<String>,
    ncpus: usize,
    topo: Vec<CpuTopo>,
    table: HashMap<(u32, u64), Prev>,
    procs: HashMap<(u32, u64), ProcCpu>,
    scan: Vec<ThreadStat>,
    gen: u64,
    last_mono: u64,
    /// `SchedStats::map_evictions`, never decreasing.
    evictions: u64,
    out: CpuInterval,
}

impl CpuCollector {
    pub fn load(opts: &SchedOptions) -> Result<CpuCollector, CaptureError> {
        let ncpus = unsafe { libbpf_sys::libbpf_num_possible_cpus() };
        if ncpus <= 0 {
            return Err(CaptureError::Other("cannot count possible CPUs".into()));
        }
        let ncpus = ncpus as usize;
        let topo = read_topology(&opts.sys_cpu_root, ncpus);
        let (hw, absent) = if opts.use_counters {
            match open_hw_counters(ncpus) {
                Ok(h) => (Some(h), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, Some("disabled by configuration".to_string()))
        };
        // The skeleton borrows its object storage for its lifetime; the storage (a few
        // hundred bytes) is leaked once per collector so the collector can own the skeleton.
        let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = SchedSkelBuilder::default().open(storage).map_err(|e| bpf_err("open sched BPF object", e))?;
        {
            let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| CaptureError::Other("BPF rodata not mmapped".into()))?;
            ro.have_counters = u8::from(hw.is_some());
            ro.have_cache_counters = u8::from(hw.as_ref().is_some_and(|h| h.cache.is_ok()));
            ro.ht_ratio_milli = (opts.ht_ratio * 1000.0).round().clamp(0.0, 4000.0) as u32;
        }
        let n = ncpus as u32;
        let m = &mut open.maps;
        m.threads.set_max_entries(opts.thread_entries).map_err(|e| bpf_err("size thread map", e))?;
        m.cpus.set_max_entries(n).map_err(|e| bpf_err("size cpu map", e))?;
        m.cycles_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        m.instr_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        m.cache_ref_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        m.cache_miss_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        let mut skel = open.load().map_err(|e| bpf_err("load sched BPF programs", e))?;
        for (cpu, t) in topo.iter().enumerate() {
            let mut st: types::cpu_state = unsafe { std::mem::zeroed() };
            st.sibling = t.sibling.unwrap_or(NO_SIBLING);
            st.socket = t.socket;
            let bytes = unsafe { std::slice::from_raw_parts(&st as *const _ as *const u8, size_of::<types::cpu_state>()) };
            skel.maps
                .cpus
                .update(&(cpu as u32).to_ne_bytes(), bytes, MapFlags::ANY)
                .map_err(|e| bpf_err("fill cpu topology", e))?;
        }
        if let Some(h) = &hw {
            for cpu in 0..ncpus {
                let k = (cpu as u32).to_ne_bytes();
                skel.maps
                    .cycles_pe
                    .update(&k, &h.cycles[cpu].as_raw_fd().to_ne_bytes(), MapFlags::ANY)
                    .map_err(|e| bpf_err("fill cycles perf array", e))?;
                skel.maps
                    .instr_pe
                    .update(&k, &h.instructions[cpu].as_raw_fd().to_ne_bytes(), MapFlags::ANY)
                    .map_err(|e| bpf_err("fill instructions perf array", e))?;
                if let Ok((refs, misses)) = &h.cache {
                    skel.maps
                        .cache_ref_pe
                        .update(&k, &refs[cpu].as_raw_fd().to_ne_bytes(), MapFlags::ANY)
                        .map_err(|e| bpf_err("fill cache references perf array", e))?;
                    skel.maps
                        .cache_miss_pe
                        .update(&k, &misses[cpu].as_raw_fd().to_ne_bytes(), MapFlags::ANY)
                        .map_err(|e| bpf_err("fill cache misses perf array", e))?;
                }
            }
        }
        skel.attach().map_err(|e| bpf_err("attach sched tracepoints", e))?;
        let sink: *mut Vec<ThreadStat> = Box::into_raw(Box::new(Vec::with_capacity(4096)));
        let fd = skel.maps.exits.as_fd().as_raw_fd();
        let rb = unsafe { libbpf_sys::ring_buffer__new(fd, Some(on_exit_record), sink as *mut libc::c_void, std::ptr::null()) };
        if rb.is_null() {
            unsafe { drop(Box::from_raw(sink)) };
            return Err(CaptureError::Other(format!("exit ring buffer: {}", std::io::Error::last_os_error())));
        }
        let cache_absent = match &hw {
            Some(h) => h.cache.as_ref().err().cloned(),
            None => absent.clone(),
        };
        Ok(CpuCollector {
            skel,
            ring: ExitRing { rb, sink },
            _hw: hw,
            cache_absent,
            counters_absent: absent,
            ncpus,
            topo,
            table: HashMap::with_capacity(4096),
            procs: HashMap::with_capacity(1024),
            scan: Vec::with_capacity(4096),
            gen: 0,
            last_mono: mono_ns(),
            evictions: 0,
            out: CpuInterval::default(),
        })
    }

    pub fn has_counters(&self) -> bool {
        self.counters_absent.is_none()
    }

    /// Cache references and misses are counted (they need the other counters too).
    pub fn has_cache_counters(&self) -> bool {
        self.cache_absent.is_none()
    }

    pub fn ncpus(&self) -> usize {
        self.ncpus
    }

    pub fn topology(&self) -> &[CpuTopo] {
        &self.topo
    }

    /// Kernel-side counters (switches, exits, ring-buffer drops, map-full) and the thread map's
    /// evictions as of the last `collect`.
    pub fn stats(&self) -> SchedStats {
        SchedStats {
            switches: self.sstat(SSTAT_SWITCHES),
            exits: self.sstat(SSTAT_EXITS),
            ringbuf_drops: self.sstat(SSTAT_RINGBUF_DROPS),
            map_full: self.sstat(SSTAT_MAP_FULL),
            map_evictions: self.evictions,
        }
    }

    fn sstat(&self, idx: u32) -> u64 {
        match self.skel.maps.sstats.lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(per_cpu)) => sum_percpu(&per_cpu),
            _ => 0,
        }
    }

    /// Entries in the in-kernel thread map and its capacity.
    pub fn map_fill(&self) -> (u64, u64) {
        (self.out.threads_tracked, self.skel.maps.threads.max_entries() as u64)
    }

    /// Everything since the previous call. The returned value is reused by the next call.
    pub fn collect(&mut self) -> &CpuInterval {
        self.gen += 1;
        let gen = self.gen;
        let now = mono_ns();
        self.procs.clear();
        self.out.procs.clear();
        self.out.start_mono_ns = self.last_mono;
        self.out.end_mono_ns = now;
        self.last_mono = now;

        // 1. Exited threads (final totals), drained before the map scan so a thread that
        //    exits after the drain is still in the table for the next interval.
        unsafe { libbpf_sys::ring_buffer__consume(self.ring.rb) };
        let sink = unsafe { &mut *self.ring.sink };
        self.out.exits = sink.len() as u64;
        for ts in sink.drain(..) {
            let key = (ts.tid, ts.thread_start_ns);
            let prev = self.table.remove(&key);
            account(&mut self.procs, &ts, &[0; MAX_SOCKETS], prev.as_ref());
        }

        // 2. Live threads, copied out first ...
        let inserts = self.sstat(SSTAT_INSERTS);
        self.scan.clear();
        let tfd = self.skel.maps.threads.as_fd().as_raw_fd();
        let mut key: u32 = 0;
        let mut next: u32 = 0;
        let mut first = true;
        loop {
            let kp = if first { std::ptr::null() } else { &key as *const u32 as *const libc::c_void };
            let rc = unsafe { libbpf_sys::bpf_map_get_next_key(tfd, kp, &mut next as *mut u32 as *mut _) };
            if rc != 0 {
                break;
            }
            first = false;
            key = next;
            let mut v = MaybeUninit::<ThreadStat>::zeroed();
            let rc = unsafe { libbpf_sys::bpf_map_lookup_elem(tfd, &key as *const u32 as *const _, v.as_mut_ptr() as *mut _) };
            if rc == 0 {
                self.scan.push(unsafe { v.assume_init() });
            }
        }
        // 3. ... then what runs on each CPU: its slice so far is not in the thread map yet.
        //    (In this order a slice ending between the two reads is missed now and counted
        //    next time, never counted twice.)
        let mut running = [(0u32, 0u64, 0u32); 256];
        let nrun = self.ncpus.min(running.len());
        let cfd = self.skel.maps.cpus.as_fd().as_raw_fd();
        let now2 = mono_ns();
        for (cpu, slot) in running.iter_mut().enumerate().take(nrun) {
            let mut st = MaybeUninit::<types::cpu_state>::zeroed();
            let k = cpu as u32;
            let rc = unsafe {
                libbpf_sys::bpf_map_lookup_elem(cfd, &k as *const u32 as *const _, st.as_mut_ptr() as *mut _)
            };
            if rc == 0 {
                let st = unsafe { st.assume_init() };
                if st.tid != 0 && st.ts_in != 0 && now2 > st.ts_in {
                    *slot = (st.tid, now2 - st.ts_in, st.socket % MAX_SOCKETS as u32);
                }
            }
        }
        let tracked = self.scan.len() as u64;
        for ts in &self.scan {
            let mut pending = [0u64; MAX_SOCKETS];
            for &(tid, ns, sock) in &running[..nrun] {
                if tid == ts.tid {
                    pending[sock as usize] += ns;
                }
            }
            let k = (ts.tid, ts.thread_start_ns);
            let prev = self.table.get(&k).copied();
            let seen = account(&mut self.procs, ts, &pending, prev.as_ref());
            self.table.insert(k, Prev { gen, ..seen });
        }
        self.out.threads_tracked = tracked;
        let deletes = self.sstat(SSTAT_DELETES);
        self.evictions = self.evictions.max(inserts.saturating_sub(deletes + tracked));
        // Forget threads gone for two reads (evicted, or exit record lost).
        self.table.retain(|_, p| gen - p.gen <= 2);
        self.out.procs.extend(self.procs.values().filter(|p| p.oncpu_total() > 0 || p.cycles > 0).copied());
        self.out.procs.sort_unstable_by_key(|p| std::cmp::Reverse(p.oncpu_total()));
        &self.out
    }
}

fn sum_percpu(v: &[Vec<u8>]) -> u64 {
    v.iter().filter_map(|b| b.get(..8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()))).sum()
}

/// Adds a thread's growth since `prev` to its process; returns the new observed totals.
/// A total smaller than before means the entry was recreated: its whole value is new.
fn account(
    procs: &mut HashMap<(u32, u64), ProcCpu>,
    ts: &ThreadStat,
    pending: &[u64; MAX_SOCKETS],
    prev: Option<&Prev>,
) -> Prev {
    let zero = Prev { oncpu: [0; MAX_SOCKETS], raw_oncpu: 0, wcyc: [0; MAX_SOCKETS], cycles: 0, instr: 0, cref: 0, cmiss: 0, gen: 0 };
    let raw: u64 = ts.oncpu_ns.iter().sum();
    // The kernel entry was recreated (LRU eviction, or a second flush during exit):
    // everything it holds is new.
    let p = match prev {
        Some(p) if raw >= p.raw_oncpu && ts.cycles >= p.cycles => *p,
        _ => zero,
    };
    let mut obs = Prev {
        oncpu: [0; MAX_SOCKETS],
        raw_oncpu: raw,
        wcyc: ts.wcycles,
        cycles: ts.cycles,
        instr: ts.instructions,
        cref: ts.cache_references,
        cmiss: ts.cache_misses,
        gen: 0,
    };
    let tgid = if ts.tgid == 0 { ts.tid } else { ts.tgid };
    let e = procs.entry((tgid, ts.proc_start_ns)).or_insert_with(|| ProcCpu {
        tgid,
        proc_start_ns: ts.proc_start_ns,
        comm: ts.comm.map(|c| c as u8),
        cgroup_id: ts.cgroup_id,
        ..Default::default()
    });
    if ts.tid == tgid {
        e.comm = ts.comm.map(|c| c as u8);
        e.cgroup_id = ts.cgroup_id;
    }
    let mut any = false;
    for s in 0..MAX_SOCKETS {
        // Monotonic: a running slice missed in this read is counted by a later one.
        obs.oncpu[s] = (ts.oncpu_ns[s] + pending[s]).max(p.oncpu[s]);
        let dt = obs.oncpu[s] - p.oncpu[s];
        e.oncpu_ns[s] += dt;
        e.wcycles[s] += obs.wcyc[s].saturating_sub(p.wcyc[s]);
        any |= dt > 0;
    }
    e.cycles += obs.cycles.saturating_sub(p.cycles);
    e.instructions += obs.instr.saturating_sub(p.instr);
    e.cache_references += obs.cref.saturating_sub(p.cref);
    e.cache_misses += obs.cmiss.saturating_sub(p.cmiss);
    if any {
        e.threads += 1;
    }
    obs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("5"), vec![5]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
    }

    #[test]
    fn cpu_numbers_past_the_kernels_limit_are_left_out_of_a_list() {
        // Found by fuzz/proc_files: "0-1083795856" made a vector of 4.3 GB (a range is expanded).
        let huge = parse_cpu_list("0-100000000");
        assert_eq!((huge.len(), huge.last()), (MAX_CPUS as usize, Some(&(MAX_CPUS - 1))));
        assert_eq!(parse_cpu_list("2,8190-8195,9000"), vec![2, 8190, 8191]);
        assert_eq!(parse_cpu_list("7-3"), Vec::<u32>::new());
    }

    #[test]
    fn weighted_cycles_hand_computed() {
        // Alone the whole slice: all cycles count.
        assert_eq!(weighted_cycles(1_000_000, 1_000, 0, 1100), 1_000_000);
        // Sibling busy the whole slice, HT_r = 1.1: 1e6 * 1.1 / 2 = 550_000.
        assert_eq!(weighted_cycles(1_000_000, 1_000, 1_000, 1100), 550_000);
        // Half overlapped: 500_000 alone + 500_000 * 0.55 = 775_000.
        assert_eq!(weighted_cycles(1_000_000, 1_000, 500, 1100), 775_000);
        // A quarter overlapped, HT_r = 1.0: 750_000 + 250_000 * 0.5 = 875_000.
        assert_eq!(weighted_cycles(1_000_000, 2_000, 500, 1000), 875_000);
        // Overlap longer than the slice is clamped; empty slice: no overlap.
        assert_eq!(weighted_cycles(3_000, 100, 500, 1200), 1_800);
        assert_eq!(weighted_cycles(3_000, 0, 0, 1200), 3_000);
        // Two siblings fully overlapped share the core: together HT_r * cycles.
        let both = 2 * weighted_cycles(2_000_000, 10, 10, 1150);
        assert_eq!(both, 2_300_000);
        // A 10 s slice of 30e9 cycles, half overlapped, HT_r = 1.0: no overflow,
        // 15e9 + 15e9 * 0.5 = 22.5e9.
        assert_eq!(weighted_cycles(30_000_000_000, 10_000_000_000, 5_000_000_000, 1000), 22_500_000_000);
    }

    #[test]
    fn topology_from_fixture_tree() {
        let dir = std::env::temp_dir().join(format!("wg-topo-{}", std::process::id()));
        for (cpu, pkg, sib) in [(0, 0, "0,2"), (1, 1, "1,3"), (2, 0, "0,2"), (3, 1, "1,3")] {
            let t = dir.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{pkg}\n")).unwrap();
            std::fs::write(t.join("thread_siblings_list"), format!("{sib}\n")).unwrap();
        }
        let topo = read_topology(&dir, 5);
        assert_eq!(topo[0], CpuTopo { socket: 0, sibling: Some(2) });
        assert_eq!(topo[3], CpuTopo { socket: 1, sibling: Some(1) });
        assert_eq!(topo[4], CpuTopo { socket: 0, sibling: None }, "missing files: defaults");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn account_handles_growth_reset_and_pending() {
        let mut procs = HashMap::new();
        let mut ts: ThreadStat = unsafe { std::mem::zeroed() };
        ts.tid = 11;
        ts.tgid = 10;
        ts.proc_start_ns = 5;
        ts.oncpu_ns = [100, 0, 0, 0];
        let p1 = account(&mut procs, &ts, &[50, 0, 0, 0], None);
        assert_eq!(procs[&(10, 5)].oncpu_ns[0], 150);
        procs.clear();
        ts.oncpu_ns = [300, 0, 0, 0]; // the pending 50 was part of these 200
        let p2 = account(&mut procs, &ts, &[0; 4], Some(&p1));
        assert_eq!(procs[&(10, 5)].oncpu_ns[0], 150);
        procs.clear();
        ts.oncpu_ns = [20, 0, 0, 0]; // entry recreated (LRU): all new
        account(&mut procs, &ts, &[0; 4], Some(&p2));
        assert_eq!(procs[&(10, 5)].oncpu_ns[0], 20);
        assert_eq!(procs[&(10, 5)].threads, 1);
    }

    #[test]
    fn account_adds_counter_growth_per_thread_into_its_process() {
        let mut procs = HashMap::new();
        let mut a: ThreadStat = unsafe { std::mem::zeroed() };
        (a.tid, a.tgid, a.proc_start_ns) = (11, 10, 5);
        a.oncpu_ns = [100, 0, 0, 0];
        (a.cycles, a.instructions, a.cache_references, a.cache_misses) = (1_000, 800, 40, 4);
        let mut b = a;
        b.tid = 12;
        (b.cycles, b.instructions, b.cache_references, b.cache_misses) = (500, 300, 10, 1);
        let pa = account(&mut procs, &a, &[0; 4], None);
        let pb = account(&mut procs, &b, &[0; 4], None);
        let p = procs[&(10, 5)];
        assert_eq!((p.cycles, p.instructions, p.cache_references, p.cache_misses), (1_500, 1_100, 50, 5));
        procs.clear();
        a.oncpu_ns = [150, 0, 0, 0];
        (a.cycles, a.instructions, a.cache_references, a.cache_misses) = (1_600, 1_000, 70, 9);
        account(&mut procs, &a, &[0; 4], Some(&pa));
        account(&mut procs, &b, &[0; 4], Some(&pb)); // no growth
        let p = procs[&(10, 5)];
        assert_eq!((p.cycles, p.instructions, p.cache_references, p.cache_misses), (600, 200, 30, 5));
    }
}
