//! Side-by-side cost of a send with the broker up: the producer without a spool directory (the
//! memory tier only) against one with it (each record journaled into a mapped segment first).
//! CPU time of the sending thread per record, median of 5 rounds each, alternating. A benchmark,
//! run by hand: `cargo test --release -p wattgraph-agent --test agent kafka_journal_cost:: -- --ignored
//! --nocapture` (docs/benchmarks/agent.md, "The spool's journal").
use crate::common;
use common::agent;

use rdkafka::mocking::MockCluster;
use wattgraph_agent::output::kafka::{EventProducer, Sent, SpoolOptions};

fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU ns per send of `n` 250-byte records (sent in bursts the mock broker keeps up with).
fn per_send(p: &EventProducer, n: usize) -> f64 {
    let payload = [7u8; 250];
    let t0 = thread_cpu_ns();
    for i in 0..n {
        assert_eq!(p.send(format!("{:08}", i % 1000).as_bytes(), &payload), Sent::Memory);
        if i % 10_000 == 9_999 {
            let c0 = thread_cpu_ns();
            while p.stats().memory_records() > 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // The wait is not the send's: taken off again.
            let waited = thread_cpu_ns() - c0;
            return_waited(waited);
        }
    }
    (thread_cpu_ns() - t0 - take_waited()) as f64 / n as f64
}

thread_local!(static WAITED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
fn return_waited(ns: u64) {
    WAITED.with(|w| w.set(w.get() + ns));
}
fn take_waited() -> u64 {
    WAITED.with(|w| w.replace(0))
}

#[test]
#[ignore = "benchmark, run by hand"]
fn a_journaled_send_against_a_memory_only_send() {
    const N: usize = 200_000;
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic("cost.test", 4, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("spool", "journal-cost").join("spool");
    let memory = EventProducer::with_spool(&brokers, "cost.test", "cost-memory", &SpoolOptions { memory_messages: 200_000, dir: None, max_bytes: 1 << 30, ..SpoolOptions::default() }).unwrap();
    let journaled = EventProducer::with_spool(&brokers, "cost.test", "cost-journal", &SpoolOptions { memory_messages: 200_000, dir: Some(dir.clone()), max_bytes: 1 << 30, ..SpoolOptions::default() }).unwrap();
    per_send(&memory, 20_000);
    per_send(&journaled, 20_000);
    let (mut m, mut j) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        m.push(per_send(&memory, N));
        j.push(per_send(&journaled, N));
    }
    m.sort_by(f64::total_cmp);
    j.sort_by(f64::total_cmp);
    eprintln!("CPU ns per send, 5 rounds of {N}: memory only {m:.0?} (median {:.0}), journaled {j:.0?} (median {:.0})", m[2], j[2]);
    drop(journaled);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
