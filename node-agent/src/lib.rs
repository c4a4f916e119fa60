//! Wattgraph node agent library: capture (eBPF) is separate from encoding (Avro)
//! and producing (Kafka), so tests can drive the pipeline without Kafka.
pub mod shared;
pub mod identity;
pub mod capture;
pub mod resources;
pub mod output;
pub mod control;
pub mod config;
pub mod metrics;
pub mod preflight;
pub mod service_mapper;
pub mod agent;
