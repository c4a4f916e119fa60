//! Reads this host's PowerBudget records from the compacted topic `--power-budget-topic` and
//! feeds them to the `BudgetController`, on its own thread.
//!
//! The consumer is not in a group: it assigns every partition of the topic from the beginning
//! (no offsets are committed), so at every start it finds the latest budget the compacted topic
//! still holds. While catching up (until each partition reported its end once) it only keeps the
//! last value keyed with `--host-id`, then hands that one to the controller: older records of a
//! not yet compacted segment are never applied in passing. Records keyed with other hosts are
//! skipped without decoding. Between records the controller is ticked (expiry, timeout); when
//! `stop` is set the thread restores the original limits before it ends.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use crate::control::power_cap::budget::BudgetController;
use crate::control::power_cap::outcome::PowerCapMode;
use crate::control::power_cap::metrics::BudgetMetrics;
use crate::output::kafka::rate_limited;
use crate::output::kafka_client::{KafkaClient, WithKafkaClient};
use crate::output::kafka_poll::QueueWait;

const POLL: Duration = Duration::from_millis(200);
const METADATA_RETRY: Duration = Duration::from_secs(5);
/// Short, so a stop request is seen soon while the brokers are unreachable.
const METADATA_TIMEOUT: Duration = Duration::from_secs(1);
/// Leave catch-up even if some partition never reported its end (should not happen).
const CATCH_UP_LIMIT: Duration = Duration::from_secs(60);

/// librdkafka's logs and errors, rate-limited like the producer's.
struct BudgetContext {
    metrics: Arc<BudgetMetrics>,
    last_error_log: AtomicU64,
}

impl ClientContext for BudgetContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, msg: &str) {
        if (level as i32) <= (RDKafkaLogLevel::Warning as i32) {
            if !rate_limited(&self.last_error_log) {
                log::warn!("power budgets: librdkafka {fac}: {msg}");
            }
        } else {
            log::debug!("power budgets: librdkafka {fac}: {msg}");
        }
    }
    /// Every consumer error arrives here (and again from `poll`): counted here only. Reaching the
    /// end of a partition is reported as an error too; it is not one.
    fn error(&self, error: KafkaError, reason: &str) {
        if matches!(error, KafkaError::Global(RDKafkaErrorCode::PartitionEOF) | KafkaError::PartitionEOF(_)) {
            return;
        }
        self.metrics.consumer_errors.fetch_add(1, Ordering::Relaxed);
        if !rate_limited(&self.last_error_log) {
            log::warn!("power budgets: kafka: {error}: {reason} (repeats suppressed for 10 s)");
        }
    }
}

impl ConsumerContext for BudgetContext {}

fn unix_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// What the budget thread reads and drives (`--power-cap*`, `--power-budget-topic`, `--host-id`).
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub host_id: String,
    pub mode: PowerCapMode,
    pub powercap_root: PathBuf,
    pub state_file: PathBuf,
    pub floor_watts: f64,
    pub budget_timeout: Duration,
    pub topic: String,
    pub kafka: KafkaClient,
}

/// Starts the budget thread unless `--power-cap off`. Errors only when the Kafka client cannot
/// be created (a broker that is down is retried by librdkafka).
pub fn start(opts: ConsumerOptions, metrics: Arc<BudgetMetrics>, stop: Arc<AtomicBool>) -> Result<Option<JoinHandle<()>>> {
    if opts.mode == PowerCapMode::Off {
        return Ok(None);
    }
    let controller = BudgetController::new(
        &opts.host_id,
        opts.mode,
        &opts.powercap_root,
        &opts.state_file,
        opts.floor_watts,
        opts.budget_timeout,
        metrics.clone(),
    );
    let kafka = opts.kafka;
    let consumer: BaseConsumer<BudgetContext> = ClientConfig::new()
        .set("client.id", format!("wattgraph-agent-{}-budgets", opts.host_id))
        .set("group.id", format!("wattgraph-agent-{}-budgets", opts.host_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .with_client(&kafka)
        .create_with_context(BudgetContext { metrics: metrics.clone(), last_error_log: AtomicU64::new(0) })
        .context("create the power budget Kafka consumer")?;
    let (topic, host) = (opts.topic, opts.host_id);
    log::info!("power cap: --power-cap {}: reading budgets for host {host} from topic {topic} on {}", opts.mode.as_str(), kafka.describe());
    let t = std::thread::Builder::new()
        .name("wg-budgets".into())
        .spawn(move || run(consumer, &topic, &host, controller, &metrics, &stop))
        .context("spawn the power budget thread")?;
    Ok(Some(t))
}

/// Assigns every partition of `topic` from the beginning; Ok(partition count) or why not yet.
fn assign(consumer: &BaseConsumer<BudgetContext>, topic: &str) -> std::result::Result<usize, String> {
    let md = consumer.fetch_metadata(Some(topic), METADATA_TIMEOUT).map_err(|e| e.to_string())?;
    let t = md.topics().iter().find(|t| t.name() == topic).ok_or("not in the metadata")?;
    if let Some(e) = t.error() {
        return Err(format!("{e:?}"));
    }
    if t.partitions().is_empty() {
        return Err("no partitions".into());
    }
    let mut tpl = TopicPartitionList::new();
    for p in t.partitions() {
        tpl.add_partition_offset(topic, p.id(), Offset::Beginning).map_err(|e| e.to_string())?;
    }
    consumer.assign(&tpl).map_err(|e| e.to_string())?;
    Ok(t.partitions().len())
}

fn run(
    consumer: BaseConsumer<BudgetContext>,
    topic: &str,
    host: &str,
    mut controller: BudgetController,
    metrics: &BudgetMetrics,
    stop: &AtomicBool,
) {
    // The consumer queue (the main queue is forwarded to it): waited on without rdkafka's poll
    // loop, which spins through the last millisecond of each wait (output/kafka_poll.rs). A local,
    // so it is dropped before the consumer.
    // SAFETY: a live consumer handle; the new queue handle is owned by the QueueWait.
    let wait = match QueueWait::new(unsafe { rdkafka::bindings::rd_kafka_queue_get_consumer(consumer.client().native_ptr()) }) {
        Ok(w) => Some(w),
        Err(e) => {
            log::warn!("power budgets: {e:#}; polling instead");
            None
        }
    };
    let mut partitions = 0usize;
    let mut next_assign = Instant::now();
    let mut said_missing = false;
    // Catch-up: partitions that reported their end, the last value for this host, and since when.
    let mut at_end = std::collections::HashSet::new();
    let mut catching_up: Option<(Instant, Option<Option<Vec<u8>>>)> = None;
    while !stop.load(Ordering::Relaxed) {
        if partitions == 0 {
            if Instant::now() >= next_assign {
                match assign(&consumer, topic) {
                    Ok(n) => {
                        partitions = n;
                        catching_up = Some((Instant::now(), None));
                        log::info!("power budgets: reading {n} partition(s) of {topic} from the beginning for host {host}");
                    }
                    Err(why) => {
                        metrics.consumer_errors.fetch_add(1, Ordering::Relaxed);
                        if !said_missing {
                            log::warn!("power budgets: topic {topic} not available yet ({why}); retrying every {} s", METADATA_RETRY.as_secs());
                            said_missing = true;
                        }
                        next_assign = Instant::now() + METADATA_RETRY;
                    }
                }
            }
            if partitions == 0 {
                std::thread::sleep(POLL);
                controller.tick(unix_ns(), Instant::now());
                continue;
            }
        }
        let message = match &wait {
            Some(w) => {
                w.wait(POLL);
                consumer.poll(Duration::ZERO)
            }
            None => consumer.poll(POLL),
        };
        match message {
            None => {}
            Some(Ok(m)) if m.key() == Some(host.as_bytes()) => match &mut catching_up {
                Some((_, last)) => *last = Some(m.payload().map(<[u8]>::to_vec)),
                None => {
                    controller.on_payload(m.payload(), unix_ns(), Instant::now());
                }
            },
            Some(Ok(_)) => {} // another host's budget
            Some(Err(KafkaError::PartitionEOF(p))) => {
                at_end.insert(p);
            }
            Some(Err(e)) => {
                // Counted and logged (rate-limited) by BudgetContext::error.
                log::debug!("power budgets: consume error: {e}");
            }
        }
        if let Some((since, _)) = &catching_up {
            if at_end.len() >= partitions || since.elapsed() > CATCH_UP_LIMIT {
                let (_, last) = catching_up.take().expect("catching up");
                match last {
                    Some(payload) => {
                        log::info!("power budgets: caught up with {topic}; applying the latest record for host {host}");
                        controller.on_payload(payload.as_deref(), unix_ns(), Instant::now());
                    }
                    None => log::info!("power budgets: caught up with {topic}; no budget for host {host} yet"),
                }
            }
        }
        controller.tick(unix_ns(), Instant::now());
    }
    controller.shutdown();
}
