//! Entries of the kernel's transaction maps: histogram cells (`txn_hist`) and a socket's identity
//! and cumulative totals, from its socket-local storage while it lives or `txn_conns` once it closed.
use std::mem::size_of;

use super::read_pod;
use super::skel::*;

/// Key of `txn_hist` (struct txn_hist_key).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct TxnCell {
    pub(super) cookie: u64,
    pub(super) route: u64,
    pub(super) bucket: u16,
    pub(super) kind: u8,
}

impl TxnCell {
    pub(super) const SIZE: usize = size_of::<types::txn_hist_key>();

    pub(super) fn key_bytes(&self) -> [u8; Self::SIZE] {
        let mut k = [0u8; Self::SIZE];
        k[..8].copy_from_slice(&self.cookie.to_ne_bytes());
        k[8..16].copy_from_slice(&self.route.to_ne_bytes());
        k[16..18].copy_from_slice(&self.bucket.to_ne_bytes());
        k[18] = self.kind;
        k
    }

    pub(super) fn from_key(k: &[u8]) -> Option<TxnCell> {
        (k.len() >= Self::SIZE).then(|| TxnCell {
            cookie: u64::from_ne_bytes(k[..8].try_into().unwrap()),
            route: u64::from_ne_bytes(k[8..16].try_into().unwrap()),
            bucket: u16::from_ne_bytes(k[16..18].try_into().unwrap()),
            kind: k[18],
        })
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
}

impl TxnTotals {
    /// A closed socket's final totals (`txn_conns` value).
    pub(super) fn closed(val: &[u8]) -> Option<TxnTotals> {
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
        }
    }
}
