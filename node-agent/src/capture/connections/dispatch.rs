//! Where every event goes on its way to the channel: user-space shedding, stale snapshots dropped,
//! counters, the role of sockets whose handshake was not seen, NAT translation.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use super::{CaptureOptions, CaptureStats};
use crate::capture::conntrack::NatTable;
use crate::capture::event::{ConnEvent, Kind};
use crate::capture::shedding::{connection_hash, ShedControl, UserShed};
use crate::shared::net::Role;

/// Delivers events to the channel; drops SNAPSHOTs that are not newer than what was
/// already delivered (a sweep may overtake a kernel SNAPSHOT still in the ring).
pub(super) struct Dispatcher {
    pub(super) tx: SyncSender<ConnEvent>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) stats: Arc<CaptureStats>,
    pub(super) last: HashMap<u64, (u64, u64)>,
    pub(super) shed: Option<Shedder>,
    pub(super) nat: NatTable,
    /// Roles of sockets whose handshake was not seen, decided from the listening sockets at
    /// their first event and kept for the socket's life.
    pub(super) listening: crate::identity::listening::Listening,
    pub(super) decided: HashMap<u64, Role>,
    /// Events handed to the channel so far (event_ring.rs defers the ring's consumer to them).
    pub(super) sent: u64,
}

/// Sockets of unseen handshakes whose decided role is remembered (their CLOSED forgets them).
pub(super) const DECIDED_ROLES: usize = 65536;

/// How long a connection conntrack has forgotten still translates (records of a closed socket
/// are encoded up to a transaction interval later).
pub(super) const NAT_GRACE: Duration = Duration::from_secs(120);

/// The host's NAT table, or an empty one (said once) when conntrack cannot be read.
pub(super) fn open_nat(opts: &CaptureOptions, stats: &CaptureStats) -> NatTable {
    let grace = NAT_GRACE.as_nanos() as u64;
    if opts.nat_entries == 0 {
        return NatTable::detached(0, grace, stats.nat.clone());
    }
    let netns = if opts.nat_netns.is_empty() { &opts.netns } else { &opts.nat_netns };
    match NatTable::open(netns, opts.nat_entries, grace, stats.nat.clone()) {
        Ok(t) => {
            log::info!("NAT translation on: {} translated connections in conntrack", t.len());
            t
        }
        Err(e) => {
            log::warn!("NAT translation off (dialled virtual addresses are reported as such): {e}");
            NatTable::detached(0, grace, stats.nat.clone())
        }
    }
}

/// The shedding state of the capture thread.
pub(super) struct Shedder {
    pub(super) ctrl: Box<dyn ShedControl>,
    /// `--shed-mode user`: the filter applied to events read from the ring.
    pub(super) user: Option<UserShed>,
    /// OPENED events read from the ring (kernel modes: = kept connections read).
    pub(super) opened_read: u64,
}

impl Dispatcher {
    /// The role of a socket whose handshake was not seen: the same for all its events.
    pub(super) fn decide_role(&mut self, ev: &ConnEvent) -> Role {
        let role = match self.decided.get(&ev.cookie) {
            Some(r) => *r,
            None => {
                let r = self.listening.role_of(ev.netns, ev.tgid, (ev.local_addr, ev.local_port), (ev.remote_addr, ev.remote_port));
                if self.decided.len() >= DECIDED_ROLES {
                    self.decided.clear(); // sockets evicted without a CLOSED; decided again
                }
                self.decided.insert(ev.cookie, r);
                r
            }
        };
        if ev.kind == Kind::Closed {
            self.decided.remove(&ev.cookie);
        }
        role
    }

    pub(super) fn dispatch(&mut self, mut ev: ConnEvent) {
        if let Some(sh) = self.shed.as_mut() {
            if ev.kind == Kind::Opened {
                sh.opened_read += 1;
            }
            if let Some(u) = sh.user.as_mut() {
                let d = sh.ctrl.domain_of(ev.tgid, ev.cgroup_id);
                let hash = connection_hash(ev.role, (&ev.local_addr, ev.local_port), (&ev.remote_addr, ev.remote_port));
                match u.admit(ev.kind, ev.cookie, d, (ev.bytes_sent, ev.bytes_recv), hash) {
                    Some(keep) => ev.keep = keep,
                    None => return,
                }
            }
            if ev.kind == Kind::Opened {
                let d = sh.ctrl.label_domain_of(ev.tgid, ev.cgroup_id);
                sh.ctrl.survived(d);
            }
        }
        match ev.kind {
            Kind::Opened => {
                self.stats.opened.fetch_add(1, Ordering::Relaxed);
                self.last.insert(ev.cookie, (ev.bytes_sent, ev.bytes_recv));
            }
            Kind::Snapshot => {
                if let Some(&(s, r)) = self.last.get(&ev.cookie) {
                    if ev.bytes_sent <= s && ev.bytes_recv <= r {
                        self.stats.stale_dropped.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
                self.stats.snapshots.fetch_add(1, Ordering::Relaxed);
                self.last.insert(ev.cookie, (ev.bytes_sent, ev.bytes_recv));
            }
            Kind::Closed => {
                self.stats.closed.fetch_add(1, Ordering::Relaxed);
                self.last.remove(&ev.cookie);
            }
        }
        if ev.role == Role::Unknown {
            ev.role = self.decide_role(&ev);
        }
        if ev.role != Role::Server {
            let first = ev.kind == Kind::Opened;
            ev.nat = self.nat.translate(first, ev.ts_boot_ns, (ev.local_addr, ev.local_port), (ev.remote_addr, ev.remote_port));
        }
        loop {
            match self.tx.try_send(ev) {
                Ok(()) => {
                    self.sent += 1;
                    return;
                }
                Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(back)) => {
                    if self.stop.load(Ordering::Relaxed) {
                        return;
                    }
                    ev = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}
