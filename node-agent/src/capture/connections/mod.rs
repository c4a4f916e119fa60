//! Loads and attaches the BPF programs, reads the ring buffer, sweeps the socket map
//! for unreported bytes, and hands decoded events to a bounded channel. Knows nothing
//! about Avro or Kafka, so tests use it directly.
pub mod http_route;
pub mod transactions;

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::mem::{size_of, MaybeUninit};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, RingBufferBuilder};

use crate::capture::bpf::{bpf_err, CaptureError};
use crate::capture::conntrack::{NatStats, NatTable};
use crate::capture::event::{ConnEvent, Kind};
use crate::shared::net::{NatTuple, Role};
use crate::control::shedding::{Control, Domain, ShedController, ShedCount, ShedMode, ShedOptions, ShedStats, UserShed};
use crate::capture::connections::http_route::{HttpRoute, RouteNames, ROUTE_NONE};
use crate::capture::map_batch::BatchReader;
use crate::identity::proc_info::KernelCmdlines;
use crate::shared::clock::boot_time_ns;
use crate::capture::connections::transactions::{ConnTxn, Histogram, RouteTxn, TxnRole};

mod skel {
    include!(concat!(env!("OUT_DIR"), "/connections.skel.rs"));
}
use skel::*;

/// Tracepoints the programs attach to (tp_btf).
pub const TRACEPOINTS: [&str; 3] = ["sock:inet_sock_set_state", "sock:sock_send_length", "sock:sock_recv_length"];
/// Where the kernel has it (added in 2025; 6.18 here), the begin of each TCP send (transaction
/// start times); without it they fall back to the end of the send, said once.
pub const SEND_BEGIN_TRACEPOINT: &str = "tcp:tcp_sendmsg_locked";

/// Mirror of `struct conn_event` in src/capture/connections/connections.h.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawEvent {
    ts_boot_ns: u64,
    cookie: u64,
    proc_start_ns: u64,
    cgroup_id: u64,
    bytes_sent: u64,
    bytes_recv: u64,
    pid: u32,
    tgid: u32,
    netns: u32,
    lport: u16,
    rport: u16,
    laddr: [u8; 16],
    raddr: [u8; 16],
    comm: [u8; 16],
    kind: u8,
    role: u8,
    _pad: [u8; 2],
    keep: u32,
}
const _: () = assert!(size_of::<RawEvent>() == 120);

/// Mirror of the header of `struct proc_args` in src/capture/connections/connections.h (argv follows).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawProcArgsHeader {
    proc_start_ns: u64,
    tgid: u32,
    len: u32,
    full_len: u32,
    _pad: u32,
}
const _: () = assert!(size_of::<RawProcArgsHeader>() == 24);
const PROC_ARGS_MAX: usize = 1024;
/// Untaken kernel command lines kept (as many as the kernel remembers processes for).
const KERNEL_CMDLINES: usize = 16384;

#[derive(Debug, Clone)]
pub struct CaptureOptions {
    pub snapshot_bytes: u64,
    pub snapshot_interval: Duration,
    /// nsfs paths; empty = every namespace.
    pub netns: Vec<PathBuf>,
    pub map_entries: u32,
    /// Drop the sockets of this process in the kernel (the agent's own Kafka traffic).
    pub ignore_self: bool,
    pub channel_capacity: usize,
    /// Drain the transaction histograms this often and deliver `ConnTxn`s on
    /// `transactions()`; None = transactions are not tracked in the kernel at all.
    pub transaction_interval: Option<Duration>,
    /// Histogram cells (socket, route, kind, bucket) the kernel can hold.
    pub txn_hist_entries: u32,
    /// HTTP/1.x routes (method + normalised path) the kernel names per host; past them a
    /// transaction goes to the OTHER route. 0 = requests are not parsed.
    pub http_routes: u32,
    /// A route no transaction used for this long leaves the kernel's table (room for new
    /// routes); its name is kept one more such period for requests still under way. Zero =
    /// routes stay until the agent stops.
    pub http_route_idle: Duration,
    /// Client port masking (thesis §3.3.1): a connection that closes with fewer transactions
    /// than this over its life, within one `transaction_interval` of its handshake, is merged
    /// into one record per process, addresses and server port, client port 0. 0 = every
    /// connection its own record.
    pub mask_client_port_below: u64,
    /// Load shedding of connection lifecycle events; None = off (the shedder is not even
    /// loaded in the kernel).
    pub shed: Option<ShedOptions>,
    /// Translated connections kept from the host's connection tracking (`crate::capture::conntrack`), to
    /// report dialled virtual addresses past their NAT; 0 = NAT translation off.
    pub nat_entries: usize,
    /// Namespaces whose conntrack is read; empty = `netns`, else the capture thread's own.
    pub nat_netns: Vec<PathBuf>,
    /// Pod metadata for `--shed-priority pod:NAME` / `namespace:NS`.
    pub pods: Option<Arc<crate::identity::pod_metadata::PodDirectory>>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            snapshot_bytes: 1 << 20,
            snapshot_interval: Duration::from_secs(5),
            netns: Vec::new(),
            map_entries: 65536,
            ignore_self: true,
            channel_capacity: 16384,
            transaction_interval: None,
            txn_hist_entries: 65536,
            http_routes: 1024,
            http_route_idle: Duration::from_secs(600),
            mask_client_port_below: 0,
            shed: None,
            nat_entries: 0,
            nat_netns: Vec::new(),
            pods: None,
        }
    }
}

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
    /// Transactions whose histogram cell / connection entry found the kernel map full.
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
    /// Entries in the socket map at the last sweep.
    pub socket_map_entries: AtomicU64,
    /// Live sockets the LRU socket map evicted (a lower bound, exact when the map is quiet):
    /// inserts - deletes - entries found by the sweep.
    pub socket_map_evictions: AtomicU64,
    /// NAT translation (conntrack).
    pub nat: Arc<NatStats>,
}

/// Inode of a network namespace file (= the kernel's ns.inum).
pub fn netns_inode(path: &Path) -> std::io::Result<u32> {
    let ino = std::fs::metadata(path)?.ino();
    u32::try_from(ino).map_err(|_| std::io::Error::other(format!("{}: inode {ino} is not a netns inode", path.display())))
}

/// A running capture: events arrive on `events()`; `stop()` detaches.
pub struct CaptureHandle {
    rx: Receiver<ConnEvent>,
    txn_rx: Receiver<ConnTxn>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<CaptureStats>,
    shed_tx: SyncSender<ShedCmd>,
    cmdlines: Arc<KernelCmdlines>,
    pub attached: Vec<String>,
}

/// Requests to the capture thread (it owns the BPF maps).
enum ShedCmd {
    SetKeep(Domain, f64),
    Counts(SyncSender<HashMap<Domain, ShedCount>>),
}

impl CaptureHandle {
    pub fn events(&self) -> &Receiver<ConnEvent> {
        &self.rx
    }
    pub fn stats(&self) -> &Arc<CaptureStats> {
        &self.stats
    }
    /// Command lines the kernel copied as each process's first socket was identified,
    /// filled before the events read with them are delivered (`ProcCache::use_kernel_cmdlines`).
    pub fn kernel_cmdlines(&self) -> &Arc<KernelCmdlines> {
        &self.cmdlines
    }
    /// Per-connection transaction histograms, one per connection per drain interval
    /// with activity (`CaptureOptions::transaction_interval`).
    pub fn transactions(&self) -> &Receiver<ConnTxn> {
        &self.txn_rx
    }
    /// Sets the keep fraction of one domain (`shedding::DOMAIN_DEFAULT`: of every domain
    /// without its own), for `Control::Manual`. Applied within one poll (≤ 100 ms).
    pub fn shed_set_keep(&self, domain: Domain, keep: f64) {
        let _ = self.shed_tx.send(ShedCmd::SetKeep(domain, keep.clamp(0.0, 1.0)));
    }
    /// Cumulative kept/shed counts per domain as the kernel (or the user-space filter) has
    /// them now; empty when shedding is off.
    pub fn shed_counts(&self) -> HashMap<Domain, ShedCount> {
        let (tx, rx) = sync_channel(1);
        if self.shed_tx.send(ShedCmd::Counts(tx)).is_err() {
            return HashMap::new();
        }
        rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default()
    }
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
    /// Stops reading, detaches the programs (the skeleton is dropped in the thread).
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
    /// Events still queued after `stop` (kept by the caller to drain).
    pub fn stop_and_drain(mut self) -> Vec<ConnEvent> {
        self.shutdown();
        self.rx.try_iter().collect()
    }
    /// As `stop_and_drain`, also returning the transaction records (a final drain runs at stop).
    pub fn stop_and_drain_all(mut self) -> (Vec<ConnEvent>, Vec<ConnTxn>) {
        self.shutdown();
        (self.rx.try_iter().collect(), self.txn_rx.try_iter().collect())
    }
}

impl Drop for CaptureHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Loads, attaches and starts reading in a dedicated thread (the skeleton is not Send).
/// Returns once the programs are attached, or with the load/attach error.
pub fn spawn(opts: CaptureOptions) -> Result<CaptureHandle, CaptureError> {
    // libbpf's own messages go to the logger at debug level, so a failure stays one line.
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, |_lvl, msg: String| {
        log::debug!(target: "libbpf", "{}", msg.trim_end())
    })));
    let mut inodes = Vec::new();
    for p in &opts.netns {
        inodes.push(netns_inode(p).map_err(|e| CaptureError::Other(format!("--netns {}: {e}", p.display())))?);
    }
    let (tx, rx) = sync_channel(opts.channel_capacity.max(16));
    let (txn_tx, txn_rx) = sync_channel(opts.channel_capacity.max(16));
    let (ready_tx, ready_rx) = sync_channel(1);
    let (shed_tx, shed_rx) = sync_channel(64);
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(CaptureStats::default());
    let cmdlines = Arc::new(KernelCmdlines::new(KERNEL_CMDLINES));
    let (stop2, stats2, cmdlines2) = (stop.clone(), stats.clone(), cmdlines.clone());
    let thread = std::thread::Builder::new()
        .name("wg-capture".into())
        .spawn(move || run(opts, inodes, tx, txn_tx, stop2, stats2, cmdlines2, ready_tx, shed_rx))
        .map_err(|e| CaptureError::Other(format!("spawn capture thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(attached)) => Ok(CaptureHandle { rx, txn_rx, stop, thread: Some(thread), stats, shed_tx, cmdlines, attached }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(CaptureError::Other("capture thread died during start-up".into()))
        }
    }
}

/// Delivers events to the channel; drops SNAPSHOTs that are not newer than what was
/// already delivered (a sweep may overtake a kernel SNAPSHOT still in the ring).
struct Dispatcher {
    tx: SyncSender<ConnEvent>,
    stop: Arc<AtomicBool>,
    stats: Arc<CaptureStats>,
    last: HashMap<u64, (u64, u64)>,
    shed: Option<Shedder>,
    nat: NatTable,
    /// Roles of sockets whose handshake was not seen, decided from the listening sockets at
    /// their first event and kept for the socket's life.
    listening: crate::identity::listening::Listening,
    decided: HashMap<u64, Role>,
}

/// Sockets of unseen handshakes whose decided role is remembered (their CLOSED forgets them).
const DECIDED_ROLES: usize = 65536;

/// How long a connection conntrack has forgotten still translates (records of a closed socket
/// are encoded up to a transaction interval later).
const NAT_GRACE: Duration = Duration::from_secs(120);

/// The host's NAT table, or an empty one (said once) when conntrack cannot be read.
fn open_nat(opts: &CaptureOptions, stats: &CaptureStats) -> NatTable {
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
struct Shedder {
    ctrl: ShedController,
    /// `--shed-mode user`: the filter applied to events read from the ring.
    user: Option<UserShed>,
    /// OPENED events read from the ring (kernel modes: = kept connections read).
    opened_read: u64,
}

impl Dispatcher {
    /// The role of a socket whose handshake was not seen: the same for all its events.
    fn decide_role(&mut self, ev: &ConnEvent) -> Role {
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

    fn dispatch(&mut self, mut ev: ConnEvent) {
        if let Some(sh) = self.shed.as_mut() {
            if ev.kind == Kind::Opened {
                sh.opened_read += 1;
            }
            if let Some(u) = sh.user.as_mut() {
                let d = sh.ctrl.domain_of(ev.tgid, ev.cgroup_id);
                let hash = crate::control::shedding::connection_hash(ev.role, (&ev.local_addr, ev.local_port), (&ev.remote_addr, ev.remote_port));
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
                Ok(()) => return,
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

fn decode_raw(data: &[u8]) -> Option<ConnEvent> {
    if data.len() < size_of::<RawEvent>() {
        return None;
    }
    // SAFETY: length checked; RawEvent is plain old data.
    let r: RawEvent = unsafe { std::ptr::read_unaligned(data.as_ptr() as *const RawEvent) };
    Some(ConnEvent {
        kind: Kind::from_index(r.kind as u32)?,
        role: Role::from_index(r.role as u32)?,
        ts_boot_ns: r.ts_boot_ns,
        cookie: r.cookie,
        proc_start_ns: r.proc_start_ns,
        cgroup_id: r.cgroup_id,
        bytes_sent: r.bytes_sent,
        bytes_recv: r.bytes_recv,
        pid: r.pid,
        tgid: r.tgid,
        netns: r.netns,
        local_addr: r.laddr,
        local_port: r.lport,
        remote_addr: r.raddr,
        remote_port: r.rport,
        comm: r.comm,
        nat: None,
        keep: r.keep,
    })
}

fn decode_proc_args(data: &[u8], cmdlines: &KernelCmdlines) {
    let head = size_of::<RawProcArgsHeader>();
    if data.len() < head {
        return;
    }
    // SAFETY: length checked; plain old data.
    let h: RawProcArgsHeader = unsafe { std::ptr::read_unaligned(data.as_ptr() as *const RawProcArgsHeader) };
    let len = (h.len as usize).min(PROC_ARGS_MAX).min(data.len() - head);
    if len > 0 {
        cmdlines.insert((h.tgid, h.proc_start_ns), &data[head..head + len], h.len >= h.full_len);
    }
}

fn from_sock_info(si: &types::sock_info, kind: Kind, now: u64) -> Option<ConnEvent> {
    Some(ConnEvent {
        kind,
        role: Role::from_index(si.role as u32)?,
        ts_boot_ns: now,
        cookie: si.cookie,
        proc_start_ns: si.proc_start_ns,
        cgroup_id: si.cgroup_id,
        bytes_sent: si.bytes_sent,
        bytes_recv: si.bytes_recv,
        pid: si.pid,
        tgid: si.tgid,
        netns: si.netns,
        local_addr: si.laddr,
        local_port: si.lport,
        remote_addr: si.raddr,
        remote_port: si.rport,
        comm: si.comm.map(|c| c as u8),
        nat: None,
        keep: si.keep,
    })
}

fn run(
    opts: CaptureOptions,
    inodes: Vec<u32>,
    tx: SyncSender<ConnEvent>,
    txn_tx: SyncSender<ConnTxn>,
    stop: Arc<AtomicBool>,
    stats: Arc<CaptureStats>,
    cmdlines: Arc<KernelCmdlines>,
    ready: SyncSender<Result<Vec<String>, CaptureError>>,
    shed_rx: Receiver<ShedCmd>,
) {
    let mut storage = MaybeUninit::uninit();
    let (skel, attached) = match load_and_attach(&opts, &inodes, &mut storage) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let shed = opts.shed.clone().filter(|o| o.mode != ShedMode::Off).map(|o| {
        let user = (o.mode == ShedMode::User).then(UserShed::default);
        let mut ctrl = ShedController::new(o);
        if let Some(p) = &opts.pods {
            ctrl.use_pods(p.clone());
        }
        Shedder { user, ctrl, opened_read: 0 }
    });
    let shed_every = opts.shed.as_ref().map(|o| o.interval.max(Duration::from_millis(10)));
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
    if let Err(e) = rb.add(&skel.maps.events, |data: &[u8]| {
        if let Some(ev) = decode_raw(data) {
            disp.borrow_mut().dispatch(ev);
        }
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
    let _ = ready.send(Ok(attached));

    let sweep_every = opts.snapshot_interval;
    let poll_timeout = sweep_every.min(EVENT_POLL);
    let mut next_sweep = Instant::now() + sweep_every;
    let (mut swept, mut sweep_reader) = (HashSet::new(), BatchReader::default());
    let mut next_stats = Instant::now();
    let mut txn = TxnDrain::new(boot_time_ns(), opts.mask_client_port_below, opts.transaction_interval.unwrap_or_default(), opts.http_route_idle);
    let mut next_txn = opts.transaction_interval.map(|d| Instant::now() + d);
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
            shed_tick(&skel, &disp, &stats, &mut shed_clock);
        }
        if let Err(e) = ring.poll(poll_timeout) {
            if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                log::warn!("ring buffer poll: {e}");
            }
        }
        // The kernel wakes this thread only once EVENTS_WAKEUP_BYTES wait (connections.bpf.c),
        // and poll reads only rings that woke it: what arrived below that is read here.
        let _ = ring.consume();
        let now = Instant::now();
        if now >= next_sweep {
            sweep(&skel, &disp, &stats, sweep_every, &mut swept, &mut sweep_reader);
            next_sweep = now + sweep_every;
        }
        if let (Some(at), Some(every)) = (next_txn, opts.transaction_interval) {
            if now >= at {
                txn.drain(&skel, &txn_tx, &stop, &stats, &disp.borrow().nat, false);
                next_txn = Some(at + every.max(Duration::from_millis(10)));
                if next_txn.is_some_and(|t| t < now) {
                    next_txn = Some(now + every);
                }
            }
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
    if opts.transaction_interval.is_some() {
        // Final drain; nobody may be reading any more, so a full channel drops the rest.
        txn.drain(&skel, &txn_tx, &AtomicBool::new(true), &stats, &disp.borrow().nat, true);
    }
    read_stats(&skel, &stats);
    // skel dropped here: links detached, maps freed.
}

fn load_and_attach<'a>(
    opts: &CaptureOptions,
    inodes: &[u32],
    storage: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
) -> Result<(ConnectionsSkel<'a>, Vec<String>), CaptureError> {
    let mut open = ConnectionsSkelBuilder::default().open(storage).map_err(|e| bpf_err("open BPF object", e))?;
    let mut attached: Vec<String> = TRACEPOINTS.iter().map(|s| s.to_string()).collect();
    // Without it a transaction starts when its first send returned (on loopback, possibly after
    // the peer already answered): said once, not fatal.
    let send_begin = opts.transaction_interval.is_some() && crate::capture::bpf::kernel_has_tracepoint(SEND_BEGIN_TRACEPOINT);
    if send_begin {
        attached.push(SEND_BEGIN_TRACEPOINT.to_string());
    } else {
        if opts.transaction_interval.is_some() {
            log::warn!(
                "kernel has no {SEND_BEGIN_TRACEPOINT} tracepoint: transaction times start when a send returns, not when it begins"
            );
        }
        open.progs.handle_sendmsg_begin.set_autoload(false);
    }
    {
        let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| CaptureError::Other("BPF rodata not mmapped".into()))?;
        ro.snapshot_bytes = opts.snapshot_bytes;
        ro.snapshot_interval_ns = opts.snapshot_interval.as_nanos().min(u64::MAX as u128) as u64;
        ro.self_tgid = if opts.ignore_self { std::process::id() } else { 0 };
        ro.filter_netns = u8::from(!inodes.is_empty());
        ro.track_txn = u8::from(opts.transaction_interval.is_some());
        ro.track_http = u8::from(opts.transaction_interval.is_some() && opts.http_routes > 0);
        if let Some(sh) = &opts.shed {
            ro.shed_mode = sh.mode.kernel_constant();
            ro.shed_by_cgroup = u8::from(sh.by_cgroup);
        }
    }
    open.maps
        .socks
        .set_max_entries(opts.map_entries)
        .map_err(|e| bpf_err("size socket map", e))?;
    open.maps
        .txn_conns
        .set_max_entries(opts.map_entries)
        .map_err(|e| bpf_err("size transaction map", e))?;
    open.maps
        .txn_hist
        .set_max_entries(opts.txn_hist_entries.max(16))
        .map_err(|e| bpf_err("size transaction histogram map", e))?;
    open.maps
        .http_routes
        .set_max_entries(opts.http_routes.max(1))
        .map_err(|e| bpf_err("size HTTP route map", e))?;
    let mut skel = open.load().map_err(|e| bpf_err("load BPF programs", e))?;
    for ino in inodes {
        skel.maps
            .netns_filter
            .update(&ino.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(|e| bpf_err("fill netns filter", e))?;
    }
    if opts.shed.as_ref().is_some_and(|o| o.mode.kernel_constant() != 0) {
        // The overflow counter exists before anything can find the map full.
        let ncpu = libbpf_rs::num_possible_cpus().map_err(|e| bpf_err("count CPUs", e))?;
        let zero = vec![vec![0u8; size_of::<types::shed_count>()]; ncpu];
        skel.maps
            .shed_counts
            .update_percpu(&crate::control::shedding::DOMAIN_OTHER.to_ne_bytes(), &zero, MapFlags::ANY)
            .map_err(|e| bpf_err("create shedding overflow counter", e))?;
    }
    skel.attach().map_err(|e| bpf_err("attach tracepoints", e))?;
    Ok((skel, attached))
}

/// Emits SNAPSHOT for opened sockets with bytes not reported yet, busy or idle, so no
/// connection's bytes wait for its close. This is the time rule of SNAPSHOT: the kernel emits by
/// bytes, and by time only for its shed connections not yet reported (connections.bpf.c).
/// `every` is the sweep interval; `seen` (the cookies of the live sockets, filled anew) and
/// `reader` are buffers kept between sweeps.
fn sweep(skel: &ConnectionsSkel<'_>, disp: &RefCell<Dispatcher>, stats: &CaptureStats, every: Duration, seen: &mut HashSet<u64>, reader: &mut BatchReader) {
    let now = boot_time_ns();
    seen.clear();
    let map = &skel.maps.socks;
    // Inserts before the walk, deletes after it: entries that come and go meanwhile make
    // the difference smaller, never larger.
    let inserts = read_stat(skel, STAT_SOCK_INSERTS);
    // In batches: one syscall per MAP_BATCH sockets, not two per socket.
    let read = reader.for_each(map, MAP_BATCH, false, |_, val| {
        let Some(si) = read_pod::<types::sock_info>(val) else { return };
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
            if let Some(ev) = from_sock_info(&si, Kind::Snapshot, now) {
                stats.sweep_snapshots.fetch_add(1, Ordering::Relaxed);
                d.dispatch(ev);
            }
        }
    });
    if let Err(e) = read {
        // Nothing is forgotten on a failed walk: what it did not see may still be live.
        log::warn!("reading the socket map: {e}");
        return;
    }
    let deletes = read_stat(skel, STAT_SOCK_DELETES);
    let live = seen.len() as u64;
    stats.socket_map_entries.store(live, Ordering::Relaxed);
    stats.socket_map_evictions.fetch_max(inserts.saturating_sub(deletes + live), Ordering::Relaxed);
    // Forget sockets the kernel no longer tracks (closed or LRU-evicted).
    let mut d = disp.borrow_mut();
    d.last.retain(|c, _| seen.contains(c));
    if let Some(u) = d.shed.as_mut().and_then(|s| s.user.as_mut()) {
        u.retain_open(|c| seen.contains(&c));
    }
}

/// `enum stat_idx` of connections.h.
const STAT_SOCK_INSERTS: u32 = 3;
const STAT_SOCK_DELETES: u32 = 4;
const STAT_SET_STATE_NESTED: u32 = 5;
const STAT_ROUTES_FULL: u32 = 6;
const STAT_HTTP_NO_BUFFER: u32 = 7;
const STAT_PROC_ARGS_DROPS: u32 = 8;
const STAT_PROC_ARGS_UNREAD: u32 = 9;

/// `enum shed_state` of connections.h.
const SHED_UNREPORTED: u8 = 1;

/// When the next control interval is due, and the wall time of the last one.
struct ShedClock {
    every: Option<Duration>,
    next: Instant,
    last: Instant,
}

impl ShedClock {
    fn new(every: Option<Duration>) -> ShedClock {
        let now = Instant::now();
        ShedClock { every, next: now + every.unwrap_or_default(), last: now }
    }
    fn due(&self) -> bool {
        self.every.is_some() && Instant::now() >= self.next
    }
    /// Wall seconds since the previous tick; schedules the next.
    fn advance(&mut self) -> f64 {
        let now = Instant::now();
        let wall = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        let every = self.every.unwrap_or_default();
        self.next += every;
        if self.next < now {
            self.next = now + every;
        }
        wall
    }
}

fn shed_set_kernel(skel: &ConnectionsSkel<'_>, domain: Domain, keep: f64) {
    let val = types::shed_keep_val { keep: crate::control::shedding::keep_fixed(keep), ..Default::default() };
    if let Err(e) = skel.maps.shed_keep.update(&domain.to_ne_bytes(), pod_bytes(&val), MapFlags::ANY) {
        log::warn!("shedding: cannot write keep fraction of domain {domain}: {e}");
    }
}

/// Cumulative per-domain counts from the kernel's per-CPU map.
fn read_shed_counts(skel: &ConnectionsSkel<'_>) -> HashMap<Domain, ShedCount> {
    let mut out = HashMap::new();
    let map = &skel.maps.shed_counts;
    for key in map.keys() {
        let Ok(k) = <[u8; 8]>::try_from(&key[..]) else { continue };
        let Ok(Some(per_cpu)) = map.lookup_percpu(&key, MapFlags::ANY) else { continue };
        let mut c = ShedCount::default();
        for v in per_cpu {
            if let Some(x) = read_pod::<types::shed_count>(&v) {
                c.kept += x.kept;
                c.shed += x.shed;
                c.shed_bytes_sent += x.shed_bytes_sent;
                c.shed_bytes_recv += x.shed_bytes_recv;
            }
        }
        out.insert(u64::from_ne_bytes(k), c);
    }
    out
}

fn shed_counts_now(skel: &ConnectionsSkel<'_>, sh: &Shedder) -> HashMap<Domain, ShedCount> {
    match &sh.user {
        Some(u) => u.counts().clone(),
        None => read_shed_counts(skel),
    }
}

fn shed_command(skel: &ConnectionsSkel<'_>, disp: &RefCell<Dispatcher>, cmd: ShedCmd) {
    let mut d = disp.borrow_mut();
    let Some(sh) = d.shed.as_mut() else {
        if let ShedCmd::Counts(tx) = cmd {
            let _ = tx.send(HashMap::new());
        }
        return;
    };
    match cmd {
        ShedCmd::SetKeep(domain, keep) => {
            sh.ctrl.set_manual(domain, keep);
            match sh.user.as_mut() {
                Some(_) => {}
                None => shed_set_kernel(skel, domain, keep),
            }
            if let Some(u) = sh.user.as_mut() {
                let fr = sh.ctrl.manual_fractions();
                let def = sh.ctrl.keep_of(crate::control::shedding::DOMAIN_DEFAULT);
                u.set_fractions(fr, def);
            }
        }
        ShedCmd::Counts(tx) => {
            let _ = tx.send(shed_counts_now(skel, sh));
        }
    }
}

/// One control interval: read the counts and the agent's CPU, plan, write the kernel map (or
/// the user-space filter).
fn shed_tick(skel: &ConnectionsSkel<'_>, disp: &RefCell<Dispatcher>, stats: &CaptureStats, clock: &mut ShedClock) {
    let wall = clock.advance();
    let mut d = disp.borrow_mut();
    let Some(sh) = d.shed.as_mut() else { return };
    let counts = shed_counts_now(skel, sh);
    let util = sh.ctrl.utilization(crate::shared::process::self_cpu_seconds(), wall);
    let queued = if sh.user.is_none() {
        let kept: u64 = counts.values().map(|c| c.kept).sum();
        kept.saturating_sub(sh.opened_read) as f64
    } else {
        0.0
    };
    let by_cgroup = sh.ctrl.options().by_cgroup;
    let mut cgroups: Option<crate::identity::cgroup::CgroupResolver> = None;
    let update = sh.ctrl.tick(&counts, util, queued, &stats.shed, |dom| {
        if by_cgroup {
            let r = cgroups.get_or_insert_with(|| crate::identity::cgroup::CgroupResolver::new(crate::identity::cgroup::default_v2_root()));
            r.path(dom).map(str::to_string)
        } else {
            std::fs::read_to_string(format!("/proc/{dom}/comm")).ok().map(|s| s.trim_end().to_string())
        }
    });
    if matches!(sh.ctrl.options().control, Control::Manual) {
        return;
    }
    match sh.user.as_mut() {
        Some(u) => u.set_fractions(update.set.iter().copied(), update.default_keep),
        None => {
            for &(dom, keep) in &update.set {
                shed_set_kernel(skel, dom, keep);
            }
            for dom in &update.remove {
                let _ = skel.maps.shed_keep.delete(&dom.to_ne_bytes());
            }
            shed_set_kernel(skel, crate::control::shedding::DOMAIN_DEFAULT, update.default_keep);
            for dom in &update.forget {
                let _ = skel.maps.shed_counts.delete(&dom.to_ne_bytes());
            }
        }
    }
}

/// `recursion_misses` of one program (0 if the kernel does not say).
fn prog_misses(prog: &libbpf_rs::ProgramMut<'_>) -> u64 {
    use std::os::fd::{AsFd, AsRawFd};
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = size_of::<libbpf_rs::libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: info is a plain struct of `len` bytes; no array pointers are set.
    let rc = unsafe {
        libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(prog.as_fd().as_raw_fd(), &mut info, &mut len)
    };
    if rc == 0 { info.recursion_misses } else { 0 }
}

fn read_stats(skel: &ConnectionsSkel<'_>, stats: &CaptureStats) {
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

/// Reads the kernel's cumulative transaction maps without stopping the writers and turns
/// them into per-interval differences (exact: the kernel only adds). Live sockets' totals
/// and identity come from the socket map, closed ones' from `txn_conns`; a closed socket's
/// cells and entry are deleted after their final reading (the kernel no longer writes them),
/// and so are cells whose socket is in neither map at two readings in a row (LRU-evicted).
struct TxnDrain {
    last_ns: u64,
    drains: u64,
    prev_conn: HashMap<u64, (u64, u64, u64)>,
    prev_hist: HashMap<TxnCell, u64>,
    /// Cookies found in neither map at the previous check.
    missing: HashSet<u64>,
    routes: RouteNames,
    /// Closed sockets of this drain (read and deleted in batches), by cookie.
    closed: Vec<(u64, TxnTotals)>,
    /// How many the previous drain had (to give a storm's buffer back).
    closed_peak: usize,
    cells: Vec<(TxnCell, u64)>,
    /// Keys (TxnCell::key_bytes) of cells to delete at the end of the drain, in one batch.
    dead_cells: Vec<u8>,
    /// `CaptureOptions::mask_client_port_below`, and the lifetime below which a connection
    /// counts as short (the drain interval).
    mask_below: u64,
    mask_age_ns: u64,
    /// Live sockets whose first transactions are held back one interval (they may turn out
    /// short-lived), with the start of the interval they were first seen in.
    held: HashMap<u64, u64>,
    /// This drain's masked records, merged.
    masked: HashMap<MaskKey, ConnTxn>,
    reader: BatchReader,
    /// `CaptureOptions::http_route_idle` (0 = never), when routes were last pruned, and
    /// reused buffers for it.
    route_idle_ns: u64,
    last_route_prune_ns: u64,
    route_keys: Vec<u64>,
    route_prunes: Vec<u64>,
}

/// What a masked record is one per: the connection's identity without the client port.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct MaskKey {
    role: TxnRole,
    tgid: u32,
    proc_start_ns: u64,
    cgroup_id: u64,
    netns: u32,
    local: ([u8; 16], u16),
    remote: ([u8; 16], u16),
    comm: [u8; 16],
    nat: Option<NatTuple>,
}



/// Key of `txn_hist` (struct txn_hist_key).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct TxnCell {
    cookie: u64,
    route: u64,
    bucket: u16,
    kind: u8,
}

impl TxnCell {
    const SIZE: usize = size_of::<types::txn_hist_key>();

    fn key_bytes(&self) -> [u8; Self::SIZE] {
        let mut k = [0u8; Self::SIZE];
        k[..8].copy_from_slice(&self.cookie.to_ne_bytes());
        k[8..16].copy_from_slice(&self.route.to_ne_bytes());
        k[16..18].copy_from_slice(&self.bucket.to_ne_bytes());
        k[18] = self.kind;
        k
    }

    fn from_key(k: &[u8]) -> Option<TxnCell> {
        (k.len() >= Self::SIZE).then(|| TxnCell {
            cookie: u64::from_ne_bytes(k[..8].try_into().unwrap()),
            route: u64::from_ne_bytes(k[8..16].try_into().unwrap()),
            bucket: u16::from_ne_bytes(k[16..18].try_into().unwrap()),
            kind: k[18],
        })
    }
}

const TXN_CLIENT_RTT: u8 = 0;
/// Entries per batched map read or delete.
const MAP_BATCH: u32 = 4096;
/// Quiet sockets (no new cells) are checked for disappearance every this many drains.
const TXN_GONE_CHECK_EVERY: u64 = 16;

/// Identity and cumulative totals of one socket, from either map.
#[derive(Clone, Copy)]
struct TxnTotals {
    role: u8,
    proc_start_ns: u64,
    cgroup_id: u64,
    tgid: u32,
    netns: u32,
    laddr: [u8; 16],
    lport: u16,
    raddr: [u8; 16],
    rport: u16,
    comm: [u8; 16],
    count: u64,
    req: u64,
    resp: u64,
    closed: bool,
    /// Handshake to now (live) or to close; u64::MAX when the handshake was not seen.
    age_ns: u64,
}

/// How often the capture thread reads the event ring when the kernel did not wake it (it does
/// only past EVENTS_WAKEUP_BYTES, connections.bpf.c): the most an event waits. Short, because the
/// pipeline reads a process's cmdline from /proc at its first event, and a short-lived process
/// can be gone soon after; 50 timer wakeups per second cost far less than one per event.
const EVENT_POLL: Duration = Duration::from_millis(20);

fn pod_bytes<T: Copy>(val: &T) -> &[u8] {
    // SAFETY: only used with generated POD types (no padding left uninitialised: every field,
    // explicit padding included, is set).
    unsafe { std::slice::from_raw_parts(val as *const T as *const u8, size_of::<T>()) }
}

fn read_pod<T: Copy>(val: &[u8]) -> Option<T> {
    if val.len() < size_of::<T>() {
        return None;
    }
    // SAFETY: size checked; only used with generated POD types.
    Some(unsafe { std::ptr::read_unaligned(val.as_ptr() as *const T) })
}

impl TxnDrain {
    fn new(now: u64, mask_below: u64, mask_age: Duration, route_idle: Duration) -> TxnDrain {
        TxnDrain {
            last_ns: now,
            drains: 0,
            prev_conn: HashMap::new(),
            prev_hist: HashMap::new(),
            missing: HashSet::new(),
            routes: RouteNames::default(),
            closed: Vec::new(),
            closed_peak: 0,
            cells: Vec::new(),
            dead_cells: Vec::new(),
            mask_below,
            mask_age_ns: mask_age.as_nanos() as u64,
            held: HashMap::new(),
            masked: HashMap::new(),
            reader: BatchReader::default(),
            route_idle_ns: route_idle.as_nanos() as u64,
            last_route_prune_ns: now,
            route_keys: Vec::new(),
            route_prunes: Vec::new(),
        }
    }

    /// A closed socket's final totals (`txn_conns` value).
    fn closed_totals(val: &[u8]) -> Option<TxnTotals> {
        let c: types::txn_conn = read_pod(val)?;
        Some(TxnTotals {
            role: c.role,
            proc_start_ns: c.proc_start_ns,
            cgroup_id: c.cgroup_id,
            tgid: c.tgid,
            netns: c.netns,
            laddr: c.laddr,
            lport: c.lport,
            raddr: c.raddr,
            rport: c.rport,
            comm: c.comm.map(|x| x as u8),
            count: c.count,
            req: c.req_bytes,
            resp: c.resp_bytes,
            closed: true,
            age_ns: c.lifetime_ns,
        })
    }

    fn live_totals(skel: &ConnectionsSkel<'_>, cookie: u64, now: u64) -> Option<TxnTotals> {
        let val = skel.maps.socks.lookup(&cookie.to_ne_bytes(), MapFlags::ANY).ok()??;
        let si: types::sock_info = read_pod(&val)?;
        Some(TxnTotals {
            role: si.role,
            proc_start_ns: si.proc_start_ns,
            cgroup_id: si.cgroup_id,
            tgid: si.tgid,
            netns: si.netns,
            laddr: si.laddr,
            lport: si.lport,
            raddr: si.raddr,
            rport: si.rport,
            comm: si.comm.map(|c| c as u8),
            count: si.txn_count,
            req: si.txn_req_bytes,
            resp: si.txn_resp_bytes,
            closed: false,
            age_ns: if si.open_ns == 0 { u64::MAX } else { now.saturating_sub(si.open_ns) },
        })
    }

    /// `last`: the final drain at stop, which holds nothing back.
    fn drain(&mut self, skel: &ConnectionsSkel<'_>, tx: &SyncSender<ConnTxn>, stop: &AtomicBool, stats: &CaptureStats, nat: &NatTable, last: bool) {
        let now = boot_time_ns();
        self.drains += 1;
        let check_quiet = self.drains.is_multiple_of(TXN_GONE_CHECK_EVERY);
        // Reused buffers (taken out so `process` may borrow self): no allocation per socket.
        let (mut closed, mut cells) = (std::mem::take(&mut self.closed), std::mem::take(&mut self.cells));
        // 1. Closed sockets first: their entry is written after their last cell, so the
        //    cells read next are complete. Read and deleted in batches (one syscall per
        //    MAP_BATCH entries): the kernel writes an entry once, at close. At most the map's
        //    size is held (about 120 bytes each); the buffer shrinks back after a close storm.
        let cmap = &skel.maps.txn_conns;
        closed.clear();
        if closed.capacity() > 16384 && closed.capacity() / 4 > self.closed_peak {
            closed.shrink_to(self.closed_peak * 2);
        }
        let read = self.reader.for_each(cmap, MAP_BATCH, true, |k, v| {
            if let (Some(cookie), Some(t)) = (read_pod::<u64>(k), Self::closed_totals(v)) {
                closed.push((cookie, t));
            }
        });
        if let Err(e) = read {
            log::warn!("reading closed transaction entries: {e}");
        }
        self.closed_peak = closed.len();
        closed.sort_unstable_by_key(|c| c.0);
        // 2. Histogram cells (cumulative counts), grouped by socket (sorted by cookie).
        let hmap = &skel.maps.txn_hist;
        cells.clear();
        let read = self.reader.for_each(hmap, MAP_BATCH, false, |k, v| {
            if let (Some(c), Some(n)) = (TxnCell::from_key(k), read_pod::<u64>(v)) {
                cells.push((c, n));
            }
        });
        if let Err(e) = read {
            log::warn!("reading transaction histograms: {e}");
        }
        cells.sort_unstable_by_key(|(c, _)| c.cookie);
        // 3. One record per socket with new transactions (or that closed): a merge of the two
        //    sorted lists.
        let mut missing = HashSet::new();
        let (mut i, mut k) = (0, 0);
        while i < cells.len() || k < closed.len() {
            let cell_cookie = cells.get(i).map(|c| c.0.cookie);
            let closed_cookie = closed.get(k).map(|c| c.0);
            let cookie = match (cell_cookie, closed_cookie) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            let mut j = i;
            while j < cells.len() && cells[j].0.cookie == cookie {
                j += 1;
            }
            let totals = if closed_cookie == Some(cookie) {
                k += 1;
                Some(closed[k - 1].1)
            } else {
                None
            };
            self.process(skel, cookie, &cells[i..j], totals, check_quiet, now, last, &mut missing, tx, stop, stats, nat);
            i = j;
        }
        for (_, rec) in self.masked.drain() {
            stats.txn_masked_connections.fetch_add(rec.connections, Ordering::Relaxed);
            stats.txn_records.fetch_add(1, Ordering::Relaxed);
            send_blocking(tx, rec, stop);
        }
        self.delete_dead_cells(hmap);
        // A few times per idle period: enough to free a route within 1.25 idle periods.
        if self.route_idle_ns > 0 && now.saturating_sub(self.last_route_prune_ns) >= self.route_idle_ns / 4 {
            self.prune_routes(skel, now, stats);
        }
        self.missing = missing;
        self.last_ns = now;
        (self.closed, self.cells) = (closed, cells);
    }

    /// Deletes routes nobody used for an idle period from the kernel's table, which new routes
    /// can then take (a full table files them under OTHER).
    fn prune_routes(&mut self, skel: &ConnectionsSkel<'_>, now: u64, stats: &CaptureStats) {
        self.last_route_prune_ns = now;
        let rmap = &skel.maps.http_routes;
        self.route_keys.clear();
        let keys = &mut self.route_keys;
        if let Err(e) = self.reader.for_each(rmap, MAP_BATCH, false, |k, _| keys.extend(read_pod::<u64>(k))) {
            // A partial list would restart the idle clocks of the routes it missed.
            log::debug!("route table not read, prune skipped: {e}");
            return;
        }
        self.route_prunes.clear();
        self.routes.prune(now, self.route_idle_ns, &self.route_keys, &mut self.route_prunes);
        for id in &self.route_prunes {
            match rmap.delete(&id.to_ne_bytes()) {
                Ok(()) => {
                    stats.http_routes_pruned.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => log::debug!("pruning route {id:#x}: {e}"),
            }
        }
        stats.http_routes.store(self.routes.len() as u64, Ordering::Relaxed);
    }

    /// A socket the kernel no longer writes: its cells go at the end of the drain, its
    /// previous readings now.
    fn forget(&mut self, cookie: u64, cells: &[(TxnCell, u64)]) {
        for (cell, _) in cells {
            self.dead_cells.extend_from_slice(&cell.key_bytes());
            self.prev_hist.remove(cell);
        }
        self.prev_conn.remove(&cookie);
    }

    /// Deletes the cells of closed and vanished sockets, in batches.
    fn delete_dead_cells(&mut self, hmap: &impl MapCore) {
        for chunk in self.dead_cells.chunks(TxnCell::SIZE * MAP_BATCH as usize) {
            let n = (chunk.len() / TxnCell::SIZE) as u32;
            if hmap.delete_batch(chunk, n, MapFlags::ANY, MapFlags::ANY).is_err() {
                // Stopped at a key it could not delete: the rest one by one.
                for k in chunk.chunks_exact(TxnCell::SIZE) {
                    let _ = hmap.delete(k);
                }
            }
        }
        self.dead_cells.clear();
    }

    /// The record of one socket from its cells (and its final totals if it closed).
    #[allow(clippy::too_many_arguments)]
    fn process(
        &mut self,
        skel: &ConnectionsSkel<'_>,
        cookie: u64,
        cells: &[(TxnCell, u64)],
        closed: Option<TxnTotals>,
        check_quiet: bool,
        now: u64,
        last: bool,
        missing: &mut HashSet<u64>,
        tx: &SyncSender<ConnTxn>,
        stop: &AtomicBool,
        stats: &CaptureStats,
        nat: &NatTable,
    ) {
        let changed = cells.iter().any(|(c, n)| self.prev_hist.get(c).copied().unwrap_or(0) != *n);
        let totals = match closed {
            Some(t) => Some(t),
            None if changed || check_quiet || self.missing.contains(&cookie) => Self::live_totals(skel, cookie, now),
            None => return, // quiet live socket
        };
        let Some(t) = totals else {
            // In neither map: closed between our reads (its entry shows up next time),
            // or evicted. Forget it only when it is still missing next time.
            if self.missing.contains(&cookie) {
                self.forget(cookie, cells);
                self.held.remove(&cookie);
            } else {
                missing.insert(cookie);
            }
            return;
        };
        // Client port masking. Short = fewer than `mask_below` transactions and younger than
        // `mask_age_ns` (handshake to close, kernel clock): both ends of a connection agree on
        // that at its close, so both mask it or neither does. A short live socket is held back
        // (its cells stay unread); once it is no longer short it is reported as itself, with
        // everything held.
        let short = self.mask_below > 0 && t.count < self.mask_below && t.age_ns < self.mask_age_ns;
        let held_since = self.held.remove(&cookie);
        if short && !t.closed && !last {
            self.held.insert(cookie, held_since.unwrap_or(self.last_ns));
            return;
        }
        let mask = short && t.closed;
        let (mut client_rtt, mut server_time) = (Histogram::default(), Histogram::default());
        let mut routes: Vec<(u64, Histogram)> = Vec::new();
        for (cell, n) in cells {
            let prev = self.prev_hist.insert(*cell, *n).unwrap_or(0);
            let d = n.saturating_sub(prev);
            if d == 0 {
                continue;
            }
            if cell.kind == TXN_CLIENT_RTT { &mut client_rtt } else { &mut server_time }.add(cell.bucket as u32, d);
            if cell.route != ROUTE_NONE {
                match routes.iter_mut().find(|(r, _)| *r == cell.route) {
                    Some((_, h)) => h.add(cell.bucket as u32, d),
                    None => {
                        let mut h = Histogram::default();
                        h.add(cell.bucket as u32, d);
                        routes.push((cell.route, h));
                    }
                }
            }
        }
        routes.sort_unstable_by_key(|(r, _)| *r);
        let rmap = &skel.maps.http_routes;
        let routes = routes
            .into_iter()
            .map(|(id, latency)| {
                let route = self
                    .routes
                    .get(id, now, |id| {
                        let v = rmap.lookup(&id.to_ne_bytes(), MapFlags::ANY).ok()??;
                        let r: types::http_route = read_pod(&v)?;
                        HttpRoute::from_kernel(r.method, &r.path.map(|c| c as u8), r.truncated)
                    })
                    // Not in the map (only a request under way for over two idle periods, its
                    // route pruned meanwhile): still counted.
                    .unwrap_or_else(|| Arc::new(HttpRoute::other()));
                RouteTxn { route, latency }
            })
            .collect();
        stats.http_routes.store(self.routes.len() as u64, Ordering::Relaxed);
        let (pc, preq, presp) = self.prev_conn.insert(cookie, (t.count, t.req, t.resp)).unwrap_or((0, 0, 0));
        let dcount = t.count.saturating_sub(pc);
        if t.closed {
            // Its txn_conns entry was deleted when read.
            self.forget(cookie, cells);
        } else if dcount == 0 && client_rtt.is_empty() && server_time.is_empty() {
            return;
        }
        let rec = ConnTxn {
            interval_start_boot_ns: held_since.unwrap_or(self.last_ns),
            interval_end_boot_ns: now,
            role: if t.role == 0 { TxnRole::Client } else { TxnRole::Server },
            cookie,
            proc_start_ns: t.proc_start_ns,
            cgroup_id: t.cgroup_id,
            tgid: t.tgid,
            netns: t.netns,
            local_addr: t.laddr,
            local_port: t.lport,
            remote_addr: t.raddr,
            remote_port: t.rport,
            comm: t.comm,
            closed: t.closed,
            connections: 1,
            transactions: dcount,
            request_bytes: t.req.saturating_sub(preq),
            response_bytes: t.resp.saturating_sub(presp),
            client_rtt,
            server_time,
            routes,
            // Looked up before masking: short connections merge per translated destination.
            nat: if t.role == 0 { nat.lookup((t.laddr, t.lport), (t.raddr, t.rport)) } else { None },
        };
        if mask {
            self.merge_masked(rec);
            return;
        }
        stats.txn_records.fetch_add(1, Ordering::Relaxed);
        send_blocking(tx, rec, stop);
    }

    /// Adds a short-lived connection's record to its masked record of this drain (exact sums).
    fn merge_masked(&mut self, mut rec: ConnTxn) {
        match rec.role {
            TxnRole::Client => {
                rec.local_port = 0;
                if let Some(n) = rec.nat.as_mut() {
                    n.local_port = 0;
                }
            }
            TxnRole::Server => rec.remote_port = 0,
        }
        rec.cookie = 0;
        let key = MaskKey {
            role: rec.role,
            tgid: rec.tgid,
            proc_start_ns: rec.proc_start_ns,
            cgroup_id: rec.cgroup_id,
            netns: rec.netns,
            local: (rec.local_addr, rec.local_port),
            remote: (rec.remote_addr, rec.remote_port),
            comm: rec.comm,
            nat: rec.nat,
        };
        match self.masked.entry(key) {
            Entry::Vacant(v) => {
                v.insert(rec);
            }
            Entry::Occupied(o) => {
                let m = o.into_mut();
                m.interval_start_boot_ns = m.interval_start_boot_ns.min(rec.interval_start_boot_ns);
                m.connections += rec.connections;
                m.transactions += rec.transactions;
                m.request_bytes += rec.request_bytes;
                m.response_bytes += rec.response_bytes;
                m.client_rtt.merge(&rec.client_rtt);
                m.server_time.merge(&rec.server_time);
                for r in rec.routes {
                    match m.routes.iter_mut().find(|x| x.route == r.route) {
                        Some(x) => x.latency.merge(&r.latency),
                        None => m.routes.push(r),
                    }
                }
            }
        }
    }
}

fn send_blocking<T>(tx: &SyncSender<T>, mut v: T, stop: &AtomicBool) {
    loop {
        match tx.try_send(v) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => return,
            Err(TrySendError::Full(back)) => {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                v = back;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn read_stat(skel: &ConnectionsSkel<'_>, idx: u32) -> u64 {
    let key = idx.to_ne_bytes();
    match skel.maps.stats.lookup_percpu(&key, MapFlags::ANY) {
        Ok(Some(per_cpu)) => per_cpu
            .iter()
            .filter_map(|v| v.get(..8).map(|b| u64::from_ne_bytes(b.try_into().unwrap())))
            .sum(),
        _ => 0,
    }
}
