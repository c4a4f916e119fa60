//! Opens, sizes, loads and attaches the connection programs.
use std::mem::{size_of, MaybeUninit};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use super::skel::*;
use super::{CaptureOptions, SEND_BEGIN_TRACEPOINT, TRACEPOINTS};
use crate::capture::bpf::{bpf_err, CaptureError};

pub(super) fn load_and_attach<'a>(
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
            ro.shed_mode = sh.mode().kernel_constant();
            ro.shed_by_cgroup = u8::from(sh.by_cgroup());
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
    Ok((skel, attached))
}
