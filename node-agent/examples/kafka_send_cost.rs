//! Cost of one send on the calling thread: the agent's `EventProducer::send` against a bare
//! rdkafka `BaseRecord` send of the same record, side by side in one run (librdkafka's mock
//! cluster, so no network). Prints ns per send of each and their ratio.
//! cargo run --release --example kafka_send_cost [SENDS_PER_BLOCK] [ROUNDS]
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use wattgraph_agent::output::kafka::{EventProducer, Sent, SpoolOptions};

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("numbers")).collect();
    let (n, rounds) = (args.first().copied().unwrap_or(200_000), args.get(1).copied().unwrap_or(5));
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic("wattgraph.connections", 6, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let opts = SpoolOptions { memory_messages: 2 * n, dir: None, max_bytes: 0, ..SpoolOptions::default() };
    let ours = EventProducer::with_spool(&brokers, "wattgraph.connections", "cost", &opts).unwrap();
    let bare: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", &brokers)
        .set("enable.idempotence", "true")
        .set("compression.type", "lz4")
        .set("linger.ms", "50")
        .set("queue.buffering.max.messages", (2 * n).to_string())
        .create()
        .unwrap();
    let payload = [7u8; 160];
    let keys: Vec<String> = (0..1024).map(|i| format!("10.0.0.{}:{}|10.0.1.1:80", i % 256, 30000 + i)).collect();
    let (mut t_ours, mut t_bare) = (Duration::ZERO, Duration::ZERO);
    for r in 0..rounds {
        let t = Instant::now();
        for i in 0..n as usize {
            assert_eq!(ours.send(keys[i % 1024].as_bytes(), &payload), Sent::Memory);
        }
        t_ours += t.elapsed();
        // Let librdkafka deliver the block before the next one is timed.
        let want = n * (r + 1);
        while ours.stats().delivered.load(std::sync::atomic::Ordering::Relaxed) < want {
            std::thread::sleep(Duration::from_millis(10));
        }
        let t = Instant::now();
        for i in 0..n as usize {
            bare.send(BaseRecord::to("wattgraph.connections").key(keys[i % 1024].as_bytes()).payload(&payload[..])).map_err(|(e, _)| e).unwrap();
        }
        t_bare += t.elapsed();
        bare.flush(Duration::from_secs(60)).unwrap();
    }
    let per = |d: Duration| d.as_nanos() as f64 / (n * rounds) as f64;
    println!("ns per send: EventProducer {:.1}, bare rdkafka {:.1}, ratio {:.3} ({} sends each)", per(t_ours), per(t_bare), per(t_ours) / per(t_bare), n * rounds);
}
