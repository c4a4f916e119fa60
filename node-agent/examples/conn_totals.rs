//! Per-process connection counts from the ConnectionEvent records on a Kafka topic, for the
//! load-shedding benchmark (node-agent/bench/load_shedding.sh): how well the connections
//! reported under shedding, each standing for 1/keepProbability, estimate the true counts.
//! Reads every partition from the beginning to its end, decodes with the agent's own decoder
//! (`output::avro::connection::decode_single_object`), and keeps per socket (hostId, socketCookie) its role, tgid,
//! endpoints past NAT, keep fraction and first and last event time. Prints per client process:
//!   CLIENT TGID COMM SOCKETS SINGLE JOB
//! SOCKETS: its client sockets reported; SINGLE: the sum of 1/keepProbability over them (0 for
//! keep 0: reported for its traffic, stands for none), the client end's own estimate; JOB: the
//! stream job's estimate (stream-jobs ConnectionCorrelator, "Sampled connections", recomputed
//! here so the benchmark needs no Flink): the same weights, but a client end without its server
//! end (paired by endpoints and overlapping lifetimes: 4-tuples are reused) counts only if some
//! pair showed its server endpoint, or if its peer's address is not that of a host that sampled
//! (an External peer); the job withholds the others.
//! Then `# messages N undecodable M partitions P pairs X withheld Y`.
//! Role UNKNOWN sockets (handshake not seen) are left out. Bounded: TIMEOUT_S (default 60).
//! Usage: conn_totals BROKERS TOPIC [TIMEOUT_S]
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use wattgraph_agent::output::avro::connection::decode_single_object;
use wattgraph_agent::shared::net::{past_nat, Endpoint, Role};

#[path = "support/read_topic.rs"]
mod read_topic;

struct Socket {
    role: Role,
    first_ns: i64,
    last_ns: i64,
    tgid: i32,
    comm: String,
    local: Endpoint,
    remote: Endpoint,
    keep: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(brokers), Some(topic)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: conn_totals BROKERS TOPIC [TIMEOUT_S]");
        std::process::exit(2);
    };
    let timeout = Duration::from_secs(args.get(3).and_then(|a| a.parse().ok()).unwrap_or(60));
    let mut sockets: HashMap<(String, i64), Socket> = HashMap::new();
    let mut undecodable = 0u64;
    let read = read_topic::read_topic("conn_totals", brokers, topic, timeout, |payload| {
        let r = match payload.map(decode_single_object) {
            Some(Ok(r)) => r,
            other => {
                if undecodable == 0 {
                    eprintln!("conn_totals: undecodable record: {:?}", other.map(|r| r.err()));
                }
                undecodable += 1;
                return;
            }
        };
        let (local, remote) = past_nat(r.nat.as_ref(), (r.local_address, r.local_port as u16), (r.remote_address, r.remote_port as u16));
        let s = sockets.entry((r.host_id.clone(), r.socket_cookie)).or_insert_with(|| Socket {
            role: r.role,
            first_ns: r.event_time_ns,
            last_ns: r.event_time_ns,
            tgid: r.tgid,
            comm: String::new(),
            local,
            remote,
            keep: r.keep_probability,
        });
        if s.tgid == 0 {
            s.tgid = r.tgid;
        }
        if s.comm.is_empty() && !r.comm.is_empty() {
            s.comm = r.comm.replace(char::is_whitespace, "_");
        }
        s.keep = r.keep_probability;
        s.first_ns = s.first_ns.min(r.event_time_ns);
        s.last_ns = s.last_ns.max(r.event_time_ns);
    });

    // Addresses of hosts that sampled: their sockets' own addresses.
    let sampling: HashSet<[u8; 16]> = sockets.values().filter(|s| s.keep < 1.0).map(|s| s.local.0).collect();
    // Server ends by endpoints; a 4-tuple is reused by later connections (the generators reset
    // theirs), so an end's peer is the one on its tuple whose lifetime overlaps its own.
    let mut servers: HashMap<(Endpoint, Endpoint), Vec<(i64, i64, f64)>> = HashMap::new();
    for s in sockets.values().filter(|s| s.role == Role::Server) {
        servers.entry((s.remote, s.local)).or_default().push((s.first_ns, s.last_ns, s.keep));
    }
    // Server endpoints some pair showed (the job learns them from pairs).
    let client_tuples: HashSet<(Endpoint, Endpoint)> =
        sockets.values().filter(|c| c.role == Role::Client).map(|c| (c.local, c.remote)).collect();
    let known: HashSet<Endpoint> = sockets
        .values()
        .filter(|s| s.role == Role::Server && client_tuples.contains(&(s.remote, s.local)))
        .map(|s| s.local)
        .collect();
    const SKEW_NS: i64 = 50_000_000;
    let peer_of = |c: &Socket| -> Option<f64> {
        servers.get(&(c.local, c.remote))?.iter()
            .filter(|(f, l, _)| *f <= c.last_ns + SKEW_NS && c.first_ns <= *l + SKEW_NS)
            .min_by_key(|(f, _, _)| (f - c.first_ns).abs())
            .map(|(_, _, k)| *k)
    };
    let weight = |k: f64| if k > 0.0 { 1.0 / k } else { 0.0 };
    // tgid -> (comm, sockets, single, paired)
    let mut per: BTreeMap<i32, (String, u64, f64, f64)> = BTreeMap::new();
    let (mut pairs, mut lone_dropped) = (0u64, 0u64);
    for s in sockets.values().filter(|s| s.role == Role::Client) {
        let e = per.entry(s.tgid).or_insert_with(|| (String::new(), 0, 0.0, 0.0));
        if e.0.is_empty() {
            e.0 = if s.comm.is_empty() { "-".into() } else { s.comm.clone() };
        }
        e.1 += 1;
        e.2 += weight(s.keep);
        match peer_of(s) {
            Some(_) => pairs += 1,
            None if known.contains(&s.remote) || !sampling.contains(&s.remote.0) => {}
            None => {
                lone_dropped += 1;
                continue;
            }
        }
        e.3 += weight(s.keep);
    }
    for (tgid, (comm, n, single, paired)) in &per {
        println!("CLIENT {tgid} {comm} {n} {single:.1} {paired:.1}");
    }
    println!(
        "# messages {} undecodable {undecodable} partitions {} pairs {pairs} withheld {lone_dropped}",
        read.messages, read.partitions
    );
    std::process::exit(if read.complete { 0 } else { 3 });
}
