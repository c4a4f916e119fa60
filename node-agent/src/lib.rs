//! Wattgraph node agent, laid out by stage. Each module depends only on the ones above it in
//! this list (and on `shared`); the binary's wiring sits at the bottom:
//!
//! - `shared`: clocks, the endpoint vocabulary of connections, the agent's own CPU, durable files.
//! - `identity`: who is at each end: processes and their command lines, cgroups, containers and
//!   pods, which endpoints listen (the capture asks it about sockets older than the agent).
//! - `capture`: the BPF program sets with their loaders and `*.bpf.c` (connections and
//!   transactions with HTTP routes, the scheduler), conntrack's NAT, and the shedding the
//!   capture applies.
//! - `resources`: CPU accounting per process, power from RAPL or a model, cgroup samples.
//! - `output`: Avro encoders per record type and the one route to Kafka (memory, then disk spool).
//! - `control`: load shedding (run by the capture thread through `capture::shedding::ShedControl`)
//!   and power budgets applied through powercap.
//! - wiring: `config` (flags and `--config`), `metrics` (the Prometheus endpoint), `preflight`
//!   (what the host must offer), `agent` (stages started and stopped in order, `--once`), and
//!   `service_mapper` for the `wattgraph-service-mapper` binary.
pub mod shared;
pub mod identity;
pub mod capture;
pub mod resources;
pub mod output;
pub mod control;
pub mod config;
pub mod metrics;
pub mod preflight;
pub mod agent;
pub mod service_mapper;
