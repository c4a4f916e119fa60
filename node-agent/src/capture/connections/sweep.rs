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

/// Emits SNAPSHOT for opened sockets with bytes not reported yet, busy or idle, so no
/// connection's bytes wait for its close. This is the time rule of SNAPSHOT: the kernel emits by
/// bytes, and by time only for its shed connections not yet reported (connections.bpf.c).
/// `every` is the sweep interval; `seen` (the cookies of the live sockets, filled anew) is a
/// buffer kept between sweeps.
pub(super) fn sweep(skel: &ConnectionsSkel<'_>, disp: &RefCell<Dispatcher>, stats: &CaptureStats, every: Duration, seen: &mut HashSet<u64>, walk: &mut SockWalk) {
    let now = boot_time_ns();
    seen.clear();
    // One iterator walk of the socket-local storage (walk.rs), a few hundred sockets per syscall.
    let read = walk.for_each(Which::All, |si| {
        seen.insert(si.cookie);
        if si.opened == 0 || si.ignored != 0 || si.shed == SHED_UNREPORTED {
            return;
        }
        let mut d = disp.borrow_mut();
        // A connection shed in user space is reported once it has been open for an interval
        // (as the kernel does for its own shed ones): the SNAPSHOT marks it reported (admit).
        if d.shed.as_ref().and_then(|s| s.user.as_ref()).is_some_and(|u| u.is_unreported(si.cookie))
            && now.saturating_sub(si.last_report_ns) < every.as_nanos() as u64
        {
            return;
        }
        let (ls, lr) = d.last.get(&si.cookie).copied().unwrap_or((0, 0));
        let (rs, rr) = (si.reported_sent.max(ls), si.reported_recv.max(lr));
        if si.bytes_sent > rs || si.bytes_recv > rr {
            if let Some(ev) = from_sock_info(si, Kind::Snapshot, now) {
                stats.sweep_snapshots.fetch_add(1, Ordering::Relaxed);
                d.dispatch(ev);
            }
        }
    });
    if let Err(e) = read {
        // Nothing is forgotten on a failed walk: what it did not see may still be live.
        log::warn!("reading the sockets' state: {e}");
        return;
    }
    stats.socket_map_entries.store(seen.len() as u64, Ordering::Relaxed);
    stats.socket_storage_refused.store(read_stat(skel, STAT_SOCK_REFUSED), Ordering::Relaxed);
    // Forget sockets the kernel no longer tracks (closed).
    let mut d = disp.borrow_mut();
    d.last.retain(|c, _| seen.contains(c));
    if let Some(u) = d.shed.as_mut().and_then(|s| s.user.as_mut()) {
        u.retain_open(|c| seen.contains(&c));
    }
}

/// `enum shed_state` of connections.h.
pub(super) const SHED_UNREPORTED: u8 = 1;
