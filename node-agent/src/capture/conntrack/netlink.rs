//! ctnetlink (`NETLINK_NETFILTER`): the sockets, per network namespace, that dump the connection
//! table and receive its NEW and DESTROY events, and the in-place parsing of their messages.
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::Tuple;

pub(super) const NETLINK_NETFILTER: libc::c_int = 12;
pub(super) const NFNL_SUBSYS_CTNETLINK: u16 = 1;
pub(super) const IPCTNL_MSG_CT_NEW: u16 = 0;
pub(super) const IPCTNL_MSG_CT_GET: u16 = 1;
pub(super) const IPCTNL_MSG_CT_DELETE: u16 = 2;
pub(super) const NFNLGRP_CONNTRACK_NEW: u32 = 1;
pub(super) const NFNLGRP_CONNTRACK_DESTROY: u32 = 3;
pub(super) const NLMSG_ERROR: u16 = 2;
pub(super) const NLMSG_DONE: u16 = 3;
pub(super) const CTA_TUPLE_ORIG: u16 = 1;
pub(super) const CTA_TUPLE_REPLY: u16 = 2;
pub(super) const CTA_ID: u16 = 12;
pub(super) const CTA_TUPLE_IP: u16 = 1;
pub(super) const CTA_TUPLE_PROTO: u16 = 2;
pub(super) const CTA_IP_V4_SRC: u16 = 1;
pub(super) const CTA_IP_V4_DST: u16 = 2;
pub(super) const CTA_IP_V6_SRC: u16 = 3;
pub(super) const CTA_IP_V6_DST: u16 = 4;
pub(super) const CTA_PROTO_NUM: u16 = 1;
pub(super) const CTA_PROTO_SRC_PORT: u16 = 2;
pub(super) const CTA_PROTO_DST_PORT: u16 = 3;
pub(super) const NLA_TYPE_MASK: u16 = 0x3fff;
pub(super) const IPPROTO_TCP: u8 = 6;
pub(super) const RECV_BUF: usize = 64 * 1024;
/// Kernel receive buffer asked for the event socket: room for bursts of new connections.
pub(super) const SOCKET_RCVBUF: libc::c_int = 8 << 20;

/// A parsed ctnetlink message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtMessage {
    New { id: u32, orig: Tuple, reply: Tuple },
    Destroy { id: u32, orig: Tuple },
}

pub(super) struct NsSockets {
    pub(super) events: OwnedFd,
    pub(super) dump: OwnedFd,
    pub(super) name: String,
}

/// The end of a dump, or an error the kernel answered with.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    Done,
    Error(i32),
}

/// Calls `f` for each netlink message of a datagram: a conntrack entry, `Ok(None)` for
/// messages of no interest, `Err` for the end of a dump or an error.
pub fn for_each_message(mut data: &[u8], mut f: impl FnMut(Result<Option<CtMessage>, End>)) {
    while data.len() >= 16 {
        let len = u32::from_ne_bytes(data[0..4].try_into().unwrap()) as usize;
        if len < 16 || len > data.len() {
            return;
        }
        let ty = u16::from_ne_bytes(data[4..6].try_into().unwrap());
        let body = &data[16..len];
        match ty {
            NLMSG_DONE => f(Err(End::Done)),
            NLMSG_ERROR => {
                let code = body.get(0..4).map(|b| i32::from_ne_bytes(b.try_into().unwrap())).unwrap_or(0);
                if code != 0 {
                    // The kernel sends -errno; saturating: a malformed i32::MIN must not panic.
                    f(Err(End::Error(code.saturating_neg())));
                }
            }
            _ if ty >> 8 == NFNL_SUBSYS_CTNETLINK && body.len() >= 4 => f(Ok(parse_ct(ty & 0xff, &body[4..]))),
            _ => f(Ok(None)),
        }
        data = &data[align4(len).min(data.len())..];
    }
}

pub(super) fn parse_ct(msg: u16, attrs: &[u8]) -> Option<CtMessage> {
    let (mut orig, mut reply, mut id) = (None, None, 0u32);
    for_each_attr(attrs, |ty, v| match ty {
        CTA_TUPLE_ORIG => orig = parse_tuple(v),
        CTA_TUPLE_REPLY => reply = parse_tuple(v),
        CTA_ID if v.len() >= 4 => id = u32::from_be_bytes(v[0..4].try_into().unwrap()),
        _ => {}
    });
    match msg {
        IPCTNL_MSG_CT_NEW => Some(CtMessage::New { id, orig: orig?, reply: reply? }),
        IPCTNL_MSG_CT_DELETE => Some(CtMessage::Destroy { id, orig: orig? }),
        _ => None,
    }
}

pub(super) fn parse_tuple(v: &[u8]) -> Option<Tuple> {
    let mut t = Tuple::default();
    let (mut have_src, mut have_dst, mut have_proto) = (false, false, false);
    for_each_attr(v, |ty, v| match ty {
        CTA_TUPLE_IP => for_each_attr(v, |ty, a| match (ty, a.len()) {
            (CTA_IP_V4_SRC, 4) => {
                t.src = mapped_v4(a);
                have_src = true;
            }
            (CTA_IP_V4_DST, 4) => {
                t.dst = mapped_v4(a);
                have_dst = true;
            }
            (CTA_IP_V6_SRC, 16) => {
                t.src.copy_from_slice(a);
                have_src = true;
            }
            (CTA_IP_V6_DST, 16) => {
                t.dst.copy_from_slice(a);
                have_dst = true;
            }
            _ => {}
        }),
        CTA_TUPLE_PROTO => for_each_attr(v, |ty, a| match (ty, a.len()) {
            (CTA_PROTO_NUM, 1) => {
                t.proto = a[0];
                have_proto = true;
            }
            (CTA_PROTO_SRC_PORT, 2) => t.src_port = u16::from_be_bytes([a[0], a[1]]),
            (CTA_PROTO_DST_PORT, 2) => t.dst_port = u16::from_be_bytes([a[0], a[1]]),
            _ => {}
        }),
        _ => {}
    });
    (have_src && have_dst && have_proto).then_some(t)
}

pub(super) fn mapped_v4(a: &[u8]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..].copy_from_slice(a);
    m
}

pub(super) fn for_each_attr(mut data: &[u8], mut f: impl FnMut(u16, &[u8])) {
    while data.len() >= 4 {
        let len = u16::from_ne_bytes([data[0], data[1]]) as usize;
        if len < 4 || len > data.len() {
            return;
        }
        f(u16::from_ne_bytes([data[2], data[3]]) & NLA_TYPE_MASK, &data[4..len]);
        data = &data[align4(len).min(data.len())..];
    }
}

pub(super) fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The event and dump sockets of one namespace. A socket stays in the namespace it was made
/// in, so another namespace's are made on a short-lived thread that enters it.
pub(super) fn open_sockets(netns: Option<&Path>) -> Result<NsSockets, String> {
    let name = netns.map(|p| p.display().to_string()).unwrap_or_else(|| "own namespace".into());
    let make = {
        let name = name.clone();
        move || -> Result<(OwnedFd, OwnedFd), String> {
            let events = netlink_socket(NFNLGRP_CONNTRACK_NEW, NFNLGRP_CONNTRACK_DESTROY)
                .map_err(|e| format!("conntrack events ({name}): {e}"))?;
            let dump = netlink_socket(0, 0).map_err(|e| format!("conntrack dump ({name}): {e}"))?;
            Ok((events, dump))
        }
    };
    let (events, dump) = match netns {
        None => make()?,
        // The agent's own namespace needs no setns (and so no CAP_SYS_ADMIN).
        Some(p) if is_own_netns(p) => make()?,
        Some(p) => {
            let f = File::open(p).map_err(|e| format!("conntrack: open {}: {e}", p.display()))?;
            std::thread::spawn(move || {
                // SAFETY: plain syscall on an fd we own; it affects only this thread.
                if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(format!("conntrack: setns: {}", std::io::Error::last_os_error()));
                }
                make()
            })
            .join()
            .map_err(|_| "conntrack: namespace thread panicked".to_string())??
        }
    };
    Ok(NsSockets { events, dump, name })
}

/// Whether nsfs path `p` is the network namespace of the calling thread.
pub fn is_own_netns(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(p), std::fs::metadata("/proc/thread-self/ns/net")) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// A ctnetlink socket subscribed to groups `a` and `b` (0 = none).
pub(super) fn netlink_socket(a: u32, b: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscalls; the fd is owned from here on.
    unsafe {
        let fd = libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_NETFILTER);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_nl = std::mem::zeroed();
        addr.nl_family = libc::AF_NETLINK as u16;
        addr.nl_groups = [a, b].iter().filter(|&&g| g > 0).map(|g| 1u32 << (g - 1)).fold(0, |x, y| x | y);
        if libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_nl).cast(), size_of::<libc::sockaddr_nl>() as u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if a > 0 {
            let sz = SOCKET_RCVBUF;
            let p = (&sz as *const libc::c_int).cast();
            let l = size_of::<libc::c_int>() as u32;
            // FORCE passes rmem_max as root; otherwise the capped size.
            if libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, l) != 0 {
                libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, p, l);
            }
        }
        Ok(fd)
    }
}
