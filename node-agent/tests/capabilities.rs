//! The agent binary with exactly the capabilities the chart's DaemonSet grants
//! (k8s/chart/wattgraph/templates/node-agent.yaml): uid 0, the list as
//! bounding set (so as permitted and effective set after exec), no_new_privs as with
//! allowPrivilegeEscalation: false. With them, capture (a loopback exchange), CPU (sched
//! samples), NAT (conntrack) and the power cap (fixture tree) work; without any one of them the
//! agent exits naming it. Like the DaemonSet's agent in the host's network namespace, this one
//! runs in the namespace whose conntrack holds the NAT (common::nat_hosts' host A), with
//! librdkafka's mock cluster there, and pins its programs (--pin-bpf) on a bpffs the test mounts. Needs root and setpriv: fails under CI=true without them.
use crate::common;

use std::net::{TcpListener, TcpStream};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::agent;
use common::nat_hosts::{self, Hosts, ADDR_B, SERVER_PORT, SNAT_A, VIP, VIP_PORT};
use common::powercap::{self, ORIGINAL_UW};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::BaseConsumer;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::BaseProducer;
use rdkafka::Message;
use wattgraph_agent::output::avro::connection::OwnedEventRecord;
use wattgraph_agent::capture::event::Kind;
use wattgraph_agent::shared::net::{addr16_from_ip, Role};
use wattgraph_agent::resources::record::{ResourceRecord, Scope};

const HOST: &str = "caps-host";
const CONNECTIONS: &str = "wattgraph.connections";
const RESOURCES: &str = "wattgraph.resources";

/// The `capabilities.add` list of the chart's node-agent container, e.g. "BPF".
/// A line scan (no YAML crate for one list): `add:` then `- NAME  # why` lines.
fn manifest_capabilities() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../k8s/chart/wattgraph/templates/node-agent.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines().skip_while(|l| l.trim() != "capabilities:");
    assert_eq!(lines.next().map(str::trim), Some("capabilities:"), "no capabilities in {}", path.display());
    let caps: Vec<String> = lines
        .skip_while(|l| l.trim() != "add:")
        .skip(1)
        .map(str::trim)
        .take_while(|l| l.starts_with("- "))
        .map(|l| l[2..].split('#').next().unwrap().trim().to_string())
        .collect();
    assert!(!caps.is_empty(), "no capabilities.add list in {}", path.display());
    caps
}

/// Root and setpriv, or a skip that is a failure under CI=true.
fn can_run() -> bool {
    let missing = if unsafe { libc::geteuid() } != 0 {
        "root"
    } else if Command::new("setpriv").arg("--version").output().is_err() {
        "setpriv (util-linux)"
    } else {
        return true;
    };
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "this test needs {missing} and CI=true");
    eprintln!("SKIPPED: needs {missing}");
    false
}

/// The agent under `setpriv` with only `caps` ("BPF", ...): as root unless `uid` is given, then
/// with them as ambient capabilities.
fn agent_with(caps: &[String], uid: Option<u32>) -> Command {
    let list: String = caps.iter().map(|c| format!(",+{}", c.to_lowercase())).collect();
    let mut cmd = Command::new("setpriv");
    if let Some(uid) = uid {
        cmd.args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".into()]);
    }
    cmd.args([format!("--inh-caps=-all{list}"), format!("--ambient-caps=-all{list}"), format!("--bounding-set=-all{list}")])
        .args(["--no-new-privs", "--", agent::BIN])
        .env("RUST_LOG", "info");
    cmd
}

/// The flags of the DaemonSet's features that need a capability (NAT is on by default).
const DAEMONSET_FEATURES: [&str; 3] = ["--cgroup-sampler-realtime", "--power-cap", "dry-run"];

fn consume(c: &BaseConsumer, mut each: impl FnMut(&[u8])) {
    while let Some(m) = c.poll(Duration::from_millis(100)) {
        if let Some(p) = m.unwrap().payload() {
            each(p);
        }
    }
}

/// A loopback exchange in the calling thread's namespace: client (port) sends 3000 bytes, the
/// server (port) answers 5000, both close.
fn loopback_exchange() -> (u16, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_port = l.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 3000];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&[5u8; 5000]).unwrap();
    });
    let mut c = TcpStream::connect(("127.0.0.1", server_port)).unwrap();
    c.write_all(&[3u8; 3000]).unwrap();
    let mut buf = [0u8; 5000];
    c.read_exact(&mut buf).unwrap();
    server.join().unwrap();
    (c.local_addr().unwrap().port(), server_port)
}

#[test]
fn the_manifests_capabilities_run_capture_cpu_nat_and_power_cap() {
    if !can_run() {
        return;
    }
    let caps = manifest_capabilities();
    let hosts = Hosts::new("caps");
    std::thread::scope(|s| {
        s.spawn(|| {
            nat_hosts::enter(&hosts.a);
            run_in_host_a(&hosts, &caps);
        });
    });
}

fn run_in_host_a(hosts: &Hosts, caps: &[String]) {
    let mock = MockCluster::new(1).unwrap();
    for t in [CONNECTIONS, RESOURCES, powercap::BUDGET_TOPIC] {
        mock.create_topic(t, 1, 1).unwrap();
    }
    let brokers = mock.bootstrap_servers();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    powercap::send(&producer, HOST, &powercap::budget(HOST, 1, 100.0, Duration::from_secs(600)));

    let dir = agent::tmp("caps", "manifest");
    let root = dir.join("powercap");
    powercap::fixture(&root);
    let ready = dir.join("ready");
    let metrics = format!("127.0.0.1:{}", agent::free_port());
    // The DaemonSet's --pin-bpf on the node's bpffs (mounted by the host, as here).
    let bpffs = BpfFs::mount(&dir.join("bpf"));
    let pin_dir = bpffs.0.join("wattgraph");
    let mut cmd = agent_with(caps, None);
    cmd.args(["--host-id", HOST, "--kafka-brokers", &brokers, "--ready-file", ready.to_str().unwrap(), "--metrics-addr", &metrics])
        .args(["--power-cap", "on", "--powercap-root", root.to_str().unwrap(), "--power-floor-watts", "20"])
        .args(["--power-cap-state-file", dir.join("state/limits").to_str().unwrap()])
        .args(["--sample-interval-ms", "500", "--snapshot-interval-ms", "200", "--cgroup-sampler-realtime"])
        .args(["--pin-bpf", "--bpf-pin-dir", pin_dir.to_str().unwrap()]);
    let child = agent::spawn_ready(cmd, &ready).expect("the agent starts with the manifest's capabilities");

    let (client_port, server_port) = loopback_exchange();
    let server = hosts.serve(1, 2000, 4000);
    let dialled = hosts.dial(VIP, VIP_PORT, 2000, 4000, Duration::ZERO);
    server.join().unwrap();
    // Bounded CPU work of a process of its own.
    let mut busy = Command::new("sh").args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]).spawn().unwrap();
    let busy_pid = busy.id() as i32;
    busy.wait().unwrap();

    let connections = agent::consumer_from_start(&brokers, CONNECTIONS, 1);
    let resources = agent::consumer_from_start(&brokers, RESOURCES, 1);
    let (mut client, mut server_end, mut nat, mut cpu_ns) = (None::<OwnedEventRecord>, false, None, 0i64);
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.is_none() || !server_end || nat.is_none() || cpu_ns == 0 {
        assert!(Instant::now() < deadline, "missing within 60 s: client {client:?}, server {server_end}, nat {nat:?}, cpu {cpu_ns}");
        consume(&connections, |p| {
            let e = wattgraph_agent::output::avro::connection::decode_single_object(p).unwrap();
            let ports = (e.local_port as u16, e.remote_port as u16);
            if e.kind == Kind::Closed && e.role == Role::Client && ports == (client_port, server_port) {
                client = Some(e.clone());
            }
            server_end |= e.role == Role::Server && ports == (server_port, client_port);
            if e.role == Role::Client && e.local_port as u16 == dialled.port() && e.nat.is_some() {
                nat = e.nat;
            }
        });
        consume(&resources, |p| {
            let r: ResourceRecord = wattgraph_agent::output::avro::resource::decode_single_object(p).unwrap();
            if r.scope == Scope::Process && r.tgid == busy_pid {
                cpu_ns += r.cpu_time_ns;
            }
        });
    }
    let client = client.unwrap();
    assert_eq!((client.bytes_sent, client.bytes_received), (3000, 5000), "{client:?}");
    let nat = nat.unwrap();
    assert_eq!((nat.local_addr, nat.remote_addr, nat.remote_port), (addr16_from_ip(SNAT_A.parse().unwrap()), addr16_from_ip(ADDR_B.parse().unwrap()), SERVER_PORT));
    agent::wait_for("the 100 W budget applied", || powercap::limits(&root) == vec![50_000_000, 50_000_000]);

    let log = agent::sigterm(child);
    assert_eq!(powercap::limits(&root), vec![ORIGINAL_UW, ORIGINAL_UW], "restored at shutdown");
    for needle in ["NAT translation on", "cgroup sampler thread runs SCHED_FIFO priority 10", "power cap: applied budget 100.00 W", "BPF programs and maps pinned at"] {
        assert!(log.contains(needle), "missing {needle}:\n{log}");
    }
    println!("with {caps:?}: loopback exchange, {cpu_ns} ns CPU of pid {busy_pid}, {VIP}:{VIP_PORT} past NAT as {nat:?}");
    drop(bpffs);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bpffs mounted for the test, its pins removed and unmounted at the end (also on failure).
struct BpfFs(PathBuf);

impl BpfFs {
    fn mount(at: &Path) -> BpfFs {
        std::fs::create_dir_all(at).unwrap();
        let target = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()).unwrap();
        let rc = unsafe { libc::mount(c"bpf".as_ptr(), target.as_ptr(), c"bpf".as_ptr(), 0, std::ptr::null()) };
        assert_eq!(rc, 0, "mount bpffs at {}: {}", at.display(), std::io::Error::last_os_error());
        BpfFs(at.to_path_buf())
    }
}

impl Drop for BpfFs {
    fn drop(&mut self) {
        let _ = wattgraph_agent::capture::pins::unpin_all(&self.0.join("wattgraph"));
        let target = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Runs `cmd` to its exit (at most 30 s: a start past the check would run on) and returns its
/// exit code and stderr.
fn exit_of(mut cmd: Command) -> (Option<i32>, String) {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn without_any_one_of_them_the_agent_exits_naming_it() {
    if !can_run() {
        return;
    }
    let caps = manifest_capabilities();
    for gone in &caps {
        let rest: Vec<String> = caps.iter().filter(|c| *c != gone).cloned().collect();
        let mut cmd = agent_with(&rest, None);
        cmd.args(["--host-id", HOST, "--kafka-brokers", "127.0.0.1:1"]).args(DAEMONSET_FEATURES);
        let (code, err) = exit_of(cmd);
        assert_eq!(code, Some(3), "without {gone}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains(&format!("CAP_{gone} (")), "without {gone}: {err}");
        for other in &rest {
            assert!(!err.contains(&format!("CAP_{other} (")), "{other} is there: {err}");
        }
        println!("without {gone}: {}", err.trim());
    }
}

/// The non-root variant: uid 65534 with the same capabilities as ambient ones runs (capture,
/// CPU, NAT of its namespace), but root-owned files are out of reach: `--power-cap on` on them
/// is refused at start, naming the file.
#[test]
fn as_another_uid_with_ambient_capabilities_root_owned_powercap_files_are_refused() {
    if !can_run() {
        return;
    }
    let caps = manifest_capabilities();
    let dir = agent::tmp("caps", "uid");
    let root = dir.join("powercap");
    powercap::fixture(&root);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let with = |extra: &[&str]| {
        let mut cmd = agent_with(&caps, Some(65534));
        cmd.args(["--host-id", HOST, "--kafka-brokers", "127.0.0.1:1", "--powercap-root", root.to_str().unwrap()])
            .args(["--cgroup-sampler-realtime"])
            .args(extra);
        cmd
    };
    let (code, err) = exit_of(with(&["--power-cap", "on"]));
    let limit: PathBuf = root.join("intel-rapl:0").join("constraint_0_power_limit_uw");
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains(&format!("--power-cap on cannot write {} (Permission denied", limit.display())), "{err}");

    let ready = dir.join("ready");
    let mut cmd = with(&["--power-cap", "dry-run", "--ready-file", ready.to_str().unwrap()]);
    cmd.args(["--netns", "/proc/self/ns/net"]);
    let child = agent::spawn_ready(cmd, &ready).expect("uid 65534 with ambient capabilities starts");
    let log = agent::sigterm(child);
    assert!(log.contains("NAT translation on"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
