//! A send allocates nothing on the calling thread while the broker is up: `EventProducer::send`
//! (with a disk spool configured: each record journaled) makes no Rust allocation, where a bare
//! rdkafka 0.39 send makes a CString of the topic each time (librdkafka's own copies use malloc,
//! not counted here). Counted per thread by tests/main.rs's allocator.
use crate::common;
use common::agent;

use common::alloc_count::allocs;

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, ThreadedProducer};
use wattgraph_agent::output::kafka::{EventProducer, Sent, SpoolOptions};


#[test]
fn send_with_the_broker_up_allocates_nothing() {
    const N: u64 = 1000;
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic("alloc.test", 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("spool", "alloc").join("spool");
    // Each send is journaled in the spool's segment; a new segment (allocations of its own) comes
    // once per segment size (here 16 MiB), not within these sends.
    let opts = SpoolOptions { memory_messages: 100_000, dir: Some(dir.clone()), max_bytes: 64 << 20, ..SpoolOptions::default() };
    let p = EventProducer::with_spool(&brokers, "alloc.test", "alloc-test", &opts).unwrap();
    let bare: ThreadedProducer<DefaultProducerContext> = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    let payload = [7u8; 200];
    for _ in 0..100 {
        assert_eq!(p.send(b"key", &payload), Sent::Memory);
        bare.send(BaseRecord::to("alloc.test").key(&b"key"[..]).payload(&payload[..])).map_err(|(e, _)| e).unwrap();
    }
    let before = allocs();
    for _ in 0..N {
        bare.send(BaseRecord::to("alloc.test").key(&b"key"[..]).payload(&payload[..])).map_err(|(e, _)| e).unwrap();
    }
    let bare_allocs = allocs() - before;
    let before = allocs();
    for _ in 0..N {
        assert_eq!(p.send(b"key", &payload), Sent::Memory);
    }
    let ours = allocs() - before;
    eprintln!("allocations per send: rdkafka {} / EventProducer {}", bare_allocs as f64 / N as f64, ours as f64 / N as f64);
    assert_eq!(ours, 0, "a send allocates nothing");
    assert!(bare_allocs >= N, "the bare rdkafka send allocates (what this avoids): {bare_allocs}");
    // Another topic (send_to) costs one allocation the first time only.
    assert_eq!(p.send_to("alloc.other", b"key", &payload), Sent::Memory);
    let before = allocs();
    for _ in 0..N {
        assert_eq!(p.send_to("alloc.other", b"key", &payload), Sent::Memory);
    }
    assert_eq!(allocs() - before, 0, "send_to allocates nothing once the topic is known");
    let b = allocs();
    drop(std::hint::black_box(vec![1u8; 10]));
    assert_eq!(allocs() - b, 1, "the counter counts");
    drop(p);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
