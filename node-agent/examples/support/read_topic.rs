//! Reads every partition of a Kafka topic from its beginning to its end (the benchmark's
//! read-back of one run's topic), bounded in time. Shared by the bench examples.
use std::collections::HashSet;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

/// What was read: messages, partitions, and whether every partition was read to its end.
pub struct Read {
    pub messages: u64,
    pub partitions: usize,
    pub complete: bool,
}

/// Calls `each` with every record value (None for a record without one). `tool` names the
/// caller in its messages. Exits with 1 when no consumer can be made, with 3 (after printing
/// `# messages 0 ...`) when the topic has no partitions within `timeout`.
pub fn read_topic(tool: &str, brokers: &str, topic: &str, timeout: Duration, mut each: impl FnMut(Option<&[u8]>)) -> Read {
    let deadline = Instant::now() + timeout;
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("wattgraph-bench-{tool}"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap_or_else(|e| {
            eprintln!("{tool}: consumer: {e}");
            std::process::exit(1);
        });

    // Every partition from the beginning; the topic may take a moment to show in the metadata.
    let partitions = loop {
        match consumer.fetch_metadata(Some(topic), Duration::from_secs(5)) {
            Ok(md) => {
                if let Some(t) = md.topics().iter().find(|t| t.name() == topic) {
                    if t.error().is_none() && !t.partitions().is_empty() {
                        break t.partitions().iter().map(|p| p.id()).collect::<Vec<i32>>();
                    }
                }
            }
            Err(e) => eprintln!("{tool}: metadata: {e}"),
        }
        if Instant::now() >= deadline {
            eprintln!("{tool}: topic {topic} has no partitions after {timeout:?}");
            println!("# messages 0 undecodable 0 partitions 0");
            std::process::exit(3);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let mut tpl = TopicPartitionList::new();
    for p in &partitions {
        tpl.add_partition_offset(topic, *p, Offset::Beginning).expect("partition");
    }
    consumer.assign(&tpl).expect("assign");

    let mut messages = 0u64;
    let mut at_end: HashSet<i32> = HashSet::new();
    while at_end.len() < partitions.len() {
        if Instant::now() >= deadline {
            eprintln!("{tool}: stopped after {timeout:?} with {} of {} partitions read to their end", at_end.len(), partitions.len());
            return Read { messages, partitions: partitions.len(), complete: false };
        }
        match consumer.poll(Duration::from_millis(500)) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(p))) => {
                at_end.insert(p);
            }
            Some(Err(e)) => eprintln!("{tool}: {e}"),
            Some(Ok(m)) => {
                at_end.remove(&m.partition());
                messages += 1;
                each(m.payload());
            }
        }
    }
    Read { messages, partitions: partitions.len(), complete: true }
}
