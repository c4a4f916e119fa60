pub mod cgroup_report;
pub mod cgroup_sampler;
pub mod power;
pub mod sampler;
