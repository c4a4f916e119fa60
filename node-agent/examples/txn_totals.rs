//! Per-process totals of the TransactionStats records on a Kafka topic, for the load-shedding
//! benchmark (node-agent/bench/load_shedding.sh): reads every partition of TOPIC from the
//! beginning to its end, decodes each record with the agent's own decoder
//! (`transactions::decode_single_object`) and, per (role, tgid), adds up the records'
//! transactions, requestBytes and responseBytes and merges their latency histograms exactly
//! (clientRtt for CLIENT records, serverTime for SERVER ones: bucket-wise addition of counts),
//! and sums `connections` (the connections a record stands for: more than 1 for the merged
//! records of short connections with masked client ports).
//! Prints one line per (role, tgid):
//!   ROLE TGID COMM RECORDS CONNECTIONS TRANSACTIONS REQUEST_BYTES RESPONSE_BYTES HIST_COUNT P50_NS P90_NS P99_NS
//! with each percentile the midpoint of its nearest-rank bucket (within 2^-(s+1) = 0.39 % of any
//! value in the bucket), 0 when the histogram is empty; then a last line
//! `# messages N undecodable M partitions P`.
//! Bounded: gives up after TIMEOUT_S seconds (default 60) with what it has read (exit 3).
//! Usage: txn_totals BROKERS TOPIC [TIMEOUT_S]
use std::collections::BTreeMap;
use std::time::Duration;

use wattgraph_agent::capture::connections::transactions::{bucket_mid, Histogram, TxnRole};
use wattgraph_agent::output::avro::transaction::decode_single_object;

#[path = "support/read_topic.rs"]
mod read_topic;

#[derive(Default)]
struct Totals {
    comm: String,
    records: u64,
    connections: i64,
    transactions: i64,
    request_bytes: i64,
    response_bytes: i64,
    latency: Histogram,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(brokers), Some(topic)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: txn_totals BROKERS TOPIC [TIMEOUT_S]");
        std::process::exit(2);
    };
    let timeout = Duration::from_secs(args.get(3).and_then(|a| a.parse().ok()).unwrap_or(60));
    let mut totals: BTreeMap<(&'static str, i32), Totals> = BTreeMap::new();
    let mut undecodable = 0u64;
    let read = read_topic::read_topic("txn_totals", brokers, topic, timeout, |payload| {
        let Some(payload) = payload else {
            undecodable += 1;
            return;
        };
        match decode_single_object(payload) {
            Ok(r) => {
                let role = if r.role == TxnRole::Client { "CLIENT" } else { "SERVER" };
                let t = totals.entry((role, r.tgid)).or_default();
                if t.comm.is_empty() {
                    t.comm = if r.comm.is_empty() { "-".into() } else { r.comm.replace(char::is_whitespace, "_") };
                }
                t.records += 1;
                t.connections += r.connections;
                t.transactions += r.transactions;
                t.request_bytes += r.request_bytes;
                t.response_bytes += r.response_bytes;
                t.latency.merge(if r.role == TxnRole::Client { &r.client_rtt } else { &r.server_time });
            }
            Err(e) => {
                if undecodable == 0 {
                    eprintln!("txn_totals: undecodable record: {e:#}");
                }
                undecodable += 1;
            }
        }
    });
    let pct = |h: &Histogram, q: f64| h.percentile_bucket(q).map_or(0, bucket_mid);
    for ((role, tgid), t) in &totals {
        println!(
            "{role} {tgid} {} {} {} {} {} {} {} {} {} {}",
            t.comm,
            t.records,
            t.connections,
            t.transactions,
            t.request_bytes,
            t.response_bytes,
            t.latency.total(),
            pct(&t.latency, 0.50),
            pct(&t.latency, 0.90),
            pct(&t.latency, 0.99)
        );
    }
    println!("# messages {} undecodable {undecodable} partitions {}", read.messages, read.partitions);
    std::process::exit(if read.complete { 0 } else { 3 });
}
