//! The agent's producer (output/kafka.rs) through an outage of librdkafka's in-process mock cluster
//! (rdkafka::mocking; no external broker): the broker goes down while records keep coming,
//! the memory tier fills (journaled on disk), then the disk spool up to its bound, the rest is
//! dropped and counted; the broker comes back while records keep coming; every accepted record
//! arrives exactly once and in order per key, the spool empties and its segment files are
//! deleted. An agent killed with records in its memory tier loses none of them.
use crate::common;
use common::agent;
use common::netns::NetnsThread;
use common::tmpfs::Tmpfs;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;
use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use wattgraph_agent::output::avro::cgroup::decode_single_object;
use wattgraph_agent::output::kafka::{EventProducer, Sent, SpoolOptions};

const TOPIC: &str = "spool.test";
const KEYS: usize = 4;
const PAYLOAD: usize = 100;
/// On disk: header 8 + topic length 2 + topic 10 + key length 4 + key 2 + payload.
const REC_DISK: u64 = 8 + 2 + 10 + 4 + 2 + PAYLOAD as u64;
const DISK_RECORDS: u64 = 400;
const MEMORY: u64 = 100;

/// librdkafka's in-process mock cluster (one broker) holding `topic`, and its bootstrap servers.
fn mock_cluster(topic: &str, partitions: i32) -> (MockCluster<'static, rdkafka::producer::DefaultProducerContext>, String) {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(topic, partitions, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    (mock, brokers)
}

/// Record `seq` of key `seq % KEYS`: the payload starts with the sequence number.
fn record(seq: usize) -> (String, Vec<u8>) {
    let mut p = format!("{seq:010}").into_bytes();
    p.resize(PAYLOAD, b'.');
    (format!("k{}", seq % KEYS), p)
}

fn spool_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "seg")).count()).unwrap_or(0)
}

#[test]
fn outage_spools_to_memory_then_disk_and_delivers_in_order_exactly_once() {
    let (mock, brokers) = mock_cluster(TOPIC, 2);
    let dir = agent::tmp("spool", "outage").join("spool");
    let opts = SpoolOptions { memory_messages: MEMORY, dir: Some(dir.clone()), max_bytes: REC_DISK * DISK_RECORDS, ..SpoolOptions::default() };
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
    let st = p.stats().clone();
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut outcome: Vec<Sent> = Vec::new();
    let send = |n: usize, outcome: &mut Vec<Sent>| {
        for _ in 0..n {
            let (k, v) = record(outcome.len());
            outcome.push(p.send(k.as_bytes(), &v));
        }
    };

    // Broker up: straight through memory.
    send(50, &mut outcome);
    agent::wait_for("the first 50 delivered", || g(&st.delivered) == 50);
    assert!(outcome.iter().all(|s| *s == Sent::Memory));

    // Broker down: memory tier (MEMORY messages), then records wait on disk up to the bound, then
    // drops. The bound holds every record on disk: the journal of the first 50 (delivered, in the
    // first segment until all of it is) and of the memory tier, and those waiting.
    mock.broker_down(1).unwrap();
    send(1000, &mut outcome);
    let count = |o: &[Sent], s: Sent| o.iter().filter(|x| **x == s).count() as u64;
    let down = &outcome[50..];
    let waiting = DISK_RECORDS - 50 - MEMORY;
    assert_eq!(count(down, Sent::Memory), MEMORY, "memory tier full at its bound");
    assert_eq!(count(down, Sent::Disk), waiting, "disk tier full at its bound");
    assert_eq!(count(down, Sent::Dropped), 1000 - MEMORY - waiting);
    assert_eq!(g(&st.delivered), 50, "nothing delivered while the broker is down");
    assert_eq!((st.memory_records(), st.memory_bytes()), (MEMORY, MEMORY * (2 + PAYLOAD as u64)));
    assert_eq!((g(&st.disk_records), g(&st.disk_bytes)), (waiting, waiting * REC_DISK));
    assert_eq!((g(&st.spilled), g(&st.dropped)), (waiting, 1000 - MEMORY - waiting));
    assert_eq!(g(&st.memory_only), 0, "every record of the memory tier journaled");
    assert!(spool_files(&dir) >= 4, "segments rolled over");
    // Order: once a record went to disk, no later one went to memory.
    let first_disk = outcome.iter().position(|s| *s == Sent::Disk).unwrap();
    assert!(outcome[first_disk..].iter().all(|s| *s != Sent::Memory));

    // Broker back while records keep coming (1 ms apart).
    mock.broker_up(1).unwrap();
    let t0 = Instant::now();
    while g(&st.disk_records) > 0 || outcome.len() < 1050 + 300 {
        assert!(t0.elapsed() < Duration::from_secs(60), "disk spool not drained: {st:?}");
        send(1, &mut outcome);
        std::thread::sleep(Duration::from_millis(1));
    }
    let accepted: Vec<usize> = (0..outcome.len()).filter(|&i| outcome[i] != Sent::Dropped).collect();
    agent::wait_for("every accepted record delivered", || g(&st.delivered) == accepted.len() as u64);
    assert_eq!(g(&st.delivery_errors), 0);
    assert_eq!(g(&st.dropped), count(&outcome, Sent::Dropped));
    assert_eq!(g(&st.spilled), count(&outcome, Sent::Disk));
    assert_eq!((st.memory_records(), st.memory_bytes(), g(&st.disk_records), g(&st.disk_bytes)), (0, 0, 0, 0));
    // The segment being written stays until it is full or the stop.
    assert_eq!(p.flush(Duration::from_secs(5)), 0);
    assert_eq!(spool_files(&dir), 0, "segment files deleted");
    eprintln!(
        "sent {}: memory {}, disk {}, dropped {}",
        outcome.len(),
        count(&outcome, Sent::Memory),
        count(&outcome, Sent::Disk),
        count(&outcome, Sent::Dropped)
    );

    assert_exactly_once_in_order(&brokers, 2, &accepted);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn the_memory_tier_is_bounded_in_bytes_too() {
    // librdkafka counts payloads: 10 KiB hold 102 of 100 bytes (the 103rd would make 10,300); the
    // rest waits on disk, though the message bound would take 1,000.
    let (mock, brokers) = mock_cluster(TOPIC, 1);
    let dir = agent::tmp("spool", "bytes").join("spool");
    let opts = SpoolOptions { memory_messages: 1000, memory_bytes: 10 << 10, dir: Some(dir.clone()), max_bytes: 1 << 20 };
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-bytes", &opts).unwrap();
    let st = p.stats().clone();
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    mock.broker_down(1).unwrap();
    let outcome: Vec<Sent> = (0..300).map(|i| {
        let (k, v) = record(i);
        p.send(k.as_bytes(), &v)
    }).collect();
    let count = |s: Sent| outcome.iter().filter(|x| **x == s).count() as u64;
    assert_eq!((count(Sent::Memory), count(Sent::Disk), count(Sent::Dropped)), (102, 198, 0));
    assert_eq!((st.memory_records(), st.memory_bytes()), (102, 102 * (2 + PAYLOAD as u64)));
    mock.broker_up(1).unwrap();
    agent::wait_for("every record delivered", || g(&st.delivered) == 300);
    assert_exactly_once_in_order(&brokers, 1, &(0..300).collect::<Vec<_>>());
    drop(p);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// The delivery reports are served by a thread that sleeps until librdkafka has one: idle, it
/// wakes once per 100 ms wait, not in a loop (rdkafka's own polling thread spun through the last
/// millisecond of each of its polls); reports still arrive for every record, in bursts and
/// one at a time, and dropping the producer ends the thread.
#[test]
fn delivery_reports_are_served_without_polling_in_a_loop() {
    let (_mock, brokers) = mock_cluster(TOPIC, 2);
    let p = EventProducer::new(&brokers, TOPIC, "poll-test").unwrap();
    let st = p.stats().clone();
    let delivered = || st.delivered.load(Ordering::Relaxed);
    for i in 0..500 {
        let (k, v) = record(i);
        assert_eq!(p.send(k.as_bytes(), &v), Sent::Memory);
    }
    agent::wait_for("a burst of 500 delivered", || delivered() == 500);
    for i in 500..520 {
        let (k, v) = record(i);
        p.send(k.as_bytes(), &v);
        agent::wait_for("each single record delivered", || delivered() == i as u64 + 1);
    }
    // Idle: at most one wakeup per 100 ms wait (and one for a report still on its way).
    let (w0, t0) = (p.delivery_wakeups(), Instant::now());
    std::thread::sleep(Duration::from_millis(1500));
    let (woke, waits) = (p.delivery_wakeups() - w0, t0.elapsed().as_millis() as u64 / 100);
    assert!(woke <= waits + 2, "{woke} wakeups in {waits} idle waits of 100 ms");
    assert!(woke >= 1, "the thread waits with a timeout, so that a stop is seen");
    assert_eq!(st.delivery_errors.load(Ordering::Relaxed), 0);
    assert_exactly_once_in_order(&brokers, 2, &(0..520).collect::<Vec<_>>());
    drop(p); // joins the thread (a hang here fails the test by its timeout)
}

/// Consumes `TOPIC` (until `accepted.len()` arrived, then 2 s more to see any duplicate) and
/// checks that it holds each accepted record once and, per key, in sending order.
fn assert_exactly_once_in_order(brokers: &str, partitions: i32, accepted: &[usize]) {
    let consumer = agent::consumer_from_start(brokers, TOPIC, partitions);
    let mut got: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut n = 0;
    let mut quiet_since = Instant::now();
    let t0 = Instant::now();
    while n < accepted.len() || quiet_since.elapsed() < Duration::from_secs(2) {
        assert!(t0.elapsed() < Duration::from_secs(60), "consumed {n} of {}", accepted.len());
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            let seq: usize = std::str::from_utf8(&m.payload().unwrap()[..10]).unwrap().parse().unwrap();
            got.entry(String::from_utf8(m.key().unwrap().to_vec()).unwrap()).or_default().push(seq);
            n += 1;
            quiet_since = Instant::now();
        }
    }
    assert_eq!(n, accepted.len(), "exactly the accepted records, no duplicates");
    let all: HashSet<usize> = got.values().flatten().copied().collect();
    assert_eq!(all, accepted.iter().copied().collect::<HashSet<_>>());
    for k in 0..KEYS {
        let want: Vec<usize> = accepted.iter().copied().filter(|s| s % KEYS == k).collect();
        assert_eq!(got.get(&format!("k{k}")).cloned().unwrap_or_default(), want, "key k{k} in order");
    }
}

/// The disk spool on a small tmpfs that fills up while the broker is down: a write cut short by
/// the full disk is refused (counted as dropped), never left torn in the middle of a segment;
/// once space returns records spool again; when the broker is back every record that was
/// accepted arrives exactly once, in order per key, and the dropped counter is exactly the
/// refused ones.
#[test]
fn a_full_disk_drops_and_counts_but_never_loses_what_it_accepted() {
    let Some(fs) = Tmpfs::mount("spool-full", 1 << 20) else { return };
    let (mock, brokers) = mock_cluster(TOPIC, 2);
    let dir = fs.path().join("spool");
    // About 100 KiB free: the disk fills before the spool's bound (256 KiB, 64 KiB segments,
    // smaller when the disk has less room).
    let filler = fs.fill(100 << 10);
    let opts = SpoolOptions { memory_messages: MEMORY, dir: Some(dir.clone()), max_bytes: 256 << 10, ..SpoolOptions::default() };
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
    let st = p.stats().clone();
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut outcome: Vec<Sent> = Vec::new();
    let send = |n: usize, outcome: &mut Vec<Sent>| {
        for _ in 0..n {
            let (k, v) = record(outcome.len());
            outcome.push(p.send(k.as_bytes(), &v));
        }
    };
    let count = |o: &[Sent], s: Sent| o.iter().filter(|x| **x == s).count() as u64;

    mock.broker_down(1).unwrap();
    send(2000, &mut outcome);
    let (disk, dropped) = (count(&outcome, Sent::Disk), count(&outcome, Sent::Dropped));
    assert_eq!(count(&outcome, Sent::Memory), MEMORY);
    assert!(disk > 400 && dropped > 0 && g(&st.disk_errors) > 0, "the disk filled: {disk} on disk, {dropped} dropped, {st:?}");
    assert!(disk * REC_DISK < 100 << 10, "the tmpfs, not the bound, refused");
    assert_eq!(g(&st.dropped), dropped);

    // Space returns while the broker is still down: records spool again.
    std::fs::remove_file(&filler).unwrap();
    send(1000, &mut outcome);
    assert_eq!(count(&outcome[2000..], Sent::Disk), 1000, "spooling again once there is room");

    mock.broker_up(1).unwrap();
    let t0 = Instant::now();
    while g(&st.disk_records) > 0 || st.memory_records() > 0 || outcome.len() < 3200 {
        assert!(t0.elapsed() < Duration::from_secs(60), "spool not drained: {st:?}");
        if outcome.len() < 3200 {
            send(1, &mut outcome);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let accepted: Vec<usize> = (0..outcome.len()).filter(|&i| outcome[i] != Sent::Dropped).collect();
    assert_eq!(g(&st.dropped), count(&outcome, Sent::Dropped), "dropped = refused at send, nothing accepted then dropped: {st:?}");
    agent::wait_for("every accepted record delivered", || g(&st.delivered) + g(&st.delivery_errors) >= accepted.len() as u64);
    assert_eq!((g(&st.delivered), g(&st.delivery_errors)), (accepted.len() as u64, 0));
    assert_eq!(p.flush(Duration::from_secs(5)), 0);
    assert_eq!(spool_files(&dir), 0, "segment files deleted");
    assert_exactly_once_in_order(&brokers, 2, &accepted);
    eprintln!("sent {}: memory {}, disk {}, dropped {}", outcome.len(), count(&outcome, Sent::Memory), count(&outcome, Sent::Disk), count(&outcome, Sent::Dropped));
}

#[test]
fn records_left_on_disk_are_sent_first_after_a_restart() {
    let (mock, brokers) = mock_cluster(TOPIC, 1);
    let dir = agent::tmp("spool", "restart").join("spool");
    let opts = SpoolOptions { memory_messages: 10, dir: Some(dir.clone()), max_bytes: 1 << 20, ..SpoolOptions::default() };
    mock.broker_down(1).unwrap();
    {
        // First run: 10 in memory (written back to disk at the stop, ahead), 40 on disk.
        let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
        let outcome: Vec<Sent> = (0..50).map(record).map(|(k, v)| p.send(k.as_bytes(), &v)).collect();
        assert_eq!(outcome.iter().filter(|s| **s == Sent::Disk).count(), 40);
        assert_eq!(p.flush(Duration::from_millis(200)), 10);
        assert_eq!(p.stats().delivery_errors.load(Ordering::Relaxed), 0, "nothing lost");
        assert_eq!(p.stats().rescued.load(Ordering::Relaxed), 10, "the memory tier went to disk");
    }
    assert!(spool_files(&dir) > 0);
    // Counted on disk before the restart: once the producer runs, its drainer may already have
    // moved the first records to librdkafka when the test reads the gauge.
    let on_disk = wattgraph_agent::output::spool::DiskSpool::open(&dir, opts.max_bytes, 4096).unwrap().records();
    assert_eq!(on_disk, 50, "all 50 on disk after the stop");
    mock.broker_up(1).unwrap();
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
    let (k, v) = record(50);
    assert_eq!(p.send(k.as_bytes(), &v), Sent::Disk, "queued behind the records of the previous run");
    agent::wait_for("51 delivered", || p.stats().delivered.load(Ordering::Relaxed) == 51);
    agent::wait_for("segment files deleted", || spool_files(&dir) == 0);
    let consumer = agent::consumer_from_start(&brokers, TOPIC, 1);
    assert_eq!(consume_seqs(&consumer, 51), (0..51).collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// Payload sequence numbers of partition 0 until `n` arrived, then 2 s more to see duplicates.
fn consume_seqs(consumer: &BaseConsumer, n: usize) -> Vec<usize> {
    let mut seqs = Vec::new();
    let t0 = Instant::now();
    let mut quiet_since = Instant::now();
    while seqs.len() < n || quiet_since.elapsed() < Duration::from_secs(2) {
        assert!(t0.elapsed() < Duration::from_secs(60), "consumed {} of {n}", seqs.len());
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            seqs.push(std::str::from_utf8(&m.payload().unwrap()[..10]).unwrap().parse::<usize>().unwrap());
            quiet_since = Instant::now();
        }
    }
    seqs
}

/// A stop in the middle of draining the disk spool, with the broker gone again: what was
/// delivered is not sent again, what librdkafka held is written back ahead, the rest follows;
/// after the restart every record arrives exactly once, in order.
#[test]
fn a_stop_while_draining_neither_loses_nor_repeats() {
    const N: usize = 2000;
    let (mock, brokers) = mock_cluster(TOPIC, 1);
    let dir = agent::tmp("spool", "stop-draining").join("spool");
    let opts = SpoolOptions { memory_messages: 10, dir: Some(dir.clone()), max_bytes: 1 << 20, ..SpoolOptions::default() };
    mock.broker_down(1).unwrap();
    {
        let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
        for i in 0..N {
            let (k, v) = record(i);
            assert_ne!(p.send(k.as_bytes(), &v), Sent::Dropped);
        }
        mock.broker_up(1).unwrap();
        // The drainer moves 10 at a time: stop it part way.
        agent::wait_for("some of the disk spool delivered", || p.stats().delivered.load(Ordering::Relaxed) >= 200);
        mock.broker_down(1).unwrap();
        let delivered = p.stats().delivered.load(Ordering::Relaxed) as usize;
        assert!(delivered < N, "the stop must come before the end of the drain");
        p.flush(Duration::from_millis(300));
        assert_eq!(p.stats().delivery_errors.load(Ordering::Relaxed), 0);
        let skips = std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "skip")).count();
        assert!(skips >= 1, "a partly sent segment records how far it was sent");
        eprintln!("stopped after {delivered} delivered, {} written back", p.stats().rescued.load(Ordering::Relaxed));
    }
    mock.broker_up(1).unwrap();
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
    agent::wait_for("the spool drained", || spool_files(&dir) == 0 && p.stats().disk_records.load(Ordering::Relaxed) == 0);
    let consumer = agent::consumer_from_start(&brokers, TOPIC, 1);
    assert_eq!(consume_seqs(&consumer, N), (0..N).collect::<Vec<_>>(), "each record once, in order");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no segment or skip file left");
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// A gauge or counter of the agent's metrics text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name) && l.as_bytes().get(name.len()) == Some(&b' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// The intervals (start, end ns) of the CgroupStats records of `topic` (partition 0, all of host
/// `spool-host`), until 3 s pass without one.
fn cgroup_stats_of(brokers: &str, topic: &str) -> Vec<(i64, i64)> {
    let consumer = agent::consumer_from_start(brokers, topic, 1);
    let mut recs = Vec::new();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(3) {
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            assert_eq!(m.key(), Some(&b"spool-host"[..]));
            let r = decode_single_object(m.payload().unwrap()).unwrap();
            recs.push((r.interval_start_ns, r.interval_end_ns));
            quiet_since = Instant::now();
        }
    }
    recs
}

/// A cgroup v2 fixture tree under `root` holding one container; returns its directory.
fn cgroup_fixture(root: &std::path::Path) -> std::path::PathBuf {
    let cg = root.join("system.slice/docker-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
    std::fs::write(cg.join("cpu.stat"), "usage_usec 1500\n").unwrap();
    std::fs::write(cg.join("memory.current"), "4096\n").unwrap();
    std::fs::write(cg.join("pids.current"), "1\n").unwrap();
    cg
}

/// The agent binary through an outage: CgroupStats of a fixture container every 10 ms (key =
/// host id, each interval starting where the previous ended) spill to --spool-dir while the
/// broker is down and all arrive, in order, without gap or duplicate, once it is back.
#[test]
fn agent_binary_spools_to_disk_through_an_outage() {
    const CG_TOPIC: &str = "wattgraph.cgroups";
    let (mock, brokers) = mock_cluster(CG_TOPIC, 1);
    let dir = agent::tmp("spool", "agent");
    let root = dir.join("cgroup");
    cgroup_fixture(&root);
    let port = agent::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let spool = dir.join("spool");
    let Some(child) = agent::start(
        "spool-host",
        &[
            "--kafka-brokers", &brokers, "--cgroup-root", root.to_str().unwrap(), "--metrics-addr", &metrics,
            "--cgroup-sample-interval-ms", "10", "--sample-interval-ms", "10", "--no-transactions",
            "--spool-memory-messages", "20", "--spool-dir", spool.to_str().unwrap(),
        ],
        &dir,
    ) else {
        return;
    };
    agent::wait_for("records delivered", || metric(&agent::scrape(port), "wattgraph_agent_kafka_delivered_total") > 10.0);
    mock.broker_down(1).unwrap();
    agent::wait_for("records on disk", || {
        let t = agent::scrape(port);
        metric(&t, "wattgraph_agent_spool_records{tier=\"disk\"}") >= 100.0 && metric(&t, "wattgraph_agent_spool_records{tier=\"memory\"}") == 20.0
    });
    mock.broker_up(1).unwrap();
    agent::wait_for("disk spool drained", || {
        let t = agent::scrape(port);
        metric(&t, "wattgraph_agent_spool_records{tier=\"disk\"}") == 0.0 && metric(&t, "wattgraph_agent_spool_bytes{tier=\"disk\"}") == 0.0
    });
    let text = agent::scrape(port);
    let err = agent::sigterm(child);
    assert_eq!(metric(&text, "wattgraph_agent_kafka_dropped_total"), 0.0, "{text}");
    assert!(metric(&text, "wattgraph_agent_spool_spilled_total") >= 100.0, "{text}");
    assert!(err.contains("spool_disk="), "stats line shows the spool: {err}");

    let recs = cgroup_stats_of(&brokers, CG_TOPIC);
    assert!(recs.len() >= 130, "{} records", recs.len());
    for w in recs.windows(2) {
        assert_eq!(w[0].1, w[1].0, "in order, no gap, no duplicate");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record damaged on disk (a flipped byte in the middle of the second of several segments)
/// costs the rest of its own segment only, counted as dropped and lost: the records before it
/// and every other segment are delivered, exactly once and in order per key.
#[test]
fn a_damaged_segment_loses_only_its_own_rest() {
    const N: usize = 600;
    let (mock, brokers) = mock_cluster(TOPIC, 1);
    let dir = agent::tmp("spool", "damaged").join("spool");
    // 96 KiB bound: 24 KiB segments of 196 records.
    let opts = SpoolOptions { memory_messages: 10, dir: Some(dir.clone()), max_bytes: 96 << 10, ..SpoolOptions::default() };
    mock.broker_down(1).unwrap();
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
    let outcome: Vec<Sent> = (0..N).map(record).map(|(k, v)| p.send(k.as_bytes(), &v)).collect();
    assert!(outcome.iter().all(|s| *s != Sent::Dropped));
    let mut segs: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    segs.sort();
    assert!(segs.len() >= 3, "{segs:?}");
    let per_seg = (std::fs::metadata(&segs[0]).unwrap().len() / REC_DISK) as usize;
    // Record 10 of the second segment: one payload byte flipped, so its CRC fails.
    let mut bytes = std::fs::read(&segs[1]).unwrap();
    bytes[10 * REC_DISK as usize + 40] ^= 0xff;
    std::fs::write(&segs[1], &bytes).unwrap();
    let seg2_records = bytes.len() / REC_DISK as usize;
    // The 10 of the memory tier are the first segment's first records (journaled).
    let first_lost = per_seg + 10;
    let lost: HashSet<usize> = (first_lost..per_seg + seg2_records).collect();

    mock.broker_up(1).unwrap();
    let st = p.stats().clone();
    let accepted: Vec<usize> = (0..N).filter(|i| !lost.contains(i)).collect();
    agent::wait_for("the rest delivered", || st.delivered.load(Ordering::Relaxed) >= accepted.len() as u64);
    agent::wait_for("the spool drained", || spool_files(&dir) == 0);
    assert_eq!(st.dropped.load(Ordering::Relaxed), lost.len() as u64, "{st:?}");
    assert_eq!(st.disk_lost.load(Ordering::Relaxed), lost.len() as u64, "{st:?}");
    assert_exactly_once_in_order(&brokers, 1, &accepted);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// The agent binary with its disk spool on a 1 MiB tmpfs, most of it taken, while the broker is
/// down: CgroupStats of a fixture container every 10 ms (in a network namespace of its own, so
/// nothing else is produced) spill to disk until the disk is full; the writes the full disk refuses
/// are the only drops (each a disk error; a skip file it refuses is one too; nothing accepted and
/// lost later); once space returns records spool again; with the broker back every record the
/// agent produced is either in the topic, once, or counted in wattgraph_agent_kafka_dropped_total.
#[test]
fn agent_binary_with_a_full_spool_disk_delivers_or_counts_every_record() {
    const CG_TOPIC: &str = "wattgraph.cgroups";
    let Some(fs) = Tmpfs::mount("spool-agent", 1 << 20) else { return };
    let (mock, brokers) = mock_cluster(CG_TOPIC, 1);
    let dir = agent::tmp("spool", "agent-full");
    let root = dir.join("cgroup");
    let container = cgroup_fixture(&root);
    let netns = NetnsThread::spawn(|| ());
    let port = agent::free_port();
    let spool = fs.path().join("spool");
    let ready = dir.join("ready");
    // Before the start: a segment reserves what the disk has room for (up to the segment size).
    let filler = fs.fill(32 << 10);
    let mut cmd = std::process::Command::new(agent::BIN);
    cmd.args(["--host-id", "spool-host", "--kafka-brokers", &brokers, "--ready-file", ready.to_str().unwrap()])
        .args(["--netns", netns.path.to_str().unwrap(), "--no-resources", "--no-transactions"])
        .args(["--cgroup-root", root.to_str().unwrap(), "--cgroup-sample-interval-ms", "10", "--sample-interval-ms", "10"])
        .args(["--metrics-addr", &format!("127.0.0.1:{port}"), "--spool-memory-messages", "20"])
        // The bound is far above the tmpfs: the full disk refuses, not the bound.
        .args(["--spool-dir", spool.to_str().unwrap(), "--spool-max-bytes", &(64u64 << 20).to_string()])
        .env("RUST_LOG", "info");
    let Some(child) = agent::spawn_ready(cmd, &ready) else { return };
    let m = |name: &str| metric(&agent::scrape(port), name);
    agent::wait_for("records delivered", || m("wattgraph_agent_kafka_delivered_total") > 10.0);
    mock.broker_down(1).unwrap();
    agent::wait_for("the spool disk full", || m("wattgraph_agent_kafka_dropped_total") >= 20.0);

    // Space returns (broker still down): records spool again, none dropped.
    std::fs::remove_file(&filler).unwrap();
    let (dropped, spilled) = (m("wattgraph_agent_kafka_dropped_total"), m("wattgraph_agent_spool_spilled_total"));
    agent::wait_for("spooling again", || m("wattgraph_agent_spool_spilled_total") >= spilled + 50.0);
    assert_eq!(m("wattgraph_agent_kafka_dropped_total"), dropped, "nothing dropped once there is room");

    // Broker back; the container goes away, so production stops and the counts settle.
    mock.broker_up(1).unwrap();
    std::fs::remove_dir_all(&container).unwrap();
    agent::wait_for("the container forgotten", || m("wattgraph_agent_cgroups_sampled") == 0.0);
    agent::wait_for("both spool tiers empty", || {
        let t = agent::scrape(port);
        metric(&t, "wattgraph_agent_spool_records{tier=\"disk\"}") == 0.0 && metric(&t, "wattgraph_agent_spool_records{tier=\"memory\"}") == 0.0
    });
    let text = agent::scrape(port);
    let err = agent::sigterm(child);
    netns.cancel();
    let (produced, delivered) = (metric(&text, "wattgraph_agent_cgroup_records_total"), metric(&text, "wattgraph_agent_kafka_delivered_total"));
    let dropped = metric(&text, "wattgraph_agent_kafka_dropped_total");
    eprintln!("produced {produced}, delivered {delivered}, dropped {dropped}");
    assert_eq!(delivered + dropped, produced, "{text}\n{err}");
    assert!(dropped <= metric(&text, "wattgraph_agent_spool_disk_errors_total"), "only refused writes dropped:\n{text}\n{err}");
    assert_eq!(metric(&text, "wattgraph_agent_spool_lost_total"), 0.0, "{text}");
    assert_eq!(metric(&text, "wattgraph_agent_kafka_delivery_errors_total"), 0.0, "{text}");

    // The topic holds each delivered record once, in order (gaps only where records were dropped).
    let recs = cgroup_stats_of(&brokers, CG_TOPIC);
    assert_eq!(recs.len() as f64, delivered);
    let gaps = recs.windows(2).filter(|w| w[0].1 != w[1].0).count();
    assert!(recs.windows(2).all(|w| w[0].1 <= w[1].0), "no duplicate, in order");
    assert!(gaps >= 1 && gaps as f64 <= dropped, "{gaps} gaps for {dropped} dropped");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stop while the disk is full: what librdkafka held cannot be written back whole. Of it, the
/// records journaled on disk are sent at the next start, once; those held in memory only (the
/// full disk refused their journal) are counted as dropped and never sent.
#[test]
fn a_stop_on_a_full_disk_counts_what_it_cannot_write_back() {
    let Some(fs) = Tmpfs::mount("spool-stop", 1 << 20) else { return };
    let (mock, brokers) = mock_cluster(TOPIC, 1);
    let dir = fs.path().join("spool");
    // 8 KiB free, one page of it held by a file removed before the stop.
    let filler = fs.fill(8 << 10);
    let page = fs.path().join("page");
    std::fs::write(&page, [0u8; 4096]).unwrap();
    let opts = SpoolOptions { memory_messages: 50, dir: Some(dir.clone()), max_bytes: 1 << 20, ..SpoolOptions::default() };
    mock.broker_down(1).unwrap();
    let (outcome, dropped, memory_only) = {
        let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
        let outcome: Vec<Sent> = (0..300).map(record).map(|(k, v)| p.send(k.as_bytes(), &v)).collect();
        assert!(outcome.contains(&Sent::Dropped), "the disk filled");
        // One page free: the 50 records of the memory tier (6.3 KB) do not fit.
        std::fs::remove_file(&page).unwrap();
        p.flush(Duration::from_millis(200));
        (outcome, p.stats().dropped.load(Ordering::Relaxed), p.stats().memory_only.load(Ordering::Relaxed))
    };
    let refused = outcome.iter().filter(|s| **s == Sent::Dropped).count() as u64;
    let journaled = 50 - memory_only;
    assert!(journaled > 0 && memory_only > 0, "the disk took part of the memory tier's journal: {journaled} of 50");
    assert!(outcome[..50].iter().all(|s| *s == Sent::Memory) && outcome[50..].iter().all(|s| *s == Sent::Dropped));
    assert_eq!(dropped, refused + memory_only, "the records held in memory only counted as dropped at the stop");
    std::fs::remove_file(&filler).unwrap();
    mock.broker_up(1).unwrap();
    let p = EventProducer::with_spool(&brokers, TOPIC, "spool-test", &opts).unwrap();
    agent::wait_for("the spool drained", || p.stats().delivered.load(Ordering::Relaxed) == journaled);
    assert_eq!(p.flush(Duration::from_secs(5)), 0);
    assert_eq!(spool_files(&dir), 0);
    assert_exactly_once_in_order(&brokers, 1, &(0..journaled as usize).collect::<Vec<_>>());
}

/// The agent binary killed (SIGKILL) while the broker is down and its records sit in the memory
/// tier: the next agent on the same --spool-dir sends every one of them, once and in order, from
/// the journal (before it, the memory tier died with the process). CgroupStats of a fixture
/// container every 10 ms, in a network namespace of its own so nothing else is produced.
#[test]
fn agent_binary_killed_with_records_in_memory_loses_none() {
    const CG_TOPIC: &str = "wattgraph.cgroups";
    let (mock, brokers) = mock_cluster(CG_TOPIC, 1);
    let dir = agent::tmp("spool", "agent-killed");
    let root = dir.join("cgroup");
    let container = cgroup_fixture(&root);
    let netns = NetnsThread::spawn(|| ());
    let port = agent::free_port();
    let spool = dir.join("spool");
    let ready = dir.join("ready");
    let command = || {
        let mut cmd = std::process::Command::new(agent::BIN);
        cmd.args(["--host-id", "spool-host", "--kafka-brokers", &brokers, "--ready-file", ready.to_str().unwrap()])
            .args(["--netns", netns.path.to_str().unwrap(), "--no-resources", "--no-transactions"])
            .args(["--cgroup-root", root.to_str().unwrap(), "--cgroup-sample-interval-ms", "10", "--sample-interval-ms", "10"])
            .args(["--metrics-addr", &format!("127.0.0.1:{port}"), "--spool-dir", spool.to_str().unwrap()])
            .env("RUST_LOG", "info");
        cmd
    };
    let Some(first) = agent::spawn_ready(command(), &ready) else { return };
    let m = |name: &str| metric(&agent::scrape(port), name);
    agent::wait_for("records delivered", || m("wattgraph_agent_kafka_delivered_total") > 10.0);
    mock.broker_down(1).unwrap();
    agent::wait_for("records in the memory tier", || m("wattgraph_agent_spool_records{tier=\"memory\"}") >= 200.0);
    // The container goes away: production stops, so what the first agent made is known.
    std::fs::remove_dir_all(&container).unwrap();
    agent::wait_for("the container forgotten", || m("wattgraph_agent_cgroups_sampled") == 0.0);
    let text = agent::scrape(port);
    let produced = metric(&text, "wattgraph_agent_cgroup_records_total");
    let (delivered, in_memory) = (metric(&text, "wattgraph_agent_kafka_delivered_total"), metric(&text, "wattgraph_agent_spool_records{tier=\"memory\"}"));
    assert_eq!(delivered + in_memory, produced, "{text}");
    drop(first); // SIGKILL
    std::fs::remove_file(&ready).unwrap();

    mock.broker_up(1).unwrap();
    let Some(second) = agent::spawn_ready(command(), &ready) else { return };
    agent::wait_for("both spool tiers empty", || {
        let t = agent::scrape(port);
        metric(&t, "wattgraph_agent_spool_records{tier=\"disk\"}") == 0.0 && metric(&t, "wattgraph_agent_spool_records{tier=\"memory\"}") == 0.0
    });
    let text = agent::scrape(port);
    let err = agent::sigterm(second);
    netns.cancel();

    let recs = cgroup_stats_of(&brokers, CG_TOPIC);
    eprintln!("produced {produced}: {delivered} delivered before the kill, {in_memory} in memory at it; {} in the topic", recs.len());
    assert_eq!(recs.len() as f64, produced, "every record the killed agent made, once");
    assert!(recs.windows(2).all(|w| w[0].1 == w[1].0), "in order, no gap, no duplicate");
    assert_eq!(metric(&text, "wattgraph_agent_spool_replayed_records"), in_memory, "found the killed agent's records: {text}");
    assert!(err.contains("did not close its spool"), "said: {err}");
    assert_eq!(spool_files(&spool), 0);
    let _ = std::fs::remove_dir_all(&dir);
}
