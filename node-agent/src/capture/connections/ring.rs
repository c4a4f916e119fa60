//! Records of the two ring buffers, decoded: connection events and the command lines the kernel
//! copied at a process's first socket; and events made from socket map entries (the sweep's).
use std::mem::size_of;

use super::skel::types;
use crate::capture::event::{ConnEvent, Kind};
use crate::identity::proc_info::KernelCmdlines;
use crate::shared::net::Role;

/// Mirror of `struct conn_event` in src/capture/connections/connections.h.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct RawEvent {
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
pub(super) struct RawProcArgsHeader {
    proc_start_ns: u64,
    tgid: u32,
    len: u32,
    full_len: u32,
    _pad: u32,
}
const _: () = assert!(size_of::<RawProcArgsHeader>() == 24);
pub(super) const PROC_ARGS_MAX: usize = 1024;

pub(super) fn decode_raw(data: &[u8]) -> Option<ConnEvent> {
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

pub(super) fn decode_proc_args(data: &[u8], cmdlines: &KernelCmdlines) {
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

pub(super) fn from_sock_info(si: &types::sock_info, kind: Kind, now: u64) -> Option<ConnEvent> {
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
