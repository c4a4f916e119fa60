//! The agent's producer (kafka.rs) through an outage of librdkafka's in-process mock cluster
//! (rdkafka::mocking; no external broker): the broker goes down while records keep coming,
//! the memory tier fills, then the disk spool up to its bound, the rest is dropped and
//! counted; the broker comes back while records keep coming; every accepted record arrives
//! exactly once and in order per key, the spool empties and its segment files are deleted.
mod common;
use common::agent;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;
use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use wattgraph_agent::cgroup_avro::decode_single_object;
use wattgraph_agent::kafka::{EventProducer, Sent, SpoolOptions};

const TOPIC: &str = "spool.test";
const KEYS: usize = 4;
const PAYLOAD: usize = 100;
/// On disk: header 8 + topic length 2 + topic 10 + key length 4 + key 2 + payload.
const REC_DISK: u64 = 8 + 2 + 10 + 4 + 2 + PAYLOAD as u64;
const DISK_RECORDS: u64 = 400;
const MEMORY: u64 = 100;

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
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 2, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("spool", "outage").join("spool");
    let opts = SpoolOptions { memory_messages: MEMORY, dir: Some(dir.clone()), max_bytes: REC_DISK * DISK_RECORDS };
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

    // Broker down: memory tier (MEMORY messages), then exactly DISK_RECORDS on disk, then drops.
    mock.broker_down(1).unwrap();
    send(1000, &mut outcome);
    let count = |o: &[Sent], s: Sent| o.iter().filter(|x| **x == s).count() as u64;
    let down = &outcome[50..];
    assert_eq!(count(down, Sent::Memory), MEMORY, "memory tier full at its bound");
    assert_eq!(count(down, Sent::Disk), DISK_RECORDS, "disk tier full at its bound");
    assert_eq!(count(down, Sent::Dropped), 1000 - MEMORY - DISK_RECORDS);
    assert_eq!(g(&st.delivered), 50, "nothing delivered while the broker is down");
    assert_eq!((st.memory_records(), st.memory_bytes()), (MEMORY, MEMORY * (2 + PAYLOAD as u64)));
    assert_eq!((g(&st.disk_records), g(&st.disk_bytes)), (DISK_RECORDS, DISK_RECORDS * REC_DISK));
    assert_eq!((g(&st.spilled), g(&st.dropped)), (DISK_RECORDS, 1000 - MEMORY - DISK_RECORDS));
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
    agent::wait_for("segment files deleted", || spool_files(&dir) == 0);
    eprintln!(
        "sent {}: memory {}, disk {}, dropped {}",
        outcome.len(),
        count(&outcome, Sent::Memory),
        count(&outcome, Sent::Disk),
        count(&outcome, Sent::Dropped)
    );

    // Consume everything: each accepted record once, per key in sending order.
    let consumer = agent::consumer_from_start(&brokers, TOPIC, 2);
    let mut got: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut n = 0;
    let mut quiet_since = Instant::now();
    let t0 = Instant::now();
    // Until all arrived, then 2 s more to see any duplicate.
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
        assert_eq!(got[&format!("k{k}")], want, "key k{k} in order");
    }
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn records_left_on_disk_are_sent_first_after_a_restart() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("spool", "restart").join("spool");
    let opts = SpoolOptions { memory_messages: 10, dir: Some(dir.clone()), max_bytes: 1 << 20 };
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
    let on_disk = wattgraph_agent::spool::DiskSpool::open(&dir, opts.max_bytes, 4096).unwrap().records();
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
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("spool", "stop-draining").join("spool");
    let opts = SpoolOptions { memory_messages: 10, dir: Some(dir.clone()), max_bytes: 1 << 20 };
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

/// The agent binary through an outage: CgroupStats of a fixture container every 10 ms (key =
/// host id, each interval starting where the previous ended) spill to --spool-dir while the
/// broker is down and all arrive, in order, without gap or duplicate, once it is back.
#[test]
fn agent_binary_spools_to_disk_through_an_outage() {
    const CG_TOPIC: &str = "wattgraph.cgroups";
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(CG_TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("spool", "agent");
    let root = dir.join("cgroup");
    let cg = root.join("system.slice/docker-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
    std::fs::write(cg.join("cpu.stat"), "usage_usec 1500\n").unwrap();
    std::fs::write(cg.join("memory.current"), "4096\n").unwrap();
    std::fs::write(cg.join("pids.current"), "1\n").unwrap();
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

    let consumer = agent::consumer_from_start(&brokers, CG_TOPIC, 1);
    let mut recs = Vec::new();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(3) {
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            assert_eq!(m.key(), Some(&b"spool-host"[..]));
            recs.push(decode_single_object(m.payload().unwrap()).unwrap());
            quiet_since = Instant::now();
        }
    }
    assert!(recs.len() >= 130, "{} records", recs.len());
    for w in recs.windows(2) {
        assert_eq!(w[0].interval_end_ns, w[1].interval_start_ns, "in order, no gap, no duplicate");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
