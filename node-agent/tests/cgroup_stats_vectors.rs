//! Shared CgroupStats vectors (schemas/test-vectors/cgroup-stats/*.json), also used by the Java
//! suite (CgroupStatsVectorsTest): encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
//! WG_WRITE_VECTORS=1 fills empty `singleObjectHex` fields (then check the Java suite agrees).
use crate::common;

use serde_json::Value;
use wattgraph_agent::output::avro::cgroup::{decode_single_object, CgroupStatsEncoder};
use wattgraph_agent::resources::record::OwnedCgroupStats;

fn to_record(e: &Value) -> OwnedCgroupStats {
    let s = |k: &str| e[k].as_str().unwrap_or_else(|| panic!("{k} not a string")).to_string();
    let l = |k: &str| e[k].as_i64().unwrap_or_else(|| panic!("{k} not a long"));
    let d = |k: &str| e[k].as_f64().unwrap_or_else(|| panic!("{k} not a double"));
    let os = |k: &str| {
        assert!(e.get(k).is_some(), "{k} missing");
        e[k].as_str().map(str::to_string)
    };
    OwnedCgroupStats {
        host_id: s("hostId"),
        interval_start_ns: l("intervalStartNs"),
        interval_end_ns: l("intervalEndNs"),
        group_id: s("groupId"),
        runtime: s("runtime"),
        pod_uid: os("podUid"),
        qos_class: os("qosClass"),
        cgroup_path: s("cgroupPath"),
        hierarchy: s("hierarchy"),
        tick_interval_ns: l("tickIntervalNs"),
        ticks: i32::try_from(l("ticks")).expect("ticks is an int"),
        max_tick_gap_ns: l("maxTickGapNs"),
        cpu_ns: l("cpuNs"),
        cpu_mean_cores: d("cpuMeanCores"),
        cpu_peak_cores: d("cpuPeakCores"),
        throttled_periods: l("throttledPeriods"),
        throttled_ns: l("throttledNs"),
        memory_bytes: l("memoryBytes"),
        memory_peak_bytes: l("memoryPeakBytes"),
        io_read_bytes: l("ioReadBytes"),
        io_write_bytes: l("ioWriteBytes"),
        pids: l("pids"),
        pod: common::pod_fields(e),
        // v3, absent in older vectors: null.
        cpu_request_cores: e.get("cpuRequestCores").and_then(Value::as_f64),
        memory_request_bytes: e.get("memoryRequestBytes").filter(|v| !v.is_null()).map(|v| v.as_i64().expect("memoryRequestBytes is a long")),
    }
}

#[test]
fn shared_cgroup_stats_vectors_encode_and_decode() {
    let enc = CgroupStatsEncoder::new().unwrap();
    let mut buf = Vec::new();
    common::check_vectors("cgroup-stats", 5, to_record, |r| {
        enc.encode(&r.as_ref(), &mut buf);
        buf.clone()
    }, decode_single_object);
}
