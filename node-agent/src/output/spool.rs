//! Disk tier of the Kafka spool: append-only segment files of (topic, key, payload) records,
//! read back in order by the drainer (`kafka`) and deleted once every record of a segment was
//! delivered. Bounded by `max_bytes` (all segment files together); a record beyond it is
//! refused and counted by the caller.
//!
//! Record: `u32 body length | u32 CRC-32 of body | body`, body = `u16 topic length | topic |
//! u32 key length | key | payload`, little-endian. Segments `<id>.seg` (20-digit id, ascending).
//! At open every segment is checked record by record; a segment ending in a torn or corrupt
//! record (a crash in the middle of a write) is truncated there.
//!
//! A write that fails (disk full: often after part of the record went out) is rolled back by
//! truncating the segment to its last good length, so no torn record ever sits in the middle of a
//! segment; the caller counts the record as dropped. A record that cannot be read back costs only
//! the rest of its own segment (counted in `take_lost`, logged with file and offset); the
//! records before it were handed out already and the other segments are read as usual.
//!
//! At a clean stop (`close`) what librdkafka still held is written back first (`rescue`: a
//! segment whose id sorts before every other, so order is kept), and each remaining segment
//! gets `<id>.skip` with the number of its leading records already handed out, so a restart
//! neither loses nor repeats them. After a crash, records handed out but not confirmed are
//! sent again (at least once).
//!
//! Length: about 460 lines of code; the rest are its unit tests, kept beside the spool they drive.
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::shared::durable::{crc32, sync_dir};

const HEADER: usize = 8;
/// A record body larger than this is corrupt (Kafka messages are far smaller).
const MAX_BODY: u32 = 64 << 20;


/// One record read back; slices valid until the next call on the spool.
pub struct Record<'a> {
    pub topic: &'a str,
    pub key: &'a [u8],
    pub payload: &'a [u8],
    /// Segment it came from (give it back to `delivered`).
    pub segment: u64,
}

struct Segment {
    bytes: u64,
    /// Records not yet handed out by `advance`.
    unread: u64,
    /// Handed out, delivery not yet confirmed.
    outstanding: u64,
    /// Leading records handed out (this run, or before a clean stop): the reader skips them.
    handed: u64,
    /// Leading records the skip file said were sent when the spool was opened.
    skipped: u64,
}

/// First id of a new spool: rescued segments take ids below the oldest one.
const FIRST_ID: u64 = 1 << 40;

pub struct DiskSpool {
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    segments: BTreeMap<u64, Segment>,
    /// Segment appended to, None until the next append opens a new one.
    writer: Option<(u64, File)>,
    /// Segment being read, its file and the offset of the next record in it.
    reader: Option<(u64, File, u64)>,
    /// Body of the record at the read position, when peeked.
    peeked: Option<usize>,
    total_bytes: u64,
    /// Ids only grow, so a late delivery report never names a newer segment.
    next_id: u64,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    /// Bytes cut off torn or corrupt segment tails at open.
    pub truncated_bytes: u64,
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

/// Reads one record (header + body into `buf`); Ok(None) at a clean end, Err(why) when the
/// rest of the file is torn or corrupt.
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

fn parse(body: &[u8], segment: u64) -> Option<Record<'_>> {
    let tl = u16::from_le_bytes(body.get(0..2)?.try_into().ok()?) as usize;
    let topic = std::str::from_utf8(body.get(2..2 + tl)?).ok()?;
    let kl = u32::from_le_bytes(body.get(2 + tl..6 + tl)?.try_into().ok()?) as usize;
    let key = body.get(6 + tl..6 + tl + kl)?;
    let payload = body.get(6 + tl + kl..)?;
    Some(Record { topic, key, payload, segment })
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

impl DiskSpool {
    /// Opens (creating) `dir`, checks the segments there and truncates a torn tail.
    /// `segment_bytes`: a segment is closed once it reaches this size.
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
            wbuf: Vec::new(),
            rbuf: Vec::new(),
            truncated_bytes: 0,
            lost: (0, 0),
        };
        for id in ids {
            let path = seg_path(dir, id);
            let mut f = io::BufReader::new(File::open(&path)?);
            let (mut good, mut records) = (0u64, 0u64);
            let why = loop {
                match read_record(&mut f, &mut s.rbuf) {
                    Ok(Some(n)) => {
                        good += (HEADER + n) as u64;
                        records += 1;
                    }
                    Ok(None) => break String::new(),
                    Err(why) => break why,
                }
            };
            let len = std::fs::metadata(&path)?.len();
            if good < len {
                log::warn!(
                    "spool: {}: record at offset {good} is torn or corrupt ({why}): truncated {} bytes there (a crash during a write, or damage: what followed is lost)",
                    path.display(),
                    len - good
                );
                OpenOptions::new().write(true).open(&path)?.set_len(good)?;
                s.truncated_bytes += len - good;
            }
            let skip = std::fs::read_to_string(skip_path(dir, id)).ok().and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(0);
            if records <= skip {
                remove_segment(dir, id)?;
                continue;
            }
            s.total_bytes += good;
            s.segments.insert(id, Segment { bytes: good, unread: records - skip, outstanding: 0, handed: skip, skipped: skip });
        }
        Ok(s)
    }

    /// Records not yet handed out.
    pub fn records(&self) -> u64 {
        self.segments.values().map(|s| s.unread).sum()
    }

    /// Bytes of the segment files (including records handed out, not yet delivered).
    pub fn bytes(&self) -> u64 {
        self.total_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.segments.values().all(|s| s.unread == 0)
    }

    /// Appends one record. Ok(false): refused, the bound would be exceeded.
    pub fn append(&mut self, topic: &str, key: &[u8], payload: &[u8]) -> io::Result<bool> {
        let body = 2 + topic.len() + 4 + key.len() + payload.len();
        let need = (HEADER + body) as u64;
        if self.total_bytes + need > self.max_bytes || body as u64 > MAX_BODY as u64 || topic.len() > u16::MAX as usize {
            return Ok(false);
        }
        encode(&mut self.wbuf, topic, key, payload);
        if self.writer.is_none() {
            let id = self.next_id;
            self.next_id += 1;
            let f = OpenOptions::new().create_new(true).append(true).open(seg_path(&self.dir, id))?;
            self.segments.insert(id, Segment { bytes: 0, unread: 0, outstanding: 0, handed: 0, skipped: 0 });
            self.writer = Some((id, f));
        }
        let (id, f) = self.writer.as_mut().unwrap();
        let id = *id;
        // One write per record: a crash leaves at most this record torn.
        if let Err(e) = f.write_all(&self.wbuf) {
            self.roll_back(id);
            return Err(e);
        }
        let seg = self.segments.get_mut(&id).unwrap();
        seg.bytes += need;
        seg.unread += 1;
        self.total_bytes += need;
        if seg.bytes >= self.segment_bytes {
            self.writer = None;
        }
        Ok(true)
    }

    /// A failed append of segment `id` (disk full, I/O error): cuts off what part of the record
    /// went out, so the next record follows the last good one. If even that fails the segment is
    /// closed for writing: its torn tail lies after every counted record (never read) and is
    /// truncated at the next open. A segment left empty is removed.
    fn roll_back(&mut self, id: u64) {
        let seg = &self.segments[&id];
        let (good, empty) = (seg.bytes, seg.unread + seg.outstanding + seg.handed == 0);
        let (_, f) = self.writer.as_ref().unwrap();
        if let Err(e) = f.set_len(good) {
            log::warn!("spool: cannot cut a failed write off {} at {good} bytes ({e}): no more records go to it", seg_path(&self.dir, id).display());
            self.writer = None;
        }
        if empty {
            self.writer = None;
            self.segments.remove(&id);
            let _ = remove_segment(&self.dir, id);
        }
    }

    /// The oldest record not yet handed out. A segment whose next record cannot be read loses
    /// its unread rest (see `take_lost`); reading goes on with the next segment.
    pub fn peek(&mut self) -> Option<Record<'_>> {
        loop {
            if let Some(n) = self.peeked {
                let seg = self.reader.as_ref().unwrap().0;
                return parse(&self.rbuf[..n], seg);
            }
            let (&id, _) = self.segments.iter().find(|(_, s)| s.unread > 0)?;
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
                    self.lose_rest(id, offset, "the file ends there");
                }
                Err(why) => {
                    let offset = *offset;
                    self.lose_rest(id, offset, &why);
                }
            }
        }
    }

    /// Opens segment `id` for reading past the records handed out before (this run, or before
    /// a clean stop). Err: (offset, why) where it could not go on.
    fn open_reader(&mut self, id: u64) -> Result<(), (u64, String)> {
        let mut f = File::open(seg_path(&self.dir, id)).map_err(|e| (0, format!("cannot open: {e}")))?;
        let mut offset = 0u64;
        for _ in 0..self.segments[&id].handed {
            match read_record(&mut f, &mut self.rbuf) {
                Ok(Some(n)) => offset += (HEADER + n) as u64,
                Ok(None) => return Err((offset, "the file ends there".into())),
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
        if self.writer.as_ref().map(|w| w.0) == Some(id) {
            self.writer = None; // nothing more after an unreadable record
        }
        let seg = self.segments.get_mut(&id).unwrap();
        let lost = std::mem::take(&mut seg.unread);
        log::error!(
            "spool: {}: record at offset {offset} unreadable ({why}); the segment's {lost} unread records from there are lost (counted in wattgraph_agent_spool_lost_total), the other segments are unaffected",
            seg_path(&self.dir, id).display()
        );
        self.lost.0 += 1;
        self.lost.1 += lost;
        if seg.outstanding == 0 {
            self.total_bytes -= seg.bytes;
            self.segments.remove(&id);
            if let Err(e) = remove_segment(&self.dir, id) {
                log::warn!("spool: cannot delete {}: {e}", seg_path(&self.dir, id).display());
            }
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
        seg.unread -= 1;
        seg.outstanding += 1;
        seg.handed += 1;
        if seg.unread == 0 {
            self.reader = None;
            if self.writer.as_ref().map(|w| w.0) == Some(id) {
                self.writer = None;
            }
        }
    }

    /// A handed-out record of `segment` was delivered (or failed for good); a segment with
    /// nothing unread and nothing outstanding is deleted.
    pub fn delivered(&mut self, segment: u64) -> io::Result<()> {
        let Some(seg) = self.segments.get_mut(&segment) else { return Ok(()) };
        seg.outstanding = seg.outstanding.saturating_sub(1);
        let open_for_writing = self.writer.as_ref().map(|w| w.0) == Some(segment);
        if seg.unread == 0 && seg.outstanding == 0 && !open_for_writing {
            self.total_bytes -= seg.bytes;
            self.segments.remove(&segment);
            remove_segment(&self.dir, segment)?;
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
        self.segments.insert(id, Segment { bytes, unread: records.len() as u64, outstanding: 0, handed: 0, skipped: 0 });
        self.total_bytes += bytes;
        Ok(bytes)
    }

    /// At a clean stop, once nothing is outstanding: records `<id>.skip` for every segment
    /// partly handed out, so the next start does not send them again. A segment with records
    /// still outstanding (their rescue failed) keeps the skip it had at open: what it handed out
    /// since is sent again (the unconfirmed among them are not lost, the others come twice).
    pub fn close(&mut self) -> io::Result<()> {
        self.writer = None;
        self.reader = None;
        self.peeked = None;
        for (&id, seg) in &self.segments {
            if seg.outstanding > 0 {
                log::warn!(
                    "spool: {}: {} records handed out are unconfirmed; its {} records handed out since the start are sent again at the next start",
                    seg_path(&self.dir, id).display(),
                    seg.outstanding,
                    seg.handed - seg.skipped
                );
            } else if seg.handed > seg.skipped {
                let tmp = self.dir.join(format!("{id:020}.skip.tmp"));
                std::fs::write(&tmp, format!("{}\n", seg.handed))?;
                std::fs::rename(&tmp, skip_path(&self.dir, id))?;
            }
        }
        Ok(())
    }

    /// Segment files on disk (tests).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wg-spool-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn payload(i: u32) -> Vec<u8> {
        format!("payload-{i}-{}", "x".repeat((i % 7) as usize)).into_bytes()
    }

    /// Reads everything, delivering each record at once; returns (topic, key, payload).
    fn drain(s: &mut DiskSpool) -> Vec<(String, Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(r) = s.peek() {
            out.push((r.topic.to_string(), r.key.to_vec(), r.payload.to_vec()));
            let seg = r.segment;
            s.advance();
            s.delivered(seg).unwrap();
        }
        out
    }

    #[test]
    fn order_rollover_and_deletion() {
        let d = dir("order");
        let mut s = DiskSpool::open(&d, 1 << 20, 300).unwrap();
        for i in 0..100 {
            assert!(s.append(if i % 2 == 0 { "a" } else { "topic.b" }, format!("k{}", i % 3).as_bytes(), &payload(i)).unwrap());
        }
        assert_eq!(s.records(), 100);
        let segs = s.segment_count();
        assert!(segs > 5, "rolled over into {segs} segments");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), segs);
        let on_disk: u64 = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
        assert_eq!(s.bytes(), on_disk);
        // Interleave reading and writing: order is kept across both.
        let mut got = Vec::new();
        for _ in 0..10 {
            let r = s.peek().unwrap();
            got.push(r.payload.to_vec());
            let seg = r.segment;
            s.advance();
            s.delivered(seg).unwrap();
        }
        for i in 100..120 {
            s.append("a", b"k", &payload(i)).unwrap();
        }
        got.extend(drain(&mut s).into_iter().map(|r| r.2));
        assert_eq!(got, (0..120).map(payload).collect::<Vec<_>>());
        assert!(s.is_empty() && s.records() == 0 && s.bytes() == 0 && s.segment_count() == 0);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "delivered segments deleted");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn stop_rescues_ahead_and_restart_skips_what_was_sent() {
        let d = dir("rescue");
        let mut s = DiskSpool::open(&d, 1 << 20, 400).unwrap();
        for i in 0..6 {
            s.append("t", b"k", &payload(i)).unwrap();
        }
        // Two handed out and delivered, one handed out and still outstanding at the stop.
        let mut out = Vec::new();
        for _ in 0..3 {
            let r = s.peek().unwrap();
            out.push((r.segment, r.payload.to_vec()));
            s.advance();
        }
        s.delivered(out[0].0).unwrap();
        s.delivered(out[1].0).unwrap();
        // The stop: librdkafka held two memory records and the outstanding one (rescued, then
        // acknowledged on disk), in its order.
        let rescued = vec![
            ("t".to_string(), b"k".to_vec(), b"memory-a".to_vec()),
            ("t".to_string(), b"k".to_vec(), b"memory-b".to_vec()),
            ("t".to_string(), b"k".to_vec(), out[2].1.clone()),
        ];
        s.rescue(&rescued).unwrap();
        s.delivered(out[2].0).unwrap();
        s.close().unwrap();
        drop(s);
        let mut s = DiskSpool::open(&d, 1 << 20, 400).unwrap();
        assert_eq!(s.records(), 3 + 3, "rescued + never handed out");
        let got: Vec<Vec<u8>> = drain(&mut s).into_iter().map(|r| r.2).collect();
        let mut want = vec![b"memory-a".to_vec(), b"memory-b".to_vec(), payload(2)];
        want.extend((3..6).map(payload));
        assert_eq!(got, want, "rescued first, then the rest once");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "segments and skip files deleted");
        // An empty spool: the rescue segment is the first one.
        s.rescue(&rescued[..1]).unwrap();
        s.append("t", b"k", b"after").unwrap();
        assert_eq!(drain(&mut s).into_iter().map(|r| r.2).collect::<Vec<_>>(), vec![b"memory-a".to_vec(), b"after".to_vec()]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_stop_with_unconfirmed_records_sends_them_again() {
        let d = dir("unconfirmed");
        let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        for i in 0..6 {
            s.append("t", b"k", &payload(i)).unwrap();
        }
        // Three handed out; the first and third confirmed, the second not (its rescue failed).
        let mut segs = Vec::new();
        for _ in 0..3 {
            segs.push(s.peek().unwrap().segment);
            s.advance();
        }
        s.delivered(segs[0]).unwrap();
        s.delivered(segs[2]).unwrap();
        s.close().unwrap();
        drop(s);
        let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        let got: Vec<Vec<u8>> = drain(&mut s).into_iter().map(|r| r.2).collect();
        assert_eq!(got, (0..6).map(payload).collect::<Vec<_>>(), "the unconfirmed record is not skipped");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn segment_kept_until_every_record_is_delivered() {
        let d = dir("outstanding");
        let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        for i in 0..3 {
            s.append("t", b"k", &payload(i)).unwrap();
        }
        let mut segs = Vec::new();
        while let Some(r) = s.peek() {
            segs.push(r.segment);
            s.advance();
        }
        assert!(s.is_empty());
        assert_eq!(s.segment_count(), 1, "handed out, not delivered: still on disk");
        s.delivered(segs[0]).unwrap();
        s.delivered(segs[1]).unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        s.delivered(segs[2]).unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        // The next append opens a new segment with a higher id.
        s.append("t", b"k", b"again").unwrap();
        assert_eq!(s.peek().unwrap().segment, segs[0] + 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bound_refuses_and_frees_after_delivery() {
        let d = dir("bound");
        let rec = (HEADER + 2 + 1 + 4 + 1 + 100) as u64; // topic "t", key "k", 100-byte payload
        let mut s = DiskSpool::open(&d, rec * 10, rec * 4).unwrap();
        let body = [7u8; 100];
        let accepted = (0..15).filter(|_| s.append("t", b"k", &body).unwrap()).count();
        assert_eq!(accepted, 10, "exactly the bound");
        assert_eq!(s.bytes(), rec * 10);
        // Deliver the first segment (4 records): room for 4 more.
        for _ in 0..4 {
            let seg = s.peek().unwrap().segment;
            s.advance();
            s.delivered(seg).unwrap();
        }
        assert_eq!(s.bytes(), rec * 6);
        assert_eq!((0..6).filter(|_| s.append("t", b"k", &body).unwrap()).count(), 4);
        assert_eq!(drain(&mut s).len(), 10);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn restart_reads_existing_segments_in_order() {
        let d = dir("restart");
        {
            let mut s = DiskSpool::open(&d, 1 << 20, 200).unwrap();
            for i in 0..50 {
                s.append("t", format!("{i}").as_bytes(), &payload(i)).unwrap();
            }
        }
        let mut s = DiskSpool::open(&d, 1 << 20, 200).unwrap();
        assert_eq!((s.records(), s.truncated_bytes), (50, 0));
        for i in 50..60 {
            s.append("t", format!("{i}").as_bytes(), &payload(i)).unwrap();
        }
        let got = drain(&mut s);
        assert_eq!(got.iter().map(|r| r.2.clone()).collect::<Vec<_>>(), (0..60).map(payload).collect::<Vec<_>>());
        assert!(got.iter().enumerate().all(|(i, r)| r.1 == format!("{i}").as_bytes() && r.0 == "t"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_unreadable_record_costs_only_the_rest_of_its_segment() {
        let d = dir("damaged");
        let rec = (HEADER + 2 + 1 + 4 + 1 + 20) as u64;
        let mut s = DiskSpool::open(&d, 1 << 20, rec * 10).unwrap();
        for i in 0..30u32 {
            s.append("t", b"k", format!("{i:020}").as_bytes()).unwrap();
        }
        assert_eq!(s.segment_count(), 3);
        // Damage (after open, so only the reader sees it) record 4 of the second segment.
        let second = seg_path(&d, FIRST_ID + 1);
        let mut bytes = std::fs::read(&second).unwrap();
        bytes[4 * rec as usize + HEADER + 9] ^= 0xff;
        std::fs::write(&second, &bytes).unwrap();
        let got: Vec<u32> = drain(&mut s).iter().map(|r| std::str::from_utf8(&r.2).unwrap().parse().unwrap()).collect();
        assert_eq!(got, (0..14).chain(20..30).collect::<Vec<_>>(), "before the bad record and the other segments");
        assert_eq!(s.take_lost(), (1, 6));
        assert_eq!(s.take_lost(), (0, 0));
        assert!(s.is_empty() && s.bytes() == 0 && std::fs::read_dir(&d).unwrap().count() == 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn torn_tail_is_truncated() {
        let d = dir("torn");
        let last;
        {
            let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
            for i in 0..5 {
                s.append("t", b"k", &payload(i)).unwrap();
            }
            last = seg_path(&d, FIRST_ID);
        }
        let good = std::fs::metadata(&last).unwrap().len();
        // A crash in the middle of the sixth write: its header and half its body.
        let mut f = OpenOptions::new().append(true).open(&last).unwrap();
        f.write_all(&[40, 0, 0, 0, 1, 2, 3, 4, 1, 0, b't']).unwrap();
        drop(f);
        let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        assert_eq!((s.records(), s.truncated_bytes), (5, 11));
        assert_eq!(std::fs::metadata(&last).unwrap().len(), good);
        // A flipped byte in the last record (a new segment after the restart): its CRC fails,
        // the record is cut and the segment, now empty, removed.
        s.append("t", b"k", b"sixth").unwrap();
        drop(s);
        let newest = seg_path(&d, FIRST_ID + 1);
        let mut bytes = std::fs::read(&newest).unwrap();
        *bytes.last_mut().unwrap() ^= 0xff;
        std::fs::write(&newest, &bytes).unwrap();
        let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        assert_eq!((s.records(), s.segment_count()), (5, 1));
        assert!(!newest.exists());
        assert_eq!(drain(&mut s).into_iter().map(|r| r.2).collect::<Vec<_>>(), (0..5).map(payload).collect::<Vec<_>>());
        // A segment holding only a torn record is removed.
        std::fs::write(seg_path(&d, 7), [9u8, 0, 0]).unwrap();
        let s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        assert_eq!((s.records(), s.segment_count()), (0, 0));
        assert!(!seg_path(&d, 7).exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
