//! The binary with `--config FILE`: a wrong value or unknown key in the file stops it at start
//! with exit code 2 and a message naming the file and the key; the command line overrides it.
use crate::common;
use common::agent;

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(agent::BIN).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
}

#[test]
fn bad_value_or_key_in_the_file_is_named_with_exit_2() {
    let dir = agent::tmp("config", "bin");
    let f = dir.join("agent.toml");
    let fs = f.to_str().unwrap();
    std::fs::write(&f, "host-id = \"h\"\nkafka-brokers = \"127.0.0.1:1\"\nsnapshot-bytes = 0\n").unwrap();
    let (code, err) = run(&["--config", fs]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("config file '{fs}': key 'snapshot-bytes': --snapshot-bytes '0' must be at least 1")), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    std::fs::write(&f, "host-id = \"h\"\nkafka-brokers = \"127.0.0.1:1\"\nsnapshot-bytez = 1\n").unwrap();
    let (code, err) = run(&["--config", fs]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("config file '{fs}': unknown key 'snapshot-bytez'")), "{err}");

    std::fs::write(&f, "host-id = \"h\"\nkafka-brokers = \"127.0.0.1:1\"\nmap-entries = \"many\"\n").unwrap();
    let (code, err) = run(&[&format!("--config={fs}")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("config file '{fs}': key 'map-entries' must be an integer, not string")), "{err}");

    // Kafka client properties: a key the agent relies on, named with the file, key and flag.
    std::fs::write(&f, "host-id = \"h\"\nkafka-brokers = \"127.0.0.1:1\"\nkafka-option = [\"message.timeout.ms=1000\"]\n").unwrap();
    let (code, err) = run(&["--config", fs]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("config file '{fs}': key 'kafka-option': --kafka-option 'message.timeout.ms=1000': key 'message.timeout.ms' cannot be set")), "{err}");
    let props = dir.join("kafka.properties");
    std::fs::write(&props, "security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.password=hunter2\n").unwrap();
    std::fs::write(&f, format!("host-id = \"h\"\nkafka-brokers = \"127.0.0.1:1\"\nkafka-config = \"{}\"\n", props.display())).unwrap();
    let (code, err) = run(&["--config", fs]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("config file '{fs}': key 'kafka-config': --kafka-config '{}': librdkafka refuses", props.display())), "{err}");
    assert!(!err.contains("hunter2"), "the secret in the message: {err}");

    // A wrong value given on the command line over a good file: the flag's own message.
    std::fs::write(&f, "host-id = \"h\"\nkafka-brokers = \"127.0.0.1:1\"\n").unwrap();
    let (code, err) = run(&["--config", fs, "--map-entries", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--map-entries '3'") && !err.contains("config file"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn file_values_reach_the_running_agent() {
    let dir = agent::tmp("config", "run");
    let f = dir.join("agent.toml");
    let port = agent::free_port();
    // kafka-brokers and metrics-addr only in the file; the host id from the file is overridden.
    std::fs::write(&f, format!("host-id = \"from-file\"\nkafka-brokers = \"127.0.0.1:1\"\nmetrics-addr = \"127.0.0.1:{port}\"\nno-transactions = true\n")).unwrap();
    let Some(child) = agent::start("from-cli", &["--config", f.to_str().unwrap()], &dir) else { return };
    let text = agent::scrape(port);
    let err = agent::sigterm(child);
    assert!(text.contains("wattgraph_agent_spool_records{tier=\"memory\"}"), "{text}");
    assert!(err.contains("as host from-cli"), "{err}");
    assert!(!err.contains("TransactionStats every"), "no-transactions = true from the file: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}
