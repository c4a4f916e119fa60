//! Publishing the mappings: a round lists the cluster, sends what changed (and a tombstone for
//! what disappeared) to the compacted topic, and remembers what the topic holds.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::{build, list_all};
use crate::identity::kube_api::KubeClient;
use crate::output::avro::service_mapping::{encode, ServiceMapping};
use crate::output::kafka_client::{KafkaClient, WithKafkaClient};

#[derive(Debug, Clone)]
pub struct PublisherOptions {
    /// API server base URL, e.g. https://kubernetes.default.svc.
    pub api_url: String,
    pub token_file: Option<std::path::PathBuf>,
    pub ca_file: Option<std::path::PathBuf>,
    pub insecure_tls: bool,
    /// Brokers and librdkafka properties (TLS, SASL).
    pub kafka: KafkaClient,
    pub topic: String,
}

/// Counts delivery failures of a round.
#[derive(Default)]
pub struct DeliveryErrors {
    pub failed: Arc<AtomicU64>,
}

impl ClientContext for DeliveryErrors {}

impl ProducerContext for DeliveryErrors {
    type DeliveryOpaque = ();
    fn delivery(&self, r: &DeliveryResult<'_>, _: ()) {
        if let Err((e, m)) = r {
            self.failed.fetch_add(1, Ordering::Relaxed);
            log::warn!("service mapping {:?} not delivered: {e}", m.key().map(String::from_utf8_lossy));
        }
    }
}

/// What a round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub mappings: usize,
    pub upserts: usize,
    pub deletes: usize,
}

pub struct MappingPublisher {
    opts: PublisherOptions,
    client: KubeClient,
    producer: BaseProducer<DeliveryErrors>,
    failed: Arc<AtomicU64>,
    /// What the topic holds (as of the last successful round): key -> encoded value.
    published: BTreeMap<String, Vec<u8>>,
}

impl MappingPublisher {
    /// Connects, and reads what the compacted topic already holds, so that mappings deleted
    /// while no publisher ran get their tombstone in the first round.
    pub fn new(opts: PublisherOptions) -> Result<MappingPublisher> {
        let client = KubeClient::new(opts.token_file.clone(), opts.ca_file.as_ref(), opts.insecure_tls, "--ca-file")?;
        let ctx = DeliveryErrors::default();
        let failed = ctx.failed.clone();
        let producer: BaseProducer<DeliveryErrors> = ClientConfig::new()
            .set("client.id", "wattgraph-service-mapper")
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("message.timeout.ms", "30000")
            .with_client(&opts.kafka)
            .create_with_context(ctx)
            .context("create Kafka producer")?;
        let published = read_topic(&opts.kafka, &opts.topic).with_context(|| format!("reading topic {}", opts.topic))?;
        log::info!("topic {} holds {} service mappings", opts.topic, published.len());
        Ok(MappingPublisher { opts, client, producer, failed, published })
    }

    pub fn published(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.published
    }

    /// Lists Services and EndpointSlices and builds the mappings.
    pub fn fetch(&self) -> Result<BTreeMap<String, ServiceMapping>> {
        let base = self.opts.api_url.trim_end_matches('/');
        let services = list_all(&self.client, &format!("{base}/api/v1/services"))?;
        let slices = list_all(&self.client, &format!("{base}/apis/discovery.k8s.io/v1/endpointslices"))?;
        build(&services, &slices).context("joining Services and EndpointSlices")
    }

    /// One round: fetch, publish what changed (upserts, tombstones), wait for delivery. On any
    /// failure nothing counts as published, so the next round sends it again (a compacted topic
    /// and the job's broadcast state take a repeat as a no-op).
    pub fn round(&mut self) -> Result<Round> {
        let now = self.fetch()?;
        let encoded: BTreeMap<String, Vec<u8>> = now.iter().map(|(k, m)| (k.clone(), encode(m))).collect();
        let (mut upserts, mut deletes) = (0, 0);
        self.failed.store(0, Ordering::Relaxed);
        for (k, v) in &encoded {
            if self.published.get(k) != Some(v) {
                self.send(k, Some(v))?;
                upserts += 1;
            }
        }
        for k in self.published.keys().filter(|k| !encoded.contains_key(*k)) {
            self.send(k, None)?;
            deletes += 1;
        }
        if upserts + deletes > 0 {
            self.producer.flush(Duration::from_secs(35)).context("flushing service mappings to Kafka")?;
            let failed = self.failed.load(Ordering::Relaxed);
            if failed > 0 {
                bail!("{failed} of {} service mapping changes not delivered to {}; sent again next round", upserts + deletes, self.opts.topic);
            }
        }
        self.published = encoded;
        Ok(Round { mappings: now.len(), upserts, deletes })
    }

    fn send(&self, key: &str, value: Option<&Vec<u8>>) -> Result<()> {
        let mut rec: BaseRecord<'_, str, Vec<u8>> = BaseRecord::to(&self.opts.topic).key(key);
        if let Some(v) = value {
            rec = rec.payload(v);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.producer.send(rec) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull), r)) if Instant::now() < deadline => {
                    rec = r;
                    self.producer.poll(Duration::from_millis(100));
                }
                Err((e, _)) => bail!("producing service mapping {key}: {e}"),
            }
        }
    }
}

/// The latest value per key of a (compacted) topic, read from the beginning up to its end
/// offsets when called; tombstoned keys are absent. A missing topic is empty.
pub fn read_topic(kafka: &KafkaClient, topic: &str) -> Result<BTreeMap<String, Vec<u8>>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("group.id", "wattgraph-service-mapper-reader")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .with_client(kafka)
        .create()
        .context("create Kafka consumer")?;
    let md = consumer.fetch_metadata(Some(topic), Duration::from_secs(30)).context("topic metadata")?;
    let mut out = BTreeMap::new();
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else { return Ok(out) };
    match t.error().map(rdkafka::types::RDKafkaErrorCode::from) {
        // Refused (e.g. no READ ACL) is not empty: the first round would keep stale mappings.
        Some(e) if e != rdkafka::types::RDKafkaErrorCode::UnknownTopicOrPartition => bail!("topic {topic}: {e}"),
        Some(_) => return Ok(out), // unknown topic: nothing published yet
        None if t.partitions().is_empty() => return Ok(out),
        None => {}
    }
    let mut tpl = TopicPartitionList::new();
    let mut ends = BTreeMap::new();
    for p in t.partitions() {
        let (lo, hi) = consumer.fetch_watermarks(topic, p.id(), Duration::from_secs(30)).context("watermarks")?;
        if hi > lo {
            ends.insert(p.id(), hi);
            tpl.add_partition_offset(topic, p.id(), Offset::Beginning).context("assign")?;
        }
    }
    if ends.is_empty() {
        return Ok(out);
    }
    consumer.assign(&tpl).context("assign")?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ends.is_empty() {
        if Instant::now() > deadline {
            bail!("topic not read to its end within 120 s ({} partitions left)", ends.len());
        }
        let Some(m) = consumer.poll(Duration::from_millis(500)) else { continue };
        let m = m.context("reading")?;
        if let Some(k) = m.key() {
            let k = String::from_utf8_lossy(k).into_owned();
            match m.payload() {
                Some(v) => {
                    out.insert(k, v.to_vec());
                }
                None => {
                    out.remove(&k);
                }
            }
        }
        if ends.get(&m.partition()).is_some_and(|end| m.offset() + 1 >= *end) {
            ends.remove(&m.partition());
        }
    }
    Ok(out)
}
