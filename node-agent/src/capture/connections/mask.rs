//! Client port masking: short-lived connections merged into one record per process, addresses
//! and server port, with exact sums.
use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::capture::connections::transactions::{ConnTxn, TxnRole};
use crate::shared::net::NatTuple;

/// What a masked record is one per: the connection's identity without the client port.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct MaskKey {
    pub(super) role: TxnRole,
    pub(super) tgid: u32,
    pub(super) proc_start_ns: u64,
    pub(super) cgroup_id: u64,
    pub(super) netns: u32,
    pub(super) local: ([u8; 16], u16),
    pub(super) remote: ([u8; 16], u16),
    pub(super) comm: [u8; 16],
    pub(super) nat: Option<NatTuple>,
}

/// Adds a short-lived connection's record to its masked record of this drain (exact sums).
pub(super) fn merge_masked(masked: &mut HashMap<MaskKey, ConnTxn>, mut rec: ConnTxn) {
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
    match masked.entry(key) {
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
