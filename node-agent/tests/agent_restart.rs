//! An agent restart loses nothing the kernel saw (`--pin-bpf`): the real agent binary counts
//! short and long connections in a network namespace of the test, is killed (SIGKILL) in the
//! middle of the load, connections go on while no agent runs, a second agent starts on the same
//! pins and spool, and the ConnectionEvents in Kafka (librdkafka's in-process mock cluster) give
//! every connection, both ends, with exactly the bytes each way the test's sockets moved, and no
//! connection that was not made. Records are cumulative per socket; a connection's totals are its
//! records' maxima, as the job merges them.
use crate::common;
use common::agent;
use common::keepalive;
use common::netns::NetnsThread;
use common::pin_dir::{PinDir, Scratch};

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use wattgraph_agent::capture::event::Kind;
use wattgraph_agent::output::avro::connection::decode_single_object;
use wattgraph_agent::shared::net::Role;

const TOPIC: &str = "wattgraph.connections";
const LONG: usize = 4;
/// Short connections before the kill (the kill lands in their middle), while no agent runs,
/// and after the second agent started.
const SHORT: [usize; 3] = [400, 300, 150];

/// What the load thread in the namespace is asked to do.
enum Step {
    /// `n` short connections, counting each in `done`.
    Short(usize),
    /// Each long connection sends this many bytes and reads the doubled echo.
    LongSend(usize),
    /// Close the long connections and return every connection's client port and bytes.
    Finish,
}

/// Per connection: (client port, bytes the client sent, bytes it received), sorted. A list, not a
/// map by port: among ~850 short connections a client port can come back.
type Truth = Vec<(u16, u64, u64)>;

#[test]
fn agent_killed_and_restarted_on_its_pins_loses_no_connection_and_no_byte() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let Scratch { pins, ready, spool, port, .. } = &Scratch::new("pins");

    let (steps, steps_rx) = mpsc::channel::<Step>();
    let (step_done, step_done_rx) = mpsc::channel::<()>();
    let done = Arc::new(AtomicUsize::new(0));
    let done2 = done.clone();
    let netns = NetnsThread::spawn(move || load(steps_rx, step_done, done2));
    let ns = netns.path.clone();
    let command = || agent::pinned("restart-host", &brokers, &ready, &ns, *port, &spool, &pins, &["--no-transactions", "--snapshot-interval-ms", "200"]);
    let Some(first) = agent::spawn_ready(command(), &ready) else {
        netns.cancel();
        return;
    };
    let worker = std::thread::spawn(move || netns.run());
    let step = |s: Step| {
        steps.send(s).unwrap();
        step_done_rx.recv_timeout(Duration::from_secs(120)).expect("load step finished");
    };
    step(Step::LongSend(3000));
    // SIGKILL while short connections are being made.
    steps.send(Step::Short(SHORT[0])).unwrap();
    agent::wait_for("a third of the connections", || done.load(Ordering::Relaxed) >= SHORT[0] / 3);
    drop(first);
    let killed_at = done.load(Ordering::Relaxed);
    step_done_rx.recv_timeout(Duration::from_secs(120)).expect("load step finished");
    std::fs::remove_file(&ready).unwrap();
    // No agent runs.
    step(Step::LongSend(50_000));
    step(Step::Short(SHORT[1]));
    let Some(second) = agent::spawn_ready(command(), &ready) else { panic!("second agent") };
    step(Step::Short(SHORT[2]));
    step(Step::LongSend(700));
    steps.send(Step::Finish).unwrap();
    let truth: Truth = worker.join().unwrap();
    assert_eq!(truth.len(), LONG + SHORT.iter().sum::<usize>());

    // Until both ends of every connection closed in the topic (bounded), then a clean stop.
    let consumer = agent::consumer_from_start(&mock.bootstrap_servers(), TOPIC, 1);
    let mut seen: HashMap<(Role, i64), Conn> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut records = 0;
    while closed(&seen, Role::Client) < truth.len() || closed(&seen, Role::Server) < truth.len() {
        assert!(Instant::now() < deadline, "timed out: {} client, {} server ends closed of {}", closed(&seen, Role::Client), closed(&seen, Role::Server), truth.len());
        if let Some(m) = rdkafka::consumer::BaseConsumer::poll(&consumer, Duration::from_millis(100)) {
            let r = decode_single_object(m.unwrap().payload().unwrap()).unwrap();
            records += 1;
            let c = seen.entry((r.role, r.socket_cookie)).or_default();
            c.sent = c.sent.max(r.bytes_sent as u64);
            c.recv = c.recv.max(r.bytes_received as u64);
            c.closed |= r.kind == Kind::Closed;
            (c.local_port, c.remote_port) = (r.local_port as u16, r.remote_port as u16);
        }
    }
    let err = agent::sigterm(second);
    assert!(err.contains("reusing the connections BPF programs and maps pinned at"), "the second agent reused the pins: {err}");
    // And its summary line says so, not that it attached them.
    assert!(err.contains("reused pinned tp_btf programs on") && !err.contains("attached tp_btf"), "{err}");
    let unpinned = std::process::Command::new(agent::BIN).args(["--host-id", "x", "--unpin", "--bpf-pin-dir", pins.to_str().unwrap()]).output().unwrap();
    assert!(unpinned.status.success(), "{unpinned:?}");

    eprintln!("{} connections ({} short done at the kill), {records} records, {} sockets", truth.len(), killed_at, seen.len());
    assert_eq!(seen.len(), 2 * truth.len(), "one client and one server socket per connection, no other");
    let (mut clients, mut servers): (Truth, Truth) = (Vec::new(), Vec::new());
    for ((role, _), c) in &seen {
        match role {
            Role::Client => clients.push((c.local_port, c.sent, c.recv)),
            Role::Server => servers.push((c.remote_port, c.recv, c.sent)),
            Role::Unknown => panic!("a socket of unknown role: {c:?}"),
        }
    }
    clients.sort_unstable();
    servers.sort_unstable();
    for (role, ends) in [("client", &clients), ("server", &servers)] {
        assert_eq!(ends.len(), truth.len(), "{role} ends");
        let wrong: Vec<_> = ends.iter().zip(&truth).filter(|(a, b)| a != b).take(5).collect();
        assert!(wrong.is_empty(), "{role} ends (port, sent, received) against the load's, first differences: {wrong:?}");
    }
}

/// A clean stop keeps the pins and the next agent of the same configuration reuses them; one whose
/// configuration changes the programs unpins them and loads fresh, and says so; `--unpin` removes
/// them, after which nothing of the agent is left in the kernel's bpffs.
#[test]
fn pins_kept_at_a_clean_stop_replaced_on_a_config_change_and_removed_by_unpin() {
    let dir = agent::tmp("restart", "config");
    let pins = dir.join("bpf");
    let _unmount = PinDir(pins.clone());
    let netns = NetnsThread::spawn(|| ());
    let ready = dir.join("ready");
    let run = |snapshot_bytes: &str| {
        let mut cmd = std::process::Command::new(agent::BIN);
        cmd.args(["--host-id", "config-host", "--kafka-brokers", "127.0.0.1:9", "--ready-file", ready.to_str().unwrap()])
            .args(["--netns", netns.path.to_str().unwrap(), "--no-resources", "--cgroup-sample-interval-ms", "0"])
            .args(["--snapshot-bytes", snapshot_bytes, "--pin-bpf", "--bpf-pin-dir", pins.to_str().unwrap()])
            .env("RUST_LOG", "info");
        let agent = agent::spawn_ready(cmd, &ready)?;
        Some(agent::sigterm(agent))
    };
    let pinned = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&pins).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("connections-")).collect();
        v.sort();
        v
    };
    let Some(first) = run("4096") else { return };
    assert!(first.contains("BPF programs and maps pinned at"), "{first}");
    let kept = pinned();
    assert_eq!(kept.len(), 1, "kept after a clean stop: {kept:?}");
    let second = run("4096").expect("second agent");
    assert!(second.contains("reusing the connections BPF programs and maps pinned at"), "{second}");
    assert_eq!(pinned(), kept);
    let third = run("8192").expect("third agent");
    assert!(third.contains(&format!("unpinning {}", pins.join(&kept[0]).display())) && third.contains("loading fresh"), "{third}");
    let replaced = pinned();
    assert!(replaced.len() == 1 && replaced != kept, "{replaced:?}");
    let out = std::process::Command::new(agent::BIN).args(["--host-id", "x", "--unpin", "--bpf-pin-dir", pins.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(pinned().is_empty());
    netns.cancel();
}

#[derive(Default, Debug)]
struct Conn {
    sent: u64,
    recv: u64,
    closed: bool,
    local_port: u16,
    remote_port: u16,
}

fn closed(seen: &HashMap<(Role, i64), Conn>, role: Role) -> usize {
    seen.iter().filter(|((r, _), c)| *r == role && c.closed).count()
}

/// The load, in the test's namespace: a server echoing every byte twice, long connections kept
/// open, short ones made on request; returns the ground truth.
fn load(steps: mpsc::Receiver<Step>, step_done: mpsc::Sender<()>, done: Arc<AtomicUsize>) -> Truth {
    let addr = keepalive::serve(|s| {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = s.read(&mut buf) {
            if s.write_all(&buf[..n]).and_then(|_| s.write_all(&buf[..n])).is_err() {
                return;
            }
        }
    });
    let connect = || keepalive::connect(addr);
    // (bytes sent, bytes received) of one connection.
    let exchange = |s: &mut TcpStream, n: usize, t: &mut (u64, u64)| {
        s.write_all(&vec![b'x'; n]).unwrap();
        let mut back = vec![0u8; 2 * n];
        s.read_exact(&mut back).unwrap();
        (t.0, t.1) = (t.0 + n as u64, t.1 + 2 * n as u64);
    };
    let mut long: Vec<TcpStream> = (0..LONG).map(|_| connect()).collect();
    let mut long_bytes = [(0u64, 0u64); LONG];
    let mut truth = Truth::new();
    let mut i = 0usize;
    for step in steps {
        match step {
            Step::Short(n) => {
                for _ in 0..n {
                    let mut s = connect();
                    let mut t = (0, 0);
                    exchange(&mut s, 1 + (i * 37) % 3000, &mut t);
                    truth.push((s.local_addr().unwrap().port(), t.0, t.1));
                    s.shutdown(Shutdown::Write).unwrap();
                    let mut rest = Vec::new();
                    s.read_to_end(&mut rest).unwrap();
                    i += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                    // Spread over about a second, so the kill lands among them.
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            Step::LongSend(n) => {
                for (s, t) in long.iter_mut().zip(&mut long_bytes) {
                    exchange(s, n, t);
                }
            }
            Step::Finish => break,
        }
        step_done.send(()).unwrap();
    }
    for (s, t) in long.drain(..).zip(long_bytes) {
        truth.push((s.local_addr().unwrap().port(), t.0, t.1));
        s.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        (&s).read_to_end(&mut rest).unwrap();
    }
    truth.sort_unstable();
    truth
}
