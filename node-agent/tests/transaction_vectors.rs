//! Shared TransactionStats vectors (schemas/test-vectors/transaction-stats/*.json), also used by
//! the Java suite: encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
//! WG_WRITE_VECTORS=1 fills empty `singleObjectHex` fields (then check the Java suite agrees).
use crate::common;


use serde_json::Value;
use wattgraph_agent::shared::net::addr16_from_ip;
use wattgraph_agent::capture::connections::transactions::{Histogram, TxnRole};
use wattgraph_agent::output::avro::transaction::{decode_single_object, RouteRecord, TxnEncoder, TxnRecord};

fn to_record(e: &Value) -> TxnRecord {
    let s = |k: &str| e[k].as_str().unwrap_or_else(|| panic!("{k} not a string")).to_string();
    let l = |k: &str| e[k].as_i64().unwrap_or_else(|| panic!("{k} not a long"));
    let i = |k: &str| i32::try_from(l(k)).unwrap_or_else(|_| panic!("{k} not an int"));
    let arr = |k: &str| -> Vec<i64> { e[k].as_array().unwrap_or_else(|| panic!("{k} not an array")).iter().map(|x| x.as_i64().unwrap()).collect() };
    let hist = |b: &str, c: &str| Histogram { cells: arr(b).iter().zip(arr(c)).map(|(b, c)| (*b as u32, c as u64)).collect() };
    TxnRecord {
        host_id: s("hostId"),
        interval_start_ns: l("intervalStartNs"),
        interval_end_ns: l("intervalEndNs"),
        role: TxnRole::from_symbol(&s("role")).unwrap(),
        local_address: addr16_from_ip(s("localAddress").parse().unwrap()),
        local_port: i("localPort") as u16,
        remote_address: addr16_from_ip(s("remoteAddress").parse().unwrap()),
        remote_port: i("remotePort") as u16,
        tgid: i("tgid"),
        process_start_time_ns: l("processStartTimeNs"),
        comm: s("comm"),
        cgroup_id: l("cgroupId"),
        netns_inode: l("netnsInode"),
        socket_cookie: l("socketCookie"),
        closed: e["closed"].as_bool().unwrap(),
        transactions: l("transactions"),
        request_bytes: l("requestBytes"),
        response_bytes: l("responseBytes"),
        sub_bucket_bits: i("subBucketBits"),
        client_rtt: hist("clientRttBuckets", "clientRttCounts"),
        server_time: hist("serverTimeBuckets", "serverTimeCounts"),
        http_routes: e["httpRoutes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| RouteRecord {
                        method: r["method"].as_str().unwrap().into(),
                        path: r["path"].as_str().unwrap().into(),
                        path_truncated: r["pathTruncated"].as_bool().unwrap(),
                        transactions: r["transactions"].as_i64().unwrap(),
                        latency: Histogram {
                            cells: r["latencyBuckets"].as_array().unwrap().iter().zip(r["latencyCounts"].as_array().unwrap())
                                .map(|(b, c)| (b.as_u64().unwrap() as u32, c.as_u64().unwrap()))
                                .collect(),
                        },
                    })
                    .collect()
            })
            .unwrap_or_default(), // optional in the JSON: the schema default
        connections: e.get("connections").map_or(1, |c| c.as_i64().expect("connections not a long")),
        nat: common::nat_of(e),
    }
}

#[test]
fn shared_transaction_vectors_encode_and_decode() {
    let enc = TxnEncoder::new().unwrap();
    let mut buf = Vec::new();
    common::check_vectors("transaction-stats", 6, to_record, |r| {
        enc.encode(r, &mut buf);
        buf.clone()
    }, decode_single_object);
}

/// The kernel's `txn_bucket` (src/capture/connections/connections.h) compiled natively with the host C
/// compiler, against `transactions::bucket_of` over a sweep of the u64 range.
#[test]
fn kernel_bucket_function_matches_rust() {
    let Some(exe) = common::native::compile(
        "txn-bucket-parity",
        r#"#include "connections.h"
int main(void) {
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        unsigned long long v; if (sscanf(line, "%llu", &v) != 1) continue;
        printf("%llu %u\n", v, txn_bucket(v));
    }
    return 0;
}
"#,
    ) else {
        return;
    };
    let mut vals: Vec<u64> = (0..5000).collect();
    let mut x = 5000f64;
    while x < 1.8e19 {
        vals.extend([x as u64 - 1, x as u64, x as u64 + 1]);
        x *= 1.003;
    }
    for e in 8..64 {
        vals.extend([(1u64 << e) - 1, 1u64 << e, (1u64 << e) + 1]);
    }
    vals.push(u64::MAX);
    let input: String = vals.iter().map(|v| format!("{v}\n")).collect();
    let text = common::native::run(&exe, input);
    let mut n = 0;
    for line in text.lines() {
        let mut it = line.split(' ');
        let v: u64 = it.next().unwrap().parse().unwrap();
        let b: u32 = it.next().unwrap().parse().unwrap();
        assert_eq!(b, wattgraph_agent::capture::connections::transactions::bucket_of(v), "kernel vs Rust bucket of {v}");
        n += 1;
    }
    assert_eq!(n, vals.len());
    println!("kernel txn_bucket == bucket_of on {n} values");
}
