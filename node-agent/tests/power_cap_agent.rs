//! The agent binary with `--power-cap`: flag validation, a host without RAPL, and budgets fed
//! through librdkafka's in-process mock cluster (no Kafka broker needed) into a fixture
//! powercap tree: apply, older sequence ignored, expiry restores, SIGTERM restores.
use crate::common;
use common::agent;

use std::process::Command;
use std::time::Duration;

use common::powercap::{budget, fixture, limits, send, BUDGET_TOPIC as TOPIC, ORIGINAL_UW};
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use wattgraph_agent::output::avro::budget::PowerBudget;

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
        (&["--power-cap-state-file", "/tmp"][..], "--power-cap-state-file '/tmp' must name a file"),
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
        &[
            "--kafka-brokers", "127.0.0.1:1", "--power-cap", "on", "--powercap-root", root.to_str().unwrap(), "--metrics-addr", &metrics,
            "--power-cap-state-file", dir.join("state/limits").to_str().unwrap(),
        ],
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
            "--power-cap-state-file", dir.join("state/limits").to_str().unwrap(),
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

/// SIGKILL: the process ends without restoring; returns its stderr.
fn kill9(agent: agent::Agent) -> String {
    let mut child = agent.into_child();
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn metric_value(text: &str, name: &str) -> Option<f64> {
    metric_line(text, name).and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// An agent killed with SIGKILL (or by the OOM killer) while a cap is written cannot restore
/// it. The next agent must restore the limits found before the first cap, not take the capped
/// ones as the originals, and keep them as the originals through further crashes.
#[test]
fn a_killed_agent_leaves_the_originals_for_the_next_one() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    send(&producer, HOST, &budget(HOST, 2, 100.0, Duration::from_secs(600)));

    let dir = agent::tmp("powercap", "kill9");
    let root = dir.join("powercap");
    fixture(&root);
    let port = agent::free_port();
    let metrics = format!("127.0.0.1:{port}");
    let state = dir.join("state/original-limits");
    let args = [
        "--kafka-brokers", &brokers, "--power-cap", "on", "--powercap-root", root.to_str().unwrap(),
        "--metrics-addr", &metrics, "--budget-timeout-s", "600", "--power-cap-state-file", state.to_str().unwrap(),
    ];
    let Some(a) = agent::start(HOST, &args, &dir) else { return };
    agent::wait_for("the first agent's cap", || limits(&root) == vec![50_000_000, 50_000_000]);
    let recorded = std::fs::read_to_string(&state).unwrap();
    assert!(recorded.contains("zone 0 intel-rapl:0 165000000\nzone 1 intel-rapl:1 165000000\n"), "{recorded}");
    // Out of its own host bounds: refused and counted, never written.
    send(&producer, HOST, &PowerBudget { min_watts: 50.0, ..budget(HOST, 3, 5.0, Duration::from_secs(600)) });
    agent::wait_for("the out-of-bounds budget counted", || {
        metric_value(&agent::scrape(port), "wattgraph_agent_power_budgets_ignored_total{reason=\"bounds\"}") == Some(1.0)
    });
    assert_eq!(limits(&root), vec![50_000_000, 50_000_000]);
    let log_a = kill9(a);
    assert_eq!(limits(&root), vec![50_000_000, 50_000_000], "SIGKILL leaves the cap:\n{log_a}");
    assert!(log_a.contains("ignored budget (bounds): seq 3 (MANUAL) has budget 5 W outside its host bounds [50, 400] W"), "{log_a}");

    // The budget was withdrawn while no agent ran: the next agent must put the originals back.
    producer.send(BaseRecord::<str, [u8]>::to(TOPIC).key(HOST)).map_err(|(e, _)| e).unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    let Some(b) = agent::start(HOST, &args, &dir) else { return };
    agent::wait_for("the original limits restored by the next agent", || limits(&root) == vec![ORIGINAL_UW, ORIGINAL_UW]);
    // Capped again, then killed again: the third agent still knows the real originals.
    send(&producer, HOST, &budget(HOST, 5, 90.0, Duration::from_secs(600)));
    agent::wait_for("the second agent's cap", || limits(&root) == vec![45_000_000, 45_000_000]);
    let log_b = kill9(b);
    assert!(log_b.contains("original limits socket 0 165.00 W, socket 1 165.00 W"), "{log_b}");

    producer.send(BaseRecord::<str, [u8]>::to(TOPIC).key(HOST)).map_err(|(e, _)| e).unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    let Some(c) = agent::start(HOST, &args, &dir) else { return };
    agent::wait_for("the originals restored after the second kill", || limits(&root) == vec![ORIGINAL_UW, ORIGINAL_UW]);
    let text = agent::scrape(port);
    assert_eq!(metric_value(&text, "wattgraph_agent_power_cap_restores_total{reason=\"recovered\"}"), Some(1.0), "{text}");
    assert_eq!(std::fs::read_to_string(&state).unwrap(), recorded, "the first originals are kept");
    let log_c = agent::sigterm(c);
    assert_eq!(limits(&root), vec![ORIGINAL_UW, ORIGINAL_UW], "{log_c}");
    assert!(log_c.contains("was left by an agent that did not stop cleanly"), "{log_c}");
    assert!(!state.exists(), "removed at the clean stop once the originals are back");

    // A state file that is not this agent's (another powercap tree; a wrong hostPath, say):
    // refused, said, and nothing capped.
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    let moved = recorded.replace(&std::fs::canonicalize(&root).unwrap().display().to_string(), "/elsewhere/powercap");
    let body = &moved[..moved.rfind("crc32").unwrap()];
    std::fs::write(&state, format!("{body}crc32 {:08x}\n", wattgraph_agent::shared::durable::crc32(body.as_bytes()))).unwrap();
    send(&producer, HOST, &budget(HOST, 6, 90.0, Duration::from_secs(600)));
    let Some(d) = agent::start(HOST, &args, &dir) else { return };
    agent::wait_for("the refusal exported", || metric_value(&agent::scrape(port), "wattgraph_agent_power_cap_state_refused") == Some(1.0));
    agent::wait_for("the budget received", || metric_value(&agent::scrape(port), "wattgraph_agent_power_budget_sequence") == Some(6.0));
    let log_d = agent::sigterm(d);
    assert_eq!(limits(&root), vec![ORIGINAL_UW, ORIGINAL_UW], "{log_d}");
    assert!(log_d.contains(&format!("the power-cap state file {} is refused (written for powercap root '/elsewhere/powercap'", state.display())), "{log_d}");
    assert!(state.exists(), "left for the operator");
    let _ = std::fs::remove_dir_all(&dir);
}
