//! Walks of the socket-local storage (`socks`, connections.bpf.c) through its map-element
//! iterators: every socket's `sock_info`, of every network namespace, in one pass and without a
//! syscall per socket. `all` lists every socket (the sweep), `txn` only those with transactions
//! (the transaction drain).
use std::io::{ErrorKind, Read};
use std::mem::size_of;
use std::os::fd::AsFd;

use libbpf_rs::{Iter, Link};

use super::read_pod;
use super::skel::*;
use crate::capture::bpf::{bpf_err, CaptureError};

const REC: usize = size_of::<types::sock_info>();
/// Records read per syscall (the kernel fills its buffer a page group at a time anyway).
const READ_RECORDS: usize = 256;

pub(super) struct SockWalk {
    all: Link,
    txn: Link,
    buf: Vec<u8>,
}

pub(super) enum Which {
    All,
    Txn,
}

impl SockWalk {
    pub(super) fn attach(skel: &ConnectionsSkel<'_>) -> Result<SockWalk, CaptureError> {
        let fd = skel.maps.socks.as_fd();
        let all = skel.progs.dump_socks.attach_iter(fd).map_err(|e| bpf_err("attach the socket iterator", e))?;
        let txn = skel.progs.dump_txn_socks.attach_iter(fd).map_err(|e| bpf_err("attach the transaction socket iterator", e))?;
        Ok(SockWalk { all, txn, buf: vec![0; REC * READ_RECORDS] })
    }

    /// Calls `f` with each socket's state; a record split between two reads is joined first.
    pub(super) fn for_each(&mut self, which: Which, mut f: impl FnMut(&types::sock_info)) -> std::io::Result<usize> {
        let link = match which {
            Which::All => &self.all,
            Which::Txn => &self.txn,
        };
        let mut it = Iter::new(link).map_err(std::io::Error::other)?;
        let (mut filled, mut n) = (0, 0);
        loop {
            let got = match it.read(&mut self.buf[filled..]) {
                Ok(0) => break,
                Ok(k) => k,
                // EAGAIN: the kernel visited a million sockets without output in one read.
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => continue,
                Err(e) => return Err(e),
            };
            filled += got;
            let whole = filled - filled % REC;
            for rec in self.buf[..whole].chunks_exact(REC) {
                if let Some(si) = read_pod::<types::sock_info>(rec) {
                    f(&si);
                    n += 1;
                }
            }
            self.buf.copy_within(whole..filled, 0);
            filled -= whole;
        }
        Ok(n)
    }
}
