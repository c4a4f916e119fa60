//! Unit tests of the disk spool (`spool.rs`), beside it.
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
        let seq = r.seq;
        s.advance();
        s.delivered(seq).unwrap();
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
    assert_eq!(s.allocated(), on_disk, "the records and the reserve of the segment being written");
    // Interleave reading and writing: order is kept across both.
    let mut got = Vec::new();
    for _ in 0..10 {
        let r = s.peek().unwrap();
        got.push(r.payload.to_vec());
        let seq = r.seq;
        s.advance();
        s.delivered(seq).unwrap();
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
        out.push((r.seq, r.payload.to_vec()));
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
    let mut seqs = Vec::new();
    for _ in 0..3 {
        seqs.push(s.peek().unwrap().seq);
        s.advance();
    }
    s.delivered(seqs[0]).unwrap();
    s.delivered(seqs[2]).unwrap();
    s.close().unwrap();
    drop(s);
    let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
    let got: Vec<Vec<u8>> = drain(&mut s).into_iter().map(|r| r.2).collect();
    assert_eq!(got, (1..6).map(payload).collect::<Vec<_>>(), "from the unconfirmed record on, the confirmed one before it not again");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn segment_kept_until_every_record_is_delivered() {
    let d = dir("outstanding");
    let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
    for i in 0..3 {
        s.append("t", b"k", &payload(i)).unwrap();
    }
    let mut seqs = Vec::new();
    while let Some(r) = s.peek() {
        seqs.push(r.seq);
        s.advance();
    }
    assert!(s.is_empty());
    assert_eq!(s.segment_count(), 1, "handed out, not delivered: still on disk");
    s.delivered(seqs[0]).unwrap();
    s.delivered(seqs[1]).unwrap();
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    s.delivered(seqs[2]).unwrap();
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    // The next append opens a new segment with a higher id.
    s.append("t", b"k", b"again").unwrap();
    assert!(seg_path(&d, FIRST_ID + 1).exists() && s.segment_count() == 1);
    assert_eq!(s.peek().unwrap().seq, seqs[2] + 1);
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
        let seq = s.peek().unwrap().seq;
        s.advance();
        s.delivered(seq).unwrap();
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
        s.close().unwrap(); // gives back the reserve: the file ends after the fifth record
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
    s.close().unwrap();
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

#[test]
fn a_killed_writer_loses_nothing_journaled_and_repeats_only_what_was_unconfirmed() {
    let d = dir("killed");
    let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
    let seqs: Vec<u64> = (0..10).map(|i| s.journal("t", b"k", &payload(i)).unwrap().unwrap()).collect();
    assert!(s.is_empty(), "journaled records are handed out, nothing waits");
    assert_eq!(s.bytes(), 0, "nothing waits");
    assert_eq!(s.allocated(), 1 << 20, "the segment's reserve");
    // Kafka confirmed 0..=3 and, out of order, 6; a checkpoint; then 5, not checkpointed.
    for i in [0, 1, 2, 3, 6] {
        s.delivered(seqs[i]).unwrap();
    }
    s.checkpoint().unwrap();
    s.delivered(seqs[5]).unwrap();
    drop(s); // a kill: no close
    let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
    assert!(s.unclean_stop, "the segment's reserve was never given back");
    assert_eq!(s.truncated_bytes, 0, "an unused reserve is not a torn record");
    let got: Vec<Vec<u8>> = drain(&mut s).into_iter().map(|r| r.2).collect();
    assert_eq!(got, (4..10).map(payload).collect::<Vec<_>>(), "from the first record unconfirmed at the checkpoint");
    s.close().unwrap();
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_record_whose_header_was_not_copied_ends_the_segment() {
    let d = dir("headerless");
    let rec = |i: u32| HEADER + 2 + 1 + 4 + 1 + payload(i).len();
    {
        let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
        for i in 0..3 {
            s.journal("t", b"k", &payload(i)).unwrap();
        }
    }
    // A kill between the body's copy and the header's: the third record's header is still zero.
    let path = seg_path(&d, FIRST_ID);
    let mut bytes = std::fs::read(&path).unwrap();
    let third = rec(0) + rec(1);
    bytes[third..third + HEADER].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
    assert_eq!((s.records(), s.truncated_bytes, s.unclean_stop), (2, 0, true));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), third as u64, "cut after the second record");
    assert_eq!(drain(&mut s).into_iter().map(|r| r.2).collect::<Vec<_>>(), (0..2).map(payload).collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_journaled_record_librdkafka_refuses_waits_on_disk_in_order() {
    let d = dir("unhand");
    let mut s = DiskSpool::open(&d, 1 << 20, 1 << 20).unwrap();
    let first = s.journal("t", b"k", &payload(0)).unwrap().unwrap();
    let second = s.journal("t", b"k", &payload(1)).unwrap().unwrap();
    s.unhand_last();
    assert!(!s.is_empty());
    s.append("t", b"k", &payload(2)).unwrap();
    s.delivered(first).unwrap();
    let r = s.peek().unwrap();
    assert_eq!((r.seq, r.payload), (second, &payload(1)[..]), "the same record, the same number");
    assert_eq!(drain(&mut s).into_iter().map(|r| r.2).collect::<Vec<_>>(), (1..3).map(payload).collect::<Vec<_>>());
    assert_eq!((s.segment_count(), std::fs::read_dir(&d).unwrap().count()), (0, 0));
    let _ = std::fs::remove_dir_all(&d);
}
