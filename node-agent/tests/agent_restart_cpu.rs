//! An agent restart loses no CPU time (`--pin-bpf`): the real agent binary samples a busy child
//! process, is killed (SIGKILL) while the child runs, the child keeps running while no agent
//! does, a second agent starts on the same pins and spool, and the ResourceSamples in Kafka
//! (librdkafka's in-process mock cluster) give the child the CPU time the kernel counted for it
//! (`/proc/<pid>/schedstat`), with the host's intervals following one another across the restart:
//! the second agent's first interval starts where the first agent's last reported one ended.
use crate::common;
use common::agent;
use common::pin_dir::Scratch;

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rdkafka::Message;
use rdkafka::mocking::MockCluster;
use wattgraph_agent::output::avro::resource::decode_single_object;
use wattgraph_agent::resources::record::Scope;

const TOPIC: &str = "wattgraph.resources";

/// Killed and reaped on drop, so a failing assertion leaves no busy process behind.
struct Busy(Child);
impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The process's state letter and its scheduler runtime (ns) from /proc.
fn state_and_runtime(pid: u32) -> (char, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
    let sched = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).unwrap();
    (state, sched.split_whitespace().next().unwrap().parse().unwrap())
}

#[test]
fn agent_killed_and_restarted_on_its_pins_loses_no_cpu_time() {
    let mock = MockCluster::new(1).unwrap();
    mock.create_topic(TOPIC, 1, 1).unwrap();
    let brokers = mock.bootstrap_servers();
    let Scratch { pins, ready, spool, port, .. } = &Scratch::new("cpu");
    let command = || {
        let mut c = agent::pinned_host("cpu-restart-host", &brokers, &ready, *port, &spool, &pins);
        c.args(["--sample-interval-ms", "200"]);
        c
    };
    let Some(first) = agent::spawn_ready(command(), &ready) else { return };
    // Started after the programs attached: its whole runtime is theirs to count.
    let busy = Busy(Command::new("/bin/sh").args(["-c", "while :; do :; done"]).spawn().unwrap());
    let pid = busy.0.id();
    std::thread::sleep(Duration::from_millis(1500));
    drop(first); // SIGKILL
    std::fs::remove_file(&ready).unwrap();
    // No agent runs while it keeps busy.
    std::thread::sleep(Duration::from_millis(1500));
    let outage_runtime = state_and_runtime(pid).1;
    let Some(second) = agent::spawn_ready(command(), &ready) else { panic!("second agent") };
    std::thread::sleep(Duration::from_millis(1000));
    unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
    while state_and_runtime(pid).0 != 'T' {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (_, truth) = state_and_runtime(pid);
    let stopped = Instant::now();
    // Intervals that end after the stop, so the last slice is in.
    while stopped.elapsed() < Duration::from_millis(1000) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let err = agent::sigterm(second);
    drop(busy);

    let consumer = agent::consumer_from_start(&brokers, TOPIC, 1);
    let (mut hosts, mut child_ns, mut idle_polls) = (Vec::new(), 0i64, 0);
    // The spool sends again, byte for byte, what the killed agent journaled but did not hear
    // delivered; the job drops those by record id (a hash of the bytes), and so does this.
    let mut payloads = std::collections::HashSet::new();
    let mut replays = 0;
    while idle_polls < 20 {
        match rdkafka::consumer::BaseConsumer::poll(&consumer, Duration::from_millis(100)) {
            Some(m) => {
                idle_polls = 0;
                let m = m.unwrap();
                let payload = m.payload().unwrap();
                if !payloads.insert(payload.to_vec()) {
                    replays += 1;
                    continue;
                }
                let r = decode_single_object(payload).unwrap();
                match r.scope {
                    Scope::Host => hosts.push((r.interval_start_ns, r.interval_end_ns)),
                    Scope::Process if r.tgid as u32 == pid => child_ns += r.cpu_time_ns,
                    _ => {}
                }
            }
            None => idle_polls += 1,
        }
    }
    hosts.sort_unstable();
    let gaps: Vec<(usize, i64)> = hosts.windows(2).map(|w| w[1].0 - w[0].1).enumerate().filter(|(_, g)| g.abs() > 1_000_000).collect();
    eprintln!("{} host intervals ({replays} records sent again), child: agent {child_ns} ns, schedstat {truth} ns ({outage_runtime} ns when the second agent started)", hosts.len());
    // The clock offsets of the two agents (realtime minus monotonic, each taken at its start) may
    // differ by the clock's adjustment between them, far below a millisecond; the outage is 1.5 s.
    assert!(gaps.is_empty(), "host intervals with a gap or an overlap (index, ns): {gaps:?}");
    assert!(hosts.len() >= 10, "host intervals: {}", hosts.len());
    // Both count the scheduler's own runtime, and the stopped child's is final: the same figure.
    assert_eq!(child_ns, truth as i64, "the child's CPU time: agents against the kernel");
    assert!(err.contains("CPU accounting continues from the sched programs pinned by a previous agent"), "the second agent reused the pins: {err}");
}

/// An agent without CPU accounting (`--no-resources`) on the pins of one with it unpins the sched
/// programs, which would otherwise count for nobody, and keeps the connection programs' pins.
#[test]
fn an_agent_without_cpu_accounting_unpins_the_sched_programs() {
    let mock = MockCluster::new(1).unwrap();
    let brokers = mock.bootstrap_servers();
    let Scratch { pins, ready, spool, port, .. } = &Scratch::new("nosched");
    let objects = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&pins).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| !n.ends_with(".debug")).collect();
        v.sort_unstable();
        v.iter().map(|n| n.split('-').next().unwrap().to_string()).collect()
    };
    let Some(first) = agent::spawn_ready(agent::pinned_host("nosched-host", &brokers, &ready, *port, &spool, &pins), &ready) else { return };
    agent::sigterm(first);
    assert_eq!(objects(), ["connections", "sched"]);
    let _ = std::fs::remove_file(&ready); // a clean stop removes it
    let mut cmd = agent::pinned_host("nosched-host", &brokers, &ready, *port, &spool, &pins);
    cmd.arg("--no-resources");
    let second = agent::spawn_ready(cmd, &ready).expect("second agent");
    let err = agent::sigterm(second);
    assert!(err.contains("this agent does not run the sched programs"), "{err}");
    assert!(err.contains("reusing the connections BPF programs"), "{err}");
    assert_eq!(objects(), ["connections"]);
}
