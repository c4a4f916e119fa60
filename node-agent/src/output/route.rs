//! The one way out: every record the agent publishes is built by its stage, encoded here and
//! handed to the one producer (librdkafka's queue, then the disk spool while Kafka is slow or
//! away). Each thread that produces records gets its own outlet (encoder and buffers reused, so
//! a steady-state record allocates nothing):
//!
//! | record           | built by (thread)                    | encoder             | topic                 | key                  |
//! |------------------|--------------------------------------|---------------------|-----------------------|----------------------|
//! | ConnectionEvent  | capture (drained by the main thread) | `avro::connection`  | `--topic`             | canonical connection |
//! | TransactionStats | capture (drained by the main thread) | `avro::transaction` | `--transaction-topic` | canonical connection |
//! | ResourceSample   | resources sampler thread             | `avro::resource`    | `--resource-topic`    | host id              |
//! | CgroupStats      | cgroup sampler thread                | `avro::cgroup`      | `--cgroup-topic`      | host id              |
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::capture::connections::transactions::ConnTxn;
use crate::capture::connections::CaptureHandle;
use crate::capture::event::ConnEvent;
use crate::output::avro::cgroup::CgroupStatsEncoder;
use crate::output::avro::resource::ResourceEncoder;
use crate::output::avro::transaction::{TxnEncoder, TxnRecord};
use crate::output::kafka::{EventProducer, KafkaStats};
use crate::output::pipeline::Pipeline;
use crate::resources::cgroup_report::CgroupSink;
use crate::resources::record::{CgroupStatsRecord, ResourceRecord};
use crate::resources::sampler::ResourceSink;

/// The topic of each record type.
#[derive(Debug, Clone)]
pub struct Topics {
    pub connections: String,
    pub transactions: String,
    pub resources: String,
    pub cgroups: String,
}

/// The output stage: the producer and the routes to it.
pub struct Output {
    producer: Arc<EventProducer>,
    topics: Arc<Topics>,
    host_id: Arc<str>,
}

impl Output {
    pub fn new(producer: EventProducer, topics: Topics, host_id: &str) -> Output {
        Output { producer: Arc::new(producer), topics: Arc::new(topics), host_id: host_id.into() }
    }

    pub fn stats(&self) -> &Arc<KafkaStats> {
        self.producer.stats()
    }

    /// ConnectionEvents (through `pipeline`, which adds command lines and containers) and
    /// TransactionStats, for the thread that drains the capture.
    pub fn capture_outlet(&self, pipeline: Pipeline, boot_to_unix_ns: i64) -> Result<CaptureOutlet> {
        Ok(CaptureOutlet {
            producer: self.producer.clone(),
            topics: self.topics.clone(),
            host_id: self.host_id.clone(),
            boot_to_unix_ns,
            pipeline,
            txn_encoder: TxnEncoder::new()?,
            txn: TxnRecord::default(),
            key: String::with_capacity(128),
            buf: Vec::with_capacity(1024),
        })
    }

    /// ResourceSamples, for the sampler thread.
    pub fn resource_outlet(&self) -> Result<ResourceOutlet> {
        Ok(ResourceOutlet { producer: self.producer.clone(), topics: self.topics.clone(), host_id: self.host_id.clone(), enc: ResourceEncoder::new()?, buf: Vec::with_capacity(1024) })
    }

    /// CgroupStats, for the cgroup thread.
    pub fn cgroup_outlet(&self) -> Result<CgroupOutlet> {
        Ok(CgroupOutlet { producer: self.producer.clone(), topics: self.topics.clone(), host_id: self.host_id.clone(), enc: CgroupStatsEncoder::new()?, buf: Vec::with_capacity(512) })
    }

    /// Bounded wait for what is queued (`EventProducer::flush`); how many records were left.
    pub fn flush(&self, timeout: Duration) -> i32 {
        self.producer.flush(timeout)
    }
}

/// The capture thread has ended (its channel is gone).
#[derive(Debug)]
pub struct CaptureEnded;

pub struct CaptureOutlet {
    producer: Arc<EventProducer>,
    topics: Arc<Topics>,
    host_id: Arc<str>,
    boot_to_unix_ns: i64,
    pipeline: Pipeline,
    txn_encoder: TxnEncoder,
    /// Reused buffers for TransactionStats (no allocation per record once grown).
    txn: TxnRecord,
    key: String,
    buf: Vec<u8>,
}

impl CaptureOutlet {
    /// Publishes what the capture delivered: one connection event (waiting at most `wait` for
    /// it), then every transaction record queued.
    pub fn forward(&mut self, capture: &CaptureHandle, wait: Duration) -> Result<(), CaptureEnded> {
        match capture.events().recv_timeout(wait) {
            Ok(ev) => {
                self.connection(&ev);
                capture.taken();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(CaptureEnded),
        }
        while let Ok(t) = capture.transactions().try_recv() {
            self.transaction(&t);
            capture.txn_taken();
        }
        Ok(())
    }

    pub fn connection(&mut self, ev: &ConnEvent) {
        let (key, payload) = self.pipeline.process(ev);
        self.producer.send_to(&self.topics.connections, key, payload);
    }

    pub fn transaction(&mut self, t: &ConnTxn) {
        t.fill_record(&self.host_id, self.boot_to_unix_ns, &mut self.txn, &mut self.key);
        self.txn_encoder.encode(&self.txn, &mut self.buf);
        self.producer.send_to(&self.topics.transactions, self.key.as_bytes(), &self.buf);
    }
}

pub struct ResourceOutlet {
    producer: Arc<EventProducer>,
    topics: Arc<Topics>,
    host_id: Arc<str>,
    enc: ResourceEncoder,
    buf: Vec<u8>,
}

impl ResourceSink for ResourceOutlet {
    fn put_resources(&mut self, records: &[ResourceRecord]) {
        for r in records {
            self.enc.encode(r, &mut self.buf);
            self.producer.send_to(&self.topics.resources, self.host_id.as_bytes(), &self.buf);
        }
    }
}

pub struct CgroupOutlet {
    producer: Arc<EventProducer>,
    topics: Arc<Topics>,
    host_id: Arc<str>,
    enc: CgroupStatsEncoder,
    buf: Vec<u8>,
}

impl CgroupSink for CgroupOutlet {
    fn put_cgroup(&mut self, record: &CgroupStatsRecord<'_>) {
        self.enc.encode(record, &mut self.buf);
        self.producer.send_to(&self.topics.cgroups, self.host_id.as_bytes(), &self.buf);
    }
}
