//! ResourceSample schema (schemas/avro/ResourceSample.avsc) and its allocation-free encoder of
//! `resources::record::ResourceRecord` (Avro single-object encoding), checked against apache-avro
//! and the shared vectors.
use anyhow::{anyhow, Result};
use apache_avro::types::Value;
use apache_avro::Schema;

use crate::identity::cgroup::Runtime;
use crate::output::avro::pod::{decode_pod, pod_values, write_pod};
use crate::output::avro::{opt_str_value, opt_value, write_double, write_long, write_opt_double, write_opt_long, write_opt_str, write_str, RecordSchema, SingleObjectWriter};
use crate::resources::power::PowerSource;
use crate::resources::record::{ResourceRecord, Scope, WeightKind};

const FIELD_LAYOUT: [&str; 34] = [
    "scope", "hostId", "intervalStartNs", "intervalEndNs", "tgid", "processStartTimeNs", "comm",
    "cgroupId", "groupId", "runtime", "podUid", "qosClass", "threads", "processes", "cpuTimeNs",
    "cycles", "instructions", "weightedCycles", "weightKind", "weight", "powerSource", "powerWatts",
    "energyJoules", "idlePowerWatts", "unattributedPowerWatts", "packageWatts", "coreWatts", "dramWatts",
    "hostCores", "podName", "podNamespace", "podLabels", "cacheReferences", "cacheMisses",
];

static SCHEMA: RecordSchema = RecordSchema::new("ResourceSample", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/avro/ResourceSample.avsc")), &FIELD_LAYOUT, file!());

pub fn schema() -> &'static Schema {
    SCHEMA.schema()
}

pub fn fingerprint() -> [u8; 8] {
    SCHEMA.fingerprint()
}

pub struct ResourceEncoder {
    w: SingleObjectWriter,
}

impl ResourceEncoder {
    pub fn new() -> Result<ResourceEncoder> {
        Ok(ResourceEncoder { w: SCHEMA.writer()? })
    }

    /// Clears `out`, writes header + body; no allocation once `out` has grown.
    pub fn encode(&self, r: &ResourceRecord, out: &mut Vec<u8>) {
        self.w.begin(out);
        write_long(out, r.scope as i64);
        write_str(out, &r.host_id);
        write_long(out, r.interval_start_ns);
        write_long(out, r.interval_end_ns);
        write_long(out, r.tgid as i64);
        write_long(out, r.process_start_time_ns);
        write_str(out, &r.comm);
        write_long(out, r.cgroup_id);
        write_str(out, &r.group_id);
        write_long(out, r.runtime.index() as i64);
        write_opt_str(out, r.pod_uid.as_deref());
        write_opt_str(out, r.qos_class.as_deref());
        write_long(out, r.threads as i64);
        write_long(out, r.processes as i64);
        write_long(out, r.cpu_time_ns);
        write_opt_long(out, r.cycles);
        write_opt_long(out, r.instructions);
        write_opt_long(out, r.weighted_cycles);
        write_long(out, r.weight_kind as i64);
        write_double(out, r.weight);
        write_long(out, r.power_source.index() as i64);
        write_double(out, r.power_watts);
        write_double(out, r.energy_joules);
        write_double(out, r.idle_power_watts);
        write_double(out, r.unattributed_power_watts);
        write_opt_double(out, r.package_watts);
        write_opt_double(out, r.core_watts);
        write_opt_double(out, r.dram_watts);
        write_opt_long(out, r.host_cores.map(i64::from)); // an int is the same varint
        write_pod(out, &r.pod.as_ref());
        write_opt_long(out, r.cache_references);
        write_opt_long(out, r.cache_misses);
    }
}

pub fn decode_single_object(bytes: &[u8]) -> Result<ResourceRecord> {
    SCHEMA.decode(bytes, |f| {
        Ok(ResourceRecord {
            scope: Scope::from_symbol(f.symbol("scope")?).ok_or_else(|| anyhow!("scope"))?,
            host_id: f.string("hostId")?,
            interval_start_ns: f.long("intervalStartNs")?,
            interval_end_ns: f.long("intervalEndNs")?,
            tgid: f.int("tgid")?,
            process_start_time_ns: f.long("processStartTimeNs")?,
            comm: f.string("comm")?,
            cgroup_id: f.long("cgroupId")?,
            group_id: f.string("groupId")?,
            runtime: Runtime::from_symbol(f.symbol("runtime")?).ok_or_else(|| anyhow!("runtime"))?,
            pod_uid: f.opt_string("podUid")?,
            qos_class: f.opt_string("qosClass")?,
            threads: f.int("threads")?,
            processes: f.int("processes")?,
            cpu_time_ns: f.long("cpuTimeNs")?,
            cycles: f.opt_long("cycles")?,
            instructions: f.opt_long("instructions")?,
            weighted_cycles: f.opt_long("weightedCycles")?,
            weight_kind: WeightKind::from_symbol(f.symbol("weightKind")?).ok_or_else(|| anyhow!("weightKind"))?,
            weight: f.double("weight")?,
            power_source: PowerSource::from_symbol(f.symbol("powerSource")?).ok_or_else(|| anyhow!("powerSource"))?,
            power_watts: f.double("powerWatts")?,
            energy_joules: f.double("energyJoules")?,
            idle_power_watts: f.double("idlePowerWatts")?,
            unattributed_power_watts: f.double("unattributedPowerWatts")?,
            package_watts: f.opt_double("packageWatts")?,
            core_watts: f.opt_double("coreWatts")?,
            dram_watts: f.opt_double("dramWatts")?,
            host_cores: f.opt_int("hostCores")?,
            pod: decode_pod(f)?,
            cache_references: f.opt_long("cacheReferences")?,
            cache_misses: f.opt_long("cacheMisses")?,
        })
    })
}

/// apache-avro `Value` of a record (tests compare with apache-avro's writer).
pub fn to_value(r: &ResourceRecord) -> Value {
    let ol = |x: Option<i64>| opt_value(x, Value::Long);
    let od = |x: Option<f64>| opt_value(x, Value::Double);
    let mut fields = vec![
        ("scope".into(), Value::Enum(r.scope as u32, r.scope.symbol().into())),
        ("hostId".into(), Value::String(r.host_id.clone())),
        ("intervalStartNs".into(), Value::Long(r.interval_start_ns)),
        ("intervalEndNs".into(), Value::Long(r.interval_end_ns)),
        ("tgid".into(), Value::Int(r.tgid)),
        ("processStartTimeNs".into(), Value::Long(r.process_start_time_ns)),
        ("comm".into(), Value::String(r.comm.clone())),
        ("cgroupId".into(), Value::Long(r.cgroup_id)),
        ("groupId".into(), Value::String(r.group_id.clone())),
        ("runtime".into(), Value::Enum(r.runtime.index(), r.runtime.symbol().into())),
        ("podUid".into(), opt_str_value(r.pod_uid.as_deref())),
        ("qosClass".into(), opt_str_value(r.qos_class.as_deref())),
        ("threads".into(), Value::Int(r.threads)),
        ("processes".into(), Value::Int(r.processes)),
        ("cpuTimeNs".into(), Value::Long(r.cpu_time_ns)),
        ("cycles".into(), ol(r.cycles)),
        ("instructions".into(), ol(r.instructions)),
        ("weightedCycles".into(), ol(r.weighted_cycles)),
        ("weightKind".into(), Value::Enum(r.weight_kind as u32, r.weight_kind.symbol().into())),
        ("weight".into(), Value::Double(r.weight)),
        ("powerSource".into(), Value::Enum(r.power_source.index(), r.power_source.symbol().into())),
        ("powerWatts".into(), Value::Double(r.power_watts)),
        ("energyJoules".into(), Value::Double(r.energy_joules)),
        ("idlePowerWatts".into(), Value::Double(r.idle_power_watts)),
        ("unattributedPowerWatts".into(), Value::Double(r.unattributed_power_watts)),
        ("packageWatts".into(), od(r.package_watts)),
        ("coreWatts".into(), od(r.core_watts)),
        ("dramWatts".into(), od(r.dram_watts)),
        ("hostCores".into(), opt_value(r.host_cores, Value::Int)),
    ];
    fields.extend(pod_values(&r.pod.as_ref()));
    fields.push(("cacheReferences".into(), ol(r.cache_references)));
    fields.push(("cacheMisses".into(), ol(r.cache_misses)));
    Value::Record(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::pod_metadata::PodFields;
    use crate::output::avro::round_trip::assert_matches_apache_avro;

    pub(crate) fn sample(i: i64) -> ResourceRecord {
        ResourceRecord {
            scope: [Scope::Host, Scope::Group, Scope::Process][(i % 3) as usize],
            host_id: format!("host-{i}"),
            interval_start_ns: 1_763_870_000_000_000_000 + i,
            interval_end_ns: 1_763_870_001_000_000_000 + i,
            tgid: (i * 17) as i32,
            process_start_time_ns: i * 1_000_003,
            comm: if i % 2 == 0 { "nginx".into() } else { "jävä".into() },
            cgroup_id: i * 1000,
            group_id: if i % 2 == 0 { "host".into() } else { "ab".repeat(32) },
            runtime: [Runtime::Host, Runtime::Docker, Runtime::Containerd, Runtime::Crio, Runtime::Podman][(i % 5) as usize],
            pod_uid: (i % 3 == 1).then(|| "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into()),
            qos_class: (i % 3 == 1).then(|| "burstable".into()),
            threads: i as i32,
            processes: 1,
            cpu_time_ns: i << 30,
            cycles: (i % 2 == 1).then_some(i * 3_000_000_000),
            instructions: (i % 2 == 1).then_some(i),
            weighted_cycles: (i % 2 == 1).then_some(-i),
            weight_kind: if i % 2 == 1 { WeightKind::WeightedCycles } else { WeightKind::CpuTime },
            weight: i as f64 * 0.5,
            power_source: if i % 2 == 0 { PowerSource::Estimated } else { PowerSource::Measured },
            power_watts: 12.25 + i as f64,
            energy_joules: 1.0 / (i + 1) as f64,
            idle_power_watts: if i == 7 { f64::MAX } else { 0.0 },
            unattributed_power_watts: -0.0,
            package_watts: (i % 2 == 1).then_some(40.5),
            core_watts: (i % 4 == 1).then_some(20.0),
            dram_watts: None,
            host_cores: (i % 3 != 2).then_some(if i == 7 { i32::MAX } else { i as i32 }),
            // At most one label: apache-avro writes maps in its own order.
            pod: if i % 3 == 1 {
                PodFields { name: Some(format!("web-{i}")), namespace: Some("shöp".into()), labels: vec![("app".into(), "web".into())] }
            } else {
                PodFields::default()
            },
            cache_references: (i % 2 == 1).then_some(if i == 5 { i64::MAX } else { i * 52_000 }),
            cache_misses: (i % 2 == 1).then_some(i * 3_100),
        }
    }

    #[test]
    fn encoder_matches_apache_avro() {
        let enc = ResourceEncoder::new().unwrap();
        assert_matches_apache_avro(schema(), (0..30).map(sample), |r, out| enc.encode(r, out), to_value, decode_single_object);
    }
}
