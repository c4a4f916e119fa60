pub mod bpf;
pub mod connections;
pub mod conntrack;
pub mod event;
pub mod map_batch;
pub mod sched;
pub mod shedding;
