//! Unit tests of the command line, the config file and validation.
use std::collections::HashSet;
use std::path::Path;

use super::*;

fn parse(extra: &[&str]) -> Result<Config, String> {
    let mut args = vec!["wattgraph-agent", "--host-id", "h1", "--kafka-brokers", "127.0.0.1:9092"];
    args.extend_from_slice(extra);
    let c = Config::try_parse_from(args).map_err(|e| e.to_string())?;
    c.validate()?;
    Ok(c)
}

#[test]
fn defaults() {
    let c = parse(&[]).unwrap();
    assert_eq!(c.topic, "wattgraph.connections");
    assert_eq!(c.snapshot_interval_ms, 5000);
    assert_eq!(c.snapshot_bytes, 1_048_576);
    assert_eq!(c.map_entries, 32768);
    assert!(c.netns.is_empty() && c.ready_file.is_none() && !c.include_self);
    assert_eq!((c.sample_interval_ms, c.resource_topic.as_str(), c.ht_ratio), (1000, "wattgraph.resources", 1.1));
    assert!(c.metrics_addr.is_none() && !c.once && !c.no_resources);
    assert_eq!((c.transaction_topic.as_str(), c.transaction_interval_ms, c.transaction_hist_entries), ("wattgraph.transactions", 1000, 65536));
    assert!(!c.no_transactions);
}

#[test]
fn cgroup_sampler_flags() {
    let c = parse(&[]).unwrap();
    assert_eq!((c.cgroup_sample_interval_ms, c.cgroup_topic.as_str()), (100, "wattgraph.cgroups"));
    assert!(!c.cgroup_sampler_realtime);
    assert_eq!(c.cgroup_root_v1, PathBuf::from("/sys/fs/cgroup"));
    let c = parse(&["--cgroup-sample-interval-ms", "0", "--cgroup-root-v1", "/nonexistent"]).unwrap();
    assert_eq!(c.cgroup_sample_interval_ms, 0, "0 disables the sampler (and its root is not needed)");
    let c = parse(&["--cgroup-sample-interval-ms", "10", "--cgroup-topic", "c", "--cgroup-sampler-realtime", "--cgroup-root-v1", "/tmp"]).unwrap();
    assert_eq!((c.cgroup_sample_interval_ms, c.cgroup_topic.as_str(), c.cgroup_sampler_realtime), (10, "c", true));
    for (args, needle) in [
        (&["--cgroup-sample-interval-ms", "9"][..], "--cgroup-sample-interval-ms '9'"),
        (&["--cgroup-sample-interval-ms", "1001"][..], "--cgroup-sample-interval-ms '1001'"),
        (&["--cgroup-topic", "a b"][..], "--cgroup-topic 'a b'"),
        (&["--cgroup-root-v1", "/nonexistent/v1"][..], "--cgroup-root-v1 '/nonexistent/v1'"),
    ] {
        let err = parse(args).unwrap_err();
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn node_scope_flag() {
    assert_eq!(parse(&[]).unwrap().node_scope, None, "off by default");
    let c = parse(&["--node-scope", "kind-worker2.local", "--pod-metadata-url", "https://kubernetes.default.svc/api/v1/pods"]).unwrap();
    assert_eq!(c.node_scope.as_deref(), Some("kind-worker2.local"));
    let f = file("scope.toml", "host-id = \"h\"\nkafka-brokers = \"k:1\"\nnode-scope = \"n2\"\n");
    let err = load(&f, &[]).unwrap_err();
    assert!(err.contains("key 'node-scope': --node-scope 'n2' needs --pod-metadata-url"), "{err}");
    assert_eq!(load(&f, &["--pod-metadata-url", "https://k8s/api/v1/pods"]).unwrap().node_scope.as_deref(), Some("n2"));
}

#[test]
fn power_cap_flags() {
    use crate::control::power_cap::outcome::PowerCapMode;
    let c = parse(&[]).unwrap();
    assert_eq!((c.power_cap, c.power_budget_topic.as_str()), (PowerCapMode::Off, "wattgraph.power-budgets"));
    assert_eq!((c.power_floor_watts, c.budget_timeout_s), (0.0, 90));
    let c = parse(&["--power-cap", "dry-run", "--power-floor-watts", "80.5", "--budget-timeout-s", "30", "--power-budget-topic", "b"]).unwrap();
    assert_eq!((c.power_cap, c.power_floor_watts, c.budget_timeout_s), (PowerCapMode::DryRun, 80.5, 30));
    assert_eq!(parse(&["--power-cap", "on"]).unwrap().power_cap, PowerCapMode::On);
}

#[test]
fn resource_flags_and_once() {
    let c = parse(&[
        "--sample-interval-ms", "10", "--powercap-root", "/tmp/pc", "--idle-watts-per-socket", "12.5",
        "--idle-watts-per-cpu", "2", "--max-watts-per-cpu", "9", "--ht-ratio", "1.15", "--no-hw-counters",
        "--metrics-addr", "127.0.0.1:9400", "--thread-entries", "1024",
    ])
    .unwrap();
    assert_eq!(c.idle_watts_per_socket, Some(12.5));
    assert_eq!(c.metrics_addr.unwrap().port(), 9400);
    let once = Config::try_parse_from(["x", "--host-id", "h", "--once"]).unwrap();
    assert!(once.validate().is_ok() && once.kafka_brokers.is_none());
}

#[test]
fn full_command_line() {
    let c = parse(&[
        "--topic", "t1", "--netns", "/proc/self/ns/net", "--netns", "/proc/thread-self/ns/net",
        "--snapshot-interval-ms", "100", "--snapshot-bytes", "4096", "--ready-file", "/tmp/r",
        "--map-entries", "1024", "--log-level", "debug",
    ])
    .unwrap();
    assert_eq!(c.netns.len(), 2);
    assert_eq!(c.snapshot_bytes, 4096);
    assert_eq!(c.ready_file.unwrap().to_str(), Some("/tmp/r"));
}

/// A config file with `text` in a scratch directory of this test process.
fn file(name: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wg-config-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn load(f: &Path, extra: &[&str]) -> Result<Config, String> {
    let mut args = vec!["wattgraph-agent".to_string(), "--config".into(), f.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    Config::load(args).map_err(|e| e.to_string())
}

#[test]
fn config_file_values_and_precedence() {
    let f = file(
        "prec.toml",
        "host-id = \"from-file\"\nkafka-brokers = \"k1:9092,k2:9093\"\ntopic = \"t.file\"\n\
         netns = [\"/proc/self/ns/net\", \"/proc/thread-self/ns/net\"]\nsnapshot-bytes = 4096\n\
         ht-ratio = 1\nidle-watts-per-cpu = 2.5\ninclude-self = true\nno-resources = false\n\
         power-cap = \"dry-run\"\nmetrics-addr = \"127.0.0.1:9400\"\n",
    );
    let c = load(&f, &[]).unwrap();
    assert_eq!((c.host_id.as_str(), c.kafka_brokers.as_deref(), c.topic.as_str()), ("from-file", Some("k1:9092,k2:9093"), "t.file"));
    assert_eq!(c.netns, vec![PathBuf::from("/proc/self/ns/net"), PathBuf::from("/proc/thread-self/ns/net")]);
    assert_eq!((c.snapshot_bytes, c.ht_ratio, c.idle_watts_per_cpu), (4096, 1.0, 2.5));
    assert!(c.include_self && !c.no_resources);
    assert_eq!(c.power_cap, crate::control::power_cap::outcome::PowerCapMode::DryRun);
    assert_eq!(c.metrics_addr.unwrap().port(), 9400);
    assert_eq!(c.config.as_deref(), Some(f.as_path()));
    assert_eq!(c.map_entries, 32768, "keys absent from the file keep their defaults");

    // Flags override keys, before or after --config; a list flag replaces the file's list.
    let mut args = vec!["x", "--topic", "t.cli", "--config"];
    let fs = f.display().to_string();
    args.push(&fs);
    args.extend(["--snapshot-bytes=8192", "--netns", "/proc/self/ns/net", "--host-id", "from-cli"]);
    let c = Config::load(args).unwrap();
    assert_eq!((c.host_id.as_str(), c.topic.as_str(), c.snapshot_bytes), ("from-cli", "t.cli", 8192));
    assert_eq!(c.netns, vec![PathBuf::from("/proc/self/ns/net")]);
    assert_eq!(c.kafka_brokers.as_deref(), Some("k1:9092,k2:9093"));

    // A required flag may come from either side.
    let f2 = file("partial.toml", "kafka-brokers = \"k:1\"\n");
    assert_eq!(load(&f2, &["--host-id", "h"]).unwrap().host_id, "h");
    assert!(load(&f2, &[]).unwrap_err().contains("--host-id"));
}

#[test]
fn config_file_errors_name_key_and_file() {
    let base = "host-id = \"h\"\nkafka-brokers = \"k:1\"\n";
    let cases: &[(&str, &[&str])] = &[
        ("snapshot-byte = 5\n", &["unknown key 'snapshot-byte'"]),
        ("config = \"other.toml\"\n", &["unknown key 'config'"]),
        ("[kafka]\nbrokers = \"k:1\"\n", &["unknown key 'kafka'"]),
        ("snapshot-bytes = \"lots\"\n", &["key 'snapshot-bytes' must be an integer, not string"]),
        ("include-self = \"yes\"\n", &["key 'include-self' must be a boolean", "not string"]),
        ("netns = \"/proc/self/ns/net\"\n", &["key 'netns' must be an array of strings"]),
        ("netns = [1]\n", &["key 'netns' must be an array of strings"]),
        ("topic = 5\n", &["key 'topic' must be a string, not integer"]),
        ("ht-ratio = true\n", &["key 'ht-ratio' must be a number, not boolean"]),
        ("snapshot-bytes = 0\n", &["key 'snapshot-bytes': --snapshot-bytes '0' must be at least 1"]),
        ("map-entries = -1\n", &["key 'map-entries'", "'-1'"]),
        ("power-cap = \"maybe\"\n", &["key 'power-cap'", "'maybe'"]),
        ("metrics-addr = \"nowhere\"\n", &["key 'metrics-addr'", "'nowhere'"]),
        ("netns = [\"/nonexistent/ns\"]\n", &["key 'netns': --netns '/nonexistent/ns' does not exist"]),
        ("spool-max-bytes = 10\n", &["key 'spool-max-bytes': --spool-max-bytes '10'"]),
        ("log-level = \"loud\"\n", &["key 'log-level': --log-level 'loud'"]),
        ("kafka-option = [\"enable.idempotence=false\"]\n", &["key 'kafka-option': --kafka-option 'enable.idempotence=false': key 'enable.idempotence' cannot be set"]),
        ("kafka-option = \"linger.ms=5\"\n", &["key 'kafka-option' must be an array of strings"]),
        ("topic = \"unterminated\n", &["not valid TOML"]),
    ];
    for (i, (extra, needles)) in cases.iter().enumerate() {
        let f = file(&format!("bad{i}.toml"), &format!("{base}{extra}"));
        let err = load(&f, &[]).unwrap_err();
        let fname = format!("config file '{}'", f.display());
        assert!(err.contains(&fname), "{extra:?}: {err}");
        for n in needles.iter() {
            assert!(err.contains(n), "{extra:?}: missing {n:?} in {err}");
        }
    }
    // A wrong value on the command line is the flag's own error, not the file's.
    let f = file("good.toml", base);
    let err = load(&f, &["--snapshot-bytes", "0"]).unwrap_err();
    assert!(err.contains("--snapshot-bytes '0'") && !err.contains("config file"), "{err}");
    // The command line overrides a bad value of the file (it is never used).
    let f = file("overridden.toml", &format!("{base}snapshot-bytes = 0\n"));
    assert_eq!(load(&f, &["--snapshot-bytes", "7"]).unwrap().snapshot_bytes, 7);
    let missing = std::env::temp_dir().join("wg-config-no-such-file.toml");
    let err = load(&missing, &[]).unwrap_err();
    assert!(err.contains("wg-config-no-such-file.toml") && err.contains("cannot read"), "{err}");
}

#[test]
fn example_file_is_valid_and_lists_every_flag() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("wattgraph-agent.example.toml");
    let c = load(&example, &[]).unwrap();
    assert_eq!((c.host_id.as_str(), c.kafka_brokers.as_deref()), ("node-1", Some("127.0.0.1:9092")));
    // Every commented-out key is valid too: uncomment them all (except the exclusive once and
    // paths that exist only on a node, and flags that need another one set).
    let text = std::fs::read_to_string(&example).unwrap();
    let mut all = String::new();
    let mut keys = HashSet::new();
    for line in text.lines() {
        let l = line.strip_prefix("# ").unwrap_or(line);
        if let Some((k, _)) = l.split_once(" = ") {
            if !k.contains(' ') {
                keys.insert(k.to_string());
                if !["once", "netns", "cgroup-root", "ready-file", "shed-priority", "shed-mode", "cpu-setpoint", "spool-dir", "pod-metadata-token-file", "pod-metadata-ca-file", "kafka-config", "unpin-when-daemonset-gone"].contains(&k) {
                    all.push_str(l);
                    all.push('\n');
                }
            }
        }
    }
    for a in Config::command().get_arguments() {
        let Some(long) = a.get_long() else { continue };
        if !["config", "help", "version"].contains(&long) {
            assert!(keys.contains(long), "example file lacks key '{long}'");
        }
    }
    let f = file("example-all.toml", &all);
    load(&f, &[]).unwrap_or_else(|e| panic!("{e}\n{all}"));
}

#[test]
fn errors_name_the_value() {
    let cases: &[(&[&str], &str)] = &[
        (&["--snapshot-bytes", "0"], "--snapshot-bytes '0'"),
        (&["--snapshot-interval-ms", "0"], "--snapshot-interval-ms '0'"),
        (&["--snapshot-min-interval-ms", "86400001"], "--snapshot-min-interval-ms '86400001' is more than a day"),
        (&["--map-entries", "3"], "--map-entries '3'"),
        (&["--topic", "bad topic"], "--topic 'bad topic'"),
        (&["--log-level", "loud"], "--log-level 'loud'"),
        (&["--netns", "/nonexistent/ns"], "/nonexistent/ns"),
        (&["--snapshot-bytes", "lots"], "lots"),
        (&["--sample-interval-ms", "5"], "--sample-interval-ms '5'"),
        (&["--ht-ratio", "3"], "--ht-ratio '3'"),
        (&["--max-watts-per-cpu", "1"], "--max-watts-per-cpu '1'"),
        (&["--idle-watts-per-socket=-1"], "--idle-watts-per-socket '-1'"),
        (&["--resource-topic", "a b"], "--resource-topic 'a b'"),
        (&["--thread-entries", "1"], "--thread-entries '1'"),
        (&["--metrics-addr", "nowhere"], "nowhere"),
        (&["--transaction-topic", "a/b"], "--transaction-topic 'a/b'"),
        (&["--transaction-interval-ms", "1"], "--transaction-interval-ms '1'"),
        (&["--transaction-hist-entries", "10"], "--transaction-hist-entries '10'"),
        (&["--http-routes", "2000000"], "--http-routes '2000000'"),
        (&["--http-route-idle-s", "604801"], "--http-route-idle-s '604801'"),
        (&["--mask-client-port-below", "1000001"], "--mask-client-port-below '1000001'"),
        (&["--nat-entries", "4194305"], "--nat-entries '4194305'"),
        (&["--nat-netns", "/nonexistent/ns"], "--nat-netns '/nonexistent/ns'"),
        (&["--pod-metadata-url", "ftp://x/pods"], "--pod-metadata-url 'ftp://x/pods'"),
        (&["--pod-metadata-token-file", "/nonexistent/token"], "--pod-metadata-token-file '/nonexistent/token'"),
        (&["--pod-metadata-interval-ms", "10"], "--pod-metadata-interval-ms '10'"),
        (&["--pod-labels", "app,a b"], "--pod-labels 'a b'"),
        (&["--power-cap", "maybe"], "'maybe'"),
        (&["--power-budget-topic", "a b"], "--power-budget-topic 'a b'"),
        (&["--power-floor-watts=-5"], "--power-floor-watts '-5'"),
        (&["--power-floor-watts", "NaN"], "--power-floor-watts 'NaN'"),
        (&["--budget-timeout-s", "0"], "--budget-timeout-s '0'"),
        (&["--kafka-option", "acks=0"], "--kafka-option 'acks=0': key 'acks' cannot be set"),
        (&["--kafka-option", "sasl.password=x"], "--kafka-option key 'sasl.password' holds a secret"),
        (&["--kafka-config", "/nonexistent/k.properties"], "--kafka-config '/nonexistent/k.properties' cannot be read"),
        (&["--unpin-when-daemonset-gone", "wattgraph/node-agent"], "--unpin-when-daemonset-gone 'wattgraph/node-agent' needs --pin-bpf"),
        (&["--pin-bpf", "--unpin-when-daemonset-gone", "node-agent"], "--unpin-when-daemonset-gone 'node-agent' is not NAMESPACE/NAME"),
        (&["--pin-bpf", "--unpin-when-daemonset-gone", "ns/a?watch=1"], "--unpin-when-daemonset-gone 'ns/a?watch=1' has no valid DaemonSet name"),
        (&["--kube-api-url", "kubernetes.default.svc"], "--kube-api-url 'kubernetes.default.svc'"),
        (&["--kube-api-url", "https://k8s/?x=1"], "--kube-api-url 'https://k8s/?x=1'"),
        (&["--node-scope", "node-2"], "--node-scope 'node-2' needs --pod-metadata-url"),
        (&["--node-scope", "Node_2", "--pod-metadata-url", "https://k8s/api/v1/pods"], "--node-scope 'Node_2' is not a Kubernetes node name"),
        (&["--node-scope=n-", "--pod-metadata-url", "https://k8s/api/v1/pods"], "--node-scope 'n-' is not a Kubernetes node name"),
    ];
    for (args, needle) in cases {
        let err = parse(args).unwrap_err();
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let bad_broker = Config::try_parse_from(["x", "--host-id", "h", "--kafka-brokers", "localhost"]).unwrap();
    assert!(bad_broker.validate().unwrap_err().contains("'localhost'"));
    let bad_port = Config::try_parse_from(["x", "--host-id", "h", "--kafka-brokers", "k:99999"]).unwrap();
    assert!(bad_port.validate().unwrap_err().contains("'99999'"));
    assert!(Config::try_parse_from(["x", "--kafka-brokers", "k:1"]).is_err(), "--host-id is required");
}
