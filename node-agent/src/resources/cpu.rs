//! CPU accounting: the sched programs' cumulative per-thread counters (`capture::sched`) read
//! while they run, the slice still running on each CPU added, differences taken between reads,
//! and threads summed into processes (tgid + start time).
use std::collections::HashMap;

use crate::capture::bpf::CaptureError;
use crate::capture::sched::{CpuTopo, SchedOptions, SchedPrograms, SchedStat, ThreadStat, MAX_SOCKETS};
use crate::resources::cpu_base::Baseline;
use crate::shared::clock::mono_ns;

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

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Prev {
    /// Observed (completed + running slice), kept monotonic.
    pub oncpu: [u64; MAX_SOCKETS],
    /// Completed slices only, as the kernel holds them: a drop means a recreated entry.
    pub raw_oncpu: u64,
    pub wcyc: [u64; MAX_SOCKETS],
    pub cycles: u64,
    pub instr: u64,
    pub cref: u64,
    pub cmiss: u64,
    /// The read that last saw the thread.
    pub gen: u64,
}

impl Prev {
    pub const ZERO: Prev = Prev { oncpu: [0; MAX_SOCKETS], raw_oncpu: 0, wcyc: [0; MAX_SOCKETS], cycles: 0, instr: 0, cref: 0, cmiss: 0, gen: 0 };

    fn same_totals(&self, other: &Prev) -> bool {
        Prev { gen: 0, ..*self } == Prev { gen: 0, ..*other }
    }
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

/// The sched programs plus the user-space thread table. Not Send (the skeleton is not): create
/// and use it on one thread.
pub struct CpuCollector {
    progs: SchedPrograms,
    /// Why hardware counters are not used (None = they are).
    pub counters_absent: Option<String>,
    /// Why cache references and misses are not counted, or None when they are.
    pub cache_absent: Option<String>,
    table: HashMap<(u32, u64), Prev>,
    procs: HashMap<(u32, u64), ProcCpu>,
    scan: Vec<ThreadStat>,
    gen: u64,
    last_mono: u64,
    /// `SchedStats::map_evictions`, never decreasing.
    evictions: u64,
    out: CpuInterval,
    /// With pinned programs: what to write to their baseline after the records went out.
    base: Option<Baseline>,
}

impl CpuCollector {
    pub fn load(opts: &SchedOptions) -> Result<CpuCollector, CaptureError> {
        let mut progs = SchedPrograms::load(opts)?;
        let mut table = HashMap::with_capacity(4096);
        let mut last_mono = mono_ns();
        if progs.reused() {
            match Baseline::load(&mut progs, &mut table) {
                Some(end) => last_mono = end,
                None => log::warn!("CPU accounting: the pinned programs have no reported baseline; their threads' CPU time so far is reported as new"),
            }
        }
        Ok(CpuCollector {
            counters_absent: progs.counters_absent.clone(),
            cache_absent: progs.cache_absent.clone(),
            base: progs.pinned().then(Baseline::default),
            progs,
            table,
            procs: HashMap::with_capacity(1024),
            scan: Vec::with_capacity(4096),
            gen: 0,
            last_mono,
            evictions: 0,
            out: CpuInterval::default(),
        })
    }

    /// The records of the last `collect` went to the output: with pinned programs, their
    /// baseline is written for an agent restarted on the pins.
    pub fn commit(&mut self) {
        if let Some(b) = &mut self.base {
            b.commit(&self.progs, &self.table, self.last_mono);
        }
    }

    pub fn has_counters(&self) -> bool {
        self.progs.has_counters()
    }

    /// Cache references and misses are counted (they need the other counters too).
    pub fn has_cache_counters(&self) -> bool {
        self.progs.has_cache_counters()
    }

    pub fn ncpus(&self) -> usize {
        self.progs.ncpus()
    }

    pub fn topology(&self) -> &[CpuTopo] {
        self.progs.topology()
    }

    /// Kernel-side counters (switches, exits, ring-buffer drops, map-full) and the thread map's
    /// evictions as of the last `collect`.
    pub fn stats(&self) -> SchedStats {
        SchedStats {
            switches: self.progs.stat(SchedStat::Switches),
            exits: self.progs.stat(SchedStat::Exits),
            ringbuf_drops: self.progs.stat(SchedStat::RingbufDrops),
            map_full: self.progs.stat(SchedStat::MapFull),
            map_evictions: self.evictions,
        }
    }

    /// Entries in the in-kernel thread map and its capacity.
    pub fn map_fill(&self) -> (u64, u64) {
        (self.out.threads_tracked, self.progs.thread_capacity())
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
        let (table, procs, base) = (&mut self.table, &mut self.procs, &mut self.base);
        self.out.exits = self.progs.consume_exits(|ts| {
            let key = (ts.tid, ts.thread_start_ns);
            let prev = table.remove(&key);
            if let (Some(b), Some(_)) = (base.as_mut(), prev) {
                b.removed.push(key);
            }
            account(procs, ts, &[0; MAX_SOCKETS], prev.as_ref());
        });

        // 2. Live threads, copied out first ...
        let inserts = self.progs.stat(SchedStat::Inserts);
        self.progs.scan_threads(&mut self.scan);
        // 3. ... then what runs on each CPU: its slice so far is not in the thread map yet.
        //    (In this order a slice ending between the two reads is missed now and counted
        //    next time, never counted twice.)
        let mut running = [(0u32, 0u64, 0u32); 256];
        let nrun = self.progs.running_slices(&mut running);
        let tracked = self.scan.len() as u64;
        for ts in &self.scan {
            let mut pending = [0u64; MAX_SOCKETS];
            for &(tid, rt, sock) in &running[..nrun] {
                if tid == ts.tid {
                    pending[sock as usize] += rt.saturating_sub(ts.rt_seen);
                }
            }
            let k = (ts.tid, ts.thread_start_ns);
            let prev = self.table.get(&k).copied();
            let seen = account(&mut self.procs, ts, &pending, prev.as_ref());
            if let Some(b) = self.base.as_mut().filter(|_| prev.is_none_or(|p| !p.same_totals(&seen))) {
                b.dirty.push(k);
            }
            self.table.insert(k, Prev { gen, ..seen });
        }
        self.out.threads_tracked = tracked;
        let deletes = self.progs.stat(SchedStat::Deletes);
        self.evictions = self.evictions.max(inserts.saturating_sub(deletes + tracked));
        // Forget threads gone for two reads (evicted, or exit record lost).
        let base = &mut self.base;
        self.table.retain(|k, p| {
            let keep = gen - p.gen <= 2;
            if let Some(b) = base.as_mut().filter(|_| !keep) {
                b.removed.push(*k);
            }
            keep
        });
        self.out.procs.extend(self.procs.values().filter(|p| p.oncpu_total() > 0 || p.cycles > 0).copied());
        self.out.procs.sort_unstable_by_key(|p| std::cmp::Reverse(p.oncpu_total()));
        &self.out
    }
}

/// Adds a thread's growth since `prev` to its process; returns the new observed totals.
/// A total smaller than before means the entry was recreated: its whole value is new.
fn account(
    procs: &mut HashMap<(u32, u64), ProcCpu>,
    ts: &ThreadStat,
    pending: &[u64; MAX_SOCKETS],
    prev: Option<&Prev>,
) -> Prev {
    let zero = Prev::ZERO;
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
