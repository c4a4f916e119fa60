//! TransactionStats across an agent restart on its pins (`--pin-bpf`): keep-alive connections in a
//! network namespace of the test make a known number of requests before the agent is killed
//! (SIGKILL), while it is being killed, while no agent runs and after a second agent started on
//! the same pins and spool; the TransactionStats in Kafka (librdkafka's in-process mock cluster)
//! give each end of each connection exactly the requests it made, with their bytes and one
//! latency per request: none delivered twice, none lost.
//!
//! Records are counted once per distinct value, as the stream job counts them (`RecordIds`: the
//! spool sends again, byte for byte, what Kafka had not confirmed at the kill).
use crate::common;
use common::agent;
use common::keepalive::{self, Truth, REQUEST, RESPONSE};
use common::netns::NetnsThread;
use common::pin_dir::Scratch;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use wattgraph_agent::capture::connections::transactions::TxnRole;
use wattgraph_agent::output::avro::transaction::decode_single_object;

const TOPIC: &str = "wattgraph.transactions";
const CONNS: usize = 4;
/// Requests per connection: before the kill, around it (the kill lands among them), while no
/// agent runs, after the second agent started.
const REQUESTS: [usize; 4] = [30, 60, 25, 20];

#[derive(Debug, PartialEq)]
struct Sums {
    transactions: i64,
    request_bytes: i64,
    response_bytes: i64,
    latencies: u64,
    closed: bool,
    /// Start of the second agent's first record (unix ns).
    first_after_restart: i64,
}

impl Default for Sums {
    fn default() -> Self {
        Sums { transactions: 0, request_bytes: 0, response_bytes: 0, latencies: 0, closed: false, first_after_restart: i64::MAX }
    }
}

fn unix_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
}

#[test]
fn transactions_of_connections_alive_across_a_restart_are_delivered_exactly_once() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    mock.create_topic("wattgraph.connections", 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let Scratch { pins, ready, spool, port, .. } = &Scratch::new("txn");

    let (steps, steps_rx) = mpsc::channel::<Option<usize>>();
    let (step_done, step_done_rx) = mpsc::channel::<()>();
    let done = Arc::new(AtomicUsize::new(0));
    let done2 = done.clone();
    let netns = NetnsThread::spawn(move || keepalive::load(CONNS, steps_rx, step_done, done2));
    let ns = netns.path.clone();
    let command = || agent::pinned("txn-restart-host", &brokers, &ready, &ns, *port, &spool, &pins, &["--transaction-interval-ms", "100"]);
    let Some(first) = agent::spawn_ready(command(), &ready) else {
        netns.cancel();
        return;
    };
    let worker = std::thread::spawn(move || netns.run());
    let step = |n: usize| {
        steps.send(Some(n)).unwrap();
        step_done_rx.recv_timeout(Duration::from_secs(120)).expect("load step finished");
    };
    step(REQUESTS[0]);
    // SIGKILL while requests are being made, after at least one drain interval of them.
    let before = done.load(Ordering::Relaxed);
    steps.send(Some(REQUESTS[1])).unwrap();
    agent::wait_for("a third of the requests", || done.load(Ordering::Relaxed) >= before + CONNS * REQUESTS[1] / 3);
    drop(first);
    let killed_at = unix_ns();
    step_done_rx.recv_timeout(Duration::from_secs(120)).expect("load step finished");
    std::fs::remove_file(&ready).unwrap();
    step(REQUESTS[2]); // no agent runs
    let restarted_at = unix_ns();
    let Some(second) = agent::spawn_ready(command(), &ready) else { panic!("second agent") };
    step(REQUESTS[3]);
    steps.send(None).unwrap();
    let truth: Truth = worker.join().unwrap();
    assert_eq!(truth.len(), CONNS);
    assert!(truth.values().all(|n| *n == REQUESTS.iter().sum::<usize>() as u64), "{truth:?}");

    // Until both ends of every connection closed (bounded), then a clean stop and the rest.
    let consumer = agent::consumer_from_start(&mock.bootstrap_servers(), TOPIC, 1);
    let mut sums: HashMap<(TxnRole, u16), Sums> = HashMap::new();
    let (mut seen, mut replays) = (HashSet::new(), 0);
    let mut take = |payload: &[u8], sums: &mut HashMap<(TxnRole, u16), Sums>| {
        if !seen.insert(payload.to_vec()) {
            replays += 1;
            return;
        }
        let r = decode_single_object(payload).unwrap();
        let client_port = if r.role == TxnRole::Client { r.local_port } else { r.remote_port };
        let s = sums.entry((r.role, client_port)).or_default();
        s.transactions += r.transactions;
        s.request_bytes += r.request_bytes;
        s.response_bytes += r.response_bytes;
        s.latencies += if r.role == TxnRole::Client { r.client_rtt.total() } else { r.server_time.total() };
        s.closed |= r.closed;
        if r.interval_end_ns > restarted_at {
            s.first_after_restart = s.first_after_restart.min(r.interval_start_ns);
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while sums.values().filter(|s| s.closed).count() < 2 * CONNS {
        assert!(Instant::now() < deadline, "timed out: {sums:?}");
        if let Some(m) = rdkafka::consumer::BaseConsumer::poll(&consumer, Duration::from_millis(100)) {
            take(m.unwrap().payload().unwrap(), &mut sums);
        }
    }
    let err = agent::sigterm(second);
    assert!(err.contains("reusing the connections BPF programs and maps pinned at"), "the second agent reused the pins: {err}");
    while let Some(m) = rdkafka::consumer::BaseConsumer::poll(&consumer, Duration::from_millis(500)) {
        take(m.unwrap().payload().unwrap(), &mut sums);
    }
    let unpinned = std::process::Command::new(agent::BIN).args(["--host-id", "x", "--unpin", "--bpf-pin-dir", pins.to_str().unwrap()]).output().unwrap();
    assert!(unpinned.status.success(), "{unpinned:?}");

    eprintln!("{} distinct records, {replays} byte-identical replays: {sums:?}", seen.len());
    assert_eq!(sums.len(), 2 * CONNS, "both ends of every connection, nothing else: {sums:?}");
    for (&port, &n) in &truth {
        let n = n as i64;
        for role in [TxnRole::Client, TxnRole::Server] {
            let got = &sums[&(role, port)];
            // The transactions made while no agent ran are in an interval that spans that time.
            assert!(got.first_after_restart <= killed_at, "{role:?} {port}: the second agent's first interval starts after the kill: {got:?}");
            let want = Sums { transactions: n, request_bytes: n * REQUEST as i64, response_bytes: n * RESPONSE as i64, latencies: n as u64, closed: true, first_after_restart: got.first_after_restart };
            assert_eq!(got, &want, "{role:?} end of the connection from port {port}");
        }
    }
}
