//! Entries of the kernel's transaction maps: histogram cells (`txn_hist`) and a socket's identity
//! and cumulative totals, from its socket-local storage while it lives or its `txn_closed` record once it closed.
use std::mem::size_of;

use super::read_pod;
use super::skel::*;

/// Buckets per histogram row (TXN_ROW_BITS in connections.h): the kernel keeps a socket's cells
/// by rows of adjacent buckets, one map entry each (`txn_hist`, and `txn_base` for what was journaled).
pub(super) const TXN_ROW_BITS: u16 = 3;
pub(super) const TXN_ROW: usize = 1 << TXN_ROW_BITS;
const _: () = assert!(size_of::<types::txn_row>() == 8 * TXN_ROW && size_of::<types::txn_base>() == 8 * TXN_ROW);

/// Kind bit of the cells of a socket's first row, which the kernel keeps in the socket
/// (sock_info.row): their row is keyed with it in `txn_base`, and is never in `txn_hist`.
pub(super) const TXN_IN_SOCKET: u8 = 0x40;

/// A histogram cell (socket, route, kind, bucket). Its key in the kernel's maps is its row's
/// (struct txn_hist_key: the bucket shifted right by TXN_ROW_BITS).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct TxnCell {
    pub(super) cookie: u64,
    pub(super) route: u64,
    pub(super) bucket: u16,
    pub(super) kind: u8,
}

impl TxnCell {
    pub(super) const SIZE: usize = size_of::<types::txn_hist_key>();

    /// The key of this cell's row (the same for every cell of the row).
    pub(super) fn key_bytes(&self) -> [u8; Self::SIZE] {
        let mut k = [0u8; Self::SIZE];
        k[..8].copy_from_slice(&self.cookie.to_ne_bytes());
        k[8..16].copy_from_slice(&self.route.to_ne_bytes());
        k[16..18].copy_from_slice(&(self.bucket >> TXN_ROW_BITS).to_ne_bytes());
        k[18] = self.kind;
        k
    }

    /// The first cell of the row a key names.
    pub(super) fn from_key(k: &[u8]) -> Option<TxnCell> {
        (k.len() >= Self::SIZE).then(|| TxnCell {
            cookie: u64::from_ne_bytes(k[..8].try_into().unwrap()),
            route: u64::from_ne_bytes(k[8..16].try_into().unwrap()),
            bucket: u16::from_ne_bytes(k[16..18].try_into().unwrap()) << TXN_ROW_BITS,
            kind: k[18],
        })
    }

    /// The first cell of this cell's row, which stands for the row.
    pub(super) fn row(&self) -> TxnCell {
        TxnCell { bucket: self.bucket & !(TXN_ROW as u16 - 1), ..*self }
    }

    /// The histogram it counts in (TXN_CLIENT_RTT or server time).
    pub(super) fn histogram(&self) -> u8 {
        self.kind & !TXN_IN_SOCKET
    }

    /// A cell of the socket's own first row (not a `txn_hist` entry).
    pub(super) fn in_socket(&self) -> bool {
        self.kind & TXN_IN_SOCKET != 0
    }

    /// This cell's place in its row's counts.
    pub(super) fn slot(&self) -> usize {
        usize::from(self.bucket) & (TXN_ROW - 1)
    }

    /// The cells of the row this cell stands for that have a count (a count never goes back to 0).
    pub(super) fn cells(self, counts: [u64; TXN_ROW]) -> impl Iterator<Item = (TxnCell, u64)> {
        let first = self.row();
        counts.into_iter().enumerate().filter(|(_, n)| *n > 0).map(move |(i, n)| (TxnCell { bucket: first.bucket + i as u16, ..first }, n))
    }
}

pub(super) const TXN_CLIENT_RTT: u8 = 0;

/// Identity and cumulative totals of one socket, from either map.
#[derive(Clone, Copy)]
pub(super) struct TxnTotals {
    pub(super) role: u8,
    pub(super) proc_start_ns: u64,
    pub(super) cgroup_id: u64,
    pub(super) tgid: u32,
    pub(super) netns: u32,
    pub(super) laddr: [u8; 16],
    pub(super) lport: u16,
    pub(super) raddr: [u8; 16],
    pub(super) rport: u16,
    pub(super) comm: [u8; 16],
    pub(super) count: u64,
    pub(super) req: u64,
    pub(super) resp: u64,
    pub(super) closed: bool,
    /// Handshake to now (live) or to close; u64::MAX when the handshake was not seen.
    pub(super) age_ns: u64,
    /// The socket's first row (its first cell, TXN_IN_SOCKET) and counts, kept in the socket.
    pub(super) row: Option<(TxnCell, [u64; TXN_ROW])>,
}

/// The first row a socket keeps in itself (sock_info.row, txn_conn.row), if taken.
fn own_row(cookie: u64, r: &types::txn_own_row) -> Option<(TxnCell, [u64; TXN_ROW])> {
    (r.used != 0).then_some((TxnCell { cookie, route: r.route, bucket: r.row << TXN_ROW_BITS, kind: r.kind | TXN_IN_SOCKET }, r.count))
}

impl TxnTotals {
    /// The cells of the socket's own first row that have a count.
    pub(super) fn own_cells(&self) -> impl Iterator<Item = (TxnCell, u64)> {
        self.row.into_iter().flat_map(|(row, counts)| row.cells(counts))
    }

    /// A closed socket's cookie and final totals (a `txn_closed` record).
    pub(super) fn closed(val: &[u8]) -> Option<(u64, TxnTotals)> {
        let c: types::txn_conn = read_pod(val)?;
        Some((c.cookie, TxnTotals {
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
            row: own_row(c.cookie, &c.row),
        }))
    }

    /// A live socket's totals so far (its `sock_info`, from the drain's walk).
    pub(super) fn live(si: &types::sock_info, now: u64) -> TxnTotals {
        TxnTotals {
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
            row: own_row(si.cookie, &si.row),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_gives_back_its_cells_and_each_cell_names_its_row() {
        let cell = |bucket| TxnCell { cookie: 7, route: 9, bucket, kind: 1 };
        // Buckets 16..23 share a row; 24 starts the next.
        assert_eq!(cell(21).key_bytes(), cell(16).key_bytes());
        assert_ne!(cell(23).key_bytes(), cell(24).key_bytes());
        let row = TxnCell::from_key(&cell(21).key_bytes()).unwrap();
        assert_eq!((row, cell(21).row(), cell(21).slot()), (cell(16), cell(16), 5));
        let mut counts = [0u64; TXN_ROW];
        counts[0] = 3;
        counts[5] = 1;
        counts[7] = 2;
        let cells: Vec<_> = row.cells(counts).collect();
        assert_eq!(cells, vec![(cell(16), 3), (cell(21), 1), (cell(23), 2)]);
        assert!(cells.iter().all(|(c, n)| c.key_bytes() == row.key_bytes() && counts[c.slot()] == *n));
        // The highest bucket txn_bucket gives (exponent 63) still has its own row.
        let top = ((63 - 7 + 1) << 7) | 127;
        assert_eq!(TxnCell::from_key(&cell(top).key_bytes()).unwrap().cells([1; TXN_ROW]).last().unwrap().0, cell(top));
    }
}
