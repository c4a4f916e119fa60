//! CgroupStats schema (schemas/avro/CgroupStats.avsc) and its allocation-free encoder of
//! `resources::record::CgroupStatsRecord` (Avro single-object encoding), checked against
//! apache-avro and the shared vectors
//! (schemas/test-vectors/cgroup-stats, node-agent/tests/cgroup_stats_vectors.rs).
use anyhow::Result;
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::output::avro::pod::{decode_pod, pod_values, write_pod};
use crate::resources::record::{CgroupStatsRecord, OwnedCgroupStats};
use crate::output::avro::{opt_str_value, opt_value, write_double, write_long, write_opt_double, write_opt_long, write_opt_str, write_str, RecordSchema, SingleObjectWriter};

const FIELD_LAYOUT: [&str; 27] = [
    "hostId", "intervalStartNs", "intervalEndNs", "groupId", "runtime", "podUid", "qosClass",
    "cgroupPath", "hierarchy", "tickIntervalNs", "ticks", "maxTickGapNs", "cpuNs", "cpuMeanCores",
    "cpuPeakCores", "throttledPeriods", "throttledNs", "memoryBytes", "memoryPeakBytes",
    "ioReadBytes", "ioWriteBytes", "pids", "podName", "podNamespace", "podLabels",
    "cpuRequestCores", "memoryRequestBytes",
];

static SCHEMA: RecordSchema = RecordSchema::new("CgroupStats", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/CgroupStats.avsc")), &FIELD_LAYOUT, file!());

pub fn schema() -> &'static Schema {
    SCHEMA.schema()
}

pub fn fingerprint() -> [u8; 8] {
    SCHEMA.fingerprint()
}

/// Encoder with the precomputed 10-byte single-object header.
pub struct CgroupStatsEncoder {
    w: SingleObjectWriter,
}

impl CgroupStatsEncoder {
    /// Checks that the parsed .avsc still has the layout this encoder writes.
    pub fn new() -> Result<CgroupStatsEncoder> {
        Ok(CgroupStatsEncoder { w: SCHEMA.writer()? })
    }

    /// Clears `out`, writes header + body; no allocation once `out` has grown.
    pub fn encode(&self, r: &CgroupStatsRecord<'_>, out: &mut Vec<u8>) {
        self.w.begin(out);
        write_str(out, r.host_id);
        write_long(out, r.interval_start_ns);
        write_long(out, r.interval_end_ns);
        write_str(out, r.group_id);
        write_str(out, r.runtime);
        write_opt_str(out, r.pod_uid);
        write_opt_str(out, r.qos_class);
        write_str(out, r.cgroup_path);
        write_str(out, r.hierarchy);
        write_long(out, r.tick_interval_ns);
        write_long(out, r.ticks as i64);
        write_long(out, r.max_tick_gap_ns);
        write_long(out, r.cpu_ns);
        write_double(out, r.cpu_mean_cores);
        write_double(out, r.cpu_peak_cores);
        write_long(out, r.throttled_periods);
        write_long(out, r.throttled_ns);
        write_long(out, r.memory_bytes);
        write_long(out, r.memory_peak_bytes);
        write_long(out, r.io_read_bytes);
        write_long(out, r.io_write_bytes);
        write_long(out, r.pids);
        write_pod(out, &r.pod);
        write_opt_double(out, r.cpu_request_cores);
        write_opt_long(out, r.memory_request_bytes);
    }
}

/// Decodes single-object bytes with apache-avro (fingerprint checked against the .avsc).
pub fn decode_single_object(bytes: &[u8]) -> Result<OwnedCgroupStats> {
    SCHEMA.decode(bytes, |f| {
        Ok(OwnedCgroupStats {
            host_id: f.string("hostId")?,
            interval_start_ns: f.long("intervalStartNs")?,
            interval_end_ns: f.long("intervalEndNs")?,
            group_id: f.string("groupId")?,
            runtime: f.string("runtime")?,
            pod_uid: f.opt_string("podUid")?,
            qos_class: f.opt_string("qosClass")?,
            cgroup_path: f.string("cgroupPath")?,
            hierarchy: f.string("hierarchy")?,
            tick_interval_ns: f.long("tickIntervalNs")?,
            ticks: f.int("ticks")?,
            max_tick_gap_ns: f.long("maxTickGapNs")?,
            cpu_ns: f.long("cpuNs")?,
            cpu_mean_cores: f.double("cpuMeanCores")?,
            cpu_peak_cores: f.double("cpuPeakCores")?,
            throttled_periods: f.long("throttledPeriods")?,
            throttled_ns: f.long("throttledNs")?,
            memory_bytes: f.long("memoryBytes")?,
            memory_peak_bytes: f.long("memoryPeakBytes")?,
            io_read_bytes: f.long("ioReadBytes")?,
            io_write_bytes: f.long("ioWriteBytes")?,
            pids: f.long("pids")?,
            pod: decode_pod(f)?,
            cpu_request_cores: f.opt_double("cpuRequestCores")?,
            memory_request_bytes: f.opt_long("memoryRequestBytes")?,
        })
    })
}

/// apache-avro `Value` of a record (tests compare with apache-avro's writer).
pub fn to_value(r: &CgroupStatsRecord<'_>) -> Value {
    let s = |s: &str| Value::String(s.to_string());
    let mut fields = vec![
        ("hostId".into(), s(r.host_id)),
        ("intervalStartNs".into(), Value::Long(r.interval_start_ns)),
        ("intervalEndNs".into(), Value::Long(r.interval_end_ns)),
        ("groupId".into(), s(r.group_id)),
        ("runtime".into(), s(r.runtime)),
        ("podUid".into(), opt_str_value(r.pod_uid)),
        ("qosClass".into(), opt_str_value(r.qos_class)),
        ("cgroupPath".into(), s(r.cgroup_path)),
        ("hierarchy".into(), s(r.hierarchy)),
        ("tickIntervalNs".into(), Value::Long(r.tick_interval_ns)),
        ("ticks".into(), Value::Int(r.ticks)),
        ("maxTickGapNs".into(), Value::Long(r.max_tick_gap_ns)),
        ("cpuNs".into(), Value::Long(r.cpu_ns)),
        ("cpuMeanCores".into(), Value::Double(r.cpu_mean_cores)),
        ("cpuPeakCores".into(), Value::Double(r.cpu_peak_cores)),
        ("throttledPeriods".into(), Value::Long(r.throttled_periods)),
        ("throttledNs".into(), Value::Long(r.throttled_ns)),
        ("memoryBytes".into(), Value::Long(r.memory_bytes)),
        ("memoryPeakBytes".into(), Value::Long(r.memory_peak_bytes)),
        ("ioReadBytes".into(), Value::Long(r.io_read_bytes)),
        ("ioWriteBytes".into(), Value::Long(r.io_write_bytes)),
        ("pids".into(), Value::Long(r.pids)),
    ];
    fields.extend(pod_values(&r.pod));
    fields.push(("cpuRequestCores".into(), opt_value(r.cpu_request_cores, Value::Double)));
    fields.push(("memoryRequestBytes".into(), opt_value(r.memory_request_bytes, Value::Long)));
    Value::Record(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::pod_metadata::PodFields;
    use crate::output::avro::round_trip::{assert_matches_apache_avro, assert_refuses_other_fingerprint};

    fn sample(i: i64) -> OwnedCgroupStats {
        OwnedCgroupStats {
            host_id: if i % 2 == 0 { format!("host-{i}") } else { "höst-東京".into() },
            interval_start_ns: 1_763_870_000_000_000_000 + i,
            interval_end_ns: if i == 5 { i64::MAX } else { 1_763_870_001_000_000_000 + i },
            group_id: "ab".repeat(32),
            runtime: ["DOCKER", "CONTAINERD", "CRIO", "PODMAN"][(i % 4) as usize].into(),
            pod_uid: (i % 3 == 1).then(|| "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into()),
            qos_class: (i % 3 == 1).then(|| "burstable".into()),
            cgroup_path: format!("/system.slice/docker-{}.scope", "ab".repeat(32)),
            hierarchy: if i % 2 == 0 { "v2".into() } else { "v1".into() },
            tick_interval_ns: 100_000_000,
            ticks: if i == 6 { i32::MAX } else { (i % 11) as i32 },
            max_tick_gap_ns: 100_000_000 + i * 1000,
            cpu_ns: i << 28,
            cpu_mean_cores: i as f64 * 0.125,
            cpu_peak_cores: if i == 7 { f64::MAX } else { i as f64 * 0.5 },
            throttled_periods: i,
            throttled_ns: if i == 8 { i64::MIN } else { i * 1_000_000 },
            memory_bytes: i << 20,
            memory_peak_bytes: i << 21,
            io_read_bytes: i * 4096,
            io_write_bytes: -i,
            pids: i,
            // At most one label: apache-avro writes maps in its own order.
            pod: if i % 3 == 1 {
                PodFields { name: Some("web-0".into()), namespace: Some("shop".into()), labels: vec![("app".into(), "wéb".into())] }
            } else {
                PodFields::default()
            },
            cpu_request_cores: (i % 3 == 1).then_some(if i == 4 { f64::MAX } else { i as f64 * 0.25 }),
            memory_request_bytes: (i % 6 == 1).then_some(if i == 7 { i64::MAX } else { i << 27 }),
        }
    }

    #[test]
    fn encoder_matches_apache_avro() {
        let enc = CgroupStatsEncoder::new().unwrap();
        let samples = (0..30).map(sample);
        assert_matches_apache_avro(schema(), samples.clone(), |r, out| enc.encode(&r.as_ref(), out), |r| to_value(&r.as_ref()), decode_single_object);
        for r in samples {
            assert_eq!(r.as_ref().to_owned(), r);
        }
    }

    #[test]
    fn decode_rejects_wrong_fingerprint() {
        let mut buf = Vec::new();
        CgroupStatsEncoder::new().unwrap().encode(&sample(1).as_ref(), &mut buf);
        assert_eq!(buf[2..10], fingerprint());
        assert_refuses_other_fingerprint(buf, decode_single_object);
    }
}
