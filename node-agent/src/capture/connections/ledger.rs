//! The TransactionStats baseline in the kernel (`txn_base`, pinned with the other maps): how much
//! of each socket's cumulative histogram rows and totals the output has journaled. The drain
//! computes records against what it has sent (its own maps, ahead); the kernel is told only what
//! the output took (`CaptureHandle::txn_taken`: journaled, with --spool-dir), record by record, as
//! the event ring moves its consumer position (event_ring.rs). A kill before a record was journaled
//! leaves the baseline where it was, so the next agent on the same pins sends those transactions
//! again and none is lost; what was journaled is not sent again. Each commit is one batch update
//! (one system call, which a kill does not cut in half), so a socket's rows and totals move
//! together (a row is committed whole, every count as of one record); a closed socket's rows are
//! deleted only after its final record was committed, marked closed first. Its final totals stay in
//! the `txn_closed` ring until the whole drain that read them is committed, and its closed mark
//! until the ring released them: a kill at any point sends nothing twice (a next agent skips the
//! ring records of sockets marked closed).
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use libbpf_rs::{MapCore, MapFlags};

use super::skel::*;
use super::txn_maps::{TxnCell, TXN_ROW};
use super::{read_pod, MAP_BATCH};
use crate::capture::map_batch::BatchReader;

/// Key kind of a socket's totals (TXN_BASE_CONN in connections.h).
const DONE_CONN: u8 = 0xff;
/// Key kind (cookie 0) of the end of the last drain whose records are all committed: the next
/// agent's first interval starts there, so it spans the time no agent ran.
const DONE_DRAIN: u8 = 0xfe;

/// What was sent (or journaled) of one socket's totals.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
pub(super) struct Done {
    pub(super) count: u64,
    pub(super) req: u64,
    pub(super) resp: u64,
    pub(super) closed: bool,
}

impl Done {
    fn words(&self) -> [u64; TXN_ROW] {
        let mut v = [0u64; TXN_ROW];
        v[..4].copy_from_slice(&[self.count, self.req, self.resp, u64::from(self.closed)]);
        v
    }
}

fn conn_key(cookie: u64) -> TxnCell {
    TxnCell { cookie, route: 0, bucket: 0, kind: DONE_CONN }
}

#[derive(Debug, PartialEq)]
enum Item {
    /// A row's counts (the row's first cell); `dead`: deleted once committed (its socket closed).
    Row(TxnCell, [u64; TXN_ROW], bool),
    Conn(u64, Done),
    /// The end of a drain (boot ns), after its records, and the `txn_closed` ring position it read
    /// up to (None: one of its records was dropped, so its closed totals stay for the next agent).
    Drain(u64, Option<u64>),
}

impl Item {
    fn cookie(&self) -> u64 {
        match self {
            Item::Row(c, ..) => c.cookie,
            Item::Conn(cookie, _) => *cookie,
            Item::Drain(..) => 0,
        }
    }
}

pub(super) struct TxnLedger {
    /// Pinned: keep the baseline in the kernel. Otherwise nothing outlives the process, and
    /// closed sockets' entries go as they are read.
    pub(super) persist: bool,
    /// Records handed to the output.
    sent: u64,
    /// (records the output must have taken, what they carried), oldest first.
    pending: VecDeque<(u64, Item)>,
    /// Items of the record being built, and of this drain's masked records (sent last).
    staged: Vec<Item>,
    staged_masked: Vec<Item>,
    /// Sockets whose final record was sent, not yet committed: the drain skips them.
    closing: HashSet<u64>,
    taken: Arc<AtomicU64>,
    keys: Vec<u8>,
    values: Vec<u8>,
    /// Keys of finished sockets' rows: in both maps, and (a socket's own row) in `txn_base` only.
    dead: Vec<u8>,
    dead_base: Vec<u8>,
    closed: Vec<u64>,
    /// Sockets whose final record was committed: their closed marks go once the ring released
    /// their final totals, i.e. once the drain that read them is committed (`ready`, `released`).
    marks: Vec<u64>,
    ready: Vec<u64>,
    /// Marked closed by a previous agent: their final totals, if still in the ring, are skipped.
    skip: HashSet<u64>,
    /// A record of this drain was dropped (at stop).
    dropped: bool,
}

impl TxnLedger {
    pub(super) fn new(persist: bool, taken: Arc<AtomicU64>) -> TxnLedger {
        TxnLedger {
            persist,
            sent: 0,
            pending: VecDeque::new(),
            staged: Vec::new(),
            staged_masked: Vec::new(),
            closing: HashSet::new(),
            taken,
            keys: Vec::new(),
            values: Vec::new(),
            dead: Vec::new(),
            dead_base: Vec::new(),
            closed: Vec::new(),
            marks: Vec::new(),
            ready: Vec::new(),
            skip: HashSet::new(),
            dropped: false,
        }
    }

    /// The baseline a previous agent committed (empty on fresh maps): cells into `hist`, totals
    /// into `conns`; returns the end of its last committed drain (0: none). Sockets it had
    /// finished but not cleaned up (killed in between) are cleaned up here, but for their closed
    /// marks, which go with the first drain.
    pub(super) fn load(&mut self, skel: &ConnectionsSkel<'_>, reader: &mut BatchReader, hist: &mut HashMap<TxnCell, u64>, conns: &mut HashMap<u64, (u64, u64, u64)>) -> u64 {
        if !self.persist {
            return 0;
        }
        let (mut finished, mut last_drain) = (Vec::new(), 0);
        let read = reader.for_each(&skel.maps.txn_base, MAP_BATCH, false, |k, v| {
            let (Some(cell), Some(d)) = (TxnCell::from_key(k), read_pod::<[u64; TXN_ROW]>(v)) else { return };
            if cell.kind == DONE_DRAIN {
                last_drain = d[0];
            } else if cell.kind == DONE_CONN {
                let done = Done { count: d[0], req: d[1], resp: d[2], closed: d[3] != 0 };
                conns.insert(cell.cookie, (done.count, done.req, done.resp));
                if done.closed {
                    finished.push(cell.cookie);
                }
            } else {
                hist.extend(cell.cells(d));
            }
        });
        if let Err(e) = read {
            log::warn!("reading the transaction baseline of the previous agent: {e}");
        }
        if finished.is_empty() {
            return last_drain;
        }
        let finished: HashSet<u64> = finished.into_iter().collect();
        let mut rows = HashSet::new();
        hist.retain(|cell, _| {
            let gone = finished.contains(&cell.cookie);
            if gone {
                rows.insert(cell.row());
            }
            !gone
        });
        for row in rows {
            self.bury(row);
        }
        conns.retain(|c, _| !finished.contains(c));
        self.marks.extend(finished.iter().copied());
        self.skip = finished;
        self.clean_up(skel);
        last_drain
    }

    /// The rows of one socket's `cells` (sorted: a row's adjacent) that have a cell whose count
    /// is not what was `sent` go into the record being built, each whole; all of them with `dead`
    /// (its socket closed: they are deleted once the record is committed).
    pub(super) fn stage_rows(&mut self, cells: &[(TxnCell, u64)], sent: &HashMap<TxnCell, u64>, dead: bool, masked: bool) {
        if !self.persist {
            return;
        }
        for row in cells.chunk_by(|a, b| a.0.row() == b.0.row()) {
            if !dead && row.iter().all(|(c, n)| sent.get(c) == Some(n)) {
                continue;
            }
            let mut counts = [0u64; TXN_ROW];
            for (c, n) in row {
                counts[c.slot()] = *n;
            }
            if masked { &mut self.staged_masked } else { &mut self.staged }.push(Item::Row(row[0].0.row(), counts, dead));
        }
    }

    /// The totals of the record being built; `masked`: merged into a masked record.
    pub(super) fn stage_conn(&mut self, cookie: u64, done: Done, masked: bool) {
        if !self.persist {
            return;
        }
        if done.closed {
            self.closing.insert(cookie);
        }
        if masked { &mut self.staged_masked } else { &mut self.staged }.push(Item::Conn(cookie, done));
    }

    /// The record built from the staged items went to the output.
    pub(super) fn sent_record(&mut self) {
        self.sent += 1;
        let at = self.sent;
        self.pending.extend(self.staged.drain(..).map(|i| (at, i)));
    }

    /// This drain's masked records went to the output, `n` of them, `all` or not (their items are
    /// committed with the last).
    pub(super) fn sent_masked(&mut self, n: u64, all: bool) {
        self.sent += n;
        let at = self.sent;
        if all {
            self.pending.extend(self.staged_masked.drain(..).map(|i| (at, i)));
        } else {
            self.dropped = true;
            for i in self.staged_masked.drain(..) {
                self.closing.remove(&i.cookie());
            }
        }
    }

    /// A drain ended at `now` (boot ns), having read the closed ring up to `ring_pos`: committed
    /// once its records are.
    pub(super) fn drained(&mut self, now: u64, ring_pos: u64) {
        if self.persist {
            let pos = (!self.dropped).then_some(ring_pos);
            self.pending.push_back((self.sent, Item::Drain(now, pos)));
        }
        // The ring records of the previous agent's finished sockets were all in this drain's read.
        self.skip.clear();
        self.dropped = false;
    }

    /// A closed socket's final totals read from the ring: false for one whose final record a
    /// previous agent committed.
    pub(super) fn wanted(&self, cookie: u64) -> bool {
        !self.skip.contains(&cookie)
    }

    /// The record built was not sent (dropped at stop): its sockets are read again by the next agent.
    pub(super) fn unstage(&mut self) {
        self.dropped = true;
        for i in self.staged.drain(..) {
            self.closing.remove(&i.cookie());
        }
    }

    pub(super) fn closing(&self, cookie: u64) -> bool {
        self.closing.contains(&cookie)
    }

    /// Records sent that the output has not taken yet.
    pub(super) fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A socket the kernel no longer has (evicted): nothing of it is committed any more.
    pub(super) fn forget(&mut self, skel: &ConnectionsSkel<'_>, cookie: u64, cells: &[(TxnCell, u64)]) {
        if !self.persist {
            return;
        }
        self.pending.retain(|(_, i)| i.cookie() != cookie);
        self.closing.remove(&cookie);
        let done = &skel.maps.txn_base;
        for row in cells.chunk_by(|a, b| a.0.row() == b.0.row()) {
            let _ = done.delete(&row[0].0.key_bytes());
        }
        let _ = done.delete(&conn_key(cookie).key_bytes());
    }

    /// Tells the kernel what the output took (everything, with `all`: at a clean stop what was
    /// sent goes out before the process exits); then deletes the finished sockets' rows. Returns
    /// the `txn_closed` position up to which the ring may be released: the caller releases it,
    /// then calls `released`.
    pub(super) fn commit(&mut self, skel: &ConnectionsSkel<'_>, all: bool) -> Option<u64> {
        self.closed.clear();
        if self.pending.is_empty() {
            return None;
        }
        let taken = if all { u64::MAX } else { self.taken.load(Ordering::Acquire) };
        self.keys.clear();
        self.values.clear();
        let mut n = 0u32;
        let mut release = None;
        while self.pending.front().is_some_and(|(at, _)| *at <= taken) {
            let (_, item) = self.pending.pop_front().unwrap();
            let (key, value) = match item {
                Item::Row(row, counts, dead) => {
                    if dead {
                        self.bury(row);
                    }
                    (row, counts)
                }
                Item::Conn(cookie, done) => {
                    if done.closed {
                        self.closed.push(cookie);
                        self.marks.push(cookie);
                    }
                    (conn_key(cookie), done.words())
                }
                Item::Drain(end, pos) => {
                    if pos.is_some() {
                        // Every closed socket before it was read by this drain or an earlier one.
                        self.ready.append(&mut self.marks);
                        release = pos;
                    }
                    (TxnCell { cookie: 0, route: 0, bucket: 0, kind: DONE_DRAIN }, Done { count: end, ..Done::default() }.words())
                }
            };
            self.keys.extend_from_slice(&key.key_bytes());
            for w in value {
                self.values.extend_from_slice(&w.to_ne_bytes());
            }
            n += 1;
        }
        if n == 0 {
            return None;
        }
        // One system call: the records' cells and totals are committed together or not at all.
        if let Err(e) = skel.maps.txn_base.update_batch(&self.keys, &self.values, n, MapFlags::ANY, MapFlags::ANY) {
            log::warn!("committing the transaction baseline ({n} entries): {e}; a restart may send these transactions again");
        }
        for c in &self.closed {
            self.closing.remove(c);
        }
        self.clean_up(skel);
        release
    }

    /// The ring was released up to `commit`'s position: the closed marks of the sockets whose
    /// final totals it held go (until then the next agent knows the final record went out).
    pub(super) fn released(&mut self, skel: &ConnectionsSkel<'_>) {
        self.keys.clear();
        for c in self.ready.drain(..) {
            self.keys.extend_from_slice(&conn_key(c).key_bytes());
        }
        delete_keys(&skel.maps.txn_base, &self.keys, TxnCell::SIZE);
    }

    /// A finished socket's row, deleted at the next clean-up.
    fn bury(&mut self, row: TxnCell) {
        if row.in_socket() { &mut self.dead_base } else { &mut self.dead }.extend_from_slice(&row.key_bytes());
    }

    /// Deletes the rows of finished sockets (both maps; a socket's own row was only in `txn_base`).
    fn clean_up(&mut self, skel: &ConnectionsSkel<'_>) {
        delete_keys(&skel.maps.txn_hist, &self.dead, TxnCell::SIZE);
        delete_keys(&skel.maps.txn_base, &self.dead, TxnCell::SIZE);
        delete_keys(&skel.maps.txn_base, &self.dead_base, TxnCell::SIZE);
        self.dead.clear();
        self.dead_base.clear();
    }
}

/// Deletes `keys` (`size` bytes each) in batches; a batch that stops at a missing key is finished
/// one by one.
pub(super) fn delete_keys(map: &impl MapCore, keys: &[u8], size: usize) {
    for chunk in keys.chunks(size * MAP_BATCH as usize) {
        let n = (chunk.len() / size) as u32;
        if n > 0 && map.delete_batch(chunk, n, MapFlags::ANY, MapFlags::ANY).is_err() {
            for k in chunk.chunks_exact(size) {
                let _ = map.delete(k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(bucket: u16) -> TxnCell {
        TxnCell { cookie: 1, route: 2, bucket, kind: 0 }
    }

    #[test]
    fn a_row_is_staged_whole_when_one_of_its_cells_changed_and_every_row_at_close() {
        let mut l = TxnLedger::new(true, Arc::new(AtomicU64::new(0)));
        // Row 16..23: bucket 17 sent at 4, 18 new; row 24..31: 25 sent at 1 and unchanged.
        let cells = [(cell(17), 4), (cell(18), 2), (cell(25), 1)];
        let sent = HashMap::from([(cell(17), 4), (cell(25), 1)]);
        l.stage_rows(&cells, &sent, false, false);
        assert_eq!(l.staged, vec![Item::Row(cell(16), [0, 4, 2, 0, 0, 0, 0, 0], false)]);
        // Closed: every row, to be deleted once committed; masked ones apart.
        l.staged.clear();
        l.stage_rows(&cells, &sent, true, true);
        assert!(l.staged.is_empty());
        assert_eq!(l.staged_masked, vec![Item::Row(cell(16), [0, 4, 2, 0, 0, 0, 0, 0], true), Item::Row(cell(24), [0, 1, 0, 0, 0, 0, 0, 0], true)]);
        // Nothing changed: nothing staged; unpinned: nothing kept at all.
        let all = HashMap::from([(cell(17), 4), (cell(18), 2), (cell(25), 1)]);
        l.staged_masked.clear();
        l.stage_rows(&cells, &all, false, false);
        assert!(l.staged.is_empty() && l.staged_masked.is_empty());
        let mut unpinned = TxnLedger::new(false, Arc::new(AtomicU64::new(0)));
        unpinned.stage_rows(&cells, &sent, true, false);
        assert!(unpinned.staged.is_empty());
    }
}
