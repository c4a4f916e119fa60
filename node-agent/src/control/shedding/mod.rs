//! Load shedding control (Shedding): the Load Manager decides how many events the agent can
//! afford next interval, a policy splits that budget over accounting domains (processes,
//! containers), and the capture applies the resulting keep fractions (`capture::shedding`) while
//! counting every drop so that metrics are rescaled to estimates of the truth.
//!
//! Aggregates computed in the kernel (bytes per socket, CPU time, histograms) are never shed:
//! only per-event streams go through here.

mod controller;
mod kernel_drop;
mod load_manager;
mod metrics;
mod policy;
mod priority;

pub use controller::{ShedController, TOP_DOMAINS};
pub use priority::{priority_of, PodKey};
pub use kernel_drop::KernelDropBaseline;
pub use load_manager::{IntervalStats, LoadManager};
pub use metrics::render_metrics;
pub use policy::{FairPolicy, PriorityPolicy, SheddingPolicy};

use crate::capture::shedding::ShedMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    Fair,
    Priority,
}

/// How the keep fractions are chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// Load Manager + policy every interval, holding the agent's CPU near `setpoint`.
    Auto {
        /// Ū: share of ONE core (0.05 = 5 % of a core; on an n-core host that is 0.05/n of the host).
        setpoint: f64,
        policy: PolicyKind,
        /// (process name or cgroup path component, priority ≥ 1); others get priority 1.
        priorities: Vec<(String, u32)>,
    },
    /// Fractions set by the caller only (`CaptureHandle::shed_set_keep`), for tests.
    Manual,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ShedOptions {
    pub mode: ShedMode,
    pub control: Control,
    /// Accounting domain: false = process (tgid), true = cgroup v2 id.
    pub by_cgroup: bool,
    /// Length of a control interval.
    pub interval: std::time::Duration,
    /// Floor of the keep fractions the Load Manager's policies plan (not kernel-drop's, nor
    /// manual ones): a fraction of 0 leaves nothing that stands for a domain's connections.
    pub min_keep: f64,
}
