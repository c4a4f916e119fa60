//! The capture's counters: what the thread counts itself, and what it reads from the kernel's
//! per-CPU `stats` map and the programs' recursion misses, once per second.
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use libbpf_rs::{MapCore, MapFlags};

use super::skel::*;
use crate::capture::conntrack::NatStats;
use crate::capture::shedding::ShedStats;

/// Counters shared with the stats line.
#[derive(Default, Debug)]
pub struct CaptureStats {
    pub opened: AtomicU64,
    pub snapshots: AtomicU64,
    pub sweep_snapshots: AtomicU64,
    pub closed: AtomicU64,
    pub ringbuf_drops: AtomicU64,
    pub stale_dropped: AtomicU64,
    /// TransactionStats records handed over.
    pub txn_records: AtomicU64,
    /// Short-lived connections merged into masked-client-port records.
    pub txn_masked_connections: AtomicU64,
    /// Transactions whose histogram cell found the kernel map full / closed connections whose
    /// final totals found the `txn_closed` ring full.
    pub txn_hist_full: AtomicU64,
    pub txn_conn_full: AtomicU64,
    /// Requests filed under the OTHER route because the route map was full.
    pub http_routes_full: AtomicU64,
    /// Requests whose bytes were not visible (no syscall buffer: io_uring, sendfile, kernel
    /// threads), so no route was read.
    pub http_unread: AtomicU64,
    /// Routes named now (used within `http_route_idle`).
    pub http_routes: AtomicU64,
    /// Routes removed from the kernel's table after `http_route_idle` without a transaction.
    pub http_routes_pruned: AtomicU64,
    /// Load shedding: set-point, measured CPU, keep fractions, per-domain counts.
    pub shed: ShedStats,
    /// Calls of the socket programs the kernel skipped because the same program was already
    /// running on that CPU (`recursion_misses`: e.g. a softirq state change interrupting a
    /// process-context one) and that nothing handled instead (see `set_state_nested`): such
    /// events are not seen at all.
    pub prog_misses: AtomicU64,
    /// State changes the kernel skipped for handle_set_state (nested) and that
    /// handle_set_state_nested handled instead.
    pub set_state_nested: AtomicU64,
    /// Processes whose command line the kernel could not copy (ring full, argv not resident):
    /// theirs comes from /proc, if the process still lives when its first event is encoded.
    pub cmdlines_not_copied: AtomicU64,
    /// Sockets with state (socket-local storage) at the last sweep.
    pub socket_map_entries: AtomicU64,
    /// Times a socket's state could not be created (the kernel refused the memory: the socket's
    /// `net.core.optmem_max`, or none left); that socket is tried again at its next call.
    pub socket_storage_refused: AtomicU64,
    /// NAT translation (conntrack).
    pub nat: Arc<NatStats>,
}

/// `enum stat_idx` of connections.h.
pub(super) const STAT_SOCK_REFUSED: u32 = 3;
pub(super) const STAT_SET_STATE_NESTED: u32 = 4;
pub(super) const STAT_ROUTES_FULL: u32 = 5;
pub(super) const STAT_HTTP_NO_BUFFER: u32 = 6;
pub(super) const STAT_PROC_ARGS_DROPS: u32 = 7;
pub(super) const STAT_PROC_ARGS_UNREAD: u32 = 8;
/// Transactions counted in a socket's own first row (connections.h).
pub(super) const STAT_TXN_IN_SOCKET: u32 = 9;

/// `recursion_misses` of one program (0 if the kernel does not say).
pub(super) fn prog_misses(prog: &libbpf_rs::ProgramMut<'_>) -> u64 {
    use std::os::fd::{AsFd, AsRawFd};
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = size_of::<libbpf_rs::libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: info is a plain struct of `len` bytes; no array pointers are set.
    let rc = unsafe {
        libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(prog.as_fd().as_raw_fd(), &mut info, &mut len)
    };
    if rc == 0 { info.recursion_misses } else { 0 }
}

pub(super) fn read_stats(skel: &ConnectionsSkel<'_>, stats: &CaptureStats) {
    let p = &skel.progs;
    // handle_set_state_nested's own misses are not counted: it is only skipped when it runs
    // un-nested, and then handle_set_state does the work.
    let nested = read_stat(skel, STAT_SET_STATE_NESTED);
    stats.set_state_nested.store(nested, Ordering::Relaxed);
    let unseen = prog_misses(&p.handle_set_state).saturating_sub(nested) + prog_misses(&p.handle_send) + prog_misses(&p.handle_recv);
    stats.prog_misses.store(unseen, Ordering::Relaxed);
    stats.ringbuf_drops.store(read_stat(skel, 0), Ordering::Relaxed);
    stats.txn_hist_full.store(read_stat(skel, 1), Ordering::Relaxed);
    stats.txn_conn_full.store(read_stat(skel, 2), Ordering::Relaxed);
    stats.http_routes_full.store(read_stat(skel, STAT_ROUTES_FULL), Ordering::Relaxed);
    stats.http_unread.store(read_stat(skel, STAT_HTTP_NO_BUFFER), Ordering::Relaxed);
    stats.cmdlines_not_copied.store(read_stat(skel, STAT_PROC_ARGS_DROPS) + read_stat(skel, STAT_PROC_ARGS_UNREAD), Ordering::Relaxed);
}

pub(super) fn read_stat(skel: &ConnectionsSkel<'_>, idx: u32) -> u64 {
    let key = idx.to_ne_bytes();
    match skel.maps.stats.lookup_percpu(&key, MapFlags::ANY) {
        Ok(Some(per_cpu)) => per_cpu
            .iter()
            .filter_map(|v| v.get(..8).map(|b| u64::from_ne_bytes(b.try_into().unwrap())))
            .sum(),
        _ => 0,
    }
}
