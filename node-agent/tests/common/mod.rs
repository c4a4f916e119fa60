//! Shared by the vector tests: the byte-level vectors of schemas/test-vectors/<folder>/*.json,
//! each `{ "description", "event": {...}, "singleObjectHex": "..." }`, also checked by the Java suite.

pub mod agent;
pub mod child;
pub mod keepalive;
pub mod kubelet;
pub mod alloc_count;
pub mod native;
pub mod nat_hosts;
pub mod netns;
pub mod nodes;
pub mod pin_dir;
pub mod powercap;
pub mod tmpfs;

use std::fmt::Debug;
use std::path::PathBuf;

use serde_json::Value;

/// podName, podNamespace, podLabels of a vector's event (absent: the schema defaults).
pub fn pod_fields(e: &Value) -> wattgraph_agent::identity::pod_metadata::PodFields {
    let os = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
    let mut labels: Vec<(String, String)> = e
        .get("podLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_string())).collect())
        .unwrap_or_default();
    labels.sort();
    wattgraph_agent::identity::pod_metadata::PodFields { name: os("podName"), namespace: os("podNamespace"), labels }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The vector files of `folder`, sorted; at least `min` of them.
pub fn vector_files(folder: &str, min: usize) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas/test-vectors").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("test vectors missing at {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= min, "expected at least {min} vectors in {}, found {}", dir.display(), files.len());
    files
}

/// For every vector of `folder`: `encode(to_record(event))` gives exactly the vector's bytes and
/// `decode(bytes)` gives the record back. With WG_WRITE_VECTORS=1 an empty `singleObjectHex` is
/// filled from the encoder first (then run the Java suite to check it agrees). Returns the count.
pub fn check_vectors<R: PartialEq + Debug>(
    folder: &str,
    min: usize,
    to_record: impl Fn(&Value) -> R,
    mut encode: impl FnMut(&R) -> Vec<u8>,
    decode: impl Fn(&[u8]) -> anyhow::Result<R>,
) -> usize {
    let files = vector_files(folder, min);
    for f in &files {
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let rec = to_record(&v["event"]);
        let bytes = encode(&rec);
        if std::env::var("WG_WRITE_VECTORS").as_deref() == Ok("1") && v["singleObjectHex"].as_str() == Some("") {
            v["singleObjectHex"] = Value::String(hex(&bytes));
            std::fs::write(f, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
        }
        let want = v["singleObjectHex"].as_str().unwrap().to_ascii_lowercase();
        assert!(!want.is_empty(), "{}: singleObjectHex is empty", f.display());
        assert_eq!(hex(&bytes), want, "encode {}", f.display());
        let back = decode(&unhex(&want)).unwrap_or_else(|e| panic!("decode {}: {e:#}", f.display()));
        assert_eq!(back, rec, "decode {}", f.display());
    }
    println!("checked {} {folder} vector files", files.len());
    files.len()
}

/// A vector's optional `nat` object (absent or null = None; addresses as text).
#[allow(dead_code)]
pub fn nat_of(v: &serde_json::Value) -> Option<wattgraph_agent::shared::net::NatTuple> {
    let n = v.get("nat").filter(|n| !n.is_null())?;
    let a = |k: &str| wattgraph_agent::shared::net::addr16_from_ip(n[k].as_str().unwrap_or_else(|| panic!("nat.{k}")).parse().unwrap());
    let p = |k: &str| u16::try_from(n[k].as_u64().unwrap_or_else(|| panic!("nat.{k}"))).unwrap();
    Some(wattgraph_agent::shared::net::NatTuple {
        local_addr: a("localAddress"),
        local_port: p("localPort"),
        remote_addr: a("remoteAddress"),
        remote_port: p("remotePort"),
    })
}

/// The BPF capture, or None (said) when it cannot load; under CI=true that is a failure.
pub fn start_capture(opts: wattgraph_agent::capture::connections::CaptureOptions) -> Option<wattgraph_agent::capture::connections::CaptureHandle> {
    match wattgraph_agent::capture::connections::spawn(opts) {
        Ok(h) => Some(h),
        Err(e) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("BPF capture could not be loaded and CI=true: {e}");
            }
            eprintln!("SKIPPED: BPF capture could not be loaded: {e}");
            None
        }
    }
}

/// This process's name: /proc/<pid>/comm is the thread-group leader's, which every record of
/// the process carries (not the name of the thread that made the call).
pub fn own_process_comm() -> String {
    std::fs::read_to_string("/proc/self/comm").unwrap().trim_end().to_string()
}

/// Capture options of the transaction tests: snapshots only at close, the test process's own
/// sockets seen, transactions drained every 100 ms.
pub fn transaction_options() -> wattgraph_agent::capture::connections::CaptureOptions {
    wattgraph_agent::capture::connections::CaptureOptions {
        snapshot_bytes: 1 << 30,
        snapshot_interval: std::time::Duration::from_secs(600),
        ignore_self: false,
        map_entries: 4096,
        transaction_interval: Some(std::time::Duration::from_millis(100)),
        txn_hist_entries: 4096,
        ..Default::default()
    }
}
