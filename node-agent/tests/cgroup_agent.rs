//! The agent binary with the high-frequency cgroup sampler: flag validation, and CgroupStats
//! records from a fixture cgroup v2 tree produced to librdkafka's in-process mock cluster (no
//! Kafka broker needed), decoded and checked: key = host id, identity, exact CPU growth.
use crate::common;
use common::agent;

use std::os::unix::fs::FileExt;
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;
use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use wattgraph_agent::output::avro::cgroup::decode_single_object;
use wattgraph_agent::resources::record::OwnedCgroupStats;

const HOST: &str = "cgroup-host";
const TOPIC: &str = "wattgraph.cgroups";
const ID: &str = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff";

#[test]
fn invalid_cgroup_sampler_values_are_named() {
    for (args, needle) in [
        (&["--cgroup-sample-interval-ms", "5"][..], "--cgroup-sample-interval-ms '5'"),
        (&["--cgroup-sample-interval-ms", "x"][..], "'x'"),
        (&["--cgroup-topic", "a b"][..], "--cgroup-topic 'a b'"),
        (&["--cgroup-root-v1", "/nonexistent/cg"][..], "--cgroup-root-v1 '/nonexistent/cg'"),
    ] {
        let out = Command::new(agent::BIN).args(["--host-id", "h", "--kafka-brokers", "127.0.0.1:1"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// Polls the topic until `done` holds for the records so far; the deadline only stops a hung test.
fn consume_until(c: &BaseConsumer, recs: &mut Vec<(Vec<u8>, OwnedCgroupStats)>, what: &str, done: impl Fn(&[(Vec<u8>, OwnedCgroupStats)]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(recs) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}; got {recs:?}");
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.unwrap();
            let r = decode_single_object(m.payload().unwrap()).unwrap();
            recs.push((m.key().unwrap().to_vec(), r));
        }
    }
}

#[test]
fn cgroup_stats_from_a_fixture_tree_reach_kafka() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let dir = agent::tmp("cgroup-agent", "kafka");
    let root = dir.join("cgroup");
    let cg = root.join(format!("system.slice/docker-{ID}.scope"));
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
    std::fs::write(cg.join("cpu.stat"), "usage_usec 1500\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250\n").unwrap();
    std::fs::write(cg.join("memory.current"), "73728\n").unwrap();
    std::fs::write(cg.join("io.stat"), "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2\n").unwrap();
    std::fs::write(cg.join("pids.current"), "4\n").unwrap();
    let port = agent::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let Some(child) = agent::start(
        HOST,
        &[
            "--kafka-brokers", &brokers, "--cgroup-root", root.to_str().unwrap(), "--metrics-addr", &metrics,
            "--cgroup-sample-interval-ms", "10", "--sample-interval-ms", "100", "--cgroup-sampler-realtime",
        ],
        &dir,
    ) else {
        return;
    };
    let consumer = agent::consumer_from_start(&brokers, TOPIC, 1);
    let mut recs = Vec::new();
    consume_until(&consumer, &mut recs, "a first record", |r| !r.is_empty());

    // 1500 us -> 9500 us of CPU: one byte rewritten in place (the sampler holds the file open).
    std::fs::OpenOptions::new().write(true).open(cg.join("cpu.stat")).unwrap().write_all_at(b"9", 11).unwrap();
    consume_until(&consumer, &mut recs, "the CPU growth", |r| r.iter().any(|(_, x)| x.cpu_ns > 0));
    let n = recs.len();
    consume_until(&consumer, &mut recs, "one more record", |r| r.len() > n);

    let text = agent::scrape(port);
    let err = agent::sigterm(child);
    assert!(err.contains("cgroup sampler: v2 hierarchy, tick every 10 ms"), "{err}");
    // Realtime granted (root) or refused (said once): either way the sampler ran.
    assert!(err.contains("SCHED_FIFO priority 10"), "{err}");
    for (key, r) in &recs {
        assert_eq!(key.as_slice(), HOST.as_bytes());
        assert_eq!((r.host_id.as_str(), r.group_id.as_str(), r.runtime.as_str(), r.hierarchy.as_str()), (HOST, ID, "DOCKER", "v2"));
        assert_eq!(r.cgroup_path, format!("/system.slice/docker-{ID}.scope"));
        assert_eq!((r.pod_uid.as_deref(), r.qos_class.as_deref(), r.tick_interval_ns), (None, None, 10_000_000));
        assert_eq!((r.memory_bytes, r.memory_peak_bytes, r.pids, r.throttled_periods, r.io_read_bytes), (73728, 73728, 4, 0, 0));
        assert!(r.ticks >= 1 && r.max_tick_gap_ns > 0 && r.interval_end_ns > r.interval_start_ns, "{r:?}");
    }
    for w in recs.windows(2) {
        assert_eq!(w[0].1.interval_end_ns, w[1].1.interval_start_ns, "intervals follow each other");
    }
    assert_eq!(recs.iter().map(|(_, r)| r.cpu_ns).sum::<i64>(), 8_000_000, "exactly the growth written");
    assert!(recs.iter().any(|(_, r)| r.cpu_peak_cores > 0.0 && r.cpu_mean_cores > 0.0));
    for needle in ["wattgraph_agent_cgroups_sampled 1", "# TYPE wattgraph_agent_cgroup_ticks_total counter", "# TYPE wattgraph_agent_cgroup_max_tick_gap_seconds gauge"] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    assert!(!text.contains("wattgraph_agent_cgroup_records_total 0\n"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With --pod-metadata-url the records of a pod's container carry its name, namespace and kept
/// labels, from a fake kubelet over https (test CA and token); the metrics show the source.
#[test]
fn pod_names_from_the_kubelet_reach_kafka() {
    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    let dir = agent::tmp("cgroup-agent", "pods");
    let list = common::kubelet::pod_list(&[(UID, "checkout-5f7c9", "shop", "app=checkout,pod-template-hash=5f7c9")]);
    let Some(k) = common::kubelet::FakeKubelet::start(&dir.join("kubelet"), &list) else { return };
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let root = dir.join("cgroup");
    let rel = format!("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope", UID.replace('-', "_"));
    let cg = root.join(&rel);
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
    std::fs::write(cg.join("cpu.stat"), "usage_usec 1500\n").unwrap();
    std::fs::write(cg.join("pids.current"), "2\n").unwrap();
    let port = agent::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let (url, ca, token) = (k.url(), k.ca(), k.token_file());
    let Some(child) = agent::start(
        HOST,
        &[
            "--kafka-brokers", &brokers, "--cgroup-root", root.to_str().unwrap(), "--metrics-addr", &metrics,
            "--cgroup-sample-interval-ms", "10", "--sample-interval-ms", "100",
            "--pod-metadata-url", &url, "--pod-metadata-ca-file", ca.to_str().unwrap(),
            "--pod-metadata-token-file", token.to_str().unwrap(), "--pod-labels", "app",
        ],
        &dir,
    ) else {
        return;
    };
    let consumer = agent::consumer_from_start(&brokers, TOPIC, 1);
    let mut recs = Vec::new();
    consume_until(&consumer, &mut recs, "a record with the pod's name", |r| r.iter().any(|(_, x)| x.pod.name.is_some()));
    let text = agent::scrape(port);
    agent::sigterm(child);
    let (_, r) = recs.iter().find(|(_, x)| x.pod.name.is_some()).unwrap();
    assert_eq!((r.pod_uid.as_deref(), r.pod.name.as_deref(), r.pod.namespace.as_deref()), (Some(UID), Some("checkout-5f7c9"), Some("shop")));
    assert_eq!(r.pod.labels, vec![("app".to_string(), "checkout".to_string())], "only the kept label");
    for needle in ["wattgraph_agent_pod_metadata_pods 1", "wattgraph_agent_pod_metadata_errors_total 0"] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
