pub mod avro;
pub mod kafka;
pub mod kafka_client;
pub mod pipeline;
pub mod spool;
