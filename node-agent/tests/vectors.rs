//! Shared test vectors (schemas/test-vectors/connection-event/*.json), also used by
//! the Java suite: encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
use std::path::PathBuf;

use serde_json::Value;
use wattgraph_agent::avro::{decode_single_object, Encoder, OwnedEventRecord};
use wattgraph_agent::event::{addr16_from_ip, Kind, Role};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas/test-vectors/connection-event")
}

fn to_record(ev: &Value) -> OwnedEventRecord {
    let s = |k: &str| ev[k].as_str().unwrap_or_else(|| panic!("{k} not a string")).to_string();
    let l = |k: &str| ev[k].as_i64().unwrap_or_else(|| panic!("{k} not a long"));
    let i = |k: &str| i32::try_from(l(k)).unwrap_or_else(|_| panic!("{k} not an int"));
    let o = |k: &str| match &ev[k] {
        Value::Null => None,
        Value::String(x) => Some(x.clone()),
        other => panic!("{k}: {other}"),
    };
    let a = |k: &str| addr16_from_ip(s(k).parse().unwrap_or_else(|e| panic!("{k}: {e}")));
    OwnedEventRecord {
        kind: Kind::from_symbol(&s("kind")).expect("kind"),
        host_id: s("hostId"),
        event_time_ns: l("eventTimeNs"),
        local_address: a("localAddress"),
        local_port: i("localPort"),
        remote_address: a("remoteAddress"),
        remote_port: i("remotePort"),
        role: Role::from_symbol(&s("role")).expect("role"),
        pid: i("pid"),
        tgid: i("tgid"),
        process_start_time_ns: l("processStartTimeNs"),
        comm: s("comm"),
        cmdline: o("cmdline"),
        cgroup_id: l("cgroupId"),
        container_id: o("containerId"),
        netns_inode: l("netnsInode"),
        socket_cookie: l("socketCookie"),
        bytes_sent: l("bytesSent"),
        bytes_received: l("bytesReceived"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn shared_vectors_encode_and_decode() {
    let mut files: Vec<_> = match std::fs::read_dir(dir()) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "json")).collect(),
        Err(e) => panic!("test vectors missing at {}: {e}", dir().display()),
    };
    files.sort();
    assert!(!files.is_empty(), "no test vectors in {}", dir().display());
    let enc = Encoder::new().unwrap();
    let mut buf = Vec::new();
    for f in &files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let want = v["singleObjectHex"].as_str().unwrap().to_ascii_lowercase();
        let rec = to_record(&v["event"]);
        enc.encode(&rec.as_ref(), &mut buf);
        assert_eq!(hex(&buf), want, "encode {}", f.display());
        let back = decode_single_object(&unhex(&want)).unwrap_or_else(|e| panic!("decode {}: {e:#}", f.display()));
        assert_eq!(back, rec, "decode {}", f.display());
    }
    println!("checked {} vector files", files.len());
}
