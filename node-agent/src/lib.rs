//! Wattgraph node agent library: capture (eBPF) is separate from encoding (Avro)
//! and producing (Kafka), so tests can drive the pipeline without Kafka.
pub mod avro;
pub mod capture;
pub mod config;
pub mod event;
pub mod kafka;
pub mod spool;
pub mod pipeline;
pub mod proc_info;
pub mod sched;
pub mod cgroup;
pub mod cgroup_sampler;
pub mod cgroup_avro;
pub mod cgroup_report;
pub mod preflight;
pub mod power;
pub mod resource_avro;
pub mod resources;
pub mod metrics;
pub mod transactions;
pub mod http_route;
pub mod pod_metadata;
pub mod shedding;
pub mod powercap_actuator;
pub mod budget_avro;
pub mod budget;
pub mod budget_consumer;
