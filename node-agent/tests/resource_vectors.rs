//! Shared ResourceSample vectors (schemas/test-vectors/resource-sample/*.json), also used by
//! the Java suite: encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
//! WG_WRITE_VECTORS=1 fills empty `singleObjectHex` fields (then check the Java suite agrees).
use std::path::PathBuf;

use serde_json::Value;
use wattgraph_agent::cgroup::Runtime;
use wattgraph_agent::power::PowerSource;
use wattgraph_agent::resource_avro::{decode_single_object, ResourceEncoder, ResourceRecord, Scope, WeightKind};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas/test-vectors/resource-sample")
}

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
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn shared_resource_vectors_encode_and_decode() {
    let mut files: Vec<_> = std::fs::read_dir(dir())
        .unwrap_or_else(|e| panic!("vectors missing at {}: {e}", dir().display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "expected the shared vectors in {}", dir().display());
    let enc = ResourceEncoder::new().unwrap();
    let mut buf = Vec::new();
    for f in &files {
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let rec = to_record(&v["event"]);
        enc.encode(&rec, &mut buf);
        if std::env::var("WG_WRITE_VECTORS").as_deref() == Ok("1") && v["singleObjectHex"].as_str() == Some("") {
            v["singleObjectHex"] = Value::String(hex(&buf));
            std::fs::write(f, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
        }
        let want = v["singleObjectHex"].as_str().unwrap().to_ascii_lowercase();
        assert_eq!(hex(&buf), want, "encode {}", f.display());
        let back = decode_single_object(&unhex(&want)).unwrap_or_else(|e| panic!("decode {}: {e:#}", f.display()));
        assert_eq!(back, rec, "decode {}", f.display());
    }
    println!("checked {} resource vector files", files.len());
}
