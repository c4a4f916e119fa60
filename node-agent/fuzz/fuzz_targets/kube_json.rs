//! JSON from the cluster: a PodList (kubelet /pods or the API server) for pod metadata, a Node
//! for its pod CIDRs (`--node-scope`), and a ServiceList with an EndpointSliceList (as
//! `{"services": ..., "slices": ...}`) for the service mapper.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wattgraph_agent::identity::node_scope::parse_node_pod_cidrs;
use wattgraph_agent::identity::pod_metadata;
use wattgraph_agent::output::avro::service_mapping::{decode_single_object, encode};
use wattgraph_agent::service_mapper as service_mappings;

fuzz_target!(|data: &[u8]| {
    let keep = ["app".to_string(), "app.kubernetes.io/name".to_string()];
    if let Ok(pods) = pod_metadata::parse_pod_list(data, &keep) {
        for p in pods.values() {
            assert!(p.labels.iter().all(|(k, _)| keep.contains(k)), "only the kept labels");
        }
    }
    if let Ok(cidrs) = parse_node_pod_cidrs(data, "node-a") {
        for c in &cidrs {
            assert!(c.prefix <= 128 && c.contains(&c.addr), "{c:?}");
        }
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(m) = service_mappings::build(&v["services"], &v["slices"]) {
            for (key, mapping) in &m {
                assert_eq!(key, &mapping.key());
                assert_eq!(decode_single_object(&encode(mapping)).unwrap(), *mapping);
            }
        }
    }
});
