//! The agent binary with `--power-cap`: flag validation, a host without RAPL, and budgets fed
//! through librdkafka's in-process mock cluster (no Kafka broker needed) into a fixture
//! powercap tree: apply, older sequence ignored, expiry restores, SIGTERM restores.
mod common;
use common::agent;

use std::process::Command;
use std::time::Duration;

use common::powercap::{budget, fixture, limits, send, BUDGET_TOPIC as TOPIC, ORIGINAL_UW};
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::BaseProducer;

const HOST: &str = "cap-host";

fn metric_line<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(name) && l.as_bytes().get(name.len()) == Some(&b' '))
}

#[test]
fn invalid_power_cap_values_are_named() {
    for (args, needle) in [
        (&["--power-cap", "maybe"][..], "'maybe'"),
        (&["--power-floor-watts=-3"][..], "--power-floor-watts '-3'"),
        (&["--budget-timeout-s", "0"][..], "--budget-timeout-s '0'"),
        (&["--power-budget-topic", "a b"][..], "--power-budget-topic 'a b'"),
    ] {
        let out = Command::new(agent::BIN).args(["--host-id", "h", "--kafka-brokers", "127.0.0.1:1"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn without_a_rapl_package_zone_it_says_so_once_and_keeps_running() {
    let dir = agent::tmp("powercap", "norapl");
    let root = dir.join("powercap");
    std::fs::create_dir_all(&root).unwrap();
    let port = agent::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let Some(child) = agent::start(
        HOST,
        &["--kafka-brokers", "127.0.0.1:1", "--power-cap", "on", "--powercap-root", root.to_str().unwrap(), "--metrics-addr", &metrics],
        &dir,
    ) else {
        return;
    };
    let text = agent::scrape(port);
    let err = agent::sigterm(child);
    assert_eq!(err.matches("no RAPL package zone").count(), 1, "{err}");
    assert!(err.contains("nothing is actuated"), "{err}");
    for needle in ["wattgraph_agent_power_cap_available 0", "wattgraph_agent_power_cap_mode{mode=\"on\"} 1", "wattgraph_agent_power_budget_active 0"] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "nothing written under --powercap-root");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn budgets_from_kafka_are_applied_expire_and_are_restored_at_shutdown() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    // Before the agent starts: an older budget for this host, one for another host, then the
    // latest for this host. Only the latest may ever be written.
    send(&producer, HOST, &budget(HOST, 1, 60.0, Duration::from_secs(600)));
    send(&producer, "other-host", &budget("other-host", 9, 30.0, Duration::from_secs(600)));
    send(&producer, HOST, &budget(HOST, 2, 100.0, Duration::from_secs(600)));

    let dir = agent::tmp("powercap", "kafka");
    let root = dir.join("powercap");
    fixture(&root);
    let port = agent::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let Some(child) = agent::start(
        HOST,
        &[
            "--kafka-brokers", &brokers, "--power-cap", "on", "--powercap-root", root.to_str().unwrap(),
            "--metrics-addr", &metrics, "--power-floor-watts", "20", "--budget-timeout-s", "600",
        ],
        &dir,
    ) else {
        return;
    };
    agent::wait_for("the latest budget (100 W) applied", || limits(&root) == vec![50_000_000, 50_000_000]);
    let text = agent::scrape(port);
    for needle in [
        "wattgraph_agent_power_cap_available 1",
        "wattgraph_agent_power_budget_active 1",
        "wattgraph_agent_power_budget_watts 100",
        "wattgraph_agent_power_budget_sequence 2",
        "wattgraph_agent_power_cap_limit_watts{socket=\"0\"} 50",
        "wattgraph_agent_power_cap_limit_watts{socket=\"1\"} 50",
        "wattgraph_agent_power_budgets_applied_total 1",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    assert!(metric_line(&text, "wattgraph_agent_power_budget_applied_timestamp_seconds").is_some_and(|l| !l.ends_with(" 0")), "{text}");

    // A replayed older sequence is ignored and counted.
    send(&producer, HOST, &budget(HOST, 1, 70.0, Duration::from_secs(600)));
    agent::wait_for("the older record counted", || agent::scrape(port).contains("wattgraph_agent_power_budgets_ignored_total{reason=\"older\"} 1"));
    assert_eq!(limits(&root), vec![50_000_000, 50_000_000]);

    // A short-lived budget: applied, then lost when validUntilNs passes -> originals back.
    send(&producer, HOST, &budget(HOST, 3, 80.0, Duration::from_secs(3)));
    agent::wait_for("the expiry restore", || agent::scrape(port).contains("wattgraph_agent_power_cap_restores_total{reason=\"expired\"} 1"));
    assert_eq!(limits(&root), vec![ORIGINAL_UW, ORIGINAL_UW]);
    let text = agent::scrape(port);
    assert!(text.contains("wattgraph_agent_power_budget_sequence 3"), "{text}");
    assert!(text.contains("wattgraph_agent_power_budget_active 0"), "{text}");

    // Below the agent's floor (20 W = 10 W per socket), then SIGTERM restores.
    send(&producer, HOST, &budget(HOST, 4, 12.0, Duration::from_secs(600)));
    agent::wait_for("the floor-clamped budget", || limits(&root) == vec![10_000_000, 10_000_000]);
    let err = agent::sigterm(child);
    eprintln!("agent log:\n{err}");
    assert_eq!(limits(&root), vec![ORIGINAL_UW, ORIGINAL_UW], "restored at shutdown");
    for needle in [
        "power cap: applied budget 100.00 W (seq 2, MANUAL",
        "reason: test budget 2: 100 W",
        "restored the original limits socket 0 165.00 W, socket 1 165.00 W",
        "validUntilNs",
        "socket 0 10.00 W (floor)",
        "agent shutting down",
    ] {
        assert!(err.contains(needle), "missing {needle}:\n{err}");
    }
    assert!(!err.contains("seq 1, MANUAL"), "the older record was never applied:\n{err}");
    assert!(!err.contains("other-host"), "other hosts' records are skipped:\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
