//! A ring buffer read through its own mapping instead of libbpf's reader, which moves the
//! kernel's consumer position past each record as it hands it over. Here, with pinned programs,
//! the position moves only past what the output has taken (`CaptureHandle::taken`: journaled,
//! with --spool-dir): events read but not yet a record when the agent is killed stay in the ring,
//! and the next agent on the same pins reads them again. The same for the closed sockets'
//! transaction totals (`txn_closed`), released by the drain's ledger. Hand-written (about 100
//! lines) because libbpf has no reader that defers the consumer position.
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use libbpf_rs::MapCore;

use crate::capture::bpf::CaptureError;

const BUSY: u32 = 1 << 31;
const DISCARD: u32 = 1 << 30;
const HEADER: u64 = 8;

pub(super) struct EventRing {
    consumer_page: *mut libc::c_void,
    data_map: *mut libc::c_void,
    page: usize,
    size: u64,
    /// Where the next record is read.
    read_pos: u64,
    /// Defer the consumer position to what the output took (only worth it with pins).
    hold: bool,
    /// (events dispatched by then, ring position after them), oldest first: one per read batch.
    marks: VecDeque<(u64, u64)>,
    /// Events the output has taken, counted by `CaptureHandle::taken`.
    taken: Arc<AtomicU64>,
}

impl EventRing {
    pub(super) fn open(map: &impl MapCore, hold: bool, taken: Arc<AtomicU64>) -> Result<EventRing, CaptureError> {
        let fd = map.as_fd().as_raw_fd();
        let size = u64::from(map.max_entries());
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let err = |what: &str| CaptureError::Other(format!("event ring: {what}: {}", std::io::Error::last_os_error()));
        // SAFETY: the kernel's ring buffer layout: the consumer page (writable) at 0, then the
        // producer page and the data area mapped twice (read-only).
        let consumer_page = unsafe { libc::mmap(std::ptr::null_mut(), page, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
        if consumer_page == libc::MAP_FAILED {
            return Err(err("map the consumer page"));
        }
        let data_map = unsafe { libc::mmap(std::ptr::null_mut(), page + 2 * size as usize, libc::PROT_READ, libc::MAP_SHARED, fd, page as libc::off_t) };
        if data_map == libc::MAP_FAILED {
            let e = err("map the data");
            // SAFETY: mapped above.
            unsafe { libc::munmap(consumer_page, page) };
            return Err(e);
        }
        let mut ring = EventRing { consumer_page, data_map, page, size, read_pos: 0, hold, marks: VecDeque::new(), taken };
        ring.read_pos = ring.consumer().load(Ordering::Acquire);
        Ok(ring)
    }

    fn consumer(&self) -> &AtomicU64 {
        // SAFETY: the mapped consumer page starts with the kernel's u64 consumer position.
        unsafe { &*(self.consumer_page as *const AtomicU64) }
    }

    fn producer(&self) -> &AtomicU64 {
        // SAFETY: as above, for the producer page.
        unsafe { &*(self.data_map as *const AtomicU64) }
    }

    /// Reads every complete record (`f` gets its bytes); `dispatched` is then asked how many
    /// events have gone to the output so far.
    pub(super) fn consume(&mut self, f: impl FnMut(&[u8]), dispatched: impl FnOnce() -> u64) {
        let start = self.read_pos;
        self.read(f);
        if self.hold && self.read_pos != start {
            self.marks.push_back((dispatched(), self.read_pos));
        }
    }

    /// Reads every complete record (`f` gets its bytes); unless held, they are released at once.
    pub(super) fn read(&mut self, mut f: impl FnMut(&[u8])) {
        let prod = self.producer().load(Ordering::Acquire);
        while self.read_pos < prod {
            // SAFETY: read_pos & (size - 1) + header and record lie within the doubled data area.
            let hdr = unsafe { (self.data_map as *const u8).add(self.page + (self.read_pos & (self.size - 1)) as usize) };
            let len = unsafe { &*(hdr as *const AtomicU32) }.load(Ordering::Acquire);
            if len & BUSY != 0 {
                break; // still being written
            }
            let n = len & !(BUSY | DISCARD);
            if len & DISCARD == 0 {
                // SAFETY: the record's n bytes follow its header, contiguous in the doubled area.
                f(unsafe { std::slice::from_raw_parts(hdr.add(HEADER as usize), n as usize) });
            }
            self.read_pos += (u64::from(n) + HEADER).div_ceil(8) * 8;
        }
        if !self.hold {
            self.consumer().store(self.read_pos, Ordering::Release);
        }
    }

    /// Where the next record will be read: what `release_to` releases up to.
    pub(super) fn read_pos(&self) -> u64 {
        self.read_pos
    }

    /// Moves the kernel's consumer position to `pos` (a `read_pos` of earlier), never back.
    pub(super) fn release_to(&mut self, pos: u64) {
        if pos > self.consumer().load(Ordering::Acquire) && pos <= self.read_pos {
            self.consumer().store(pos, Ordering::Release);
        }
    }

    /// Moves the kernel's consumer position past what the output has taken.
    pub(super) fn release_taken(&mut self) {
        let taken = self.taken.load(Ordering::Acquire);
        let mut to = None;
        while let Some(&(sent, pos)) = self.marks.front() {
            if sent > taken {
                break;
            }
            to = Some(pos);
            self.marks.pop_front();
        }
        if let Some(pos) = to {
            self.consumer().store(pos, Ordering::Release);
        }
    }

    /// At a clean stop: everything read is handed to the output before the process exits.
    pub(super) fn release_all(&mut self) {
        self.marks.clear();
        self.consumer().store(self.read_pos, Ordering::Release);
    }
}

impl Drop for EventRing {
    fn drop(&mut self) {
        // SAFETY: the two mappings made in `open`.
        unsafe {
            libc::munmap(self.consumer_page, self.page);
            libc::munmap(self.data_map, self.page + 2 * self.size as usize);
        }
    }
}
