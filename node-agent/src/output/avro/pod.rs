//! The pod fields of ResourceSample and CgroupStats (podName, podNamespace, podLabels): written,
//! decoded, and as apache-avro values for the tests that compare with its writer.
use anyhow::{bail, Result};
use apache_avro::types::Value;

use crate::identity::pod_metadata::{PodFields, PodRef};
use crate::output::avro::{opt_str_value, write_long, write_opt_str, write_str, RecordFields};

/// podName, podNamespace, podLabels (a map: one block in key order, then 0).
pub fn write_pod(out: &mut Vec<u8>, pod: &PodRef<'_>) {
    write_opt_str(out, pod.name);
    write_opt_str(out, pod.namespace);
    if !pod.labels.is_empty() {
        write_long(out, pod.labels.len() as i64);
        for (k, v) in pod.labels {
            write_str(out, k);
            write_str(out, v);
        }
    }
    write_long(out, 0);
}

/// From a decoded record.
pub(crate) fn decode_pod(f: &RecordFields<'_>) -> Result<PodFields> {
    let labels = match f.get("podLabels")? {
        Value::Map(m) => {
            let mut l: Vec<(String, String)> = m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    o => bail!("podLabels.{k}: expected string, got {o:?}"),
                })
                .collect::<Result<_>>()?;
            l.sort();
            l
        }
        o => bail!("podLabels: expected map, got {o:?}"),
    };
    Ok(PodFields { name: f.opt_string("podName")?, namespace: f.opt_string("podNamespace")?, labels })
}

/// apache-avro values of the three fields (tests compare with apache-avro's writer, whose
/// map order is its own: compare bytes only for records with at most one label).
pub fn pod_values(pod: &PodRef<'_>) -> [(String, Value); 3] {
    let labels = pod.labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    [("podName".into(), opt_str_value(pod.name)), ("podNamespace".into(), opt_str_value(pod.namespace)), ("podLabels".into(), Value::Map(labels))]
}
