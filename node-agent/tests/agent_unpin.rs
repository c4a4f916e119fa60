//! The pins outlive a restart but not an uninstall (`--unpin-when-daemonset-gone`): the real agent
//! binary with `--pin-bpf`, its DaemonSet on a fake API server over https (fixtures/fake_kubelet.py:
//! the list and watch of one DaemonSet, test CA, bearer token), stopped with SIGTERM. The pins stay
//! while the DaemonSet exists or the API server cannot answer, and go when it is deleted, also
//! when the agent's token no longer works by then (an uninstall deletes its service account too).
use crate::common;
use common::agent::{self, Agent};
use common::kubelet::FakeKubelet;
use common::pin_dir::PinDir;

use std::path::Path;

use rdkafka::mocking::MockCluster;

const DS: &str = "wattgraph/node-agent";

fn daemonsets(items: &str) -> String {
    format!(r#"{{"kind":"DaemonSetList","apiVersion":"apps/v1","metadata":{{"resourceVersion":"7"}},"items":[{items}]}}"#)
}
const NODE_AGENT: &str = r#"{"metadata":{"name":"node-agent","namespace":"wattgraph","uid":"d5"}}"#;
const DELETING: &str = r#"{"metadata":{"name":"node-agent","namespace":"wattgraph","uid":"d5","deletionTimestamp":"2026-11-27T17:00:00Z"}}"#;
const OTHER: &str = r#"{"metadata":{"name":"node-agent-2","namespace":"wattgraph","uid":"e6"}}"#;

struct Setup {
    api: FakeKubelet,
    _mock: MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
    brokers: String,
    dir: std::path::PathBuf,
    pins: std::path::PathBuf,
    _unpin: PinDir,
}

fn setup(tag: &str) -> Option<Setup> {
    let dir = agent::tmp("unpin", tag);
    let api = FakeKubelet::start(&dir.join("api"), "{}")?;
    api.set_file("daemonsets.json", &daemonsets(NODE_AGENT));
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic("wattgraph.connections", 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    // PinDir removes `dir` with the pins (the fields drop in order: the fake API server first).
    let pins = dir.join("pins");
    Some(Setup { api, _mock: mock, brokers, pins: pins.clone(), _unpin: PinDir(pins), dir })
}

impl Setup {
    /// A pinning agent watching DS on the fake API server, once its watch is open.
    fn agent(&self) -> Option<Agent> {
        let watches = self.watches();
        let (ready, spool) = (self.dir.join("ready"), self.dir.join("spool"));
        let _ = std::fs::remove_file(&ready);
        let ca = self.api.ca();
        let token = self.api.dir.join("agent-token");
        std::fs::copy(self.api.token_file(), &token).unwrap();
        let extra = [
            "--no-transactions",
            "--unpin-when-daemonset-gone",
            DS,
            "--kube-api-url",
            &self.api.api_url(),
            "--pod-metadata-ca-file",
            ca.to_str().unwrap(),
            "--pod-metadata-token-file",
            token.to_str().unwrap(),
        ];
        let cmd = agent::pinned("unpin-host", &self.brokers, &ready, Path::new("/proc/self/ns/net"), agent::free_port(), &spool, &self.pins, &extra);
        let a = agent::spawn_ready(cmd, &ready)?;
        agent::wait_for("the agent's watch of its DaemonSet", || self.watches() > watches);
        Some(a)
    }

    /// Watch requests the fake API server answered so far.
    fn watches(&self) -> usize {
        let log = std::fs::read_to_string(self.api.dir.join("requests")).unwrap_or_default();
        log.lines().filter(|l| l.contains("/daemonsets?") && l.contains("watch=true")).count()
    }

    /// Waits until the fake API server has sent this watch event.
    fn sent(&self, event: &str) {
        let line = format!("sent {event}");
        agent::wait_for(&line, || std::fs::read_to_string(self.api.dir.join("requests")).unwrap_or_default().lines().any(|l| l == line));
    }

    /// The BPF objects pinned under the pin directory.
    fn pinned(&self) -> usize {
        // Directories: a fresh bpffs holds the kernel's progs.debug and maps.debug files.
        std::fs::read_dir(&self.pins).map_or(0, |d| d.filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir()).count())
    }

    /// What an uninstall does to the agent's token: its service account is deleted, so every new
    /// request is refused (401).
    fn revoke_token(&self) {
        std::fs::write(self.api.dir.join("agent-token"), "deleted-service-account\n").unwrap();
    }
}

#[test]
fn restarts_keep_the_pins_and_the_uninstall_removes_them() {
    let Some(s) = setup("cycle") else { return };
    let Some(a) = s.agent() else { return };
    assert!(s.pinned() > 0, "the agent pinned its programs");
    let err = agent::sigterm(a);
    assert!(err.contains("keeping the BPF pins") && err.contains("DaemonSet wattgraph/node-agent exists (a restart)"), "{err}");
    assert!(s.pinned() > 0, "a restart keeps the pins");

    // The API server down at the stop: the agent cannot tell, so the pins stay.
    let a = s.agent().unwrap();
    s.api.set_down(true);
    let err = agent::sigterm(a);
    s.api.set_down(false);
    assert!(err.contains("reusing the"), "the second agent continued from the pins: {err}");
    assert!(err.contains("keeping the BPF pins") && err.contains("cannot tell whether the DaemonSet wattgraph/node-agent is gone") && err.contains("HTTP 503"), "{err}");
    assert!(s.pinned() > 0, "an outage of the API server keeps the pins");

    // helm uninstall: the DaemonSet goes, then the service account, before the pod's SIGTERM.
    let a = s.agent().unwrap();
    s.api.set_file("daemonsets.json", &daemonsets(OTHER));
    s.sent("DELETED node-agent");
    s.revoke_token();
    let err = agent::sigterm(a);
    assert!(err.contains("unpinned 1 BPF object(s)") && err.contains("the watch saw the DaemonSet wattgraph/node-agent is gone") && err.contains("HTTP 401"), "{err}");
    assert_eq!(s.pinned(), 0, "the uninstall removed the pins");
}

#[test]
fn the_answer_at_the_stop_decides() {
    let Some(s) = setup("answer") else { return };
    // Gone, and the agent's token still works: the list at the stop says so.
    let Some(a) = s.agent() else { return };
    s.api.set_file("daemonsets.json", &daemonsets(""));
    let err = agent::sigterm(a);
    assert!(err.contains("unpinned 1 BPF object(s)") && err.contains("the DaemonSet wattgraph/node-agent is gone (an uninstall)"), "{err}");
    assert_eq!(s.pinned(), 0);

    // Foreground deletion: the DaemonSet stays, with a deletionTimestamp, until its pods are gone.
    s.api.set_file("daemonsets.json", &daemonsets(NODE_AGENT));
    let a = s.agent().unwrap();
    s.api.set_file("daemonsets.json", &daemonsets(DELETING));
    s.sent("MODIFIED node-agent");
    s.revoke_token();
    let err = agent::sigterm(a);
    assert!(err.contains("unpinned 1 BPF object(s)") && err.contains("the watch saw the DaemonSet wattgraph/node-agent is being deleted"), "{err}");
    assert_eq!(s.pinned(), 0);

    // A DaemonSet the agent never saw (a wrong namespace or name in the flag): the pins stay.
    s.api.set_file("daemonsets.json", &daemonsets(OTHER));
    let a = s.agent().unwrap();
    let err = agent::sigterm(a);
    assert!(err.contains("keeping the BPF pins") && err.contains("is gone, but this agent never saw it exist"), "{err}");
    assert!(s.pinned() > 0);
}
