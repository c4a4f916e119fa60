//! The CPU accounting's baseline across agent restarts (`--pin-bpf`). The sched programs and
//! their thread map are pinned, so the kernel counts while no agent runs; what the next agent
//! needs is what was already reported. After each interval's records went to the output, the
//! per-thread totals they were taken against are written to the pinned `cpu_base` map, with the
//! interval's end. An agent started on the pins loads them into its table, so its first interval
//! starts where the last reported one ended: it spans the outage and holds its CPU time.
use std::collections::HashMap;
use std::mem::size_of;

use super::cpu::Prev;
use crate::capture::sched::{BaseKey, BaseValue, SchedPrograms};

/// The entry holding the end of the last reported interval: tid 0 (the idle task) never has one.
const END_KEY: (u32, u64) = (0, 0);

/// What changed in the thread table since the last commit, and the buffers of the writes.
#[derive(Default)]
pub(super) struct Baseline {
    /// Threads whose totals moved (or are new), written at the next commit.
    pub dirty: Vec<(u32, u64)>,
    /// Threads the table dropped (exited, or gone for two reads), deleted at the next commit.
    pub removed: Vec<(u32, u64)>,
    keys: Vec<u8>,
    values: Vec<u8>,
}

impl Baseline {
    /// A previous agent's baseline into `table`; the end of its last reported interval (None:
    /// it reported none, so nothing it counted can be told apart from what it sent).
    pub fn load(progs: &mut SchedPrograms, table: &mut HashMap<(u32, u64), Prev>) -> Option<u64> {
        let mut end = None;
        let read = progs.read_base(|k, v| {
            if (k.tid, k.thread_start_ns) == END_KEY {
                end = Some(v.raw_oncpu);
            } else {
                table.insert((k.tid, k.thread_start_ns), from_value(v));
            }
        });
        match read {
            Ok(_) => log::info!("CPU accounting: {} threads' reported totals loaded from the pinned baseline", table.len()),
            Err(e) => log::warn!("CPU accounting: reading the pinned baseline: {e} ({} threads read)", table.len()),
        }
        end
    }

    /// Writes the dirty threads' totals and the interval's end (one system call), after the
    /// removed threads are deleted. A kill before it leaves the previous baseline: the next
    /// agent reports this interval again.
    pub fn commit(&mut self, progs: &SchedPrograms, table: &HashMap<(u32, u64), Prev>, end_mono_ns: u64) {
        self.keys.clear();
        for &k in &self.removed {
            self.keys.extend_from_slice(&key_bytes(k));
        }
        progs.delete_base(&self.keys, self.removed.len() as u32);
        self.removed.clear();
        self.keys.clear();
        self.values.clear();
        let end = Prev { raw_oncpu: end_mono_ns, ..Prev::ZERO };
        let mut n = 0u32;
        for (k, p) in std::iter::once((END_KEY, &end)).chain(self.dirty.iter().filter_map(|k| table.get(k).map(|p| (*k, p)))) {
            self.keys.extend_from_slice(&key_bytes(k));
            let v = to_value(p);
            // SAFETY: a plain struct of integers (size asserted in capture::sched).
            self.values.extend_from_slice(unsafe { std::slice::from_raw_parts((&v as *const BaseValue).cast::<u8>(), size_of::<BaseValue>()) });
            n += 1;
        }
        self.dirty.clear();
        if let Err(e) = progs.write_base(&self.keys, &self.values, n) {
            log::warn!("{e} ({n} entries): an agent restarted on the pins may report these threads' CPU time again");
        }
    }
}

fn key_bytes((tid, start): (u32, u64)) -> [u8; size_of::<BaseKey>()] {
    let mut b = [0u8; size_of::<BaseKey>()];
    b[..4].copy_from_slice(&tid.to_ne_bytes());
    b[8..].copy_from_slice(&start.to_ne_bytes());
    b
}

fn to_value(p: &Prev) -> BaseValue {
    BaseValue {
        oncpu_ns: p.oncpu,
        wcycles: p.wcyc,
        raw_oncpu: p.raw_oncpu,
        cycles: p.cycles,
        instructions: p.instr,
        cache_references: p.cref,
        cache_misses: p.cmiss,
    }
}

fn from_value(v: &BaseValue) -> Prev {
    Prev {
        oncpu: v.oncpu_ns,
        raw_oncpu: v.raw_oncpu,
        wcyc: v.wcycles,
        cycles: v.cycles,
        instr: v.instructions,
        cref: v.cache_references,
        cmiss: v.cache_misses,
        gen: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_and_its_key_survive_the_map_layout() {
        let p = Prev { oncpu: [1, 2, 3, 4], raw_oncpu: 9, wcyc: [5, 6, 7, 8], cycles: 10, instr: 11, cref: 12, cmiss: 13, gen: 0 };
        assert!(from_value(&to_value(&p)) == p);
        let k = key_bytes((0x0102_0304, 0x1122_3344_5566_7788));
        assert_eq!(k[..4], 0x0102_0304u32.to_ne_bytes());
        assert_eq!(k[4..8], [0; 4], "the C struct's padding");
        assert_eq!(k[8..], 0x1122_3344_5566_7788u64.to_ne_bytes());
    }
}
