//! The connection and transaction programs (connections.bpf.c): loaded and attached by `load`,
//! run by one capture thread (`thread`) that reads the ring buffer (`ring`), hands decoded events
//! to a bounded channel (`dispatch`), sweeps the sockets' state for unreported bytes (`sweep`, `walk`), runs
//! kernel load shedding (`shed`), drains the transaction histograms (`drain`) and publishes its
//! counters (`stats`). Knows nothing about Avro or Kafka, so tests use it directly.
pub mod http_route;
pub mod transactions;

mod dispatch;
mod drain;
mod event_ring;
mod ledger;
mod load;
mod mask;
mod ring;
mod shed;
mod stats;
mod sweep;
mod thread;
mod txn_maps;
mod walk;

use std::collections::HashMap;
use std::mem::size_of;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::capture::bpf::CaptureError;
use crate::capture::shedding::{Domain, ShedControl, ShedCount};
use crate::capture::event::ConnEvent;
use crate::identity::node_scope::PodCidr;
use crate::identity::proc_info::KernelCmdlines;
use crate::capture::connections::transactions::ConnTxn;

pub use stats::CaptureStats;

mod skel {
    include!(concat!(env!("OUT_DIR"), "/connections.skel.rs"));
}

/// Tracepoints the programs attach to (tp_btf).
pub const TRACEPOINTS: [&str; 3] = ["sock:inet_sock_set_state", "sock:sock_send_length", "sock:sock_recv_length"];
/// Where the kernel has it (added in 2025; 6.18 here), the begin of each TCP send (transaction
/// start times); without it they fall back to the end of the send, said once.
pub const SEND_BEGIN_TRACEPOINT: &str = "tcp:tcp_sendmsg_locked";

/// Untaken kernel command lines kept (as many as the kernel remembers processes for).
const KERNEL_CMDLINES: usize = 16384;

#[derive(Debug)]
pub struct CaptureOptions {
    pub snapshot_bytes: u64,
    /// The byte rule reports a socket at most once per this interval (zero: at every crossing).
    pub snapshot_min_interval: Duration,
    pub snapshot_interval: Duration,
    /// nsfs paths; empty = every namespace (unless `local_cidrs`).
    pub netns: Vec<PathBuf>,
    /// Sockets whose local address lies in one of these also count, whatever their namespace
    /// (`--node-scope`: the node's pod CIDRs); non-empty turns the namespace filter on.
    pub local_cidrs: Vec<PodCidr>,
    /// Closed sockets' transaction totals the kernel holds until the next drain (at least this
    /// many records of the `txn_closed` ring).
    /// Live sockets' state has no such bound: it is socket-local storage, one per TCP socket.
    pub map_entries: u32,
    /// Drop the sockets of this process in the kernel (the agent's own Kafka traffic).
    pub ignore_self: bool,
    pub channel_capacity: usize,
    /// Drain the transaction histograms this often and deliver `ConnTxn`s on
    /// `transactions()`; None = transactions are not tracked in the kernel at all.
    pub transaction_interval: Option<Duration>,
    /// Histogram rows the kernel can hold: the cells (socket, route, kind, bucket) of 8
    /// adjacent buckets each.
    pub txn_hist_entries: u32,
    /// Walk the sockets' state per network namespace with `iter/tcp` even where the kernel loads
    /// the map-element iterators (what the capture falls back to where it refuses them; walk.rs).
    pub walk_per_namespace: bool,
    /// HTTP/1.x routes (method + normalised path) the kernel names per host; past them a
    /// transaction goes to the OTHER route. 0 = requests are not parsed.
    pub http_routes: u32,
    /// A route no transaction used for this long leaves the kernel's table (room for new
    /// routes); its name is kept one more such period for requests still under way. Zero =
    /// routes stay until the agent stops.
    pub http_route_idle: Duration,
    /// Client port masking (PowerThesis §3.3.1): a connection that closes with fewer transactions
    /// than this over its life, within one `transaction_interval` of its handshake, is merged
    /// into one record per process, addresses and server port, client port 0. 0 = every
    /// connection its own record.
    pub mask_client_port_below: u64,
    /// Load shedding of connection lifecycle events, run by this controller; None = off (the
    /// shedder is not even loaded in the kernel).
    pub shed: Option<Box<dyn ShedControl>>,
    /// Translated connections kept from the host's connection tracking (`crate::capture::conntrack`), to
    /// report dialled virtual addresses past their NAT; 0 = NAT translation off.
    pub nat_entries: usize,
    /// Namespaces whose conntrack is read; empty = `netns`, else the capture thread's own.
    pub nat_netns: Vec<PathBuf>,
    /// Pin the programs and maps under this bpffs directory (`crate::capture::pins`): they keep
    /// counting while no agent runs, and the next agent continues from them. None = not pinned
    /// (the programs go with the process).
    pub pin_root: Option<PathBuf>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            snapshot_bytes: 1 << 20,
            snapshot_min_interval: Duration::from_secs(1),
            snapshot_interval: Duration::from_secs(5),
            netns: Vec::new(),
            local_cidrs: Vec::new(),
            map_entries: 32768,
            ignore_self: true,
            channel_capacity: 16384,
            transaction_interval: None,
            txn_hist_entries: 65536,
            walk_per_namespace: false,
            http_routes: 1024,
            http_route_idle: Duration::from_secs(600),
            mask_client_port_below: 0,
            shed: None,
            nat_entries: 0,
            nat_netns: Vec::new(),
            pin_root: None,
        }
    }
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
    taken: Arc<AtomicU64>,
    txn_taken: Arc<AtomicU64>,
    /// The tracepoints the programs are on.
    pub attached: Vec<String>,
    /// Whether they are a previous agent's pinned programs (attached then, not now).
    pub reused: bool,
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
    /// The output took one more event from `events()` (with pins, the kernel keeps the events
    /// not yet taken for the next agent should this one be killed: event_ring.rs).
    pub fn taken(&self) {
        self.taken.fetch_add(1, Ordering::Release);
    }
    /// The output took one more record from `transactions()` (with pins, the kernel's baseline
    /// moves only past the records taken: ledger.rs).
    pub fn txn_taken(&self) {
        self.txn_taken.fetch_add(1, Ordering::Release);
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
    /// Sets the keep fraction of one domain (`capture::shedding::DOMAIN_DEFAULT`: of every domain
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
    crate::capture::bpf::route_libbpf_log();
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
    let (taken, txn_taken) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (stop2, stats2, cmdlines2) = (stop.clone(), stats.clone(), cmdlines.clone());
    let taken2 = (taken.clone(), txn_taken.clone());
    let thread = std::thread::Builder::new()
        .name("wg-capture".into())
        .spawn(move || thread::run(opts, inodes, tx, txn_tx, stop2, stats2, cmdlines2, ready_tx, shed_rx, taken2))
        .map_err(|e| CaptureError::Other(format!("spawn capture thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok((attached, reused))) => {
            Ok(CaptureHandle { rx, txn_rx, stop, thread: Some(thread), stats, shed_tx, cmdlines, taken, txn_taken, attached, reused })
        }
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

/// Entries per batched map read or delete.
const MAP_BATCH: u32 = 4096;

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
