//! Walks of the socket-local storage (`socks`, connections.bpf.c) through iterator programs,
//! without a syscall per socket. `all` lists every socket (the sweep), `txn` only those with
//! transactions (the transaction drain).
//!
//! `WalkKind::Map`: the map-element iterators, every network namespace in one pass. A kernel that
//! refuses those (seen on one in lockdown `integrity`) gets `WalkKind::PerNamespace`: `iter/tcp`,
//! which walks the TCP sockets of the namespace current when its iterator is opened, so one is
//! opened per namespace (a `setns` there and back, CAP_SYS_ADMIN): the `--netns` ones, or every
//! namespace a task is in or `/run/netns` holds. Slower (each opening walks the whole TCP hash),
//! and a socket of a namespace neither names is not seen. Without CAP_SYS_ADMIN only the agent's
//! own namespace is walked; the walk then says it did not see every namespace
//! (`saw_every_namespace`), so the drain does not take the sockets it missed for gone.
use std::collections::HashSet;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use libbpf_rs::{Iter, Link};

use super::read_pod;
use super::skel::*;
use crate::capture::bpf::{bpf_err, CaptureError};
use crate::shared::caps;

const REC: usize = size_of::<types::sock_info>();
/// Records read per syscall (the kernel fills its buffer a page group at a time anyway).
const READ_RECORDS: usize = 256;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum WalkKind {
    Map,
    PerNamespace,
}

pub(super) struct SockWalk {
    all: Link,
    txn: Link,
    buf: Vec<u8>,
    /// PerNamespace: the namespaces to walk (empty: every one found) and the thread's own.
    namespaces: Option<(Vec<PathBuf>, File)>,
    /// PerNamespace without CAP_SYS_ADMIN: only the agent's own namespace can be entered.
    own_only: bool,
    /// The last walk left out a namespace.
    partial: bool,
}

pub(super) enum Which {
    All,
    Txn,
}

impl SockWalk {
    /// `netns`: with `PerNamespace`, the only namespaces with tracked sockets (empty: any).
    pub(super) fn attach(skel: &ConnectionsSkel<'_>, kind: WalkKind, netns: &[PathBuf]) -> Result<SockWalk, CaptureError> {
        let (all, txn, namespaces) = match kind {
            WalkKind::Map => {
                let fd = skel.maps.socks.as_fd();
                let all = skel.progs.dump_socks.attach_iter(fd).map_err(|e| bpf_err("attach the socket iterator", e))?;
                let txn = skel.progs.dump_txn_socks.attach_iter(fd).map_err(|e| bpf_err("attach the transaction socket iterator", e))?;
                (all, txn, None)
            }
            WalkKind::PerNamespace => {
                let all = skel.progs.dump_socks_tcp.attach().map_err(|e| bpf_err("attach the TCP socket iterator", e))?;
                let txn = skel.progs.dump_txn_socks_tcp.attach().map_err(|e| bpf_err("attach the TCP transaction socket iterator", e))?;
                let own = File::open("/proc/thread-self/ns/net").map_err(|e| CaptureError::Other(format!("open the agent's network namespace: {e}")))?;
                (all, txn, Some((netns.to_vec(), own)))
            }
        };
        let only_own = !netns.is_empty() && netns.iter().all(|p| crate::capture::conntrack::is_own_netns(p));
        let own_only = namespaces.is_some() && !only_own && !caps::effective_capabilities().is_ok_and(|c| caps::CAP_SYS_ADMIN.in_set(c));
        if own_only {
            log::warn!(
                "without CAP_SYS_ADMIN the per-namespace walk enters no other network namespace: the sockets of other namespaces get their transactions and time-rule SNAPSHOTs at their close (node-agent/README.md, \"Capabilities\")"
            );
        }
        Ok(SockWalk { all, txn, buf: vec![0; REC * READ_RECORDS], namespaces, own_only, partial: false })
    }

    /// Whether the last walk covered every namespace with tracked sockets.
    pub(super) fn saw_every_namespace(&self) -> bool {
        !self.partial
    }

    /// Calls `f` with each socket's state; returns how many. An error leaves the walk partial.
    pub(super) fn for_each(&mut self, which: Which, mut f: impl FnMut(&types::sock_info)) -> std::io::Result<usize> {
        let link = match which {
            Which::All => &self.all,
            Which::Txn => &self.txn,
        };
        // Without CAP_SYS_ADMIN the other namespaces cannot be entered: only the own is walked.
        self.partial = self.own_only;
        let Some((listed, own)) = self.namespaces.as_ref().filter(|_| !self.own_only) else {
            let it = Iter::new(link).map_err(std::io::Error::other)?;
            return read_records(it, &mut self.buf, &mut f);
        };
        let paths = if listed.is_empty() { every_netns() } else { listed.clone() };
        let here = own.metadata()?;
        let mut n = 0;
        for p in paths {
            let ns = match File::open(&p) {
                Ok(ns) => ns,
                Err(e) if e.kind() == ErrorKind::NotFound => continue, // its last task exited
                Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
            };
            let it = if same_file(&ns.metadata()?, &here) {
                Iter::new(link)
            } else {
                opened_in(&ns, own, || Iter::new(link)).map_err(|e| std::io::Error::new(e.kind(), format!("setns {}: {e}", p.display())))?
            };
            n += read_records(it.map_err(std::io::Error::other)?, &mut self.buf, &mut f)?;
        }
        Ok(n)
    }
}

/// Reads an iterator to its end, a record split between two reads joined first.
fn read_records(mut it: Iter, buf: &mut [u8], f: &mut impl FnMut(&types::sock_info)) -> std::io::Result<usize> {
    let (mut filled, mut n) = (0, 0);
    loop {
        let got = match it.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => k,
            // EAGAIN: the kernel visited a million sockets without output in one read.
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => continue,
            Err(e) => return Err(e),
        };
        filled += got;
        let whole = filled - filled % REC;
        for rec in buf[..whole].chunks_exact(REC) {
            if let Some(si) = read_pod::<types::sock_info>(rec) {
                f(&si);
                n += 1;
            }
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
    }
    Ok(n)
}

/// `open()` run with the calling thread in network namespace `ns`, then back in `own`.
fn opened_in<T>(ns: &File, own: &File, open: impl FnOnce() -> T) -> std::io::Result<T> {
    // SAFETY: setns on open nsfs descriptors; it changes only the calling thread.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let r = open();
    // SAFETY: as above. Failing to return would leave this thread's later sockets elsewhere.
    if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        panic!("cannot return to the agent's network namespace: {}", std::io::Error::last_os_error());
    }
    Ok(r)
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// A path of each network namespace a task is in (/proc/*/task/*/ns/net) or /run/netns holds,
/// the agent's own first.
pub(super) fn every_netns() -> Vec<PathBuf> {
    every_netns_under(Path::new("/proc"), Path::new("/run/netns"))
}

fn every_netns_under(proc: &Path, run_netns: &Path) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut add = |p: PathBuf| {
        if let Ok(m) = std::fs::metadata(&p) {
            if seen.insert((m.dev(), m.ino())) {
                out.push(p);
            }
        }
    };
    add(proc.join("thread-self/ns/net"));
    let dirs = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.path());
    for pid in dirs(proc).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().bytes().all(|b| b.is_ascii_digit()))) {
        for task in dirs(&pid.join("task")) {
            add(task.join("ns/net"));
        }
    }
    for p in dirs(run_netns) {
        add(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_namespace_is_listed_once_own_first() {
        let root = std::env::temp_dir().join(format!("wg-walk-ns-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // Two tasks in namespace file a, one in b; /run/netns holds b and c. Files stand for
        // the namespaces (told apart by inode, as nsfs files are).
        for (dir, ns) in [("proc/10/task/10/ns", "a"), ("proc/10/task/11/ns", "b"), ("proc/12/task/12/ns", "a"), ("proc/thread-self/ns", "a")] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            let target = root.join(ns);
            if !target.exists() {
                std::fs::write(&target, ns).unwrap();
            }
            std::fs::hard_link(&target, root.join(dir).join("net")).unwrap();
        }
        std::fs::create_dir_all(root.join("proc/self")).unwrap(); // not a pid: skipped
        std::fs::create_dir_all(root.join("run")).unwrap();
        std::fs::write(root.join("c"), "c").unwrap();
        std::fs::create_dir_all(root.join("run/netns")).unwrap();
        std::fs::hard_link(root.join("b"), root.join("run/netns/b")).unwrap();
        std::fs::hard_link(root.join("c"), root.join("run/netns/c")).unwrap();
        let got = every_netns_under(&root.join("proc"), &root.join("run/netns"));
        let names: Vec<String> = got.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
        assert_eq!(got[0], root.join("proc/thread-self/ns/net"));
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!((names.len(), sorted), (3, vec!["a".to_string(), "b".into(), "c".into()]), "{got:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
