//! ServiceMapping (schemas/avro/ServiceMapping.avsc): one Kubernetes Service virtual address and
//! TCP port with its ready backends, as `wattgraph-service-mapper` publishes it to the compacted
//! topic (key `vip:port`), and its encoder (Avro single-object encoding).
use std::sync::OnceLock;

use anyhow::{bail, Result};
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::output::avro::{opt_str_value, write_long, write_opt_str, write_str, RecordFields, RecordSchema, SingleObjectWriter};

const FIELD_LAYOUT: [&str; 6] = ["vip", "port", "protocol", "namespace", "service", "backends"];

static SCHEMA: RecordSchema = RecordSchema::new("ServiceMapping", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/ServiceMapping.avsc")), &FIELD_LAYOUT, file!());

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Backend {
    pub address: String,
    pub port: u16,
    pub node_name: Option<String>,
}

/// One virtual address and TCP port (protocol is always TCP: only TCP is correlated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceMapping {
    pub vip: String,
    pub port: u16,
    pub namespace: Option<String>,
    pub service: Option<String>,
    /// Ready endpoints, sorted, without duplicates.
    pub backends: Vec<Backend>,
}

impl ServiceMapping {
    /// The topic key: `a.b.c.d:port` or `[v6]:port`, as the stream job parses it.
    pub fn key(&self) -> String {
        if self.vip.contains(':') {
            format!("[{}]:{}", self.vip, self.port)
        } else {
            format!("{}:{}", self.vip, self.port)
        }
    }
}

pub fn schema() -> &'static Schema {
    SCHEMA.schema()
}

pub fn fingerprint() -> [u8; 8] {
    SCHEMA.fingerprint()
}

/// Single-object encoding of a mapping.
pub fn encode(m: &ServiceMapping) -> Vec<u8> {
    static WRITER: OnceLock<SingleObjectWriter> = OnceLock::new();
    let w = WRITER.get_or_init(|| SCHEMA.writer().expect("layout"));
    let mut out = Vec::with_capacity(64 + 32 * m.backends.len());
    w.begin(&mut out);
    write_str(&mut out, &m.vip);
    write_long(&mut out, m.port as i64);
    write_str(&mut out, "TCP");
    write_opt_str(&mut out, m.namespace.as_deref());
    write_opt_str(&mut out, m.service.as_deref());
    if !m.backends.is_empty() {
        write_long(&mut out, m.backends.len() as i64);
        for b in &m.backends {
            write_str(&mut out, &b.address);
            write_long(&mut out, b.port as i64);
            write_opt_str(&mut out, b.node_name.as_deref());
        }
    }
    write_long(&mut out, 0);
    out
}

pub fn decode_single_object(bytes: &[u8]) -> Result<ServiceMapping> {
    SCHEMA.decode(bytes, |f| {
        if f.string("protocol")? != "TCP" {
            bail!("protocol {} is not TCP", f.string("protocol")?);
        }
        let backends = f
            .array("backends", |x| Some(x.clone()))?
            .iter()
            .map(|v| {
                let b = RecordFields::of(v)?;
                Ok(Backend { address: b.string("address")?, port: b.port("port")?, node_name: b.opt_string("nodeName")? })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ServiceMapping {
            vip: f.string("vip")?,
            port: f.port("port")?,
            namespace: f.opt_string("namespace")?,
            service: f.opt_string("service")?,
            backends,
        })
    })
}

/// apache-avro `Value` of a mapping (tests compare with apache-avro's writer).
pub fn to_value(m: &ServiceMapping) -> Value {
    Value::Record(vec![
        ("vip".into(), Value::String(m.vip.clone())),
        ("port".into(), Value::Int(m.port as i32)),
        ("protocol".into(), Value::String("TCP".into())),
        ("namespace".into(), opt_str_value(m.namespace.as_deref())),
        ("service".into(), opt_str_value(m.service.as_deref())),
        (
            "backends".into(),
            Value::Array(
                m.backends
                    .iter()
                    .map(|b| {
                        Value::Record(vec![
                            ("address".into(), Value::String(b.address.clone())),
                            ("port".into(), Value::Int(b.port as i32)),
                            ("nodeName".into(), opt_str_value(b.node_name.as_deref())),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_beyond_65535_is_refused_not_truncated() {
        // Avro int, so 70000 fits the schema; it was taken as port 4464 (70000 mod 65536).
        let mut bytes = SCHEMA.writer().unwrap().header().to_vec();
        write_str(&mut bytes, "10.96.0.10");
        write_long(&mut bytes, 70_000);
        write_str(&mut bytes, "TCP");
        write_opt_str(&mut bytes, None);
        write_opt_str(&mut bytes, None);
        write_long(&mut bytes, 0);
        let e = decode_single_object(&bytes).unwrap_err().to_string();
        assert_eq!(e, "port: 70000 is not a port (0..=65535)");
    }
}
