//! The service-mapping publisher against a fake API server over https (tests/fixtures/
//! fake_kubelet.py: its own CA and token, paged lists) and librdkafka's in-process mock cluster:
//! the topic ends up holding exactly the cluster's mappings (stale keys of an earlier run get
//! tombstones), changes are published once, an unchanged cluster publishes nothing, an outage of
//! the API server publishes nothing and loses nothing, and the binary does a round with --once.
use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::kubelet::FakeKubelet;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use serde_json::json;
use wattgraph_agent::output::kafka_client::KafkaClient;
use wattgraph_agent::output::avro::service_mapping::{self as service_mappings, encode, Backend, ServiceMapping};
use wattgraph_agent::service_mapper::{read_topic, MappingPublisher, PublisherOptions, Round};

const TOPIC: &str = "wattgraph.service-mappings";
/// More Services than one page (500) of the API server's list.
const FILLER: usize = 700;

fn services(with_db: bool) -> String {
    let mut items = vec![json!({"metadata": {"name": "web", "namespace": "shop"},
        "spec": {"clusterIP": "10.96.0.10", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})];
    if with_db {
        items.push(json!({"metadata": {"name": "db", "namespace": "shop"}, "spec": {"clusterIP": "10.96.0.20", "ports": [{"port": 5432}]}}));
    }
    for i in 0..FILLER {
        items.push(json!({"metadata": {"name": format!("f{i}"), "namespace": "filler"},
            "spec": {"clusterIP": format!("10.97.{}.{}", i / 250, 1 + i % 250), "ports": [{"port": 80}]}}));
    }
    json!({"kind": "ServiceList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": items}).to_string()
}

fn slices(web_backends: &[&str]) -> String {
    let eps: Vec<_> = web_backends.iter().map(|a| json!({"addresses": [a], "conditions": {"ready": true}, "nodeName": "node-a"})).collect();
    json!({"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1", "metadata": {}, "items": [
        {"metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
         "addressType": "IPv4", "endpoints": eps, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
        {"metadata": {"name": "db-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "db"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.3.3"]}], "ports": [{"port": 5432}]}]})
    .to_string()
}

fn api(name: &str) -> Option<FakeKubelet> {
    let k = FakeKubelet::start(&common::agent::tmp("service-mapper", name), "{}")?;
    k.set_file("services.json", &services(true));
    k.set_file("endpointslices.json", &slices(&["10.1.0.5", "10.1.0.6"]));
    Some(k)
}

fn opts(k: &FakeKubelet, brokers: &str) -> PublisherOptions {
    PublisherOptions {
        api_url: k.api_url(),
        token_file: Some(k.token_file()),
        ca_file: Some(k.ca()),
        insecure_tls: false,
        kafka: KafkaClient::plain(brokers),
        topic: TOPIC.into(),
    }
}

/// The topic's current state, decoded.
fn topic_state(brokers: &str) -> BTreeMap<String, ServiceMapping> {
    read_topic(&KafkaClient::plain(brokers), TOPIC).unwrap().into_iter().map(|(k, v)| (k, service_mappings::decode_single_object(&v).unwrap())).collect()
}

fn web(backends: &[&str]) -> ServiceMapping {
    ServiceMapping {
        vip: "10.96.0.10".into(),
        port: 80,
        namespace: Some("shop".into()),
        service: Some("web".into()),
        backends: backends.iter().map(|a| Backend { address: a.to_string(), port: 8080, node_name: Some("node-a".into()) }).collect(),
    }
}

#[test]
fn publishes_changes_and_tombstones_and_survives_an_api_outage() {
    let Some(k) = api("rounds") else { return };
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 3, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    // An earlier run left a mapping of a Service that is gone by now.
    let stale = ServiceMapping { vip: "10.96.9.9".into(), port: 80, namespace: Some("old".into()), service: Some("gone".into()), backends: vec![] };
    let p: BaseProducer = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    p.send(BaseRecord::to(TOPIC).key(&stale.key()).payload(&encode(&stale))).unwrap();
    p.flush(std::time::Duration::from_secs(30)).unwrap();

    let mut pubr = MappingPublisher::new(opts(&k, &brokers)).unwrap();
    assert_eq!(pubr.published().keys().collect::<Vec<_>>(), vec!["10.96.9.9:80"], "what the topic held is known at start");
    let total = 2 + FILLER;
    assert_eq!(pubr.round().unwrap(), Round { mappings: total, upserts: total, deletes: 1 });
    let state = topic_state(&brokers);
    assert_eq!(state.len(), total, "the stale mapping is tombstoned");
    assert_eq!(state["10.96.0.10:80"], web(&["10.1.0.5", "10.1.0.6"]));
    assert_eq!(state["10.96.0.20:5432"].backends, vec![Backend { address: "10.1.3.3".into(), port: 5432, node_name: None }]);
    let reqs = std::fs::read_to_string(k.dir.join("requests")).unwrap();
    assert!(reqs.contains("/api/v1/services?limit=500&continue=500"), "the list was read in pages: {reqs}");

    // Nothing changed: nothing sent.
    assert_eq!(pubr.round().unwrap(), Round { mappings: total, upserts: 0, deletes: 0 });
    // A backend replaced and a Service deleted: one upsert, one tombstone.
    k.set_file("services.json", &services(false));
    k.set_file("endpointslices.json", &slices(&["10.1.0.5", "10.1.0.7"]));
    assert_eq!(pubr.round().unwrap(), Round { mappings: total - 1, upserts: 1, deletes: 1 });
    let state = topic_state(&brokers);
    assert_eq!(state.len(), total - 1);
    assert_eq!(state["10.96.0.10:80"], web(&["10.1.0.5", "10.1.0.7"]));
    assert!(!state.contains_key("10.96.0.20:5432"));

    // API server down: the round fails naming the URL, the topic keeps what it had.
    k.set_down(true);
    let e = format!("{:#}", pubr.round().unwrap_err());
    assert!(e.contains("HTTP 503") && e.contains("/api/v1/services"), "{e}");
    k.set_down(false);
    assert_eq!(pubr.round().unwrap(), Round { mappings: total - 1, upserts: 0, deletes: 0 });
    assert_eq!(topic_state(&brokers).len(), total - 1);

    // A second publisher (restart) sees the topic as it is and has nothing to send.
    let mut again = MappingPublisher::new(opts(&k, &brokers)).unwrap();
    assert_eq!(again.round().unwrap(), Round { mappings: total - 1, upserts: 0, deletes: 0 });
}

#[test]
fn bad_answers_name_what_is_wrong() {
    let Some(k) = api("bad") else { return };
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let mut pubr = MappingPublisher::new(opts(&k, &mock.bootstrap_servers())).unwrap();
    k.set_file("endpointslices.json", r#"{"kind":"EndpointSliceList","items":[{"metadata":{"namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4","endpoints":[{"addresses":["not-an-ip"]}],"ports":[{"port":1}]}]}"#);
    let e = format!("{:#}", pubr.round().unwrap_err());
    assert!(e.contains("EndpointSliceList items[0].endpoints[0].addresses[0] 'not-an-ip' is not an IP address"), "{e}");
    assert!(read_topic(&KafkaClient::plain(&mock.bootstrap_servers()), TOPIC).unwrap().is_empty(), "nothing published from a bad answer");
    let wrong = k.dir.join("wrong-token");
    std::fs::write(&wrong, "nope").unwrap();
    let e = format!("{:#}", MappingPublisher::new(PublisherOptions { token_file: Some(wrong), ..opts(&k, &mock.bootstrap_servers()) }).unwrap().round().unwrap_err());
    assert!(e.contains("HTTP 401"), "{e}");
}

#[test]
fn binary_publishes_one_round_and_refuses_bad_flags() {
    let Some(k) = api("binary") else { return };
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 2, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let bin = env!("CARGO_BIN_EXE_wattgraph-service-mapper");
    let (ca, token) = (k.ca(), k.token_file());
    let api_url = k.api_url();
    let base = ["--kafka-brokers", &brokers, "--ca-file", ca.to_str().unwrap(), "--token-file", token.to_str().unwrap()];
    let out = Command::new(bin).args(base).args(["--api-url", &api_url, "--once"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(topic_state(&brokers).len(), 2 + FILLER);
    for (flag, value, want) in [
        ("--interval-ms", "5", "--interval-ms '5'"),
        ("--api-url", "ftp://x", "--api-url 'ftp://x'"),
        ("--topic", "a/b", "--topic 'a/b'"),
        ("--kafka-option", "acks=1", "--kafka-option 'acks=1': key 'acks' cannot be set"),
        ("--kafka-option", "sasl.password=hunter2", "--kafka-option key 'sasl.password' holds a secret"),
        ("--kafka-config", "/nonexistent/kafka.properties", "--kafka-config '/nonexistent/kafka.properties' cannot be read"),
    ] {
        let mut cmd = Command::new(bin);
        cmd.args(base).args([flag, value, "--once"]);
        if flag != "--api-url" {
            cmd.args(["--api-url", &api_url]);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(want) && !err.contains("hunter2"), "{err}");
    }
}
