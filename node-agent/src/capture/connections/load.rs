//! Opens, sizes, loads and attaches the connection programs.
use std::mem::{size_of, MaybeUninit};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use super::skel::*;
use super::walk::WalkKind;
use super::{CaptureOptions, SEND_BEGIN_TRACEPOINT, TRACEPOINTS};
use crate::capture::bpf::{bpf_err, CaptureError};
use crate::capture::pins::{self, Pins};

/// The programs attached to tracepoints, as their links are pinned.
const PROGRAMS: [&str; 4] = ["handle_set_state", "handle_set_state_nested", "handle_send", "handle_recv"];
const SEND_BEGIN_PROGRAM: &str = "handle_sendmsg_begin";

/// Loads the programs, with the iterators of `walk` (walk.rs); with `opts.pin_root`, their maps
/// are pinned (or reused from a previous agent of the same object and configuration, whose pinned
/// links are then left as they are).
pub(super) fn load_and_attach<'a>(
    opts: &CaptureOptions,
    inodes: &[u32],
    storage: &'a mut MaybeUninit<libbpf_rs::OpenObject>,
    walk: WalkKind,
) -> Result<(ConnectionsSkel<'a>, Vec<String>, Option<Pins>), CaptureError> {
    let mut open = ConnectionsSkelBuilder::default().open(storage).map_err(|e| bpf_err("open BPF object", e))?;
    let per_namespace = walk == WalkKind::PerNamespace;
    open.progs.dump_socks.set_autoload(!per_namespace);
    open.progs.dump_txn_socks.set_autoload(!per_namespace);
    open.progs.dump_socks_tcp.set_autoload(per_namespace);
    open.progs.dump_txn_socks_tcp.set_autoload(per_namespace);
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
    let pins = match &opts.pin_root {
        Some(root) => {
            let mut links: Vec<&str> = PROGRAMS.to_vec();
            links.extend(send_begin.then_some(SEND_BEGIN_PROGRAM));
            let build = env!("WG_CONNECTIONS_BPF_HASH");
            Some(pins::prepare(root, "connections", build, &pinned_config(opts, inodes, send_begin), &links)?)
        }
        None => None,
    };
    if let Some(p) = &pins {
        p.set_map_paths(open.open_object_mut())?;
    }
    {
        let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| CaptureError::Other("BPF rodata not mmapped".into()))?;
        ro.snapshot_bytes = opts.snapshot_bytes;
        ro.snapshot_min_ns = opts.snapshot_min_interval.as_nanos().min(u64::MAX as u128) as u64;
        ro.snapshot_interval_ns = opts.snapshot_interval.as_nanos().min(u64::MAX as u128) as u64;
        ro.filter_netns = u8::from(!inodes.is_empty() || !opts.local_cidrs.is_empty());
        ro.filter_cidr = u8::from(!opts.local_cidrs.is_empty());
        ro.track_txn = u8::from(opts.transaction_interval.is_some());
        ro.track_http = u8::from(opts.transaction_interval.is_some() && opts.http_routes > 0);
        if let Some(sh) = &opts.shed {
            ro.shed_mode = sh.mode().kernel_constant();
            ro.shed_by_cgroup = u8::from(sh.by_cgroup());
        }
    }
    // Attached by the walk (walk.rs), not here.
    open.progs.dump_socks.set_autoattach(false);
    open.progs.dump_txn_socks.set_autoattach(false);
    open.progs.dump_socks_tcp.set_autoattach(false);
    open.progs.dump_txn_socks_tcp.set_autoattach(false);
    open.maps
        .txn_closed
        .set_max_entries(closed_ring_bytes(opts.map_entries))
        .map_err(|e| bpf_err("size the closed sockets' transaction ring", e))?;
    open.maps
        .txn_hist
        .set_max_entries(opts.txn_hist_entries.max(16))
        .map_err(|e| bpf_err("size transaction histogram map", e))?;
    // The committed counts per row, and totals per live or closed socket.
    open.maps
        .txn_base
        .set_max_entries(opts.txn_hist_entries.max(16).saturating_add(opts.map_entries.saturating_mul(2)))
        .map_err(|e| bpf_err("size transaction baseline map", e))?;
    open.maps
        .http_routes
        .set_max_entries(opts.http_routes.max(1))
        .map_err(|e| bpf_err("size HTTP route map", e))?;
    let mut skel = open.load().map_err(|e| bpf_err("load BPF programs", e))?;
    set_self(&skel, if opts.ignore_self { std::process::id() } else { 0 })?;
    if pins.as_ref().is_some_and(|p| p.reuse) {
        // Counting since the previous agent: its filter, counters and links stay as they are.
        return Ok((skel, attached, pins));
    }
    for ino in inodes {
        skel.maps
            .netns_filter
            .update(&ino.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(|e| bpf_err("fill netns filter", e))?;
    }
    for c in &opts.local_cidrs {
        let mut key = [0u8; 20]; // struct lpm_key: prefix length, then the address
        key[..4].copy_from_slice(&u32::from(c.prefix).to_ne_bytes());
        key[4..].copy_from_slice(&c.addr);
        skel.maps
            .local_cidrs
            .update(&key, &[1u8], MapFlags::ANY)
            .map_err(|e| bpf_err(&format!("fill pod CIDR filter ({})", c.text), e))?;
    }
    if opts.shed.as_ref().is_some_and(|c| c.mode().kernel_constant() != 0) {
        // The overflow counter exists before anything can find the map full.
        let ncpu = libbpf_rs::num_possible_cpus().map_err(|e| bpf_err("count CPUs", e))?;
        let zero = vec![vec![0u8; size_of::<types::shed_count>()]; ncpu];
        skel.maps
            .shed_counts
            .update_percpu(&crate::capture::shedding::DOMAIN_OTHER.to_ne_bytes(), &zero, MapFlags::ANY)
            .map_err(|e| bpf_err("create shedding overflow counter", e))?;
    }
    skel.attach().map_err(|e| bpf_err("attach tracepoints", e))?;
    if let Some(p) = &pins {
        let l = &mut skel.links;
        p.pin_links([
            (PROGRAMS[0], l.handle_set_state.as_mut()),
            (PROGRAMS[1], l.handle_set_state_nested.as_mut()),
            (PROGRAMS[2], l.handle_send.as_mut()),
            (PROGRAMS[3], l.handle_recv.as_mut()),
            (SEND_BEGIN_PROGRAM, l.handle_sendmsg_begin.as_mut()),
        ])?;
        log::info!("BPF programs and maps pinned at {}: they keep counting while no agent runs", p.dir.display());
    }
    Ok((skel, attached, pins))
}

/// The process whose sockets the programs ignore (the agent's own Kafka traffic); 0 = none.
pub(super) fn set_self(skel: &ConnectionsSkel<'_>, tgid: u32) -> Result<(), CaptureError> {
    skel.maps
        .self_tgid
        .update(&0u32.to_ne_bytes(), &tgid.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| bpf_err("set the agent's own process", e))
}

/// A `txn_closed` record: struct txn_conn after the ring's 8-byte header.
const CLOSED_RECORD_BYTES: u32 = 8 + 208;
const _: () = assert!(std::mem::size_of::<types::txn_conn>() as u32 + 8 == CLOSED_RECORD_BYTES);

/// The closed sockets' transaction ring for at least `entries` records: a power of two, as the
/// kernel requires (the default 32,768 gives 8 MiB, 38,836 records).
pub(super) fn closed_ring_bytes(entries: u32) -> u32 {
    entries.saturating_mul(CLOSED_RECORD_BYTES).max(4096).next_power_of_two()
}

/// What shapes the programs and their maps besides the object: a previous agent's pins are
/// reused only when it is the same.
fn pinned_config(opts: &CaptureOptions, inodes: &[u32], send_begin: bool) -> String {
    let mut ns = inodes.to_vec();
    ns.sort_unstable();
    // The filter maps are filled only at a fresh load: what is in them is part of the name.
    let mut cidrs: Vec<(&[u8; 16], u8)> = opts.local_cidrs.iter().map(|c| (&c.addr, c.prefix)).collect();
    cidrs.sort_unstable();
    let cidrs = if cidrs.is_empty() { String::new() } else { format!(" cidrs={cidrs:?}") };
    let shed = opts.shed.as_ref().map(|s| (s.mode().kernel_constant(), s.by_cgroup()));
    format!(
        "snapshot_bytes={} snapshot_min={:?} snapshot_interval={:?} netns={ns:?}{cidrs} txn={} http_routes={} shed={shed:?} map_entries={} txn_hist={} send_begin={send_begin}",
        opts.snapshot_bytes,
        opts.snapshot_min_interval,
        opts.snapshot_interval,
        opts.transaction_interval.is_some(),
        opts.http_routes,
        opts.map_entries,
        opts.txn_hist_entries,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closed_ring_holds_at_least_the_entries_asked_for_in_a_power_of_two() {
        for n in [64, 1000, 16_384, 65_536, 4_194_304] {
            let b = closed_ring_bytes(n);
            assert!(b.is_power_of_two() && b >= 4096 && u64::from(b) >= u64::from(n) * u64::from(CLOSED_RECORD_BYTES), "{n}: {b}");
            assert!(u64::from(b) < 2 * u64::from(n.max(31)) * u64::from(CLOSED_RECORD_BYTES), "{n}: {b} is more than twice what is needed");
        }
        assert_eq!(closed_ring_bytes(32_768), 8 << 20);
    }
}
