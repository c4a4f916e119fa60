//! PowerBudget schema (schemas/avro/PowerBudget.avsc): the host budgets graph-service publishes
//! on the compacted topic `wattgraph.power-budgets` (key = UTF-8 hostId, value = Avro
//! single-object encoding). The agent only reads them; `encode` (through apache-avro) exists for
//! tests and tools that need to produce a budget.
use anyhow::{anyhow, Result};
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::output::avro::{opt_value, RecordSchema};

const FIELD_LAYOUT: [&str; 10] = [
    "hostId", "sequence", "policy", "computedAtNs", "validUntilNs", "budgetWatts", "minWatts", "maxWatts",
    "previousWatts", "reason",
];

static SCHEMA: RecordSchema = RecordSchema::new("PowerBudget", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/PowerBudget.avsc")), &FIELD_LAYOUT, file!());

/// PowerBudgetPolicy: who computed the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    Hyppo,
    Presto,
    Manual,
}

impl Policy {
    pub fn index(self) -> u32 {
        self as u32
    }
    pub fn symbol(self) -> &'static str {
        ["HYPPO", "PRESTO", "MANUAL"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<Policy> {
        [Policy::Hyppo, Policy::Presto, Policy::Manual].into_iter().find(|p| p.symbol() == s)
    }
}

pub fn schema() -> &'static Schema {
    SCHEMA.schema()
}

pub fn fingerprint() -> [u8; 8] {
    SCHEMA.fingerprint()
}

/// One PowerBudget record (field semantics in the .avsc).
#[derive(Debug, Clone, PartialEq)]
pub struct PowerBudget {
    pub host_id: String,
    pub sequence: i64,
    pub policy: Policy,
    pub computed_at_ns: i64,
    pub valid_until_ns: i64,
    pub budget_watts: f64,
    pub min_watts: f64,
    pub max_watts: f64,
    pub previous_watts: Option<f64>,
    pub reason: String,
}

/// Decodes single-object bytes (marker and writer fingerprint checked against the .avsc).
pub fn decode_single_object(bytes: &[u8]) -> Result<PowerBudget> {
    SCHEMA.decode(bytes, |f| {
        let policy = f.symbol("policy")?;
        Ok(PowerBudget {
            host_id: f.string("hostId")?,
            sequence: f.long("sequence")?,
            policy: Policy::from_symbol(policy).ok_or_else(|| anyhow!("bad policy {policy}"))?,
            computed_at_ns: f.long("computedAtNs")?,
            valid_until_ns: f.long("validUntilNs")?,
            budget_watts: f.double("budgetWatts")?,
            min_watts: f.double("minWatts")?,
            max_watts: f.double("maxWatts")?,
            previous_watts: f.opt_double("previousWatts")?,
            reason: f.string("reason")?,
        })
    })
}

/// apache-avro `Value` of a record.
pub fn to_value(b: &PowerBudget) -> Value {
    Value::Record(vec![
        ("hostId".into(), Value::String(b.host_id.clone())),
        ("sequence".into(), Value::Long(b.sequence)),
        ("policy".into(), Value::Enum(b.policy.index(), b.policy.symbol().into())),
        ("computedAtNs".into(), Value::Long(b.computed_at_ns)),
        ("validUntilNs".into(), Value::Long(b.valid_until_ns)),
        ("budgetWatts".into(), Value::Double(b.budget_watts)),
        ("minWatts".into(), Value::Double(b.min_watts)),
        ("maxWatts".into(), Value::Double(b.max_watts)),
        ("previousWatts".into(), opt_value(b.previous_watts, Value::Double)),
        ("reason".into(), Value::String(b.reason.clone())),
    ])
}

/// Single-object encoding of a record, written by apache-avro (tests, tools; not a hot path).
pub fn encode(b: &PowerBudget) -> Result<Vec<u8>> {
    let mut out = SCHEMA.writer()?.header().to_vec();
    out.extend_from_slice(&apache_avro::to_avro_datum(schema(), to_value(b))?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::avro::round_trip::{assert_matches_apache_avro, assert_refuses_other_fingerprint};

    pub(crate) fn sample(seq: i64) -> PowerBudget {
        PowerBudget {
            host_id: "höst-1".into(),
            sequence: seq,
            policy: Policy::Presto,
            computed_at_ns: seq,
            valid_until_ns: seq.wrapping_add(30_000_000_000), // the i64::MAX case wraps (release builds did silently)
            budget_watts: 97.3125,
            min_watts: 50.5,
            max_watts: 250.0,
            previous_watts: if seq % 2 == 0 { None } else { Some(100.0) },
            reason: "Eq. 5.8 ⚡".into(),
        }
    }

    #[test]
    fn encode_matches_apache_avro_single_object_writer_and_decodes_back() {
        let samples = [0, 1, 1_763_870_000_000_000_000, i64::MAX, i64::MIN].map(sample);
        assert_matches_apache_avro(schema(), samples, |b, out| *out = encode(b).unwrap(), to_value, decode_single_object);
    }

    #[test]
    fn decode_rejects_garbage_and_other_schemas() {
        let bytes = encode(&sample(3)).unwrap();
        assert!(decode_single_object(&bytes[..5]).unwrap_err().to_string().contains("single-object"));
        assert_refuses_other_fingerprint(bytes, decode_single_object);
        let mut truncated = encode(&sample(3)).unwrap();
        truncated.truncate(truncated.len() - 3);
        assert!(decode_single_object(&truncated).is_err());
        assert!(decode_single_object(b"").is_err());
    }
}
