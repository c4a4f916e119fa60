//! `--node-scope NODE` when nodes share this kernel: the real agent binary, run in node A's
//! network namespace (as a hostNetwork pod of node A), reads A's pod CIDRs from a fake API server
//! (https, test CA and token) and must report exactly the sockets of node A (its namespace, and
//! pod A's by their addresses: IPv4, v4-mapped IPv6 both ways, IPv6) with their exact bytes, and
//! none of node B's, nor pod A's loopback ones; a second agent restarted on the pinned programs
//! filters the same. Records go to librdkafka's in-process mock cluster. Needs root, iproute2,
//! openssl and python3; without BPF: fail when CI=true, otherwise skip.
use crate::common;
use common::agent;
use common::kubelet::FakeKubelet;
use common::nat_hosts::enter;
use common::nodes::*;
use common::pin_dir::PinDir;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use wattgraph_agent::capture::event::Kind;
use wattgraph_agent::identity::kube_api::KubeClient;
use wattgraph_agent::identity::node_scope::wait_for_pod_cidrs;
use wattgraph_agent::output::avro::connection::decode_single_object;
use wattgraph_agent::shared::net::{addr16_from_ip, Role};

const TOPIC: &str = "wattgraph.connections";

fn node_json(name: &str, cidrs: &[&str]) -> String {
    let list: Vec<String> = cidrs.iter().map(|c| format!("\"{c}\"")).collect();
    format!(r#"{{"kind":"Node","apiVersion":"v1","metadata":{{"name":"{name}"}},"spec":{{"podCIDRs":[{}]}}}}"#, list.join(","))
}

#[test]
fn node_scope_needs_a_node_name_and_the_api_server() {
    for (args, needle) in [
        (&["--node-scope", "node-a"][..], "--node-scope 'node-a' needs --pod-metadata-url"),
        (&["--node-scope", "Node_A", "--pod-metadata-url", "https://k8s/api/v1/pods"][..], "--node-scope 'Node_A' is not a Kubernetes node name"),
    ] {
        let out = Command::new(agent::BIN).args(["--host-id", "h", "--kafka-brokers", "127.0.0.1:1"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// The start waits for the Node to get pod CIDRs, then gives up naming the node and the URL.
#[test]
fn pod_cidrs_are_waited_for_then_refused_by_name() {
    let dir = agent::tmp("node-scope", "wait");
    let Some(k) = FakeKubelet::start(&dir.join("api"), &common::kubelet::pod_list(&[])) else { return };
    let client = KubeClient::new(Some(k.token_file()), Some(&k.ca()), false, "--pod-metadata-ca-file").unwrap();
    let stop = AtomicBool::new(false);
    k.set_file("node-node-a.json", &node_json("node-a", &[]));
    let t0 = Instant::now();
    let e = format!("{:#}", wait_for_pod_cidrs(&client, &k.api_url(), "node-a", Duration::from_secs(2), &stop).unwrap_err());
    assert!(t0.elapsed() >= Duration::from_secs(2), "retried for the whole wait");
    let url = format!("{}/api/v1/nodes/node-a", k.api_url());
    assert!(e.contains("--node-scope 'node-a'") && e.contains(&url) && e.contains("no spec.podCIDRs"), "{e}");
    let e = format!("{:#}", wait_for_pod_cidrs(&client, &k.api_url(), "node-x", Duration::ZERO, &stop).unwrap_err());
    assert!(e.contains("HTTP 404") && e.contains("/api/v1/nodes/node-x"), "{e}");
    // Assigned while the agent waits (the controller manager's moment after registration).
    let k2 = k.dir.clone();
    let later = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        std::fs::write(k2.join("node-node-a.json.tmp"), node_json("node-a", &["10.252.1.0/24"])).unwrap();
        std::fs::rename(k2.join("node-node-a.json.tmp"), k2.join("node-node-a.json")).unwrap();
    });
    let got = wait_for_pod_cidrs(&client, &k.api_url(), "node-a", Duration::from_secs(30), &stop).unwrap().unwrap();
    later.join().unwrap();
    assert_eq!(got.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["10.252.1.0/24"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A socket as the records give it: (server port, role symbol) -> (local address, sent, received, closed).
type Seen = BTreeMap<(u16, &'static str), ([u8; 16], u64, u64, bool)>;
type Want = BTreeMap<(u16, &'static str), ([u8; 16], u64, u64)>;

/// The exchanges of one phase on ports `base+1..=base+8`; returns what node A's agent must
/// report, by (server port, role): (local address, sent, received).
fn traffic(n: &Nodes, base: u16) -> Want {
    let a = |s: &str| addr16_from_ip(s.parse().unwrap());
    let size = |i: u16| (1000 + 101 * i as usize, 3000 + 7 * i as usize);
    let p = |i: u16| base + i;
    let mut want = BTreeMap::new();
    let mut add = |i: u16, role: Role, local: &str| {
        let (req, resp) = size(i);
        let (sent, recv) = if role == Role::Client { (req, resp) } else { (resp, req) };
        want.insert((p(i), role.symbol()), (a(local), sent as u64, recv as u64));
    };
    let (na, nb, pa, pb) = (&n.node_a, &n.node_b, &n.pod_a, &n.pod_b);
    // 1. node A -> node B: A's client (A's namespace).
    exchange(nb, &format!("{NODE_B}:{}", p(1)), na, &format!("{NODE_B}:{}", p(1)), size(1).0, size(1).1);
    add(1, Role::Client, NODE_A);
    // 2. pod A -> pod B, IPv4: A's pod client (pod CIDR), not B's server.
    exchange(pb, &format!("{POD_B}:{}", p(2)), pa, &format!("{POD_B}:{}", p(2)), size(2).0, size(2).1);
    add(2, Role::Client, POD_A);
    // 3. pod B -> pod A's dual-stack listener: the accepted socket is AF_INET6, v4-mapped.
    exchange(pa, &format!("[::]:{}", p(3)), pb, &format!("{POD_A}:{}", p(3)), size(3).0, size(3).1);
    add(3, Role::Server, POD_A);
    // 4. pod A dials a v4-mapped address from an AF_INET6 socket (Java's way) to pod B.
    exchange(pb, &format!("0.0.0.0:{}", p(4)), pa, &format!("[::ffff:{POD_B}]:{}", p(4)), size(4).0, size(4).1);
    add(4, Role::Client, POD_A);
    // 5. pod A to itself over IPv6: both ends.
    exchange(pa, &format!("[{POD_A6}]:{}", p(5)), pa, &format!("[{POD_A6}]:{}", p(5)), size(5).0, size(5).1);
    add(5, Role::Client, POD_A6);
    add(5, Role::Server, POD_A6);
    // 6. pod A over its loopback: no node's (documented).
    exchange(pa, &format!("127.0.0.1:{}", p(6)), pa, &format!("127.0.0.1:{}", p(6)), size(6).0, size(6).1);
    // 7. node B -> pod B: nothing of node A.
    exchange(pb, &format!("{POD_B}:{}", p(7)), nb, &format!("{POD_B}:{}", p(7)), size(7).0, size(7).1);
    // 8. node B -> node A: A's server.
    exchange(na, &format!("{NODE_A}:{}", p(8)), nb, &format!("{NODE_A}:{}", p(8)), size(8).0, size(8).1);
    add(8, Role::Server, NODE_A);
    want
}

/// Reads records until every wanted socket closed, then half a second more; the sockets of
/// ports `base+1..=base+8`, by (server port, role).
fn consume(c: &rdkafka::consumer::BaseConsumer, base: u16, want: usize) -> Seen {
    let ports = base + 1..=base + 8;
    let mut seen: Seen = BTreeMap::new();
    let mut by_cookie: BTreeMap<i64, (u16, &'static str)> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut quiet_until: Option<Instant> = None;
    while quiet_until.is_none_or(|t| Instant::now() < t) {
        assert!(Instant::now() < deadline, "timed out; seen {seen:?}");
        if let Some(m) = rdkafka::consumer::BaseConsumer::poll(c, Duration::from_millis(100)) {
            let r = decode_single_object(m.unwrap().payload().unwrap()).unwrap();
            let (lp, rp) = (r.local_port as u16, r.remote_port as u16);
            let key = if ports.contains(&rp) && r.role != Role::Server {
                (rp, r.role.symbol())
            } else if ports.contains(&lp) {
                (lp, r.role.symbol())
            } else {
                continue; // the test's own Kafka and API traffic in node A's namespace
            };
            let prev = by_cookie.insert(r.socket_cookie, key);
            assert!(prev.is_none_or(|k| k == key), "one socket, two connections: {key:?} {prev:?}");
            let e = seen.entry(key).or_insert((r.local_address, 0, 0, false));
            assert_eq!(e.0, r.local_address, "{key:?}");
            (e.1, e.2) = (e.1.max(r.bytes_sent as u64), e.2.max(r.bytes_received as u64));
            e.3 |= r.kind == Kind::Closed;
        }
        if quiet_until.is_none() && seen.values().filter(|s| s.3).count() >= want {
            quiet_until = Some(Instant::now() + Duration::from_millis(500));
        }
    }
    seen
}

fn check(phase: &str, seen: &Seen, want: &Want) {
    let got: BTreeMap<_, _> = seen.iter().map(|(k, (a, s, r, _))| (*k, (*a, *s, *r))).collect();
    let extra: BTreeSet<_> = got.keys().filter(|k| !want.contains_key(k)).collect();
    assert!(extra.is_empty(), "{phase}: sockets not of node A reported: {extra:?}");
    assert_eq!(&got, want, "{phase}: node A's sockets, (local address, sent, received) exactly");
    assert!(seen.values().all(|s| s.3), "{phase}: every socket closed");
}

#[test]
fn only_the_nodes_own_sockets_are_counted_also_on_reused_pins() {
    // The whole test runs in node A's namespace, as the agent's pod (hostNetwork) would: its
    // API server, Kafka and the agent itself.
    let nodes = Nodes::new();
    let na = nodes.node_a.clone();
    std::thread::spawn(move || {
        enter(&na);
        run(nodes)
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

fn run(nodes: Nodes) {
    let dir = agent::tmp("node-scope", "sockets");
    let Some(k) = FakeKubelet::start(&dir.join("api"), &common::kubelet::pod_list(&[])) else { return };
    k.set_file("node-node-a.json", &node_json("node-a", &CIDRS_A));
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let (ready, pins) = (dir.join("ready"), dir.join("bpf"));
    let _unpin = PinDir(pins.clone());
    let (url, ca, token) = (k.url(), k.ca(), k.token_file());
    let command = || {
        let mut cmd = Command::new(agent::BIN);
        cmd.args(["--host-id", "node-a", "--kafka-brokers", &brokers, "--ready-file", ready.to_str().unwrap()])
            .args(["--node-scope", "node-a", "--pod-metadata-url", &url])
            .args(["--pod-metadata-ca-file", ca.to_str().unwrap(), "--pod-metadata-token-file", token.to_str().unwrap()])
            .args(["--no-resources", "--cgroup-sample-interval-ms", "0", "--no-transactions", "--nat-entries", "0"])
            .args(["--snapshot-interval-ms", "200", "--pin-bpf", "--bpf-pin-dir", pins.to_str().unwrap()])
            .env("RUST_LOG", "info");
        cmd
    };
    let Some(first) = agent::spawn_ready(command(), &ready) else { return };
    let consumer = agent::consumer_from_start(&brokers, TOPIC, 1);

    let want = traffic(&nodes, 7000);
    check("first agent", &consume(&consumer, 7000, want.len()), &want);
    let err = agent::sigterm(first);
    assert!(
        err.contains("node scope: node node-a; sockets of this network namespace and of local addresses in the pod CIDRs 10.252.1.0/24, fd77:1::/64"),
        "{err}"
    );

    // A restarted agent (the first removed its ready file at the stop) reuses the pinned
    // programs, their filter maps and flags.
    let Some(second) = agent::spawn_ready(command(), &ready) else { panic!("second agent") };
    let want = traffic(&nodes, 7100);
    check("second agent, pinned programs reused", &consume(&consumer, 7100, want.len()), &want);
    let err = agent::sigterm(second);
    assert!(err.contains("reusing the connections BPF programs and maps pinned at"), "{err}");
    drop(k);
    let _ = std::fs::remove_dir_all(&dir);
}
