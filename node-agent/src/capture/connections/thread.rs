//! The capture thread: owns the BPF skeleton (not Send) and runs every job on it in one loop.
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::RingBufferBuilder;

use super::dispatch::{open_nat, Dispatcher, Shedder};
use super::drain::TxnDrain;
use super::event_ring::EventRing;
use super::load::load_and_attach;
use super::ring::{decode_proc_args, decode_raw};
use super::shed::{shed_command, shed_tick, ShedClock};
use super::stats::read_stats;
use super::sweep::sweep;
use super::walk::{SockWalk, WalkKind};
use super::{CaptureOptions, CaptureStats, ShedCmd};
use crate::capture::bpf::{bpf_err, forget_refused, refused_program, refusing_policy, CaptureError};
use crate::capture::event::ConnEvent;
use crate::capture::connections::transactions::ConnTxn;
use crate::capture::shedding::{ShedMode, UserShed};
use crate::identity::proc_info::KernelCmdlines;
use crate::shared::clock::{boot_time_ns, unix_ns, until_aligned};

pub(super) fn run(
    mut opts: CaptureOptions,
    inodes: Vec<u32>,
    tx: SyncSender<ConnEvent>,
    txn_tx: SyncSender<ConnTxn>,
    stop: Arc<AtomicBool>,
    stats: Arc<CaptureStats>,
    cmdlines: Arc<KernelCmdlines>,
    ready: SyncSender<Result<(Vec<String>, bool), CaptureError>>,
    shed_rx: Receiver<ShedCmd>,
    (taken, txn_taken): (Arc<AtomicU64>, Arc<AtomicU64>),
) {
    let (mut storage, mut storage2) = (MaybeUninit::uninit(), MaybeUninit::uninit());
    forget_refused();
    let mut walk_kind = if opts.walk_per_namespace { WalkKind::PerNamespace } else { WalkKind::Map };
    let loaded = match load_and_attach(&opts, &inodes, &mut storage, walk_kind) {
        Err(CaptureError::Permission(_)) if refused_program().is_some_and(|p| p == "dump_socks" || p == "dump_txn_socks") => {
            log::warn!(
                "the kernel refused the map-element iterator program '{}' ({}): walking the sockets per network namespace with iter/tcp instead (slower; node-agent/README.md, \"Capabilities\")",
                refused_program().unwrap_or_default(),
                refusing_policy()
            );
            walk_kind = WalkKind::PerNamespace;
            load_and_attach(&opts, &inodes, &mut storage2, walk_kind)
        }
        r => r,
    };
    let release = crate::preflight::kernel_release();
    if walk_kind == WalkKind::PerNamespace && crate::preflight::tcp_iter_use_after_free(&release) {
        log::warn!(
            "kernel {release} is, by its version, one whose TCP socket iterator can use a socket already freed while connections are being opened (CVE-2026-74714; fixed in 6.18.45, 6.12.104, 6.6.152, 6.1.183, 7.1.9): the per-namespace walk uses that iterator, so update the kernel, or let it load the map-element iterators (node-agent/README.md, \"Capabilities\")"
        );
    }
    let (skel, attached, pins) = match loaded {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let shed_every = opts.shed.as_ref().map(|c| c.interval().max(Duration::from_millis(10)));
    let shed = opts.shed.take().filter(|c| c.mode() != ShedMode::Off).map(|ctrl| {
        let user = (ctrl.mode() == ShedMode::User).then(UserShed::default);
        Shedder { user, ctrl, opened_read: 0 }
    });
    let nat = open_nat(&opts, &stats);
    let disp = RefCell::new(Dispatcher {
        tx,
        stop: stop.clone(),
        stats: stats.clone(),
        last: HashMap::new(),
        shed,
        nat,
        listening: crate::identity::listening::Listening::new("/proc"),
        decided: HashMap::new(),
        sent: 0,
    });
    let mut rb = RingBufferBuilder::new();
    // Rings are read in the order added: a process's command line, written before its first
    // event, is in place before that event is delivered.
    if let Err(e) = rb.add(&skel.maps.proc_args_ring, |data: &[u8]| {
        decode_proc_args(data, &cmdlines);
        0
    }) {
        let _ = ready.send(Err(bpf_err("ring buffer", e)));
        return;
    }
    let ring = match rb.build() {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(bpf_err("ring buffer", e)));
            return;
        }
    };
    // The event ring is read by EventRing (event_ring.rs) but wakes the same poll: its wakeups
    // make libbpf read ring 0 (the command lines), then the loop reads the events.
    let mut events = match EventRing::open(&skel.maps.events, pins.is_some(), taken) {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    // Closed sockets' transaction totals: read by the drain, released by its ledger (the count it
    // is given is not used).
    let closed_ring = match EventRing::open(&skel.maps.txn_closed, pins.is_some(), Arc::new(AtomicU64::new(0))) {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    // Edge-triggered: with pins, events not yet taken stay in the ring, which level-triggered
    // would report ready at every poll.
    let mut wake = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: 0 };
    // SAFETY: libbpf's epoll descriptor and the map's descriptor, both open.
    if unsafe { libc::epoll_ctl(ring.epoll_fd(), libc::EPOLL_CTL_ADD, skel.maps.events.as_fd().as_raw_fd(), &mut wake) } != 0 {
        let _ = ready.send(Err(CaptureError::Other(format!("event ring wakeup: {}", std::io::Error::last_os_error()))));
        return;
    }
    let read_events = |events: &mut EventRing| {
        events.consume(
            |data| {
                if let Some(ev) = decode_raw(data) {
                    disp.borrow_mut().dispatch(ev);
                }
            },
            || disp.borrow().sent,
        );
        events.release_taken();
    };
    // Per namespace, only the listed ones hold tracked sockets, unless pod CIDRs add others.
    let walk_netns = if opts.local_cidrs.is_empty() { opts.netns.clone() } else { Vec::new() };
    let mut walk = match SockWalk::attach(&skel, walk_kind, &walk_netns) {
        Ok(w) => w,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let reused = pins.as_ref().is_some_and(|p| p.reuse);
    let _ = ready.send(Ok((attached, reused)));

    let sweep_every = opts.snapshot_interval;
    let poll_timeout = sweep_every.min(EVENT_POLL);
    let mut next_sweep = Instant::now() + sweep_every;
    let (mut swept, mut sweep_pending) = (HashSet::new(), Vec::new());
    let mut next_stats = Instant::now();
    let mut txn = TxnDrain::new(
        boot_time_ns(),
        opts.mask_client_port_below,
        opts.transaction_interval.unwrap_or_default(),
        opts.http_route_idle,
        pins.is_some(),
        txn_taken,
        closed_ring,
    );
    txn.load_baseline(&skel);
    // Drains on Unix-time multiples of the interval, as on every other host (clock::until_aligned).
    // At least 10 ms apart, as --transaction-interval-ms is bounded (options built in code are not).
    let txn_every = opts.transaction_interval.map(|d| d.max(Duration::from_millis(10)));
    let mut next_txn = txn_every.map(|d| Instant::now() + until_aligned(unix_ns(), d, Duration::ZERO));
    let mut shed_clock = ShedClock::new(shed_every);
    if let Some(sh) = disp.borrow_mut().shed.as_mut() {
        sh.ctrl.utilization(crate::shared::process::self_cpu_seconds(), 0.0);
    }
    while !stop.load(Ordering::Relaxed) {
        while let Ok(cmd) = shed_rx.try_recv() {
            shed_command(&skel, &disp, cmd);
        }
        if shed_clock.due() {
            let _ = ring.consume();
            read_events(&mut events);
            shed_tick(&skel, &disp, &stats, &mut shed_clock);
        }
        // Records sent and not yet journaled: their commit follows their journaling closely.
        // Woken for the drain too: its instant is the same on every host only if it is kept.
        // Whole milliseconds up (poll truncates: the last one would spin).
        let until_drain = next_txn.map_or(poll_timeout, |t| {
            Duration::from_millis(t.saturating_duration_since(Instant::now()).as_micros().div_ceil(1000) as u64)
        });
        if let Err(e) = ring.poll(if txn.ledger.waiting() { COMMIT_POLL } else { poll_timeout.min(until_drain) }) {
            if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                log::warn!("ring buffer poll: {e}");
            }
        }
        // The kernel wakes this thread only once EVENTS_WAKEUP_BYTES wait (connections.bpf.c),
        // and poll reads only rings that woke it: what arrived below that is read here.
        let _ = ring.consume();
        read_events(&mut events);
        txn.commit(&skel, false);
        let now = Instant::now();
        // Before the sweep, which can take long: the drain keeps its instant.
        if let (Some(at), Some(every)) = (next_txn, txn_every) {
            if now >= at {
                txn.drain(&skel, &mut walk, &txn_tx, &stop, &stats, &mut disp.borrow_mut().nat, false);
                // At least half a period on: a wake-up just before a multiple drains at it again.
                next_txn = Some(Instant::now() + until_aligned(unix_ns(), every, every / 2));
            }
        }
        if now >= next_sweep {
            sweep(&skel, &disp, &stats, sweep_every, &mut swept, &mut sweep_pending, &mut walk, || {
                let _ = ring.consume();
                read_events(&mut events);
            });
            next_sweep = now + sweep_every;
        }
        if now >= next_stats {
            let mut d = disp.borrow_mut();
            if d.nat.is_reading() {
                // DESTROY events arrive without any lookup to read them.
                d.nat.read_events();
                d.nat.expire(boot_time_ns());
            }
            drop(d);
            read_stats(&skel, &stats);
            next_stats = now + Duration::from_secs(1);
        }
    }
    let _ = ring.consume();
    read_events(&mut events);
    // Stopping cleanly: what was read goes to the output before the process exits.
    events.release_all();
    if opts.transaction_interval.is_some() {
        // Final drain; nobody may be reading any more, so a full channel drops the rest.
        txn.drain(&skel, &mut walk, &txn_tx, &AtomicBool::new(true), &stats, &mut disp.borrow_mut().nat, true);
        txn.commit(&skel, true);
    }
    read_stats(&skel, &stats);
    if pins.is_some() {
        // Pinned, the programs outlive this process: its pid may go to another process.
        if let Err(e) = super::load::set_self(&skel, 0) {
            log::warn!("{e}");
        }
    }
    // skel dropped here: links detached and maps freed, unless pinned (then they stay).
}

/// How often the capture thread reads the event ring when the kernel did not wake it (it does
/// only past EVENTS_WAKEUP_BYTES, connections.bpf.c): the most an event waits. Short, because the
/// pipeline reads a process's cmdline from /proc at its first event, and a short-lived process
/// can be gone soon after; 50 timer wakeups per second cost far less than one per event.
pub(super) const EVENT_POLL: Duration = Duration::from_millis(20);
/// How often the capture thread looks whether the output journaled the transaction records it
/// sent, while some are not yet: a kill between their journaling and the commit sends them again.
const COMMIT_POLL: Duration = Duration::from_millis(1);
