//! CPU, power and container figures per interval: the sched programs' per-thread counters summed
//! into processes (`sampler`), RAPL or the power model (`power`), the high-frequency cgroup
//! samples (`cgroup_sampler`, `cgroup_report`), the records they make (`record`), and the
//! re-report of a group whose pod was named late (`late_names`); with pinned programs, the CPU
//! baseline an agent restarted on the pins continues from (`cpu_base`).
use std::sync::atomic::AtomicU64;

pub mod cgroup_report;
pub mod cgroup_sampler;
pub mod cpu;
mod cpu_base;
mod late_names;
pub mod power;
pub mod record;
pub mod sampler;

/// Figures the resource thread publishes (f64 values stored as bits).
#[derive(Default, Debug)]
pub struct ResourceMetrics {
    pub intervals: AtomicU64,
    pub records: AtomicU64,
    pub sched_switches: AtomicU64,
    pub thread_exits: AtomicU64,
    pub sched_ringbuf_drops: AtomicU64,
    pub thread_map_entries: AtomicU64,
    pub thread_map_capacity: AtomicU64,
    pub thread_map_evictions: AtomicU64,
    pub host_power_watts_bits: AtomicU64,
    pub power_measured: AtomicU64,
    pub hw_counters: AtomicU64,
    /// High-frequency cgroup sampler (`cgroup_report`): containers followed, ticks, the
    /// largest gap between ticks in the last reporting interval (ns), CgroupStats produced.
    pub cgroups_sampled: AtomicU64,
    pub cgroup_ticks: AtomicU64,
    pub cgroup_max_tick_gap_ns: AtomicU64,
    pub cgroup_records: AtomicU64,
}
