//! Kafka producer for encoded ConnectionEvents (librdkafka built from the crate's
//! bundled source). Batching, lz4, idempotent, acks=all.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::producer::PurgeConfig;
use rdkafka::ClientContext;

#[derive(Default, Debug)]
pub struct KafkaStats {
    pub delivered: AtomicU64,
    pub delivery_errors: AtomicU64,
    /// Not enqueued (local queue full for too long, or another produce error).
    pub dropped: AtomicU64,
    last_error_log: AtomicU64,
}

pub struct StatsContext {
    stats: Arc<KafkaStats>,
}

/// librdkafka repeats broker-down errors several times a second; log them at most
/// every 10 s (the stats line counts failures anyway).
pub(crate) fn rate_limited(last: &AtomicU64) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let prev = last.load(Ordering::Relaxed);
    now < prev + 10 || last.compare_exchange(prev, now, Ordering::Relaxed, Ordering::Relaxed).is_err()
}

impl ClientContext for StatsContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, msg: &str) {
        if (level as i32) <= (RDKafkaLogLevel::Warning as i32) {
            if !rate_limited(&self.stats.last_error_log) {
                log::warn!("librdkafka {fac}: {msg}");
            }
        } else {
            log::debug!("librdkafka {fac}: {msg}");
        }
    }
    fn error(&self, error: KafkaError, reason: &str) {
        if !rate_limited(&self.stats.last_error_log) {
            log::warn!("kafka: {error}: {reason} (repeats suppressed for 10 s)");
        }
    }
}

impl ProducerContext for StatsContext {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.stats.delivered.fetch_add(1, Ordering::Relaxed),
            Err((e, _)) => {
                log::debug!("kafka delivery failed: {e}");
                self.stats.delivery_errors.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

pub struct EventProducer {
    producer: ThreadedProducer<StatsContext>,
    topic: String,
    stats: Arc<KafkaStats>,
}

impl EventProducer {
    pub fn new(brokers: &str, topic: &str, client_id: &str) -> Result<EventProducer> {
        let stats = Arc::new(KafkaStats::default());
        let producer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("client.id", client_id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("compression.type", "lz4")
            .set("linger.ms", "50")
            .set("batch.num.messages", "10000")
            .set("queue.buffering.max.messages", "200000")
            .set("message.timeout.ms", "120000")
            .create_with_context(StatsContext { stats: stats.clone() })
            .context("create Kafka producer")?;
        Ok(EventProducer { producer, topic: topic.to_string(), stats })
    }

    pub fn stats(&self) -> &Arc<KafkaStats> {
        &self.stats
    }

    /// Enqueues one message (librdkafka copies key and payload). If the local queue
    /// is full, waits up to 1 s for room, then counts the message as dropped.
    pub fn send(&self, key: &[u8], payload: &[u8]) {
        self.send_to(&self.topic, key, payload)
    }

    /// As `send`, to another topic (ResourceSample records).
    pub fn send_to(&self, topic: &str, key: &[u8], payload: &[u8]) {
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut record = BaseRecord::to(topic).key(key).payload(payload);
        loop {
            match self.producer.send(record) {
                Ok(()) => return,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) if Instant::now() < deadline => {
                    record = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => {
                    log::debug!("kafka produce failed: {e}");
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    }

    /// Bounded wait for outstanding messages; returns how many were still in flight.
    pub fn flush(&self, timeout: Duration) -> i32 {
        let _ = self.producer.flush(timeout);
        let left = self.producer.in_flight_count();
        if left > 0 {
            // Give up on the rest so dropping the producer does not block.
            self.producer.purge(PurgeConfig::default().queue().inflight());
        }
        left
    }
}
