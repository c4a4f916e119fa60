//! Load shedding where the capture drops events: the kernel's keep and counter maps, the same
//! decision in user space (`UserShed`), the sampling hash both ends of a connection agree on
//! (`sampling`, mirror of connections.h) and the counts that rescale what was kept (`filter`).
//! What the fractions should be is decided by a `ShedControl` (control::shedding's controller),
//! which the capture thread asks once per interval.
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

mod filter;
mod plan;
mod sampling;
mod user;

pub use filter::{DomainCounts, ShedFilter};
pub use plan::ShedPlan;
pub use sampling::{connection_hash, endpoint_hash, keep_fixed, kept};
pub use user::UserShed;

/// An accounting domain: a process (tgid) or a container (cgroup id), chosen by the caller.
pub type Domain = u64;

/// Key of the kernel keep map holding the fraction of every domain without its own entry.
pub const DOMAIN_DEFAULT: Domain = u64::MAX;
/// Key of the kernel counters that found the map full, and of every count in kernel-drop mode.
pub const DOMAIN_OTHER: Domain = u64::MAX - 1;
/// Entries of the kernel keep and counter maps (`SHED_DOMAINS`).
pub const KERNEL_DOMAINS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShedMode {
    /// No shedding (default): the kernel programs are loaded without the shedder.
    Off,
    /// Shedding's baseline in the kernel: one domain-blind fraction, halved while over the
    /// set-point and doubled back while under.
    KernelDrop,
    /// Events are read from the ring buffer, then dropped in user space by the plan.
    User,
    /// The plan's per-domain keep fractions are applied in the kernel before the ring buffer.
    Kernel,
}

impl ShedMode {
    pub fn symbol(self) -> &'static str {
        match self {
            ShedMode::Off => "off",
            ShedMode::KernelDrop => "kernel-drop",
            ShedMode::User => "user",
            ShedMode::Kernel => "kernel",
        }
    }
    pub fn parse(s: &str) -> Option<ShedMode> {
        [ShedMode::Off, ShedMode::KernelDrop, ShedMode::User, ShedMode::Kernel].into_iter().find(|m| m.symbol() == s)
    }
    /// `shed_mode` constant of the BPF program (enum shed_mode).
    pub fn kernel_constant(self) -> u8 {
        match self {
            ShedMode::Off | ShedMode::User => 0,
            ShedMode::Kernel => 1,
            ShedMode::KernelDrop => 2,
        }
    }
}

/// Cumulative counts of one domain (kernel `struct shed_count`, or the user-space filter).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ShedCount {
    pub kept: u64,
    pub shed: u64,
    pub shed_bytes_sent: u64,
    pub shed_bytes_recv: u64,
}

impl ShedCount {
    pub fn seen(&self) -> u64 {
        self.kept + self.shed
    }
}

/// One labelled domain of the metrics.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DomainRow {
    pub label: String,
    pub keep: f64,
    pub kept: u64,
    pub shed: u64,
    pub shed_bytes_sent: u64,
    pub shed_bytes_recv: u64,
    /// Connections of the domain: exact (kept + shed) where the domain is counted; in
    /// kernel-drop mode the surviving OPENED events × the global seen/kept of each interval.
    pub estimated: f64,
    /// Whether any interval of `estimated` was rescaled (something of the domain was shed).
    pub rescaled: bool,
}

/// Published for `--metrics-addr` (f64 stored as bits).
#[derive(Debug, Default)]
pub struct ShedStats {
    /// 0 off, 1 kernel-drop, 2 user, 3 kernel.
    pub mode: AtomicU64,
    pub setpoint_bits: AtomicU64,
    pub utilization_bits: AtomicU64,
    pub budget_bits: AtomicU64,
    pub mu_max_bits: AtomicU64,
    pub default_keep_bits: AtomicU64,
    pub intervals: AtomicU64,
    /// Top domains by connections seen, then one row `other` for the rest.
    pub domains: Mutex<Vec<DomainRow>>,
}

impl ShedStats {
    pub fn f(a: &AtomicU64) -> f64 {
        f64::from_bits(a.load(Ordering::Relaxed))
    }
}

/// What one interval produced for the kernel map.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct KeepUpdate {
    /// (domain, keep fraction) to write.
    pub set: Vec<(Domain, f64)>,
    /// Domains whose own entry is to be removed (they fall back to the default).
    pub remove: Vec<Domain>,
    pub default_keep: f64,
    /// Domains whose kernel counters may be deleted (idle long enough, map getting full).
    pub forget: Vec<Domain>,
}

/// The shedding controller the capture thread runs (`control::shedding::ShedController`): it names
/// each event's accounting domain and, once per control interval, turns the counts into keep
/// fractions. Fixed for the controller's life: mode, domains, interval.
pub trait ShedControl: Send {
    fn mode(&self) -> ShedMode;
    /// Domains are cgroups (v2 id), else processes (tgid).
    fn by_cgroup(&self) -> bool;
    /// Length of a control interval.
    fn interval(&self) -> Duration;
    /// Fractions are only set by hand (`CaptureHandle::shed_set_keep`): an interval plans nothing.
    fn manual(&self) -> bool;
    /// The domain of an event, as the kernel computes it.
    fn domain_of(&self, tgid: u32, cgroup_id: u64) -> Domain;
    /// The domain a surviving event is attributed to in the metrics (never blind).
    fn label_domain_of(&self, tgid: u32, cgroup_id: u64) -> Domain;
    /// A surviving OPENED event of `domain` (label domain) reached user space.
    fn survived(&mut self, domain: Domain);
    /// Current keep fraction of a domain (what the kernel applies).
    fn keep_of(&self, domain: Domain) -> f64;
    /// Sets the fraction of a domain by hand; DOMAIN_DEFAULT sets the default.
    fn set_manual(&mut self, domain: Domain, keep: f64);
    /// Domains with a fraction of their own (set by hand or planned).
    fn manual_fractions(&self) -> Vec<(Domain, f64)>;
    /// The agent's CPU utilisation (share of one core) since the previous call, from its
    /// cumulative CPU seconds and the interval's wall time.
    fn utilization(&mut self, cpu_seconds_total: f64, wall_s: f64) -> f64;
    /// One control interval: cumulative counts per domain, the agent's CPU over it, the
    /// connections kept but not yet read; publishes its figures to `stats`.
    fn tick(&mut self, counts: &HashMap<Domain, ShedCount>, utilization: f64, queued: f64, stats: &ShedStats) -> KeepUpdate;
}

impl std::fmt::Debug for dyn ShedControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShedControl {{ mode: {:?}, by_cgroup: {}, interval: {:?} }}", self.mode(), self.by_cgroup(), self.interval())
    }
}
