//! Shared TransactionStats vectors (schemas/test-vectors/transaction-stats/*.json), also used by
//! the Java suite: encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
//! WG_WRITE_VECTORS=1 fills empty `singleObjectHex` fields (then check the Java suite agrees).
mod common;

use std::path::PathBuf;

use serde_json::Value;
use wattgraph_agent::event::addr16_from_ip;
use wattgraph_agent::transactions::{decode_single_object, Histogram, TxnEncoder, TxnRecord, TxnRole};

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
    }
}

#[test]
fn shared_transaction_vectors_encode_and_decode() {
    let enc = TxnEncoder::new().unwrap();
    let mut buf = Vec::new();
    common::check_vectors("transaction-stats", 4, to_record, |r| {
        enc.encode(r, &mut buf);
        buf.clone()
    }, decode_single_object);
}

/// The kernel's `txn_bucket` (src/bpf/connections.h) compiled natively with the host C
/// compiler, against `transactions::bucket_of` over a sweep of the u64 range.
#[test]
fn kernel_bucket_function_matches_rust() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("txn-bucket-parity");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("parity.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
typedef unsigned long long __u64; typedef unsigned int __u32; typedef unsigned short __u16; typedef unsigned char __u8;
#include "connections.h"
int main(void) {
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        unsigned long long v; if (sscanf(line, "%llu", &v) != 1) continue;
        printf("%llu %u\n", v, txn_bucket(v));
    }
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("parity");
    let inc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/bpf");
    let cc = std::process::Command::new("cc").arg("-O2").arg("-I").arg(&inc).arg(&src).arg("-o").arg(&exe).status();
    match cc {
        Ok(s) if s.success() => {}
        other => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("cannot compile the parity harness with cc: {other:?}");
            }
            eprintln!("SKIPPED: no C compiler ({other:?})");
            return;
        }
    }
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
    let mut child = std::process::Command::new(&exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let mut it = line.split(' ');
        let v: u64 = it.next().unwrap().parse().unwrap();
        let b: u32 = it.next().unwrap().parse().unwrap();
        assert_eq!(b, wattgraph_agent::transactions::bucket_of(v), "kernel vs Rust bucket of {v}");
        n += 1;
    }
    assert_eq!(n, vals.len());
    println!("kernel txn_bucket == bucket_of on {n} values");
}
