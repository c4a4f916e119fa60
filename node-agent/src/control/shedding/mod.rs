//! Load shedding for the agent's per-event streams (000_623fb658eebbd574.txt): the Load Manager
//! decides how many events the agent can afford next interval, a policy splits that budget over
//! accounting domains (processes, containers), and the filter drops accordingly while counting
//! every drop so that metrics are rescaled to estimates of the truth.
//!
//! Aggregates computed in the kernel (bytes per socket, CPU time, histograms) are never shed:
//! only per-event streams go through here.

mod controller;
mod filter;
mod kernel_drop;
mod load_manager;
mod metrics;
mod policy;
mod sampling;

pub use controller::{
    priority_of, Control, DomainRow, PodKey, KeepUpdate, PolicyKind, ShedController, ShedCount, ShedMode, ShedOptions, ShedStats,
    UserShed, DOMAIN_DEFAULT, DOMAIN_OTHER, KEEP_ONE, KERNEL_DOMAINS, TOP_DOMAINS,
};
pub use filter::{DomainCounts, ShedFilter};
pub use kernel_drop::KernelDropBaseline;
pub use metrics::render_metrics;
pub use load_manager::{IntervalStats, LoadManager};
pub use sampling::{connection_hash, endpoint_hash, keep_fixed, kept};
pub use policy::{FairPolicy, PriorityPolicy, SheddingPolicy, ShedPlan};

/// An accounting domain: a process (tgid) or a container (cgroup id), chosen by the caller.
pub type Domain = u64;
