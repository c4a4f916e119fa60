//! The NAT this host's kernel applies, from its connection tracking, so that a socket that dialled
//! a translated address (a Kubernetes Service VIP DNATed to a backend, perhaps SNATed on the way)
//! is reported as its peer sees it (`ConnEvent::nat`, `ConnTxn::nat`).
//!
//! Read over ctnetlink (`NETLINK_NETFILTER`): a dump at start for connections older than the
//! agent, then the NEW and DESTROY multicast events. Only TCP entries whose reply tuple is not the
//! original one reversed are kept, keyed by the original tuple (= the dialling socket's local and
//! remote endpoints). Messages are parsed in place, without allocation: every connection of the
//! host passes here once.
//!
//! Ordering: a client's OPENED is emitted when its SYN-ACK arrives, after its SYN passed the NAT
//! hooks, where conntrack queued the NEW message. So an OPENED stamped after the last read reads
//! the sockets first, hit or miss: its tuple may still map to an earlier connection of the same
//! client port (conntrack keeps TIME_WAIT 120 s, the client's socket 60 s or none), whose DESTROY
//! and the NEW that replaced it (perhaps to another backend) wait in the queue. Events stamped
//! before the last read need not.
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::shared::net::NatTuple;

mod netlink;

pub use netlink::{for_each_message, is_own_netns, CtMessage, End};
use netlink::{open_sockets, NsSockets, IPCTNL_MSG_CT_GET, IPPROTO_TCP, NFNL_SUBSYS_CTNETLINK, RECV_BUF};

/// Counters for the metrics endpoint.
#[derive(Default, Debug)]
pub struct NatStats {
    /// 1 when at least one conntrack table is read.
    pub available: AtomicU64,
    /// Translated connections known now (including those closed within the grace period).
    pub entries: AtomicU64,
    /// Connection events and transaction records reported with their NAT tuple.
    pub translated: AtomicU64,
    /// Event-socket overruns (the kernel dropped messages); each is followed by a new dump.
    pub overruns: AtomicU64,
    /// Translated connections not kept because the table was full.
    pub table_full: AtomicU64,
}

/// One direction of a conntrack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tuple {
    pub src: [u8; 16],
    pub src_port: u16,
    pub dst: [u8; 16],
    pub dst_port: u16,
    pub proto: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    local: [u8; 16],
    remote: [u8; 16],
    local_port: u16,
    remote_port: u16,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u32,
    nat: NatTuple,
    /// Boot-clock ns of its DESTROY, 0 while alive.
    gone_ns: u64,
}

/// The translated connections of the host (or of the watched namespaces).
pub struct NatTable {
    map: HashMap<Key, Entry>,
    capacity: usize,
    /// How long a destroyed entry still translates: records of a closed socket may be encoded
    /// after conntrack forgot it.
    grace_ns: u64,
    sockets: Vec<NsSockets>,
    buf: Vec<u8>,
    last_read_ns: u64,
    seq: u32,
    stats: Arc<NatStats>,
}

impl NatTable {
    /// A table fed by nothing (conntrack unavailable, or tests feeding `apply`).
    pub fn detached(capacity: usize, grace_ns: u64, stats: Arc<NatStats>) -> NatTable {
        NatTable {
            map: HashMap::with_capacity(capacity.min(4096)),
            capacity,
            grace_ns,
            sockets: Vec::new(),
            buf: vec![0; RECV_BUF],
            last_read_ns: 0,
            seq: 0,
            stats,
        }
    }

    /// Opens the conntrack tables of `netns` (nsfs paths; empty = this process's namespace) and
    /// loads what they hold. Errors name the namespace and the call that failed.
    pub fn open(netns: &[PathBuf], capacity: usize, grace_ns: u64, stats: Arc<NatStats>) -> Result<NatTable, String> {
        let mut t = NatTable::detached(capacity, grace_ns, stats);
        if netns.is_empty() {
            t.sockets.push(open_sockets(None)?);
        } else {
            for p in netns {
                t.sockets.push(open_sockets(Some(p))?);
            }
        }
        for i in 0..t.sockets.len() {
            t.dump(i)?;
        }
        t.last_read_ns = crate::shared::clock::boot_time_ns();
        t.stats.available.store(1, Ordering::Relaxed);
        Ok(t)
    }

    pub fn is_reading(&self) -> bool {
        !self.sockets.is_empty()
    }

    /// The NAT tuple of a socket (local, remote) that dialled a translated connection. A socket's
    /// first event (`first`) stamped (boot clock) after the last read may have its entry still
    /// queued, and what the table holds for its tuple may be an earlier connection's: read first
    /// (one non-blocking recv per namespace, mostly EAGAIN, and only for the first such event of a
    /// batch). Later events of a socket need not: its entry came before its first.
    pub fn translate(&mut self, first: bool, event_boot_ns: u64, local: ([u8; 16], u16), remote: ([u8; 16], u16)) -> Option<NatTuple> {
        if first && !self.sockets.is_empty() && event_boot_ns >= self.last_read_ns {
            self.read_events();
        }
        self.lookup(local, remote)
    }

    /// The NAT tuple known now, without reading the sockets.
    pub fn lookup(&self, local: ([u8; 16], u16), remote: ([u8; 16], u16)) -> Option<NatTuple> {
        if self.map.is_empty() {
            return None;
        }
        let k = Key { local: local.0, local_port: local.1, remote: remote.0, remote_port: remote.1 };
        let e = self.map.get(&k)?;
        self.stats.translated.fetch_add(1, Ordering::Relaxed);
        Some(e.nat)
    }

    /// Reads every queued event of every namespace (non-blocking).
    pub fn read_events(&mut self) {
        self.last_read_ns = crate::shared::clock::boot_time_ns();
        for i in 0..self.sockets.len() {
            loop {
                let fd = self.sockets[i].events.as_raw_fd();
                // SAFETY: buf is valid for its length.
                let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr().cast(), self.buf.len(), libc::MSG_DONTWAIT) };
                if n < 0 {
                    let err = std::io::Error::last_os_error();
                    match err.raw_os_error() {
                        Some(libc::EAGAIN) => break,
                        Some(libc::EINTR) => continue,
                        Some(libc::ENOBUFS) => {
                            // Messages were lost: what the table holds now is the truth.
                            self.stats.overruns.fetch_add(1, Ordering::Relaxed);
                            if let Err(e) = self.dump(i) {
                                log::warn!("conntrack: re-reading after an overrun: {e}");
                            }
                            continue;
                        }
                        _ => {
                            log::warn!("conntrack ({}): {err}", self.sockets[i].name);
                            break;
                        }
                    }
                }
                let buf = std::mem::take(&mut self.buf);
                let now = crate::shared::clock::boot_time_ns();
                for_each_message(&buf[..n as usize], |m| {
                    if let Ok(Some(m)) = m {
                        self.apply(m, now);
                    }
                });
                self.buf = buf;
            }
        }
    }

    /// Takes one message into the table.
    pub fn apply(&mut self, m: CtMessage, now_ns: u64) {
        match m {
            CtMessage::New { id, orig, reply } => {
                if orig.proto != IPPROTO_TCP || !translated(&orig, &reply) {
                    return;
                }
                let k = key_of(&orig);
                let e = Entry {
                    id,
                    nat: NatTuple { local_addr: reply.dst, local_port: reply.dst_port, remote_addr: reply.src, remote_port: reply.src_port },
                    gone_ns: 0,
                };
                if self.map.len() >= self.capacity && !self.map.contains_key(&k) {
                    self.expire(now_ns);
                    if self.map.len() >= self.capacity {
                        self.stats.table_full.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
                self.map.insert(k, e);
            }
            CtMessage::Destroy { id, orig } => {
                // Only the entry of that connection: the tuple may already belong to a new one.
                if let Some(e) = self.map.get_mut(&key_of(&orig)) {
                    if e.id == id && e.gone_ns == 0 {
                        e.gone_ns = now_ns.max(1);
                    }
                }
            }
        }
        self.stats.entries.store(self.map.len() as u64, Ordering::Relaxed);
    }

    /// Forgets entries destroyed more than the grace period ago.
    pub fn expire(&mut self, now_ns: u64) {
        let grace = self.grace_ns;
        self.map.retain(|_, e| e.gone_ns == 0 || now_ns < e.gone_ns.saturating_add(grace));
        self.stats.entries.store(self.map.len() as u64, Ordering::Relaxed);
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Dumps namespace `i`'s table into the map (entries gone since are removed by their
    /// DESTROY events, which the event socket holds meanwhile).
    fn dump(&mut self, i: usize) -> Result<(), String> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let fd = self.sockets[i].dump.as_raw_fd();
        let mut req = [0u8; 20];
        req[0..4].copy_from_slice(&20u32.to_ne_bytes());
        req[4..6].copy_from_slice(&((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET).to_ne_bytes());
        req[6..8].copy_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
        req[8..12].copy_from_slice(&seq.to_ne_bytes());
        // nfgenmsg: family AF_UNSPEC (both), version 0, res_id 0.
        // SAFETY: req is valid for its length.
        if unsafe { libc::send(fd, req.as_ptr().cast(), req.len(), 0) } < 0 {
            return Err(format!("conntrack dump ({}): send: {}", self.sockets[i].name, std::io::Error::last_os_error()));
        }
        let now = crate::shared::clock::boot_time_ns();
        let mut buf = std::mem::take(&mut self.buf);
        let result = loop {
            // SAFETY: buf is valid for its length.
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break Err(format!("conntrack dump ({}): recv: {err}", self.sockets[i].name));
            }
            let mut done = false;
            let mut failed = None;
            for_each_message(&buf[..n as usize], |m| match m {
                Ok(Some(m)) => self.apply(m, now),
                Ok(None) => {}
                Err(End::Done) => done = true,
                Err(End::Error(code)) => failed = Some(code),
            });
            if let Some(code) = failed {
                break Err(format!(
                    "conntrack dump ({}): {}",
                    self.sockets[i].name,
                    std::io::Error::from_raw_os_error(code)
                ));
            }
            if done || n == 0 {
                break Ok(());
            }
        };
        self.buf = buf;
        result
    }
}

fn translated(orig: &Tuple, reply: &Tuple) -> bool {
    orig.dst != reply.src || orig.dst_port != reply.src_port || orig.src != reply.dst || orig.src_port != reply.dst_port
}

fn key_of(orig: &Tuple) -> Key {
    Key { local: orig.src, local_port: orig.src_port, remote: orig.dst, remote_port: orig.dst_port }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::netlink::*;

    fn v4(s: &str) -> [u8; 16] {
        crate::shared::net::addr16_from_ip(s.parse().unwrap())
    }

    fn tuple(src: &str, sp: u16, dst: &str, dp: u16) -> Tuple {
        Tuple { src: v4(src), src_port: sp, dst: v4(dst), dst_port: dp, proto: IPPROTO_TCP }
    }

    fn attr(out: &mut Vec<u8>, ty: u16, v: &[u8]) {
        out.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
        out.extend_from_slice(&ty.to_ne_bytes());
        out.extend_from_slice(v);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }

    fn nested(ty: u16, f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut inner = Vec::new();
        f(&mut inner);
        let mut out = Vec::new();
        attr(&mut out, ty | 0x8000, &inner);
        out
    }

    /// A ctnetlink message as the kernel lays it out (IPv4 tuples).
    fn message(msg: u16, id: u32, orig: &Tuple, reply: &Tuple) -> Vec<u8> {
        let tup = |ty: u16, t: &Tuple| {
            nested(ty, |o| {
                o.extend(nested(CTA_TUPLE_IP, |o| {
                    attr(o, CTA_IP_V4_SRC, &t.src[12..]);
                    attr(o, CTA_IP_V4_DST, &t.dst[12..]);
                }));
                o.extend(nested(CTA_TUPLE_PROTO, |o| {
                    attr(o, CTA_PROTO_NUM, &[t.proto]);
                    attr(o, CTA_PROTO_SRC_PORT, &t.src_port.to_be_bytes());
                    attr(o, CTA_PROTO_DST_PORT, &t.dst_port.to_be_bytes());
                }));
            })
        };
        let mut body = vec![libc::AF_INET as u8, 0, 0, 0];
        body.extend(tup(CTA_TUPLE_ORIG, orig));
        body.extend(tup(CTA_TUPLE_REPLY, reply));
        attr(&mut body, CTA_ID, &id.to_be_bytes());
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&((NFNL_SUBSYS_CTNETLINK << 8) | msg).to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend(body);
        m
    }

    #[test]
    fn parses_new_and_destroy_messages_of_one_datagram() {
        let orig = tuple("10.0.0.5", 40000, "10.96.0.10", 80);
        let reply = tuple("10.1.0.7", 8080, "192.0.2.1", 61000);
        let mut dgram = message(IPCTNL_MSG_CT_NEW, 7, &orig, &reply);
        dgram.extend(message(IPCTNL_MSG_CT_DELETE, 7, &orig, &reply));
        let mut got = Vec::new();
        for_each_message(&dgram, |m| got.push(m));
        assert_eq!(
            got,
            vec![Ok(Some(CtMessage::New { id: 7, orig, reply })), Ok(Some(CtMessage::Destroy { id: 7, orig }))]
        );
    }

    #[test]
    fn keeps_only_translated_tcp_and_maps_the_dialling_socket() {
        let mut t = NatTable::detached(8, 1_000, Arc::default());
        let plain = tuple("10.0.0.5", 40001, "10.0.0.9", 80);
        t.apply(CtMessage::New { id: 1, orig: plain, reply: tuple("10.0.0.9", 80, "10.0.0.5", 40001) }, 10);
        let mut udp = tuple("10.0.0.5", 53, "10.96.0.10", 53);
        udp.proto = 17;
        t.apply(CtMessage::New { id: 2, orig: udp, reply: tuple("10.1.0.3", 53, "10.0.0.5", 53) }, 10);
        assert!(t.is_empty(), "untranslated and non-TCP entries are not kept");

        let orig = tuple("10.0.0.5", 40000, "10.96.0.10", 80);
        t.apply(CtMessage::New { id: 3, orig, reply: tuple("10.1.0.7", 8080, "192.0.2.1", 61000) }, 10);
        let n = t.lookup((v4("10.0.0.5"), 40000), (v4("10.96.0.10"), 80)).unwrap();
        assert_eq!((n.local_addr, n.local_port), (v4("192.0.2.1"), 61000), "source after SNAT");
        assert_eq!((n.remote_addr, n.remote_port), (v4("10.1.0.7"), 8080), "destination after DNAT");
        assert_eq!(t.lookup((v4("10.96.0.10"), 80), (v4("10.0.0.5"), 40000)), None, "only the dialling side");
    }

    #[test]
    fn destroyed_entries_translate_for_the_grace_period_and_only_their_own_id() {
        let mut t = NatTable::detached(8, 1_000, Arc::default());
        let orig = tuple("10.0.0.5", 40000, "10.96.0.10", 80);
        let reply = tuple("10.1.0.7", 8080, "10.0.0.5", 40000);
        t.apply(CtMessage::New { id: 3, orig, reply }, 10);
        t.apply(CtMessage::Destroy { id: 2, orig }, 20); // an older connection of the same tuple
        t.expire(5_000);
        assert_eq!(t.len(), 1);
        t.apply(CtMessage::Destroy { id: 3, orig }, 100);
        t.expire(1_099);
        assert!(t.lookup((orig.src, orig.src_port), (orig.dst, orig.dst_port)).is_some());
        t.expire(1_100);
        assert!(t.is_empty());
    }

    #[test]
    fn a_full_table_counts_what_it_could_not_keep() {
        let stats = Arc::new(NatStats::default());
        let mut t = NatTable::detached(2, 1_000, stats.clone());
        for p in 0..3u16 {
            let orig = tuple("10.0.0.5", 40000 + p, "10.96.0.10", 80);
            t.apply(CtMessage::New { id: p as u32, orig, reply: tuple("10.1.0.7", 8080, "10.0.0.5", 40000 + p) }, 10);
        }
        assert_eq!((t.len(), stats.table_full.load(Ordering::Relaxed)), (2, 1));
    }

    #[test]
    fn dump_end_and_errors_are_reported() {
        let mut m = Vec::new();
        m.extend_from_slice(&20u32.to_ne_bytes());
        m.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
        m.extend_from_slice(&16u32.to_ne_bytes());
        m.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        let mut got = Vec::new();
        for_each_message(&m, |x| got.push(x));
        assert_eq!(got, vec![Err(End::Error(libc::EPERM)), Err(End::Done)]);
    }

    #[test]
    fn an_error_code_without_a_positive_errno_is_not_a_panic() {
        // Found by fuzz/conntrack: NLMSG_ERROR with code i32::MIN, whose negation overflowed
        // (a panic with overflow checks, i32::MIN as the errno without).
        let dgram = [
            0x24, 0, 0, 0, 0x02, 0, 0, 0x01, 0x03, 0, 0, 0, 0x25, 0x20, 0x3b, 0xf2, 0, 0, 0, 0x80, 0x14, 0, 0, 0x80, 0, 0, 0, 0,
            0x01, 0, 0, 0, 0x81, 0, 0, 0,
        ];
        let mut got = Vec::new();
        for_each_message(&dgram, |x| got.push(x));
        assert_eq!(got, vec![Err(End::Error(i32::MAX))]);
    }
}
