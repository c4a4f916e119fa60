//! Transaction draining: the kernel's cumulative histograms and totals turned into one
//! `ConnTxn` per connection per interval.
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use libbpf_rs::{MapCore, MapFlags};

use super::event_ring::EventRing;
use super::http_route::{HttpRoute, RouteNames, ROUTE_NONE};
use super::ledger::{delete_keys, Done, TxnLedger};
use super::mask::{merge_masked, MaskKey};
use super::skel::*;
use super::stats::{read_stat, STAT_TXN_IN_SOCKET};
use super::txn_maps::{TxnCell, TxnTotals, TXN_CLIENT_RTT, TXN_ROW};
use super::walk::{SockWalk, Which};
use super::{read_pod, CaptureStats, MAP_BATCH};
use crate::capture::conntrack::NatTable;
use crate::capture::connections::transactions::{ConnTxn, Histogram, RouteTxn, TxnRole};
use crate::capture::map_batch::BatchReader;
use crate::shared::clock::boot_time_ns;

/// Reads the kernel's cumulative transaction maps without stopping the writers and turns
/// them into per-interval differences (exact: the kernel only adds). Live sockets' totals
/// and identity come from their socket-local storage (one walk per drain, after the cells),
/// closed ones' from the `txn_closed` ring; a closed socket's cells are deleted after their final
/// reading (the kernel no longer writes them), and so are cells whose socket is in neither at two
/// readings in a row. With pins, what the output journaled is kept in the kernel (`ledger`), and a
/// closed socket's cells and ring record stay until its final record was.
pub(super) struct TxnDrain {
    pub(super) last_ns: u64,
    pub(super) drains: u64,
    pub(super) prev_conn: HashMap<u64, (u64, u64, u64)>,
    pub(super) prev_hist: HashMap<TxnCell, u64>,
    /// Cookies found in neither map at the previous check.
    pub(super) missing: HashSet<u64>,
    /// The last walk saw every namespace: a socket it did not meet is gone (else it may be in a
    /// namespace the walk could not enter, walk.rs, and waits for its close).
    pub(super) walk_complete: bool,
    pub(super) routes: RouteNames,
    /// The closed sockets' final totals (struct txn_conn records). Unpinned, records are released
    /// as they are read, which frees the ring at once for a storm's next closes (a full ring
    /// refuses them); pinned, once the drain that read them is committed (`ledger`).
    pub(super) closed_ring: EventRing,
    /// Closed sockets of this drain, by cookie (sorted), with their final totals.
    pub(super) closed: Vec<(u64, TxnTotals)>,
    /// How many the previous drain had (to give a storm's buffer back).
    pub(super) closed_peak: usize,
    pub(super) cells: Vec<(TxnCell, u64)>,
    pub(super) cells_peak: usize,
    /// One socket's cells, from `cells` and its own row (reused).
    pub(super) merged: Vec<(TxnCell, u64)>,
    /// STAT_TXN_IN_SOCKET at the last complete walk: when it moved, sockets' own rows did.
    pub(super) in_socket_seen: u64,
    /// Per cell of this drain: its socket's record was built (closed, or met by the walk).
    pub(super) done: Vec<bool>,
    /// Keys (TxnCell::key_bytes) of rows to delete at the end of the drain, in one batch.
    pub(super) dead_cells: Vec<u8>,
    /// `CaptureOptions::mask_client_port_below`, and the lifetime below which a connection
    /// counts as short (the drain interval).
    pub(super) mask_below: u64,
    pub(super) mask_age_ns: u64,
    /// Live sockets whose first transactions are held back one interval (they may turn out
    /// short-lived), with the start of the interval they were first seen in.
    pub(super) held: HashMap<u64, u64>,
    /// This drain's masked records, merged.
    pub(super) masked: HashMap<MaskKey, ConnTxn>,
    pub(super) reader: BatchReader,
    /// `CaptureOptions::http_route_idle` (0 = never), when routes were last pruned, and
    /// reused buffers for it.
    pub(super) route_idle_ns: u64,
    pub(super) last_route_prune_ns: u64,
    pub(super) route_keys: Vec<u64>,
    pub(super) route_prunes: Vec<u64>,
    pub(super) ledger: TxnLedger,
}

/// Quiet sockets (no new cells) are checked for disappearance every this many drains.
pub(super) const TXN_GONE_CHECK_EVERY: u64 = 16;

impl TxnDrain {
    /// `persist`: keep the baseline in the kernel (pinned maps); `taken`: records the output took.
    /// `closed_ring`: `txn_closed`, held (releasing only what `ledger` commits) when `persist`.
    pub(super) fn new(now: u64, mask_below: u64, mask_age: Duration, route_idle: Duration, persist: bool, taken: Arc<AtomicU64>, closed_ring: EventRing) -> TxnDrain {
        TxnDrain {
            last_ns: now,
            drains: 0,
            prev_conn: HashMap::new(),
            prev_hist: HashMap::new(),
            missing: HashSet::new(),
            walk_complete: true,
            routes: RouteNames::default(),
            closed_ring,
            closed: Vec::new(),
            closed_peak: 0,
            cells: Vec::new(),
            cells_peak: 0,
            merged: Vec::new(),
            in_socket_seen: 0,
            done: Vec::new(),
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
            ledger: TxnLedger::new(persist, taken),
        }
    }

    /// Continues from the baseline a previous agent left in the pinned maps.
    pub(super) fn load_baseline(&mut self, skel: &ConnectionsSkel<'_>) {
        let last_drain = self.ledger.load(skel, &mut self.reader, &mut self.prev_hist, &mut self.prev_conn);
        if last_drain > 0 && last_drain < self.last_ns {
            // The first records span the time no agent ran.
            self.last_ns = last_drain;
        }
        if !self.prev_conn.is_empty() {
            log::info!("continuing the transactions of {} sockets from what the previous agent journaled", self.prev_conn.len());
        }
    }

    /// `last`: the final drain at stop, which holds nothing back.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn drain(&mut self, skel: &ConnectionsSkel<'_>, walk: &mut SockWalk, tx: &SyncSender<ConnTxn>, stop: &AtomicBool, stats: &CaptureStats, nat: &mut NatTable, last: bool) {
        let now = boot_time_ns();
        self.drains += 1;
        let check_quiet = self.drains.is_multiple_of(TXN_GONE_CHECK_EVERY);
        // Reused buffers (taken out so `process` may borrow self): no allocation per socket.
        let (mut closed, mut cells, mut done) = (std::mem::take(&mut self.closed), std::mem::take(&mut self.cells), std::mem::take(&mut self.done));
        // 1. Closed sockets first: their record is written after their last cell, so the cells
        //    read next are complete. At most the ring's records are held (about 200 bytes each);
        //    the buffer shrinks back after a close storm.
        closed.clear();
        shrink_vec_after_storm(&mut closed, self.closed_peak);
        let ledger = &self.ledger;
        self.closed_ring.read(|rec| {
            if let Some((cookie, t)) = TxnTotals::closed(rec) {
                if ledger.wanted(cookie) {
                    closed.push((cookie, t));
                }
            }
        });
        self.closed_peak = closed.len();
        closed.sort_unstable_by_key(|c| c.0);
        // 2. Histogram cells (cumulative counts, read by rows), sorted by socket and then by row,
        //    so that a socket's cells and a row's are adjacent.
        let hmap = &skel.maps.txn_hist;
        cells.clear();
        shrink_vec_after_storm(&mut cells, self.cells_peak);
        let read = self.reader.for_each(hmap, MAP_BATCH, false, |k, v| {
            if let (Some(row), Some(counts)) = (TxnCell::from_key(k), read_pod::<[u64; TXN_ROW]>(v)) {
                cells.extend(row.cells(counts));
            }
        });
        if let Err(e) = read {
            log::warn!("reading transaction histograms: {e}");
        }
        self.cells_peak = cells.len();
        cells.sort_unstable_by_key(|(c, _)| (c.cookie, c.route, c.kind, c.bucket));
        done.clear();
        if done.capacity() > cells.capacity() {
            done.shrink_to(cells.capacity());
        }
        done.resize(cells.len(), false);
        // 3. One record per socket with new transactions (or that closed). Closed sockets first.
        //    A socket's cells: its txn_hist rows' and those of the first row it keeps in itself.
        let mut missing = HashSet::new();
        let mut merged = std::mem::take(&mut self.merged);
        for &(cookie, t) in &closed {
            let r = cells_of(&cells, cookie);
            done[r.clone()].fill(true);
            merged.clear();
            merged.extend_from_slice(&cells[r]);
            merged.extend(t.own_cells());
            self.process(skel, cookie, &merged, Some(t), None, check_quiet, now, last, &mut missing, tx, stop, stats, nat);
        }
        // 3b. Live sockets' totals, read after their cells as a lookup per socket was: one walk
        //     of the sockets with transactions (filtered in the kernel), only when a cell, a
        //     count in a socket's own row (the kernel counts those) or a socket missing last time
        //     asks for it. Each socket's record is built as the walk meets it: nothing is held per
        //     live socket (a table of all of them took 16 MB at 200,000 sockets,
        //     docs/benchmarks/agent.md "Footprint").
        let in_socket = read_stat(skel, STAT_TXN_IN_SOCKET);
        if !cells.is_empty() || !self.missing.is_empty() || !self.held.is_empty() || in_socket != self.in_socket_seen {
            match walk.for_each(Which::Txn, |si| {
                let r = cells_of(&cells, si.cookie);
                if !r.is_empty() && done[r.start] {
                    return; // closed: its final totals were used
                }
                let t = TxnTotals::live(si, now);
                if r.is_empty() && t.row.is_none() {
                    return; // no cells
                }
                done[r.clone()].fill(true);
                merged.clear();
                merged.extend_from_slice(&cells[r]);
                merged.extend(t.own_cells());
                self.process(skel, si.cookie, &merged, None, Some(t), check_quiet, now, last, &mut missing, tx, stop, stats, nat);
            }) {
                Ok(_) => self.in_socket_seen = in_socket,
                // Nothing is forgotten on a failed walk: its sockets count as missing once.
                Err(e) => log::warn!("reading live sockets' transaction totals: {e}"),
            }
            self.walk_complete = walk.saw_every_namespace();
        }
        self.merged = merged;
        // 3c. Sockets with cells in neither (closed between our reads, or a failed walk).
        let mut i = 0;
        while i < cells.len() {
            let cookie = cells[i].0.cookie;
            let mut j = i;
            while j < cells.len() && cells[j].0.cookie == cookie {
                j += 1;
            }
            if !done[i] {
                self.process(skel, cookie, &cells[i..j], None, None, check_quiet, now, last, &mut missing, tx, stop, stats, nat);
            }
            i = j;
        }
        let (mut masked_sent, masked) = (0, self.masked.len() as u64);
        for (_, rec) in self.masked.drain() {
            stats.txn_masked_connections.fetch_add(rec.connections, Ordering::Relaxed);
            stats.txn_records.fetch_add(1, Ordering::Relaxed);
            masked_sent += u64::from(send_blocking(tx, rec, stop));
        }
        self.ledger.sent_masked(masked_sent, masked_sent == masked);
        self.ledger.drained(now, self.closed_ring.read_pos());
        self.delete_dead_cells(hmap);
        // A few times per idle period: enough to free a route within 1.25 idle periods.
        if self.route_idle_ns > 0 && now.saturating_sub(self.last_route_prune_ns) >= self.route_idle_ns / 4 {
            self.prune_routes(skel, now, stats);
        }
        self.missing = missing;
        shrink_after_storm(&mut self.prev_hist);
        shrink_after_storm(&mut self.prev_conn);
        self.last_ns = now;
        (self.closed, self.cells, self.done) = (closed, cells, done);
    }

    /// Commits what the output took (`TxnLedger::commit`) and releases the closed sockets' final
    /// totals of the drains committed whole.
    pub(super) fn commit(&mut self, skel: &ConnectionsSkel<'_>, all: bool) {
        if let Some(pos) = self.ledger.commit(skel, all) {
            self.closed_ring.release_to(pos);
            self.ledger.released(skel);
        }
    }

    /// Deletes routes nobody used for an idle period from the kernel's table, which new routes
    /// can then take (a full table files them under OTHER).
    pub(super) fn prune_routes(&mut self, skel: &ConnectionsSkel<'_>, now: u64, stats: &CaptureStats) {
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
        if !self.route_prunes.is_empty() {
            // After the deletes: a CPU that remembers a pruned route parses and names it again.
            if let Err(e) = next_generation(&skel.maps.http_routes_gen) {
                log::warn!("route table generation not advanced: {e}");
            }
        }
        stats.http_routes.store(self.routes.len() as u64, Ordering::Relaxed);
    }

    /// A socket the kernel no longer writes: its rows go at the end of the drain, its
    /// previous readings now. `cells` are sorted (a row's adjacent). Its own row is in txn_hist
    /// only when its final totals found the ring full (txn_on_close), i.e. when it went `missing`.
    pub(super) fn forget(&mut self, cookie: u64, cells: &[(TxnCell, u64)], missing: bool) {
        for row in cells.chunk_by(|a, b| a.0.row() == b.0.row()) {
            if missing || !row[0].0.in_socket() {
                self.dead_cells.extend_from_slice(&row[0].0.key_bytes());
            }
        }
        for (cell, _) in cells {
            self.prev_hist.remove(cell);
        }
        self.prev_conn.remove(&cookie);
    }

    /// Deletes the rows of closed and vanished sockets, in batches.
    pub(super) fn delete_dead_cells(&mut self, hmap: &impl MapCore) {
        delete_keys(hmap, &self.dead_cells, TxnCell::SIZE);
        self.dead_cells.clear();
    }

    /// The record of one socket from its cells and its totals: final if it closed, else what the
    /// walk read (`live`, None when it did not meet the socket).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn process(
        &mut self,
        skel: &ConnectionsSkel<'_>,
        cookie: u64,
        cells: &[(TxnCell, u64)],
        closed: Option<TxnTotals>,
        live: Option<TxnTotals>,
        check_quiet: bool,
        now: u64,
        last: bool,
        missing: &mut HashSet<u64>,
        tx: &SyncSender<ConnTxn>,
        stop: &AtomicBool,
        stats: &CaptureStats,
        nat: &mut NatTable,
    ) {
        if self.ledger.closing(cookie) {
            return; // its final record is on its way to the journal; deleted once it is there
        }
        let changed = cells.iter().any(|(c, n)| self.prev_hist.get(c).copied().unwrap_or(0) != *n);
        let totals = match closed {
            Some(t) => Some(t),
            None if changed || check_quiet || self.missing.contains(&cookie) => live,
            None => return, // quiet live socket
        };
        let Some(t) = totals else {
            // In neither: closed between our reads (its entry shows up next time). Forget it
            // only when it is still missing next time.
            if self.missing.contains(&cookie) && self.walk_complete {
                self.forget(cookie, cells, true);
                self.ledger.forget(skel, cookie, cells);
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
        // A closed socket's rows are all deleted once its final record is journaled.
        self.ledger.stage_rows(cells, &self.prev_hist, t.closed, mask);
        let (mut client_rtt, mut server_time) = (Histogram::default(), Histogram::default());
        let mut routes: Vec<(u64, Histogram)> = Vec::new();
        for (cell, n) in cells {
            let prev = self.prev_hist.insert(*cell, *n).unwrap_or(0);
            let d = n.saturating_sub(prev);
            if d == 0 {
                continue;
            }
            if cell.histogram() == TXN_CLIENT_RTT { &mut client_rtt } else { &mut server_time }.add(cell.bucket as u32, d);
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
        if t.closed && self.ledger.persist {
            // Its entries go once its final record is journaled (ledger); meanwhile it is skipped.
            for (cell, _) in cells {
                self.prev_hist.remove(cell);
            }
            self.prev_conn.remove(&cookie);
        } else if t.closed {
            // Its ring record was released when read.
            self.forget(cookie, cells, false);
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
            // Looked up before masking: short connections merge per translated destination. As
            // a first event: a connection opened and closed since conntrack was last read (its
            // OPENED not dispatched yet) has its entry still queued; read once per drain.
            nat: if t.role == 0 { nat.translate(true, now, (t.laddr, t.lport), (t.raddr, t.rport)) } else { None },
        };
        self.ledger.stage_conn(cookie, Done { count: t.count, req: t.req, resp: t.resp, closed: t.closed }, mask);
        if mask {
            merge_masked(&mut self.masked, rec);
            return;
        }
        stats.txn_records.fetch_add(1, Ordering::Relaxed);
        if send_blocking(tx, rec, stop) {
            self.ledger.sent_record();
        } else {
            self.ledger.unstage();
        }
    }
}

/// Adds one to the route table's generation (http_routes_gen; only user space writes it).
fn next_generation(map: &impl MapCore) -> Result<(), libbpf_rs::Error> {
    let key = 0u32.to_ne_bytes();
    let now = map.lookup(&key, MapFlags::ANY)?.and_then(|v| read_pod::<u32>(&v)).unwrap_or(0);
    map.update(&key, &now.wrapping_add(1).to_ne_bytes(), MapFlags::ANY)
}

/// A table far below its capacity (a close storm's) gives memory back: a HashMap never shrinks
/// by itself. To twice what it holds, so a table that grows again does not shrink at once.
fn shrink_after_storm<K: Eq + std::hash::Hash, V>(m: &mut HashMap<K, V>) {
    if far_below(m.capacity(), m.len()) {
        m.shrink_to(m.len() * 2);
    }
}

/// The same for a buffer refilled each drain, against what the previous drain held (`peak`).
fn shrink_vec_after_storm<T>(v: &mut Vec<T>, peak: usize) {
    if far_below(v.capacity(), peak) {
        v.shrink_to(peak * 2);
    }
}

fn far_below(capacity: usize, used: usize) -> bool {
    capacity > 16384 && used < capacity / 4
}

/// The cells of `cookie` in `cells` (sorted by cookie).
fn cells_of(cells: &[(TxnCell, u64)], cookie: u64) -> std::ops::Range<usize> {
    let start = cells.partition_point(|c| c.0.cookie < cookie);
    start..start + cells[start..].partition_point(|c| c.0.cookie == cookie)
}

/// False when `v` was dropped (nobody reads any more, or full at stop).
pub(super) fn send_blocking<T>(tx: &SyncSender<T>, mut v: T, stop: &AtomicBool) -> bool {
    loop {
        match tx.try_send(v) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(back)) => {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                v = back;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
