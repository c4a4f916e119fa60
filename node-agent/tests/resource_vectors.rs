//! Shared ResourceSample vectors (schemas/test-vectors/resource-sample/*.json), also used by
//! the Java suite: encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
//! WG_WRITE_VECTORS=1 fills empty `singleObjectHex` fields (then check the Java suite agrees).
use crate::common;

use serde_json::Value;
use wattgraph_agent::identity::cgroup::Runtime;
use wattgraph_agent::resources::power::PowerSource;
use wattgraph_agent::output::avro::resource::{decode_single_object, ResourceEncoder};
use wattgraph_agent::resources::record::{ResourceRecord, Scope, WeightKind};

fn to_record(e: &Value) -> ResourceRecord {
    let s = |k: &str| e[k].as_str().unwrap_or_else(|| panic!("{k} not a string")).to_string();
    let l = |k: &str| e[k].as_i64().unwrap_or_else(|| panic!("{k} not a long"));
    let i = |k: &str| i32::try_from(l(k)).unwrap_or_else(|_| panic!("{k} not an int"));
    let d = |k: &str| e[k].as_f64().unwrap_or_else(|| panic!("{k} not a double"));
    let os = |k: &str| e[k].as_str().map(str::to_string);
    let ol = |k: &str| e[k].as_i64();
    let od = |k: &str| e[k].as_f64();
    ResourceRecord {
        scope: Scope::from_symbol(&s("scope")).unwrap(),
        host_id: s("hostId"),
        interval_start_ns: l("intervalStartNs"),
        interval_end_ns: l("intervalEndNs"),
        tgid: i("tgid"),
        process_start_time_ns: l("processStartTimeNs"),
        comm: s("comm"),
        cgroup_id: l("cgroupId"),
        group_id: s("groupId"),
        runtime: Runtime::from_symbol(&s("runtime")).unwrap(),
        pod_uid: os("podUid"),
        qos_class: os("qosClass"),
        threads: i("threads"),
        processes: i("processes"),
        cpu_time_ns: l("cpuTimeNs"),
        cycles: ol("cycles"),
        instructions: ol("instructions"),
        weighted_cycles: ol("weightedCycles"),
        weight_kind: WeightKind::from_symbol(&s("weightKind")).unwrap(),
        weight: d("weight"),
        power_source: PowerSource::from_symbol(&s("powerSource")).unwrap(),
        power_watts: d("powerWatts"),
        energy_joules: d("energyJoules"),
        idle_power_watts: d("idlePowerWatts"),
        unattributed_power_watts: d("unattributedPowerWatts"),
        package_watts: od("packageWatts"),
        core_watts: od("coreWatts"),
        dram_watts: od("dramWatts"),
        host_cores: ol("hostCores").map(|x| i32::try_from(x).expect("hostCores not an int")),
        pod: common::pod_fields(e),
        cache_references: ol("cacheReferences"),
        cache_misses: ol("cacheMisses"),
    }
}

#[test]
fn shared_resource_vectors_encode_and_decode() {
    let enc = ResourceEncoder::new().unwrap();
    let mut buf = Vec::new();
    common::check_vectors("resource-sample", 5, to_record, |r| {
        enc.encode(r, &mut buf);
        buf.clone()
    }, decode_single_object);
}
