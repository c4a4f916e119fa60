//! Shared test vectors (schemas/test-vectors/connection-event/*.json), also used by
//! the Java suite: encode `event` -> exactly `singleObjectHex`, decode back -> `event`.
use crate::common;

use serde_json::Value;
use wattgraph_agent::output::avro::connection::{decode_single_object, Encoder, OwnedEventRecord};
use wattgraph_agent::capture::event::Kind;
use wattgraph_agent::shared::net::{addr16_from_ip, Role};

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
        nat: common::nat_of(ev),
        keep_probability: ev.get("keepProbability").map_or(1.0, |v| v.as_f64().expect("keepProbability not a double")),
    }
}

#[test]
fn shared_vectors_encode_and_decode() {
    let enc = Encoder::new().unwrap();
    let mut buf = Vec::new();
    common::check_vectors("connection-event", 7, to_record, |r| {
        enc.encode(&r.as_ref(), &mut buf);
        buf.clone()
    }, decode_single_object);
}
