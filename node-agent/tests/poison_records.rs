//! Poison records: Kafka values whose length fields claim far more than the record carries.
//! Every Avro decoder refuses them with the reason, never allocating what they claim (at most
//! the bound output/avro gives apache-avro, 256 KiB per string and per array or map block count),
//! and the power budget controller counts such a record and applies the next good one.
use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::alloc_count::largest_allocation;
use wattgraph_agent::control::power_cap::budget::BudgetController;
use wattgraph_agent::control::power_cap::outcome::{Ignored, Outcome, PowerCapMode};
use wattgraph_agent::control::power_cap::metrics::BudgetMetrics;
use wattgraph_agent::output::avro::transaction as transactions;
use wattgraph_agent::output::avro::{budget as budget_avro, cgroup as cgroup_avro};
use wattgraph_agent::output::avro::service_mapping as service_mappings;


/// The bounds (output/avro MAX_LENGTH_BYTES, MAX_RECORD_BYTES), spelt out so the test states them.
const BOUND: usize = 256 << 10;
const RECORD_BOUND: usize = 1 << 20;

fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn header(fingerprint: [u8; 8]) -> Vec<u8> {
    let mut b = vec![0xC3, 0x01];
    b.extend_from_slice(&fingerprint);
    b
}

/// A PowerBudget whose hostId claims `len` bytes and carries 8.
fn budget_claiming(len: i64) -> Vec<u8> {
    let mut b = header(budget_avro::fingerprint());
    varint(&mut b, len);
    b.extend_from_slice(b"host-one");
    b
}

/// A ServiceMapping whose backends array claims `count` items and carries none.
fn mapping_claiming(count: i64) -> Vec<u8> {
    let mut b = header(service_mappings::fingerprint());
    for s in ["10.96.0.10"] {
        varint(&mut b, s.len() as i64);
        b.extend_from_slice(s.as_bytes());
    }
    varint(&mut b, 80);
    varint(&mut b, 3);
    b.extend_from_slice(b"TCP");
    b.extend_from_slice(&[0, 0]); // namespace, service: null
    varint(&mut b, count);
    b
}

#[track_caller]
fn refused<T: std::fmt::Debug>(what: &str, r: (anyhow::Result<T>, usize), reason: &[&str]) {
    let (r, largest) = r;
    let e = format!("{:#}", r.expect_err(what));
    for want in reason {
        assert!(e.contains(want), "{what}: the reason {e:?} should say {want:?}");
    }
    assert!(largest <= BOUND + 4096, "{what}: a single allocation of {largest} bytes (bound {BOUND})");
}

#[test]
fn a_string_length_of_one_and_a_half_billion_is_refused_without_allocating_it() {
    let bytes = budget_claiming(1_500_000_000);
    assert_eq!(bytes.len(), 10 + 5 + 8);
    let r = largest_allocation(|| budget_avro::decode_single_object(&bytes));
    refused("1.5e9", r, &["1500000000", &BOUND.to_string()]);
}

#[test]
fn a_string_length_under_apache_avros_default_limit_is_refused_too() {
    // 100 MB: apache-avro's own default (512 MiB) would allocate it before finding it missing.
    let bytes = budget_claiming(100_000_000);
    let r = largest_allocation(|| budget_avro::decode_single_object(&bytes));
    refused("100e6", r, &["100000000", &BOUND.to_string()]);
}

#[test]
fn an_array_count_of_twenty_million_is_refused_without_reserving_it() {
    // apache-avro reserves count x size_of::<Value>() (56 bytes) before reading an item: 1.1 GB.
    let bytes = mapping_claiming(20_000_000);
    let r = largest_allocation(|| service_mappings::decode_single_object(&bytes));
    refused("20e6 backends", r, &["20000000", &BOUND.to_string()]);
}

#[test]
fn the_transaction_record_fuzzing_found_is_refused() {
    // fuzz/avro_records: 247 bytes whose array count made apache-avro ask for 6.1 GB.
    let hex = "c3013ffbe2c768bff04b0c686f73742d61809bc383ecf8fac13080c8ee040000010000000000000e00df929bc3fa300200000000000000000000ffff0a000002a00100000000000000000000ffff0a000001c3013ffbe2c768bff04b0c686f73742d61809bc383ecf8fac13080c8ee040000010000000000000e00df929bc3fa300200000000000000000000ffff0a000002a00100000000000000000000ffff0a00000100a00190e8c8e997070a6e67696e78f67e8080808000a00190e8c8e997070a6e67696e78f67e808080801e00015a901cf0a5030e000004bc20b4240004500a000206474554022f005002bc2000025000005000";
    let bytes = common::unhex(hex);
    let r = largest_allocation(|| transactions::decode_single_object(&bytes));
    refused("fuzz/avro_records oom", r, &["avro decode"]);
}

#[test]
fn the_cgroup_record_whose_label_map_fuzzing_found_is_refused() {
    // fuzz/avro_records: 110 bytes (fingerprint rewritten to the current CgroupStats: v3 appends its fields
    // after podLabels) whose podLabels map count (under a first bound of 1 MiB) made
    // apache-avro reserve a hash table of 162 MiB.
    let hex = "c301598ec555deaae4731e68c3b673742dc3bc2de69db1e4baacffffffffffffffffff01000000000000000000000066666666666666660c504f444dffffffffffffff010000000000000000ffff74ffffffff0f02000201020002feffffffffffffffff01029c7500883ce4377e";
    let bytes = common::unhex(hex);
    let r = largest_allocation(|| cgroup_avro::decode_single_object(&bytes));
    refused("fuzz/avro_records map oom", r, &["avro decode", &BOUND.to_string()]);
}

#[test]
fn a_record_larger_than_kafka_delivers_is_refused_before_decoding() {
    let mut bytes = budget_claiming(RECORD_BOUND as i64);
    bytes.resize(RECORD_BOUND + 64, b'x');
    let r = largest_allocation(|| budget_avro::decode_single_object(&bytes));
    refused("oversized", r, &["record of 1048640 bytes", "larger than 1048576"]);
}

#[test]
fn the_budget_controller_counts_a_poison_record_and_applies_the_next_budget() {
    let no_rapl = std::env::temp_dir().join(format!("wg-poison-no-rapl-{}", std::process::id()));
    let m = Arc::new(BudgetMetrics::new(PowerCapMode::DryRun));
    let mut c = BudgetController::new("host-one", PowerCapMode::DryRun, &no_rapl, &no_rapl.join("state"), 0.0, Duration::from_secs(60), m.clone());
    let now_ns = 1_763_870_000_000_000_000i64;
    let t = Instant::now();
    for poison in [budget_claiming(1_500_000_000), budget_claiming(100_000_000), b"\xc3\x01garbage".to_vec()] {
        let (outcome, largest) = largest_allocation(|| c.on_payload(Some(&poison), now_ns, t));
        assert_eq!(outcome, Outcome::Ignored(Ignored::Decode));
        assert!(largest <= BOUND + 4096, "a single allocation of {largest} bytes");
    }
    assert_eq!(m.ignored_count(Ignored::Decode), 3);
    let good = budget_avro::PowerBudget {
        host_id: "host-one".into(),
        sequence: 1,
        policy: budget_avro::Policy::Manual,
        computed_at_ns: now_ns,
        valid_until_ns: now_ns + 30_000_000_000,
        budget_watts: 120.0,
        min_watts: 50.0,
        max_watts: 200.0,
        previous_watts: None,
        reason: "after the poison".into(),
    };
    assert_eq!(c.on_payload(Some(&budget_avro::encode(&good).unwrap()), now_ns, t), Outcome::Applied);
}
