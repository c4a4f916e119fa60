//! Disk tier of the Kafka spool: segment files of (topic, key, payload) records, deleted once every
//! record of a segment was delivered. Bounded by `max_bytes` (all segment files together); a record
//! beyond it is refused and counted by the caller.
//!
//! Two ways in, both kept in the order of arrival:
//! - `journal`: a record librdkafka takes at once (the memory tier) is written here first, so a
//!   killed agent (SIGKILL, OOM) loses none of what it accepted: its successor sends every record
//!   not confirmed by Kafka again. Only while nothing waits on disk.
//! - `append`: a record librdkafka has no room for; the drainer (`kafka`) reads it back (`peek`,
//!   `advance`) once there is room. While anything waits, every record comes this way (order).
//!
//! Record: `u32 body length | u32 CRC-32 of body | body`, body = `u16 topic length | topic |
//! u32 key length | key | payload`, little-endian. Segments `<id>.seg` (20-digit id, ascending),
//! written through a shared memory map of space reserved up front (`posix_fallocate`: a full disk
//! refuses a segment, never a write into it): a record is a copy into the page cache, no system
//! call, and the page cache outlives the process. The header is copied last, so a record cut off
//! by a kill ends the segment (a zero length is its end), and a clean stop trims the reserve.
//! At open every segment is checked record by record; a torn or corrupt record (damage, a machine
//! crash) is cut off there with what follows.
//!
//! Delivery: each record has a sequence number (given back by `delivered`); a segment's leading
//! delivered records (delivered, failed for good or rescued) are its `<id>.skip`, written every
//! `checkpoint` and at `close`, so a restart sends each record after it again, none before: after
//! a kill, those delivered since the last checkpoint or out of order come twice (at least once);
//! after a clean stop, none.
//!
//! At a clean stop (`close`) what librdkafka still held is written back first (`rescue`: a segment
//! whose id sorts before every other, so order is kept).
//!
//! A record that cannot be read back costs only the rest of its own segment (counted in
//! `take_lost`, logged with file and offset); the other segments are read as usual.
use std::collections::{BTreeMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use memmap2::{MmapMut, MmapOptions};

use crate::shared::durable::{crc32, sync_dir};

const HEADER: usize = 8;
/// A record body larger than this is corrupt (Kafka messages are far smaller).
const MAX_BODY: u32 = 64 << 20;

/// One record read back; slices valid until the next call on the spool.
pub struct Record<'a> {
    pub topic: &'a str,
    pub key: &'a [u8],
    pub payload: &'a [u8],
    /// Its sequence number (give it back to `delivered`).
    pub seq: u64,
}

struct Segment {
    /// Sequence number of its first record (numbered at open in segment order, then as written).
    first_seq: u64,
    /// Records in the file that are still ours (not lost to damage).
    count: u64,
    /// Bytes of its records.
    bytes: u64,
    /// Bytes of its unread records.
    waiting: u64,
    /// Leading records handed to librdkafka (this run, or delivered before the open); the rest
    /// are unread.
    handed: u64,
    /// Handed out, not yet delivered.
    outstanding: u64,
    /// Leading records delivered: the skip of a restart.
    acked: u64,
    /// Records from `acked` on: delivered (true) out of order.
    later: VecDeque<bool>,
    /// `acked` as its skip file says.
    persisted: u64,
}

impl Segment {
    fn new(first_seq: u64) -> Segment {
        Segment { first_seq, count: 0, bytes: 0, waiting: 0, handed: 0, outstanding: 0, acked: 0, later: VecDeque::new(), persisted: 0 }
    }

    fn unread(&self) -> u64 {
        self.count - self.handed
    }
}

/// The segment being written: its file, mapped, and how far it is filled.
struct Writer {
    id: u64,
    file: File,
    map: MmapMut,
    used: usize,
    /// Length of the last record written.
    last: usize,
}

/// First id of a new spool: rescued segments take ids below the oldest one.
const FIRST_ID: u64 = 1 << 40;

pub struct DiskSpool {
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    segments: BTreeMap<u64, Segment>,
    /// Segment appended to, None until the next record opens a new one.
    writer: Option<Writer>,
    /// Segment being read, its file and the offset of the next record in it.
    reader: Option<(u64, File, u64)>,
    /// Body of the record at the read position, when peeked.
    peeked: Option<usize>,
    /// Bytes of the records in the segment files.
    total_bytes: u64,
    /// Ids only grow, so a late delivery report never names a newer segment.
    next_id: u64,
    next_seq: u64,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    /// Bytes cut off torn or corrupt segment tails at open.
    pub truncated_bytes: u64,
    /// A segment was left open by the previous run (it was killed, or the machine stopped).
    pub unclean_stop: bool,
    /// Unreadable segment rests since the last `take_lost`: (incidents, records).
    lost: (u64, u64),
}

fn seg_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.seg"))
}

fn skip_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.skip"))
}

/// Deletes a segment and its skip file.
fn remove_segment(dir: &Path, id: u64) -> io::Result<()> {
    let _ = std::fs::remove_file(skip_path(dir, id));
    std::fs::remove_file(seg_path(dir, id))
}

/// Reads one record (header + body into `buf`); Ok(None) at the end (end of file, or the zero
/// header of a segment's unused reserve), Err(why) when the rest of the file is torn or corrupt.
fn read_record(f: &mut impl Read, buf: &mut Vec<u8>) -> Result<Option<usize>, String> {
    let mut h = [0u8; HEADER];
    let mut got = 0;
    while got < HEADER {
        match f.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(format!("the file ends {got} bytes into a record header")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read error: {e}")),
        }
    }
    let len = u32::from_le_bytes(h[0..4].try_into().unwrap());
    let crc = u32::from_le_bytes(h[4..8].try_into().unwrap());
    if len == 0 {
        return Ok(None);
    }
    if !(6..=MAX_BODY).contains(&len) {
        return Err(format!("record length {len} out of range"));
    }
    buf.resize(len as usize, 0);
    f.read_exact(buf).map_err(|e| format!("record of {len} bytes cut short ({e})"))?;
    if crc32(buf) != crc {
        return Err("CRC mismatch".into());
    }
    if parse(buf, 0).is_none() {
        return Err("malformed record body".into());
    }
    Ok(Some(len as usize))
}

fn parse(body: &[u8], seq: u64) -> Option<Record<'_>> {
    let tl = u16::from_le_bytes(body.get(0..2)?.try_into().ok()?) as usize;
    let topic = std::str::from_utf8(body.get(2..2 + tl)?).ok()?;
    let kl = u32::from_le_bytes(body.get(2 + tl..6 + tl)?.try_into().ok()?) as usize;
    let key = body.get(6 + tl..6 + tl + kl)?;
    let payload = body.get(6 + tl + kl..)?;
    Some(Record { topic, key, payload, seq })
}

/// One record (header + body) into `b`.
fn encode(b: &mut Vec<u8>, topic: &str, key: &[u8], payload: &[u8]) {
    let body = 2 + topic.len() + 4 + key.len() + payload.len();
    b.clear();
    b.extend_from_slice(&(body as u32).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&(topic.len() as u16).to_le_bytes());
    b.extend_from_slice(topic.as_bytes());
    b.extend_from_slice(&(key.len() as u32).to_le_bytes());
    b.extend_from_slice(key);
    b.extend_from_slice(payload);
    let crc = crc32(&b[HEADER..]);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Writes `n` (a skip count) as segment `id`'s skip file, replacing it whole.
fn write_skip(dir: &Path, id: u64, n: u64) -> io::Result<()> {
    let tmp = dir.join(format!("{id:020}.skip.tmp"));
    let r = std::fs::write(&tmp, format!("{n}\n")).and_then(|()| std::fs::rename(&tmp, skip_path(dir, id)));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

impl DiskSpool {
    /// Opens (creating) `dir`, checks the segments there and truncates a torn tail.
    /// `segment_bytes`: the space reserved for a segment (a record larger than it gets its own).
    pub fn open(dir: &Path, max_bytes: u64, segment_bytes: u64) -> io::Result<DiskSpool> {
        std::fs::create_dir_all(dir)?;
        let names: Vec<String> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
        // A rescue or skip file whose write did not finish (rename is the commit).
        for tmp in names.iter().filter(|n| n.ends_with(".tmp")) {
            std::fs::remove_file(dir.join(tmp))?;
        }
        let mut ids: Vec<u64> = names.iter().filter_map(|n| n.strip_suffix(".seg")?.parse().ok()).collect();
        ids.sort_unstable();
        let mut s = DiskSpool {
            dir: dir.to_path_buf(),
            max_bytes,
            segment_bytes: segment_bytes.max(1),
            segments: BTreeMap::new(),
            writer: None,
            reader: None,
            peeked: None,
            total_bytes: 0,
            next_id: ids.last().map_or(FIRST_ID, |l| l + 1),
            next_seq: 0,
            wbuf: Vec::new(),
            rbuf: Vec::new(),
            truncated_bytes: 0,
            unclean_stop: false,
            lost: (0, 0),
        };
        for id in ids {
            let path = seg_path(dir, id);
            let skip = std::fs::read_to_string(skip_path(dir, id)).ok().and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(0);
            let mut f = io::BufReader::new(File::open(&path)?);
            let (mut good, mut records, mut waiting) = (0u64, 0u64, 0u64);
            let why = loop {
                match read_record(&mut f, &mut s.rbuf) {
                    Ok(Some(n)) => {
                        good += (HEADER + n) as u64;
                        if records >= skip {
                            waiting += (HEADER + n) as u64;
                        }
                        records += 1;
                    }
                    Ok(None) => break None,
                    Err(why) => break Some(why),
                }
            };
            let len = std::fs::metadata(&path)?.len();
            if good < len {
                match why {
                    // The reserve of a segment its writer never closed.
                    None => s.unclean_stop = true,
                    Some(why) => {
                        log::warn!(
                            "spool: {}: record at offset {good} is torn or corrupt ({why}): truncated {} bytes there (damage, or a machine crash: what followed is lost)",
                            path.display(),
                            len - good
                        );
                        s.truncated_bytes += len - good;
                    }
                }
                OpenOptions::new().write(true).open(&path)?.set_len(good)?;
            }
            if records <= skip {
                remove_segment(dir, id)?;
                continue;
            }
            s.total_bytes += good;
            let mut seg = Segment::new(s.next_seq);
            (seg.count, seg.bytes, seg.waiting) = (records, good, waiting);
            (seg.handed, seg.acked, seg.persisted) = (skip, skip, skip);
            s.next_seq += records;
            s.segments.insert(id, seg);
        }
        if s.unclean_stop {
            log::warn!(
                "spool: the previous run did not close its spool (killed, or the machine stopped): its {} records Kafka had not confirmed are sent again (those it had, since its last checkpoint, come twice; the job drops such replays)",
                s.records()
            );
        }
        Ok(s)
    }

    /// Records not yet handed out.
    pub fn records(&self) -> u64 {
        self.segments.values().map(Segment::unread).sum()
    }

    /// Bytes of the records not yet handed out.
    pub fn bytes(&self) -> u64 {
        self.segments.values().map(|s| s.waiting).sum()
    }

    /// Bytes the segment files take: every record not yet deleted with its segment (delivered
    /// ones too) and the unused reserve of the one being written. The bound applies to this.
    pub fn allocated(&self) -> u64 {
        self.total_bytes + self.writer.as_ref().map_or(0, |w| (w.map.len() - w.used) as u64)
    }

    pub fn is_empty(&self) -> bool {
        self.segments.values().all(|s| s.unread() == 0)
    }

    /// Appends one record for the drainer to read back. Ok(false): refused, the bound would be
    /// exceeded.
    pub fn append(&mut self, topic: &str, key: &[u8], payload: &[u8]) -> io::Result<bool> {
        Ok(self.write(topic, key, payload, false)?.is_some())
    }

    /// Writes one record that is handed to librdkafka at once (call only while `is_empty`, so
    /// order holds): its sequence number for `delivered`, or None when the bound refuses it.
    pub fn journal(&mut self, topic: &str, key: &[u8], payload: &[u8]) -> io::Result<Option<u64>> {
        debug_assert!(self.is_empty(), "journal while records wait on disk would reorder");
        self.write(topic, key, payload, true)
    }

    /// The record `journal` just wrote was not taken by librdkafka after all (its queue is full):
    /// it waits on disk instead, for the drainer.
    pub fn unhand_last(&mut self) {
        let Some(w) = &self.writer else { return };
        let seg = self.segments.get_mut(&w.id).unwrap();
        debug_assert!(seg.handed == seg.count && seg.outstanding > 0);
        seg.handed -= 1;
        seg.outstanding -= 1;
        seg.waiting += w.last as u64;
    }

    fn write(&mut self, topic: &str, key: &[u8], payload: &[u8], handed: bool) -> io::Result<Option<u64>> {
        let body = 2 + topic.len() + 4 + key.len() + payload.len();
        let need = HEADER + body;
        if body as u64 > MAX_BODY as u64 || topic.len() > u16::MAX as usize {
            return Ok(None);
        }
        if self.writer.as_ref().is_some_and(|w| w.used + need > w.map.len()) {
            self.close_writer();
        }
        if self.writer.is_none() {
            let room = self.max_bytes.saturating_sub(self.total_bytes);
            if (need as u64) > room {
                return Ok(None);
            }
            self.open_writer(self.segment_bytes.max(need as u64).min(room), need as u64)?;
        }
        encode(&mut self.wbuf, topic, key, payload);
        let w = self.writer.as_mut().unwrap();
        let at = w.used;
        // Body first, header last: a copy cut off by a kill leaves a zero header, the segment's end.
        w.map[at + HEADER..at + need].copy_from_slice(&self.wbuf[HEADER..]);
        w.map[at..at + HEADER].copy_from_slice(&self.wbuf[..HEADER]);
        w.used += need;
        w.last = need;
        let seg = self.segments.get_mut(&w.id).unwrap();
        seg.count += 1;
        seg.bytes += need as u64;
        if handed {
            seg.handed += 1;
            seg.outstanding += 1;
        } else {
            seg.waiting += need as u64;
        }
        self.total_bytes += need as u64;
        self.next_seq += 1;
        Ok(Some(seg.first_seq + seg.count - 1))
    }

    /// A new segment of `cap` bytes (a quarter of that and so on, down to `need`, when the disk
    /// has less room), reserved on disk and mapped.
    fn open_writer(&mut self, mut cap: u64, need: u64) -> io::Result<()> {
        let id = self.next_id;
        let path = seg_path(&self.dir, id);
        let file = OpenOptions::new().create_new(true).read(true).write(true).open(&path)?;
        let mut reserve = || -> io::Result<MmapMut> {
            loop {
                // SAFETY: posix_fallocate on our own open descriptor; it returns the error number.
                match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, cap as libc::off_t) } {
                    0 => break,
                    libc::ENOSPC if cap > need => cap = (cap / 4).max(need),
                    r => return Err(io::Error::from_raw_os_error(r)),
                }
            }
            // SAFETY: the file is this spool's alone (created just now, create_new), and it is
            // never shortened while mapped (close_writer unmaps first).
            unsafe { MmapOptions::new().len(cap as usize).map_mut(&file) }
        };
        let map = match reserve() {
            Ok(m) => m,
            Err(e) => {
                drop(file);
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        self.next_id += 1;
        self.segments.insert(id, Segment::new(self.next_seq));
        self.writer = Some(Writer { id, file, map, used: 0, last: 0 });
        Ok(())
    }

    /// No more records go to the segment being written: its unused reserve is given back (unmapped
    /// first), and it is deleted if every record in it was delivered.
    fn close_writer(&mut self) {
        let Some(Writer { id, file, map, used, .. }) = self.writer.take() else { return };
        drop(map);
        if let Err(e) = file.set_len(used as u64) {
            log::warn!("spool: cannot give back the unused reserve of {}: {e}", seg_path(&self.dir, id).display());
        }
        if let Err(e) = self.remove_if_done(id) {
            log::warn!("spool: cannot delete {}: {e}", seg_path(&self.dir, id).display());
        }
    }

    /// Deletes segment `id` once nothing in it is unread or outstanding (and it is not written to).
    fn remove_if_done(&mut self, id: u64) -> io::Result<()> {
        let Some(seg) = self.segments.get(&id) else { return Ok(()) };
        if seg.unread() > 0 || seg.outstanding > 0 || self.writer.as_ref().is_some_and(|w| w.id == id) {
            return Ok(());
        }
        self.total_bytes -= seg.bytes;
        self.segments.remove(&id);
        if self.reader.as_ref().is_some_and(|r| r.0 == id) {
            self.reader = None;
        }
        remove_segment(&self.dir, id)
    }

    /// The oldest record not yet handed out. A segment whose next record cannot be read loses
    /// its unread rest (see `take_lost`); reading goes on with the next segment.
    pub fn peek(&mut self) -> Option<Record<'_>> {
        loop {
            if let Some(n) = self.peeked {
                let id = self.reader.as_ref().unwrap().0;
                let seg = &self.segments[&id];
                return parse(&self.rbuf[..n], seg.first_seq + seg.handed);
            }
            let (&id, _) = self.segments.iter().find(|(_, s)| s.unread() > 0)?;
            if self.reader.as_ref().map(|r| r.0) != Some(id) {
                if let Err((offset, why)) = self.open_reader(id) {
                    self.lose_rest(id, offset, &why);
                    continue;
                }
            }
            let (_, f, offset) = self.reader.as_mut().unwrap();
            match read_record(f, &mut self.rbuf) {
                Ok(Some(n)) => self.peeked = Some(n),
                Ok(None) => {
                    let offset = *offset;
                    self.lose_rest(id, offset, "the segment ends there");
                }
                Err(why) => {
                    let offset = *offset;
                    self.lose_rest(id, offset, &why);
                }
            }
        }
    }

    /// Opens segment `id` for reading past the records handed out before (this run, or delivered
    /// before the open). Err: (offset, why) where it could not go on.
    fn open_reader(&mut self, id: u64) -> Result<(), (u64, String)> {
        let mut f = File::open(seg_path(&self.dir, id)).map_err(|e| (0, format!("cannot open: {e}")))?;
        let mut offset = 0u64;
        for _ in 0..self.segments[&id].handed {
            match read_record(&mut f, &mut self.rbuf) {
                Ok(Some(n)) => offset += (HEADER + n) as u64,
                Ok(None) => return Err((offset, "the segment ends there".into())),
                Err(why) => return Err((offset, why)),
            }
        }
        self.reader = Some((id, f, offset));
        Ok(())
    }

    /// The record at `offset` of segment `id` cannot be read: the segment's unread records are
    /// lost (counted, logged once); those before it were handed out already.
    fn lose_rest(&mut self, id: u64, offset: u64, why: &str) {
        self.reader = None;
        if self.writer.as_ref().is_some_and(|w| w.id == id) {
            self.close_writer(); // nothing more after an unreadable record
        }
        let Some(seg) = self.segments.get_mut(&id) else { return };
        let lost = seg.unread();
        seg.count = seg.handed;
        seg.waiting = 0;
        log::error!(
            "spool: {}: record at offset {offset} unreadable ({why}); the segment's {lost} unread records from there are lost (counted in wattgraph_agent_spool_lost_total), the other segments are unaffected",
            seg_path(&self.dir, id).display()
        );
        self.lost.0 += 1;
        self.lost.1 += lost;
        if let Err(e) = self.remove_if_done(id) {
            log::warn!("spool: cannot delete {}: {e}", seg_path(&self.dir, id).display());
        }
    }

    /// (unreadable segment rests, records lost with them) since the last call.
    pub fn take_lost(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.lost)
    }

    /// Hands out the peeked record (it must be `delivered` later). Closes the write segment
    /// when the reader reaches its end, so it can be deleted once delivered.
    pub fn advance(&mut self) {
        let Some(n) = self.peeked.take() else { return };
        let (id, _, offset) = self.reader.as_mut().unwrap();
        let id = *id;
        *offset += (HEADER + n) as u64;
        let seg = self.segments.get_mut(&id).unwrap();
        seg.waiting -= (HEADER + n) as u64;
        seg.outstanding += 1;
        seg.handed += 1;
        if seg.unread() == 0 {
            self.reader = None;
            if self.writer.as_ref().is_some_and(|w| w.id == id) {
                self.close_writer();
            }
        }
    }

    /// Record `seq`, handed out, was delivered (or failed for good, or was rescued); a segment
    /// with nothing unread and nothing outstanding is deleted.
    pub fn delivered(&mut self, seq: u64) -> io::Result<()> {
        let Some((&id, seg)) = self.segments.iter_mut().find(|(_, s)| seq >= s.first_seq && seq < s.first_seq + s.handed) else {
            return Ok(());
        };
        let Some(i) = (seq - seg.first_seq).checked_sub(seg.acked).map(|i| i as usize) else { return Ok(()) };
        if i >= seg.later.len() {
            seg.later.resize(i + 1, false);
        } else if seg.later[i] {
            return Ok(()); // reported twice
        }
        seg.later[i] = true;
        while seg.later.front() == Some(&true) {
            seg.later.pop_front();
            seg.acked += 1;
        }
        seg.outstanding = seg.outstanding.saturating_sub(1);
        self.remove_if_done(id)
    }

    /// Records how far each segment was delivered (its skip file), so a restart after a kill sends
    /// again only what was not confirmed by then.
    pub fn checkpoint(&mut self) -> io::Result<()> {
        for (&id, seg) in self.segments.iter_mut().filter(|(_, s)| s.acked > s.persisted) {
            write_skip(&self.dir, id, seg.acked)?;
            seg.persisted = seg.acked;
        }
        Ok(())
    }

    /// Writes `records` (topic, key, payload: what librdkafka still held at a stop, in its
    /// order) to a new segment read before every other. Past the bound too: these were
    /// accepted already. Returns the bytes written.
    pub fn rescue(&mut self, records: &[(String, Vec<u8>, Vec<u8>)]) -> io::Result<u64> {
        if records.is_empty() {
            return Ok(0);
        }
        let id = match self.segments.keys().next() {
            Some(&first) if first > 0 => first - 1,
            Some(_) => return Err(io::Error::other("no segment id left below the oldest")),
            None => self.next_id,
        };
        self.next_id = self.next_id.max(id + 1);
        // Written aside and renamed once complete: a failure (disk full) leaves no part of it to
        // be sent at the next start (the caller counts all of it).
        let tmp = self.dir.join(format!("{id:020}.seg.tmp"));
        let write = |wbuf: &mut Vec<u8>| -> io::Result<u64> {
            let mut f = OpenOptions::new().create_new(true).write(true).open(&tmp)?;
            let mut bytes = 0;
            for (topic, key, payload) in records {
                encode(wbuf, topic, key, payload);
                f.write_all(wbuf)?;
                bytes += wbuf.len() as u64;
            }
            f.sync_all()?;
            std::fs::rename(&tmp, seg_path(&self.dir, id))?;
            // In place from here on; only a power loss could still undo the rename.
            if let Err(e) = sync_dir(&self.dir) {
                log::warn!("spool: fsync of {} failed: {e}", self.dir.display());
            }
            Ok(bytes)
        };
        let bytes = match write(&mut self.wbuf) {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let mut seg = Segment::new(self.next_seq);
        (seg.count, seg.bytes, seg.waiting) = (records.len() as u64, bytes, bytes);
        self.next_seq += seg.count;
        self.segments.insert(id, seg);
        self.total_bytes += bytes;
        Ok(bytes)
    }

    /// At a clean stop, once nothing is outstanding (delivered, or rescued and acknowledged): the
    /// segment being written gives back its reserve, and every segment records how far it was
    /// delivered, so the next start neither loses nor repeats a record. Records still outstanding
    /// (their rescue failed) are sent again, with those after them.
    pub fn close(&mut self) -> io::Result<()> {
        self.close_writer();
        self.reader = None;
        self.peeked = None;
        for (&id, seg) in &self.segments {
            if seg.outstanding > 0 {
                log::warn!(
                    "spool: {}: {} records handed out are unconfirmed: the segment is sent again from the first of them at the next start",
                    seg_path(&self.dir, id).display(),
                    seg.outstanding
                );
            }
        }
        self.checkpoint()
    }

    /// Segment files on disk (tests).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
}

#[cfg(test)]
#[path = "spool_tests.rs"]
mod tests;
