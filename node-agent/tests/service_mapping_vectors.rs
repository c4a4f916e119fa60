//! Shared ServiceMapping vectors (schemas/test-vectors/service-mapping/*.json), also checked by
//! the Java suite (`ServiceMappingVectorsTest`, the stream job's decoder): the bytes the
//! service mapper publishes are the bytes the job reads.
use crate::common;

use serde_json::Value;
use wattgraph_agent::output::avro::service_mapping::{decode_single_object, encode, Backend, ServiceMapping};

fn to_mapping(e: &Value) -> ServiceMapping {
    let opt = |v: &Value| v.as_str().map(str::to_string);
    let port = |v: &Value| u16::try_from(v.as_u64().expect("port")).expect("port in range");
    assert_eq!(e["protocol"], "TCP");
    ServiceMapping {
        vip: e["vip"].as_str().unwrap().into(),
        port: port(&e["port"]),
        namespace: opt(&e["namespace"]),
        service: opt(&e["service"]),
        backends: e["backends"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| Backend { address: b["address"].as_str().unwrap().into(), port: port(&b["port"]), node_name: opt(&b["nodeName"]) })
            .collect(),
    }
}

#[test]
fn shared_service_mapping_vectors() {
    common::check_vectors("service-mapping", 3, to_mapping, encode, decode_single_object);
}
