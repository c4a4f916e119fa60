//! Kafka producer for encoded records (librdkafka built from the crate's bundled source).
//! Batching, lz4, idempotent, acks=all.
//!
//! **Spool** while Kafka is unreachable or slow: librdkafka's queue is the memory tier
//! (`--spool-memory-messages`, no message timeout; the idempotent producer keeps the order per
//! partition across retries). With a spool directory every record it takes is journaled in the
//! disk tier first (`spool::DiskSpool`, a copy into a mapped segment), so a killed agent loses
//! none of them: the next start sends what Kafka had not confirmed. When the memory tier is full,
//! records wait in the disk tier, and once anything waits there every new record does too until
//! the drainer thread has moved them all into librdkafka, so a sender's records stay in order.
//! Beyond `--spool-max-bytes` (or without a spool directory) records are dropped and counted; a
//! record the disk refuses while librdkafka has room is held in memory only (counted).
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::ffi::CString;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer, ProducerContext};
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::producer::PurgeConfig;
use rdkafka::{ClientContext, IntoOpaque, Message};

use crate::output::kafka_client::{KafkaClient, WithKafkaClient};
use crate::output::kafka_poll::Poller;
use crate::output::spool::DiskSpool;

/// Space reserved per disk segment (or a quarter of the bound, if smaller).
const SEGMENT_BYTES: u64 = 64 << 20;
const DRAIN_EVERY: Duration = Duration::from_millis(20);
/// How often the spool records how far each segment was delivered: after a kill, records
/// delivered within this are sent again (the job drops the replays).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

#[derive(Clone, Debug)]
pub struct SpoolOptions {
    /// librdkafka's queue (messages).
    pub memory_messages: u64,
    /// librdkafka's queue (payload bytes, as librdkafka counts them; a multiple of 1024).
    pub memory_bytes: u64,
    /// Disk tier; None = records beyond the memory tier are dropped.
    pub dir: Option<PathBuf>,
    pub max_bytes: u64,
}

impl Default for SpoolOptions {
    fn default() -> Self {
        SpoolOptions { memory_messages: 200_000, memory_bytes: 1 << 30, dir: None, max_bytes: 1 << 30 }
    }
}

#[derive(Default, Debug)]
pub struct KafkaStats {
    pub delivered: AtomicU64,
    /// Failed for good (e.g. too large), or purged at shutdown after the bounded flush.
    pub delivery_errors: AtomicU64,
    /// Refused: beyond the spool's bound, a disk error, or another produce error.
    pub dropped: AtomicU64,
    /// Handed to librdkafka (directly or from disk), and of those delivered or failed.
    pub enqueued: AtomicU64,
    pub enqueued_bytes: AtomicU64,
    pub completed: AtomicU64,
    pub completed_bytes: AtomicU64,
    /// Records written to the disk tier.
    pub spilled: AtomicU64,
    /// Disk tier now: records not yet moved back into librdkafka; bytes of the records in its
    /// segment files (the journaled ones too).
    pub disk_records: AtomicU64,
    pub disk_bytes: AtomicU64,
    pub disk_errors: AtomicU64,
    /// Records accepted on disk that could not be read back (also in `dropped`).
    pub disk_lost: AtomicU64,
    /// Bytes cut off torn segment tails when the spool was opened.
    pub disk_torn_bytes: AtomicU64,
    /// Records librdkafka still held at a stop, written back to the disk spool.
    pub rescued: AtomicU64,
    /// Taken by librdkafka without a copy on disk (no spool directory, or the disk tier refused
    /// it): a kill loses those not yet delivered.
    pub memory_only: AtomicU64,
    /// Records a previous run left unconfirmed, found at start (sent again).
    pub replayed: AtomicU64,
    last_error_log: AtomicU64,
}

impl KafkaStats {
    /// Records in the memory tier (librdkafka's queue and in flight).
    pub fn memory_records(&self) -> u64 {
        self.enqueued.load(Ordering::Relaxed).saturating_sub(self.completed.load(Ordering::Relaxed))
    }

    /// Key and payload bytes in the memory tier.
    pub fn memory_bytes(&self) -> u64 {
        self.enqueued_bytes.load(Ordering::Relaxed).saturating_sub(self.completed_bytes.load(Ordering::Relaxed))
    }
}

/// Where `send_to` put a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Memory,
    Disk,
    Dropped,
}

pub struct StatsContext {
    stats: Arc<KafkaStats>,
    spool: Option<Arc<Mutex<DiskSpool>>>,
    /// Purged at a stop (topic, key, payload, opaque: 1 + sequence number, or 0): written back to the disk spool.
    rescued: Mutex<Vec<(String, Vec<u8>, Vec<u8>, usize)>>,
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
    /// 0, or 1 + the spool's sequence number of the record.
    type DeliveryOpaque = usize;
    fn delivery(&self, result: &DeliveryResult<'_>, seq: usize) {
        let mut keep_on_disk = false;
        let m = match result {
            Ok(m) => {
                self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                m
            }
            Err((e, m)) => {
                let purged = matches!(e.rdkafka_error_code(), Some(RDKafkaErrorCode::PurgeQueue | RDKafkaErrorCode::PurgeInflight));
                if purged && self.spool.is_some() {
                    // Only flush() purges: kept for the disk spool (acknowledged there after).
                    keep_on_disk = true;
                    let (t, k, p) = (m.topic().to_string(), m.key().unwrap_or_default().to_vec(), m.payload().unwrap_or_default().to_vec());
                    self.rescued.lock().unwrap().push((t, k, p, seq));
                } else {
                    keep_on_disk = purged;
                    log::debug!("kafka delivery failed: {e}");
                    self.stats.delivery_errors.fetch_add(1, Ordering::Relaxed);
                }
                m
            }
        };
        self.stats.completed_bytes.fetch_add((m.key_len() + m.payload_len()) as u64, Ordering::Relaxed);
        self.stats.completed.fetch_add(1, Ordering::Relaxed);
        if let (Some(spool), true) = (&self.spool, seq > 0 && !keep_on_disk) {
            let mut s = spool.lock().unwrap();
            if let Err(e) = s.delivered(seq as u64 - 1) {
                self.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
                log::warn!("spool: cannot delete a delivered segment: {e}");
            }
            self.stats.disk_bytes.store(s.bytes(), Ordering::Relaxed);
        }
    }
}

struct Inner {
    producer: BaseProducer<StatsContext>,
    /// NUL-terminated topic names, made once per topic (a send passes librdkafka a C string).
    topics: RwLock<Vec<(Box<str>, CString)>>,
    spool: Option<Arc<Mutex<DiskSpool>>>,
    /// Something is on disk: new records go there too (order).
    disk_active: AtomicBool,
    stats: Arc<KafkaStats>,
}

impl Inner {
    /// One record into librdkafka. Topic C strings are made once per topic, under one read lock
    /// per send afterwards: the hot path allocates nothing.
    fn enqueue(&self, topic: &str, key: &[u8], payload: &[u8], seq: usize) -> Result<(), KafkaError> {
        let topics = self.topics.read().unwrap();
        match topics.iter().find(|(t, _)| &**t == topic) {
            Some((_, c)) => self.produce(c, key, payload, seq)?,
            None => {
                // First record of this topic: one allocation, under the write lock.
                drop(topics);
                let mut topics = self.topics.write().unwrap();
                if !topics.iter().any(|(t, _)| &**t == topic) {
                    topics.push((topic.into(), CString::new(topic).map_err(KafkaError::from)?));
                }
                let c = &topics.iter().find(|(t, _)| &**t == topic).expect("present").1;
                self.produce(c, key, payload, seq)?;
            }
        }
        self.stats.enqueued_bytes.fetch_add((key.len() + payload.len()) as u64, Ordering::Relaxed);
        self.stats.enqueued.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// What `BaseProducer::send` does (same librdkafka call and flags: copy key and payload,
    /// partitioner's choice, `seq` as the delivery opaque of `StatsContext`), without its
    /// CString of the topic per send.
    fn produce(&self, topic_c: &CString, key: &[u8], payload: &[u8], seq: usize) -> Result<(), KafkaError> {
        use rdkafka::bindings::rd_kafka_vtype_t::*;
        // SAFETY: the arguments are the (type, value) pairs rd_kafka_producev reads, with the
        // types rdkafka 0.39's send passes; librdkafka copies key and payload (F_COPY) and the
        // topic name before returning; the opaque is a usize, not a pointer to free.
        let err = unsafe {
            rdkafka::bindings::rd_kafka_producev(
                self.producer.client().native_ptr(),
                RD_KAFKA_VTYPE_TOPIC,
                topic_c.as_ptr(),
                RD_KAFKA_VTYPE_PARTITION,
                -1i32,
                RD_KAFKA_VTYPE_MSGFLAGS,
                rdkafka::bindings::RD_KAFKA_MSG_F_COPY as std::os::raw::c_int,
                RD_KAFKA_VTYPE_VALUE,
                payload.as_ptr() as *mut std::ffi::c_void,
                payload.len(),
                RD_KAFKA_VTYPE_KEY,
                key.as_ptr() as *const std::ffi::c_void,
                key.len(),
                RD_KAFKA_VTYPE_OPAQUE,
                seq.into_ptr(),
                RD_KAFKA_VTYPE_END,
            )
        };
        if err != rdkafka::bindings::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return Err(KafkaError::MessageProduction(err.into()));
        }
        Ok(())
    }

    fn drop_one(&self, why: &dyn std::fmt::Display) -> Sent {
        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        if !rate_limited(&self.stats.last_error_log) {
            log::warn!("kafka: record dropped: {why} (counted in wattgraph_agent_kafka_dropped_total; repeats suppressed for 10 s)");
        }
        Sent::Dropped
    }

    fn publish_disk(&self, s: &DiskSpool) {
        self.stats.disk_records.store(s.records(), Ordering::Relaxed);
        self.stats.disk_bytes.store(s.bytes(), Ordering::Relaxed);
    }

    fn send(&self, topic: &str, key: &[u8], payload: &[u8]) -> Sent {
        let Some(spool) = &self.spool else {
            return match self.enqueue(topic, key, payload, 0) {
                Ok(()) => {
                    self.stats.memory_only.fetch_add(1, Ordering::Relaxed);
                    Sent::Memory
                }
                Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) => {
                    self.drop_one(&"the memory spool is full and there is no --spool-dir")
                }
                Err(e) => self.drop_one(&e),
            };
        };
        let mut s = spool.lock().unwrap();
        let r = if s.is_empty() { self.journaled(&mut s, topic, key, payload) } else { self.to_disk(&mut s, topic, key, payload) };
        self.publish_disk(&s);
        r
    }

    /// Nothing waits on disk: into librdkafka, journaled on disk first.
    fn journaled(&self, s: &mut DiskSpool, topic: &str, key: &[u8], payload: &[u8]) -> Sent {
        let seq = match s.journal(topic, key, payload) {
            Ok(Some(seq)) => seq,
            refused => {
                if let Err(e) = refused {
                    self.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
                    if !rate_limited(&self.stats.last_error_log) {
                        log::warn!("spool: journal write failed: {e} (records held in memory only meanwhile, counted)");
                    }
                }
                return match self.enqueue(topic, key, payload, 0) {
                    Ok(()) => {
                        self.stats.memory_only.fetch_add(1, Ordering::Relaxed);
                        Sent::Memory
                    }
                    Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) => {
                        self.drop_one(&"the spool is full (memory and --spool-max-bytes)")
                    }
                    Err(e) => self.drop_one(&e),
                };
            }
        };
        match self.enqueue(topic, key, payload, seq as usize + 1) {
            Ok(()) => Sent::Memory,
            Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) => {
                // On disk already: it waits there for the drainer.
                s.unhand_last();
                self.stats.spilled.fetch_add(1, Ordering::Relaxed);
                self.disk_active.store(true, Ordering::Release);
                Sent::Disk
            }
            Err(e) => {
                let _ = s.delivered(seq); // refused for good: not to be sent again
                self.drop_one(&e)
            }
        }
    }

    /// Records wait on disk: behind them (order).
    fn to_disk(&self, s: &mut DiskSpool, topic: &str, key: &[u8], payload: &[u8]) -> Sent {
        match s.append(topic, key, payload) {
            Ok(true) => {
                self.stats.spilled.fetch_add(1, Ordering::Relaxed);
                self.disk_active.store(true, Ordering::Release);
                Sent::Disk
            }
            Ok(false) => self.drop_one(&"the spool is full (memory and --spool-max-bytes)"),
            Err(e) => {
                self.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
                self.drop_one(&format_args!("spool write failed: {e}"))
            }
        }
    }

    /// Moves records from disk into librdkafka while it has room.
    fn drain(&self, spool: &Mutex<DiskSpool>) {
        let mut s = spool.lock().unwrap();
        loop {
            let Some(r) = s.peek() else { break };
            let seq = r.seq;
            match self.enqueue(r.topic, r.key, r.payload, seq as usize + 1) {
                Ok(()) => s.advance(),
                Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) => break,
                Err(e) => {
                    // Refused for good (e.g. too large): it would block the spool forever.
                    s.advance();
                    let _ = s.delivered(seq);
                    self.drop_one(&e);
                }
            }
        }
        // Unreadable segment rests (logged by the spool with file and offset): accepted, then
        // lost, so counted as dropped and on their own.
        let (errors, lost) = s.take_lost();
        if errors > 0 {
            self.stats.disk_errors.fetch_add(errors, Ordering::Relaxed);
            self.stats.dropped.fetch_add(lost, Ordering::Relaxed);
            self.stats.disk_lost.fetch_add(lost, Ordering::Relaxed);
        }
        if s.is_empty() {
            self.disk_active.store(false, Ordering::Release);
        }
        self.publish_disk(&s);
    }
}

pub struct EventProducer {
    inner: Arc<Inner>,
    topic: String,
    drainer: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
    /// Serves the delivery reports; stopped before the producer is destroyed.
    poller: Mutex<Poller>,
}

impl EventProducer {
    /// Memory tier only, with the default bound.
    pub fn new(brokers: &str, topic: &str, client_id: &str) -> Result<EventProducer> {
        Self::with_spool(brokers, topic, client_id, &SpoolOptions::default())
    }

    /// PLAINTEXT to `brokers`, with a spool.
    pub fn with_spool(brokers: &str, topic: &str, client_id: &str, opts: &SpoolOptions) -> Result<EventProducer> {
        Self::with_client(&KafkaClient::plain(brokers), topic, client_id, opts)
    }

    /// Opens the disk spool (records of a previous run are sent first) and starts its drainer;
    /// connects as `client` says (brokers, TLS, SASL: `kafka_client`).
    pub fn with_client(client: &KafkaClient, topic: &str, client_id: &str, opts: &SpoolOptions) -> Result<EventProducer> {
        let stats = Arc::new(KafkaStats::default());
        let spool = match &opts.dir {
            Some(d) => {
                let s = DiskSpool::open(d, opts.max_bytes, SEGMENT_BYTES.min(opts.max_bytes / 4).max(4096))
                    .with_context(|| format!("--spool-dir '{}'", d.display()))?;
                stats.disk_torn_bytes.store(s.truncated_bytes, Ordering::Relaxed);
                stats.replayed.store(s.records(), Ordering::Relaxed);
                if !s.is_empty() {
                    log::info!("spool: {} records ({} bytes) left on disk by a previous run are sent first", s.records(), s.bytes());
                }
                Some(Arc::new(Mutex::new(s)))
            }
            None => None,
        };
        let producer = ClientConfig::new()
            .set("client.id", client_id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("compression.type", "lz4")
            .set("linger.ms", "50")
            .set("batch.num.messages", "10000")
            .set("queue.buffering.max.messages", opts.memory_messages.to_string())
            .set("queue.buffering.max.kbytes", (opts.memory_bytes / 1024).to_string())
            // Never expire a queued message: an outage is bounded by the spool, not by time.
            .set("message.timeout.ms", "0")
            .with_client(client)
            .create_with_context(StatsContext { stats: stats.clone(), spool: spool.clone(), rescued: Mutex::new(Vec::new()) })
            .context("create Kafka producer")?;
        let inner = Arc::new(Inner { producer, topics: RwLock::new(Vec::new()), spool, disk_active: AtomicBool::new(false), stats });
        let served = inner.clone();
        let poller = Poller::start(inner.producer.client().native_ptr(), move || served.producer.poll(Duration::ZERO))?;
        let mut drainer = None;
        if let Some(spool) = inner.spool.clone() {
            {
                let s = spool.lock().unwrap();
                inner.disk_active.store(!s.is_empty(), Ordering::Release);
                inner.publish_disk(&s);
            }
            let stop = Arc::new(AtomicBool::new(false));
            let (i, st) = (inner.clone(), stop.clone());
            let t = std::thread::Builder::new()
                .name("wg-spool".into())
                .spawn(move || {
                    let mut next_checkpoint = std::time::Instant::now();
                    while !st.load(Ordering::Relaxed) {
                        if i.disk_active.load(Ordering::Acquire) {
                            i.drain(&spool);
                        }
                        if std::time::Instant::now() >= next_checkpoint {
                            if let Err(e) = spool.lock().unwrap().checkpoint() {
                                i.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
                                if !rate_limited(&i.stats.last_error_log) {
                                    log::warn!("spool: cannot record how far the segments were delivered ({e}): a restart after a kill sends more again");
                                }
                            }
                            next_checkpoint += CHECKPOINT_EVERY;
                        }
                        std::thread::sleep(DRAIN_EVERY);
                    }
                })
                .context("start the spool drainer thread")?;
            drainer = Some((stop, t));
        }
        Ok(EventProducer { inner, topic: topic.to_string(), drainer: Mutex::new(drainer), poller: Mutex::new(poller) })
    }

    pub fn stats(&self) -> &Arc<KafkaStats> {
        &self.inner.stats
    }

    /// How often the delivery report thread woke: at an event, at a stop, or after 100 ms idle.
    pub fn delivery_wakeups(&self) -> u64 {
        self.poller.lock().unwrap().wakeups.load(Ordering::Relaxed)
    }

    /// Enqueues one message (librdkafka copies key and payload); when the memory tier is full,
    /// to disk; beyond the bound, dropped and counted. Never blocks on the broker.
    pub fn send(&self, key: &[u8], payload: &[u8]) -> Sent {
        self.inner.send(&self.topic, key, payload)
    }

    /// As `send`, to another topic (ResourceSample records).
    pub fn send_to(&self, topic: &str, key: &[u8], payload: &[u8]) -> Sent {
        self.inner.send(topic, key, payload)
    }

    /// Bounded wait for the memory tier; returns how many messages were still in librdkafka,
    /// which are purged. With a disk spool they are written back to it, ahead of what is there,
    /// and the spool records how far each segment was sent: the next start sends each of them
    /// once (an in-flight request the broker did take but never confirmed can come twice).
    /// Without one they are lost, counted as delivery errors.
    pub fn flush(&self, timeout: Duration) -> i32 {
        self.stop_drainer();
        let producer = &self.inner.producer;
        let _ = producer.flush(timeout);
        let left = producer.in_flight_count();
        if left > 0 {
            // Give up on the rest so dropping the producer does not block.
            producer.purge(PurgeConfig::default().queue().inflight());
            let _ = producer.flush(Duration::from_secs(1)); // delivers the purge reports
        }
        if let Some(spool) = &self.inner.spool {
            let rescued = std::mem::take(&mut *producer.context().rescued.lock().unwrap());
            let mut s = spool.lock().unwrap();
            let records: Vec<(String, Vec<u8>, Vec<u8>)> = rescued.iter().map(|(t, k, p, _)| (t.clone(), k.clone(), p.clone())).collect();
            match s.rescue(&records) {
                Ok(_) => {
                    self.inner.stats.rescued.fetch_add(records.len() as u64, Ordering::Relaxed);
                    for (_, _, _, seq) in &rescued {
                        if *seq > 0 {
                            let _ = s.delivered(*seq as u64 - 1); // now in the rescue segment
                        }
                    }
                }
                Err(e) => {
                    // Records on disk (journaled or waiting there) stay there, sent again; the others are lost.
                    let lost = rescued.iter().filter(|r| r.3 == 0).count() as u64;
                    self.inner.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
                    self.inner.stats.dropped.fetch_add(lost, Ordering::Relaxed);
                    log::error!("spool: cannot write back {} records at stop ({e}); {lost} lost", records.len());
                }
            }
            if let Err(e) = s.close() {
                self.inner.stats.disk_errors.fetch_add(1, Ordering::Relaxed);
                log::error!("spool: cannot record how far the segments were sent ({e}); they are sent again at the next start");
            }
            self.inner.publish_disk(&s);
        }
        left
    }
}

impl EventProducer {
    fn stop_drainer(&self) {
        if let Some((stop, t)) = self.drainer.lock().unwrap().take() {
            stop.store(true, Ordering::Relaxed);
            let _ = t.join();
        }
    }
}

impl Drop for EventProducer {
    fn drop(&mut self) {
        self.stop_drainer();
        // Here, while `inner` still holds the producer: the poller's queue handle goes first.
        self.poller.lock().unwrap().stop();
    }
}
