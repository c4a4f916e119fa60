//! The output stage: every record type leaves the agent through `route` (record -> its Avro
//! encoder in `avro` -> the producer in `kafka`, spilling to the disk `spool` while Kafka is
//! unreachable). `pipeline` turns a connection event into its record and key; `kafka_client`
//! holds how every Kafka client of the crate connects.
pub mod avro;
pub mod kafka;
pub mod kafka_client;
pub(crate) mod kafka_poll;
pub mod pipeline;
pub mod spool;

mod route;

pub use route::{CaptureEnded, CaptureOutlet, CgroupOutlet, Output, ResourceOutlet, Topics};
