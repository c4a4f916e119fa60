//! What the kernel tells: each BPF program set beside its loader and its `*.bpf.c` (`connections`:
//! TCP connections, bytes, transactions and HTTP routes; `sched`: CPU time per thread), the NAT
//! the host applies (`conntrack`, over ctnetlink), and the load shedding applied where events are
//! produced (`shedding`). `bpf` holds what the loaders share, `map_batch` the batched map reads, `pins` the
//! bpffs pins that let the programs outlive the agent, `pin_owner` whether a stop is an uninstall.
pub mod bpf;
pub mod connections;
pub mod conntrack;
pub mod event;
pub mod map_batch;
pub mod pin_owner;
pub mod pins;
pub mod sched;
pub mod shedding;
