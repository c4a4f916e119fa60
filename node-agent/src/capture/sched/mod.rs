//! The sched programs (sched.bpf.c on `sched:sched_switch` / `sched:sched_process_exec`): on-CPU
//! ns (and HT-weighted cycles where hardware counters exist) per thread, aggregated in the kernel
//! as cumulative counters that only the CPU a thread leaves writes. This loads them and reads
//! their maps while they run; `resources::cpu` turns the readings into per-process figures.
//!
//! Reading is allocation-free once the tables have grown: the thread map in batches into reused
//! buffers (`map_batch`), exit records drained from a ring buffer into a reused vector.
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use crate::capture::bpf::{bpf_err, CaptureError};
use crate::capture::map_batch::BatchReader;
use crate::capture::pins::{self, Pins};

mod counters;
mod topology;

pub use counters::{open_hw_counters, weighted_cycles, HwCounters};
pub use topology::{parse_cpu_list, read_topology, CpuTopo, MAX_CPUS};

mod skel {
    include!(concat!(env!("OUT_DIR"), "/sched.skel.rs"));
}
use skel::*;

pub const MAX_SOCKETS: usize = 4;
const NO_SIBLING: u32 = u32::MAX;

/// Tracepoints the CPU programs attach to (tp_btf).
pub const TRACEPOINTS: [&str; 2] = ["sched:sched_switch", "sched:sched_process_exec"];
/// The programs, as their links are pinned.
const PROGRAMS: [&str; 2] = ["wg_sched_switch", "wg_sched_process_exec"];

pub type ThreadStat = types::thread_stat;
/// A thread's entry in the reported baseline (`cpu_base`), and what it holds.
pub type BaseKey = types::cpu_base_key;
pub type BaseValue = types::cpu_base;
/// Threads read per syscall by `scan_threads`.
const THREAD_BATCH: u32 = 4096;
const _: () = assert!(size_of::<ThreadStat>() == 152);
const _: () = assert!(size_of::<types::cpu_state>() == 96);
const _: () = assert!(size_of::<BaseKey>() == 16 && size_of::<BaseValue>() == 104);

// ---------------------------------------------------------------- topology

#[derive(Debug, Clone)]
pub struct SchedOptions {
    pub thread_entries: u32,
    /// HT_r of PowerThesis Eq. 3.1 (e.g. 1.1 for Sandy/Ivy Bridge).
    pub ht_ratio: f64,
    /// Try hardware counters (perf_event_open); on failure on-CPU time is the weight.
    pub use_counters: bool,
    pub sys_cpu_root: PathBuf,
    /// Pin the programs and maps under this bpffs directory (`--pin-bpf`), or reuse a previous
    /// agent's pins there, so the kernel counts while no agent runs.
    pub pin_root: Option<PathBuf>,
}

impl Default for SchedOptions {
    fn default() -> Self {
        SchedOptions {
            thread_entries: 32768,
            ht_ratio: 1.1,
            use_counters: true,
            sys_cpu_root: "/sys/devices/system/cpu".into(),
            pin_root: None,
        }
    }
}

/// The kernel's counters (`enum sched_stat_idx` in sched.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedStat {
    Switches = 0,
    Exits = 1,
    RingbufDrops = 2,
    MapFull = 3,
    /// Entries added to and deleted from the thread map.
    Inserts = 4,
    Deletes = 5,
}

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

/// Loaded and attached sched programs. Not Send (the skeleton is not): create and use them on
/// one thread.
pub struct SchedPrograms {
    skel: SchedSkel<'static>,
    ring: ExitRing,
    batch: BatchReader,
    _hw: Option<HwCounters>,
    /// Why hardware counters are not used (None = they are).
    pub counters_absent: Option<String>,
    /// Why cache references and misses are not counted, or None when they are.
    pub cache_absent: Option<String>,
    ncpus: usize,
    topo: Vec<CpuTopo>,
    /// The pins (and the root's lock) while the agent runs; None = not pinned.
    pins: Option<Pins>,
}

impl SchedPrograms {
        pub fn load(opts: &SchedOptions) -> Result<SchedPrograms, CaptureError> {
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
        crate::capture::bpf::route_libbpf_log();
        let mut open = SchedSkelBuilder::default().open(storage).map_err(|e| bpf_err("open sched BPF object", e))?;
        let pins = match &opts.pin_root {
            Some(root) => {
                let config = pinned_config(opts, &topo, hw.as_ref());
                Some(pins::prepare(root, "sched", env!("WG_SCHED_BPF_HASH"), &config, &PROGRAMS)?)
            }
            None => None,
        };
        if let Some(p) = &pins {
            p.set_map_paths(open.open_object_mut())?;
        }
        let reuse = pins.as_ref().is_some_and(|p| p.reuse);
        {
            let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| CaptureError::Other("BPF rodata not mmapped".into()))?;
            ro.have_counters = u8::from(hw.is_some());
            ro.have_cache_counters = u8::from(hw.as_ref().is_some_and(|h| h.cache.is_ok()));
            ro.ht_ratio_milli = (opts.ht_ratio * 1000.0).round().clamp(0.0, 4000.0) as u32;
        }
        let n = ncpus as u32;
        let m = &mut open.maps;
        m.threads.set_max_entries(opts.thread_entries).map_err(|e| bpf_err("size thread map", e))?;
        // Live threads plus those the table keeps two reads after their entry went.
        m.cpu_base.set_max_entries(opts.thread_entries.saturating_mul(2)).map_err(|e| bpf_err("size cpu baseline map", e))?;
        m.cpus.set_max_entries(n).map_err(|e| bpf_err("size cpu map", e))?;
        m.cycles_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        m.instr_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        m.cache_ref_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        m.cache_miss_pe.set_max_entries(n).map_err(|e| bpf_err("size perf array", e))?;
        let mut skel = open.load().map_err(|e| bpf_err("load sched BPF programs", e))?;
        // Reused pins: the CPUs' state is live (the running threads' switch-in); the topology
        // is part of the pins' configuration, so it is the same.
        for (cpu, t) in topo.iter().enumerate().filter(|_| !reuse) {
            let mut st: types::cpu_state = unsafe { std::mem::zeroed() };
            st.sibling = t.sibling.unwrap_or(NO_SIBLING);
            st.socket = t.socket;
            let bytes = unsafe { std::slice::from_raw_parts(&st as *const _ as *const u8, size_of::<types::cpu_state>()) };
            skel.maps
                .cpus
                .update(&(cpu as u32).to_ne_bytes(), bytes, MapFlags::ANY)
                .map_err(|e| bpf_err("fill cpu topology", e))?;
        }
        // Filled again on reused pins: a perf event array drops the entries a process added when
        // that process's map file closes.
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
        if reuse {
            log::info!("CPU accounting continues from the sched programs pinned by a previous agent");
        } else {
            skel.attach().map_err(|e| bpf_err("attach sched tracepoints", e))?;
            if let Some(p) = &pins {
                let l = &mut skel.links;
                p.pin_links([(PROGRAMS[0], l.wg_sched_switch.as_mut()), (PROGRAMS[1], l.wg_sched_process_exec.as_mut())])?;
            }
        }
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
        Ok(SchedPrograms { skel, ring: ExitRing { rb, sink }, batch: BatchReader::default(), _hw: hw, cache_absent, counters_absent: absent, ncpus, topo, pins })
    }

    /// The programs are pinned: user space keeps its baseline in `cpu_base` for the next agent.
    pub fn pinned(&self) -> bool {
        self.pins.is_some()
    }

    /// They were pinned by a previous agent and counted since; its baseline is in `cpu_base`.
    pub fn reused(&self) -> bool {
        self.pins.as_ref().is_some_and(|p| p.reuse)
    }

    /// Every entry of the baseline a previous agent left.
    pub fn read_base(&mut self, mut visit: impl FnMut(&BaseKey, &BaseValue)) -> std::io::Result<usize> {
        let map = &self.skel.maps.cpu_base;
        self.batch.for_each(map, THREAD_BATCH, false, |k, v| {
            if k.len() >= size_of::<BaseKey>() && v.len() >= size_of::<BaseValue>() {
                // SAFETY: key and value are the map's types (sizes asserted above), integers only.
                let (k, v) = unsafe { (std::ptr::read_unaligned(k.as_ptr().cast()), std::ptr::read_unaligned(v.as_ptr().cast())) };
                visit(&k, &v);
            }
        })
    }

    /// Writes `n` baseline entries (keys and values back to back) in one system call, so a kill
    /// leaves all or none of them.
    pub fn write_base(&self, keys: &[u8], values: &[u8], n: u32) -> Result<(), CaptureError> {
        if n == 0 {
            return Ok(());
        }
        self.skel.maps.cpu_base.update_batch(keys, values, n, MapFlags::ANY, MapFlags::ANY).map_err(|e| bpf_err("write the CPU baseline", e))
    }

    /// Deletes `n` baseline entries; one missing (never written) does not stop the others.
    pub fn delete_base(&self, keys: &[u8], n: u32) {
        let map = &self.skel.maps.cpu_base;
        if n == 0 || map.delete_batch(keys, n, MapFlags::ANY, MapFlags::ANY).is_ok() {
            return;
        }
        for k in keys.chunks_exact(size_of::<BaseKey>()) {
            let _ = map.delete(k);
        }
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

    /// One of the kernel's counters, summed over CPUs.
    pub fn stat(&self, s: SchedStat) -> u64 {
        match self.skel.maps.sstats.lookup_percpu(&(s as u32).to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(per_cpu)) => sum_percpu(&per_cpu),
            _ => 0,
        }
    }

    /// Capacity of the in-kernel thread map.
    pub fn thread_capacity(&self) -> u64 {
        self.skel.maps.threads.max_entries() as u64
    }

    /// Final totals of the threads that exited since the last call, each to `visit`; how many.
    pub fn consume_exits(&mut self, mut visit: impl FnMut(&ThreadStat)) -> u64 {
        unsafe { libbpf_sys::ring_buffer__consume(self.ring.rb) };
        let sink = unsafe { &mut *self.ring.sink };
        let n = sink.len() as u64;
        for ts in sink.drain(..) {
            visit(&ts);
        }
        n
    }

    /// Copies every live thread's entry into `out` (cleared first), each once: batched reads go
    /// bucket by bucket, whereas `get_next_key` starts again from the first key when the one it
    /// continues from was evicted meanwhile (an LRU map under churn), which listed threads twice.
    pub fn scan_threads(&mut self, out: &mut Vec<ThreadStat>) {
        out.clear();
        let threads = &self.skel.maps.threads;
        let batch = threads.max_entries().min(THREAD_BATCH);
        let read = self.batch.for_each(threads, batch, false, |_, v| {
            if v.len() >= size_of::<ThreadStat>() {
                // SAFETY: the value is a thread_stat (size asserted above), integers only.
                out.push(unsafe { std::ptr::read_unaligned(v.as_ptr().cast::<ThreadStat>()) });
            }
        });
        if let Err(e) = read {
            log::warn!("sched: reading the thread map: {e} ({} threads read)", out.len());
        }
    }

    /// What runs on each CPU now: (tid, its scheduler runtime now in ns, socket), whose running
    /// slice (runtime now minus the entry's `rt_seen`) the thread map does not hold yet; fills
    /// `running` and returns how many CPUs it holds. The runtime is `/proc/<tid>/schedstat`'s,
    /// as the scheduler last brought it up to date (its tick), so the switch itself reads no
    /// clock; the rest of the slice counts at the next read. A thread whose file cannot be read
    /// (gone, another pid namespace) is left out and counted at its switch-out.
    pub fn running_slices(&self, running: &mut [(u32, u64, u32); 256]) -> usize {
        let nrun = self.ncpus.min(running.len());
        let cfd = self.skel.maps.cpus.as_fd().as_raw_fd();
        for (cpu, slot) in running.iter_mut().enumerate().take(nrun) {
            let mut st = MaybeUninit::<types::cpu_state>::zeroed();
            let k = cpu as u32;
            let rc = unsafe {
                libbpf_sys::bpf_map_lookup_elem(cfd, &k as *const u32 as *const _, st.as_mut_ptr() as *mut _)
            };
            *slot = (0, 0, 0);
            if rc == 0 {
                let st = unsafe { st.assume_init() };
                if st.tid != 0 {
                    if let Some(rt) = thread_runtime_ns(st.tid) {
                        *slot = (st.tid, rt, st.socket % MAX_SOCKETS as u32);
                    }
                }
            }
        }
        nrun
    }
}

/// What shapes the programs and maps besides the object: a previous agent's pins are reused only
/// when it is the same.
fn pinned_config(opts: &SchedOptions, topo: &[CpuTopo], hw: Option<&HwCounters>) -> String {
    let cpus: Vec<(u32, Option<u32>)> = topo.iter().map(|t| (t.socket, t.sibling)).collect();
    format!(
        "threads={} ht_milli={} counters={} cache={} cpus={cpus:?}",
        opts.thread_entries,
        (opts.ht_ratio * 1000.0).round() as u32,
        hw.is_some(),
        hw.is_some_and(|h| h.cache.is_ok()),
    )
}

/// First field of `/proc/<tid>/schedstat`: the thread's `se.sum_exec_runtime` in ns. Stack
/// buffers only (read once per CPU per sample interval).
fn thread_runtime_ns(tid: u32) -> Option<u64> {
    use std::io::{Read, Write};
    let mut path = [0u8; 40];
    let n = {
        let mut w = &mut path[..];
        write!(w, "/proc/{tid}/schedstat").ok()?;
        40 - w.len()
    };
    let path = std::str::from_utf8(&path[..n]).ok()?;
    let mut buf = [0u8; 96];
    let got = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..got]).ok()?;
    text.split_ascii_whitespace().next()?.parse().ok()
}

fn sum_percpu(v: &[Vec<u8>]) -> u64 {
    v.iter().filter_map(|b| b.get(..8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()))).sum()
}

#[cfg(test)]
mod tests {
    use super::thread_runtime_ns;

    fn thread_cpu_ns() -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) }, 0);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    #[test]
    fn thread_runtime_is_the_schedulers_own() {
        let tid = unsafe { libc::gettid() } as u32;
        // schedstat prints se.sum_exec_runtime as last brought up to date (a tick, a switch);
        // the thread's CPU clock brings it up to date first. So a <= b, and once a switch-out
        // (the sleep) has updated it, c <= d <= e.
        let a = thread_runtime_ns(tid).expect("own schedstat readable");
        let b = thread_cpu_ns();
        let mut x = 0u64;
        while thread_cpu_ns() < b + 20_000_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let c = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(1));
        let d = thread_runtime_ns(tid).expect("own schedstat readable");
        let e = thread_cpu_ns();
        assert!(a <= b, "schedstat {a} ahead of the thread's CPU clock {b}");
        assert!(c <= d && d <= e, "schedstat {d} not between the CPU clock's {c} and {e}");
        assert_eq!(thread_runtime_ns(u32::MAX), None, "no such thread");
    }
}
