//! The time rule of SNAPSHOT: a walk of every socket's state for bytes not reported yet.
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::dispatch::Dispatcher;
use super::ring::from_sock_info;
use super::skel::*;
use super::stats::{read_stat, STAT_SOCK_REFUSED};
use super::walk::{SockWalk, Which};
use super::CaptureStats;
use crate::capture::event::Kind;
use crate::shared::clock::boot_time_ns;

/// Sockets held between reading the ring and emitting their SNAPSHOTs: the sweep's buffer stays
/// this small whatever the number of sockets (holding every socket with unreported bytes until the
/// end of the walk took 52 MB at 200,000 sockets, docs/benchmarks/agent.md "Footprint").
const SWEEP_CHUNK: usize = 1024;

/// Emits SNAPSHOT for opened sockets with bytes not reported yet, busy or idle, so no
/// connection's bytes wait for its close. This is the time rule of SNAPSHOT: the kernel emits by
/// bytes, and by time only for its shed connections not yet reported (connections.bpf.c).
/// `every` is the sweep interval; `seen` (the cookies of the live sockets, filled anew) and
/// `pending` are buffers kept between sweeps. `read_ring` reads the event ring: called before each
/// chunk of SNAPSHOTs, so an OPENED the kernel emitted before the walk saw its socket opened is
/// delivered before that socket's SNAPSHOT (the kernel marks a socket OPEN_DONE once its OPENED is
/// in the ring).
#[allow(clippy::too_many_arguments)]
pub(super) fn sweep(
    skel: &ConnectionsSkel<'_>,
    disp: &RefCell<Dispatcher>,
    stats: &CaptureStats,
    every: Duration,
    seen: &mut HashSet<u64>,
    pending: &mut Vec<types::sock_info>,
    walk: &mut SockWalk,
    mut read_ring: impl FnMut(),
) {
    let now = boot_time_ns();
    seen.clear();
    pending.clear();
    // One iterator walk of the socket-local storage (walk.rs), a few hundred sockets per syscall;
    // kept: the opened sockets with bytes the kernel has not reported.
    let read = walk.for_each(Which::All, |si| {
        seen.insert(si.cookie);
        if si.opened == OPEN_DONE && si.ignored == 0 && si.shed != SHED_UNREPORTED && (si.bytes_sent > si.reported_sent || si.bytes_recv > si.reported_recv) {
            pending.push(*si);
            if pending.len() == SWEEP_CHUNK {
                read_ring();
                snapshot(pending, disp, stats, every, now);
            }
        }
    });
    if let Err(e) = read {
        // Nothing is forgotten on a failed walk: what it did not see may still be live.
        log::warn!("reading the sockets' state: {e}");
        return;
    }
    read_ring();
    snapshot(pending, disp, stats, every, now);
    stats.socket_map_entries.store(seen.len() as u64, Ordering::Relaxed);
    stats.socket_storage_refused.store(read_stat(skel, STAT_SOCK_REFUSED), Ordering::Relaxed);
    // Forget sockets the kernel no longer tracks (closed).
    let mut d = disp.borrow_mut();
    d.last.retain(|c, _| seen.contains(c));
    if let Some(u) = d.shed.as_mut().and_then(|s| s.user.as_mut()) {
        u.retain_open(|c| seen.contains(&c));
    }
}

/// The SNAPSHOTs of `pending` (then emptied) whose bytes no event has reported since the walk.
fn snapshot(pending: &mut Vec<types::sock_info>, disp: &RefCell<Dispatcher>, stats: &CaptureStats, every: Duration, now: u64) {
    let mut d = disp.borrow_mut();
    for si in pending.iter() {
        // A connection shed in user space is reported once it has been open for an interval
        // (as the kernel does for its own shed ones): the SNAPSHOT marks it reported (admit).
        if d.shed.as_ref().and_then(|s| s.user.as_ref()).is_some_and(|u| u.is_unreported(si.cookie))
            && now.saturating_sub(si.last_report_ns) < every.as_nanos() as u64
        {
            continue;
        }
        let (ls, lr) = d.last.get(&si.cookie).copied().unwrap_or((0, 0));
        let (rs, rr) = (si.reported_sent.max(ls), si.reported_recv.max(lr));
        if si.bytes_sent > rs || si.bytes_recv > rr {
            if let Some(ev) = from_sock_info(si, Kind::Snapshot, now) {
                stats.sweep_snapshots.fetch_add(1, Ordering::Relaxed);
                d.dispatch(ev);
            }
        }
    }
    pending.clear();
}

/// `enum open_state` of connections.h: OPENED is in the ring.
const OPEN_DONE: u8 = 2;
/// `enum shed_state` of connections.h.
pub(super) const SHED_UNREPORTED: u8 = 1;
