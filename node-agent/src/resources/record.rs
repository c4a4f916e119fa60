//! The records the resources stage produces each interval: ResourceSample (CPU and power per
//! process, group and host) and CgroupStats (one container's high-frequency samples summed). Their
//! Avro encoders are in `output::avro::{resource, cgroup}`.
use crate::identity::cgroup::{Runtime, HOST_GROUP};
use crate::identity::pod_metadata::{PodFields, PodRef};
use crate::resources::power::PowerSource;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Host,
    Group,
    Process,
}

impl Scope {
    pub fn symbol(self) -> &'static str {
        ["HOST", "GROUP", "PROCESS"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<Scope> {
        [Scope::Host, Scope::Group, Scope::Process].into_iter().find(|x| x.symbol() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightKind {
    CpuTime,
    WeightedCycles,
}

impl WeightKind {
    pub fn symbol(self) -> &'static str {
        ["CPU_TIME", "WEIGHTED_CYCLES"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<WeightKind> {
        [WeightKind::CpuTime, WeightKind::WeightedCycles].into_iter().find(|x| x.symbol() == s)
    }
}

/// One ResourceSample (owned; the sampler reuses these between intervals).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRecord {
    pub scope: Scope,
    pub host_id: String,
    pub interval_start_ns: i64,
    pub interval_end_ns: i64,
    pub tgid: i32,
    pub process_start_time_ns: i64,
    pub comm: String,
    pub cgroup_id: i64,
    pub group_id: String,
    pub runtime: Runtime,
    pub pod_uid: Option<String>,
    pub qos_class: Option<String>,
    pub threads: i32,
    pub processes: i32,
    pub cpu_time_ns: i64,
    pub cycles: Option<i64>,
    pub instructions: Option<i64>,
    pub weighted_cycles: Option<i64>,
    pub weight_kind: WeightKind,
    pub weight: f64,
    pub power_source: PowerSource,
    pub power_watts: f64,
    pub energy_joules: f64,
    pub idle_power_watts: f64,
    pub unattributed_power_watts: f64,
    pub package_watts: Option<f64>,
    pub core_watts: Option<f64>,
    pub dram_watts: Option<f64>,
    /// CPUs online on the host in the interval (every scope).
    pub host_cores: Option<i32>,
    /// Name, namespace and kept labels of the pod (podUid set and the pod known).
    pub pod: PodFields,
    /// Last-level cache references and misses (v4); None without those counters.
    pub cache_references: Option<i64>,
    pub cache_misses: Option<i64>,
}

impl ResourceRecord {
    /// The interval's host record with no figures yet: every record of an interval is built on it.
    pub fn host(host_id: String, (start, end): (i64, i64), weight_kind: WeightKind, power_source: PowerSource, host_cores: Option<i32>) -> Self {
        ResourceRecord {
            scope: Scope::Host,
            host_id,
            interval_start_ns: start,
            interval_end_ns: end,
            tgid: 0,
            process_start_time_ns: 0,
            comm: String::new(),
            cgroup_id: 0,
            group_id: HOST_GROUP.to_string(),
            runtime: Runtime::Host,
            pod_uid: None,
            qos_class: None,
            threads: 0,
            processes: 0,
            cpu_time_ns: 0,
            cycles: None,
            instructions: None,
            weighted_cycles: None,
            weight_kind,
            weight: 0.0,
            power_source,
            power_watts: 0.0,
            energy_joules: 0.0,
            idle_power_watts: 0.0,
            unattributed_power_watts: 0.0,
            package_watts: None,
            core_watts: None,
            dram_watts: None,
            pod: PodFields::default(),
            host_cores,
            cache_references: None,
            cache_misses: None,
        }
    }
}

/// One CgroupStats record (`cgroup_sampler::CgroupStats` is one raw reading), one field list for
/// both forms: `S` is its string type and `P` its pod's. The sampler encodes the borrowed form
/// (`CgroupStatsRecord`, no allocation); decoding, `--once` and tests hold the owned one
/// (`OwnedCgroupStats`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CgroupStatsOf<S, P> {
    pub host_id: S,
    pub interval_start_ns: i64,
    pub interval_end_ns: i64,
    pub group_id: S,
    pub runtime: S,
    pub pod_uid: Option<S>,
    pub qos_class: Option<S>,
    pub cgroup_path: S,
    pub hierarchy: S,
    pub tick_interval_ns: i64,
    pub ticks: i32,
    pub max_tick_gap_ns: i64,
    pub cpu_ns: i64,
    pub cpu_mean_cores: f64,
    pub cpu_peak_cores: f64,
    pub throttled_periods: i64,
    pub throttled_ns: i64,
    pub memory_bytes: i64,
    pub memory_peak_bytes: i64,
    pub io_read_bytes: i64,
    pub io_write_bytes: i64,
    pub pids: i64,
    pub pod: P,
    /// The container's Kubernetes requests (None: no request of that resource, or unknown).
    pub cpu_request_cores: Option<f64>,
    pub memory_request_bytes: Option<i64>,
}

/// Borrowed form: what the sampler builds and the encoder writes.
pub type CgroupStatsRecord<'a> = CgroupStatsOf<&'a str, PodRef<'a>>;

/// Owned form, for decoding, `--once` and tests.
pub type OwnedCgroupStats = CgroupStatsOf<String, PodFields>;

impl<S, P> CgroupStatsOf<S, P> {
    /// The same record with its strings and pod converted by `s` and `p`.
    fn convert<'s, T, Q>(&'s self, s: impl Fn(&'s S) -> T, p: impl FnOnce(&'s P) -> Q) -> CgroupStatsOf<T, Q> {
        CgroupStatsOf {
            host_id: s(&self.host_id),
            interval_start_ns: self.interval_start_ns,
            interval_end_ns: self.interval_end_ns,
            group_id: s(&self.group_id),
            runtime: s(&self.runtime),
            pod_uid: self.pod_uid.as_ref().map(&s),
            qos_class: self.qos_class.as_ref().map(&s),
            cgroup_path: s(&self.cgroup_path),
            hierarchy: s(&self.hierarchy),
            tick_interval_ns: self.tick_interval_ns,
            ticks: self.ticks,
            max_tick_gap_ns: self.max_tick_gap_ns,
            cpu_ns: self.cpu_ns,
            cpu_mean_cores: self.cpu_mean_cores,
            cpu_peak_cores: self.cpu_peak_cores,
            throttled_periods: self.throttled_periods,
            throttled_ns: self.throttled_ns,
            memory_bytes: self.memory_bytes,
            memory_peak_bytes: self.memory_peak_bytes,
            io_read_bytes: self.io_read_bytes,
            io_write_bytes: self.io_write_bytes,
            pids: self.pids,
            pod: p(&self.pod),
            cpu_request_cores: self.cpu_request_cores,
            memory_request_bytes: self.memory_request_bytes,
        }
    }
}

impl OwnedCgroupStats {
    pub fn as_ref(&self) -> CgroupStatsRecord<'_> {
        self.convert(String::as_str, PodFields::as_ref)
    }
}

impl CgroupStatsRecord<'_> {
    pub fn to_owned(&self) -> OwnedCgroupStats {
        self.convert(|s| s.to_string(), PodRef::to_owned)
    }
}
