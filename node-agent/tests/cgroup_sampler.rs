//! The cgroup sampler on this machine's real cgroup files: a busy child is moved into a fresh
//! container-like cgroup (v1 controllers on hybrid hosts, else v2) and the sampler's readings must
//! equal what the kernel reports for it. Needs root (creating cgroups): fails when CI=true, else skips.
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use wattgraph_agent::identity::cgroup::{default_v2_root, identify};
use wattgraph_agent::resources::cgroup_sampler::{run_ticks, CgroupSampler, Hierarchy};

const ID: &str = "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface";

/// Created cgroup directories, removed (deepest first) on drop, after the child is gone.
struct Cgroups {
    dirs: Vec<PathBuf>,
    child: Option<Child>,
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for d in self.dirs.iter().rev() {
            for _ in 0..50 {
                if std::fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn root_or_skip() -> bool {
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("creating cgroups needs root and CI=true");
    }
    eprintln!("SKIPPED: not root");
    false
}

/// The per-controller directories of `rel` for the hierarchy in use.
fn controller_dirs(h: &Hierarchy, rel: &str) -> Vec<PathBuf> {
    match h {
        Hierarchy::V2(root) => vec![root.join(rel)],
        Hierarchy::V1(root) => ["cpuacct", "cpu", "memory", "blkio", "pids"]
            .iter()
            .map(|c| root.join(c))
            .filter(|d| d.is_dir())
            .map(|d| d.join(rel))
            .collect(),
    }
}

fn proc_cpu_ns(pid: u32) -> u64 {
    // schedstat: on-CPU ns of the (single-threaded) child, what cpuacct.usage / usage_usec count.
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn busy_container_cgroup_reads_what_the_kernel_reports() {
    if !root_or_skip() {
        return;
    }
    let h = Hierarchy::detect(&default_v2_root(), Path::new("/sys/fs/cgroup"));
    let parent = format!("wattgraph-test-{}", std::process::id());
    let rel = format!("{parent}/docker-{ID}.scope");
    let mut guard = Cgroups { dirs: Vec::new(), child: None };
    if let Hierarchy::V2(root) = &h {
        // Controllers must be enabled for the parent's children in v2.
        let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu +memory +pids +io");
    }
    for d in controller_dirs(&h, &parent) {
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("mkdir {}: {e}", d.display()));
        guard.dirs.push(d.clone());
        if let Hierarchy::V2(_) = &h {
            let _ = std::fs::write(d.join("cgroup.subtree_control"), "+cpu +memory +pids +io");
        }
    }
    for d in controller_dirs(&h, &rel) {
        std::fs::create_dir_all(&d).unwrap();
        guard.dirs.push(d);
    }
    // Moved in while it sleeps, then it execs a busy loop: the new image's memory is charged
    // to the new cgroup (v1 does not move earlier charges).
    let child = Command::new("/bin/sh")
        .args(["-c", "sleep 0.3; exec /bin/sh -c 'while :; do :; done'"])
        .spawn()
        .unwrap();
    let pid = child.id();
    guard.child = Some(child);
    for d in controller_dirs(&h, &rel) {
        std::fs::write(d.join("cgroup.procs"), pid.to_string()).unwrap_or_else(|e| panic!("move into {}: {e}", d.display()));
    }

    // Found by discovery, with the identity of its path.
    let mut s = CgroupSampler::new(h.clone());
    let idx = s.targets.iter().position(|t| t.path == format!("/{rel}")).unwrap_or_else(|| {
        panic!("{rel} not discovered; targets: {:?}", s.targets.iter().map(|t| &t.path).collect::<Vec<_>>())
    });
    assert_eq!(s.targets[idx].identity, identify(&rel));

    // Once `sleep` has exited only the child runs in the cgroup: between two stops, the growth
    // of the cgroup's CPU usage is the child's on-CPU time (v2 counts whole µs).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let execed = || std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| c.windows(5).any(|w| w == b"while")).unwrap_or(false);
    while !execed() || s.sample()[idx].pids != 1 {
        assert!(std::time::Instant::now() < deadline, "sleep never left the cgroup: {:?}", s.sample()[idx]);
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = |sig| {
        unsafe { libc::kill(pid as i32, sig) };
        std::thread::sleep(Duration::from_millis(50));
    };
    stopped(libc::SIGSTOP);
    let (a, ka) = (s.sample()[idx], proc_cpu_ns(pid));
    stopped(libc::SIGCONT);
    std::thread::sleep(Duration::from_millis(300));
    stopped(libc::SIGSTOP);
    let (b, kb) = (s.sample()[idx], proc_cpu_ns(pid));
    println!("sampler {a:?} -> {b:?}; child schedstat {ka} -> {kb} ns");
    assert_eq!(b.pids, 1, "one task in the cgroup");
    assert!(b.memory_bytes > 0, "memory charged to the cgroup after exec: {b:?}");
    assert!(kb > ka, "the child ran");
    let tol = if matches!(h, Hierarchy::V2(_)) { 2_000 } else { 0 };
    let (dc, dk) = (b.cpu_usage_ns - a.cpu_usage_ns, kb - ka);
    assert!(dc.abs_diff(dk) <= tol, "cgroup usage grew {dc} ns, the child ran {dk} ns");

    // The tick loop: every tick samples every target; intervals = ticks - 1.
    let mut seen = 0u64;
    let iv = run_ticks(&mut s, 10_000_000, 20, |_, targets, stats| {
        assert_eq!(targets.len(), stats.len());
        seen += 1;
    });
    assert_eq!(seen, 20);
    assert_eq!(iv.count(), 19);
}

/// A container cgroup removed and created again under the same path: `rediscover` drops the
/// target whose files no longer read and opens the new one (counters from 0), and the aggregator
/// keeps its baseline, so the growth it reports is what the first cgroup grew, never negative.
#[test]
fn recreated_cgroup_is_reopened_and_growth_stays_non_negative() {
    use wattgraph_agent::resources::cgroup_report::CgroupAggregator;
    if !root_or_skip() {
        return;
    }
    let h = Hierarchy::detect(&default_v2_root(), Path::new("/sys/fs/cgroup"));
    let parent = format!("wattgraph-test-re-{}", std::process::id());
    // Its own container id: discovery keeps one cgroup per id, and the other test runs at once.
    let rel = format!("{parent}/docker-{}.scope", "be".repeat(32));
    let mut guard = Cgroups { dirs: Vec::new(), child: None };
    if let Hierarchy::V2(root) = &h {
        let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu +memory +pids +io");
    }
    for d in controller_dirs(&h, &parent) {
        std::fs::create_dir_all(&d).unwrap();
        guard.dirs.push(d.clone());
        if let Hierarchy::V2(_) = &h {
            let _ = std::fs::write(d.join("cgroup.subtree_control"), "+cpu +memory +pids +io");
        }
    }
    for d in controller_dirs(&h, &rel) {
        std::fs::create_dir_all(&d).unwrap();
        guard.dirs.push(d);
    }
    let mut s = CgroupSampler::new(h.clone());
    let idx = s.targets.iter().position(|t| t.path == format!("/{rel}")).expect("discovered");
    let mut agg = CgroupAggregator::new("h", &h, 10_000_000, 0);
    agg.sync(&s.targets);
    let base = s.sample()[idx];
    let st = s.sample().to_vec();
    agg.on_tick(0, &s.targets, &st);

    // Some CPU in the first incarnation, then the child exits and the cgroup is removed.
    let child = Command::new("/bin/sh").args(["-c", "sleep 0.2; exec /bin/sh -c 'while :; do :; done'"]).spawn().unwrap();
    let pid = child.id();
    guard.child = Some(child);
    for d in controller_dirs(&h, &rel) {
        std::fs::write(d.join("cgroup.procs"), pid.to_string()).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.sample()[idx].cpu_usage_ns <= base.cpu_usage_ns + 1_000_000 {
        assert!(std::time::Instant::now() < deadline, "the child never ran in the cgroup");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = guard.child.take().unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
    let before = s.sample()[idx];
    let st = s.sample().to_vec();
    agg.on_tick(10_000_000, &s.targets, &st);
    for d in controller_dirs(&h, &rel) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while let Err(e) = std::fs::remove_dir(&d) {
            assert!(std::time::Instant::now() < deadline, "rmdir {}: {e}", d.display());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for d in controller_dirs(&h, &rel) {
        std::fs::create_dir_all(&d).unwrap();
    }

    s.rediscover();
    agg.sync(&s.targets);
    let idx = s.targets.iter().position(|t| t.path == format!("/{rel}")).expect("rediscovered");
    let fresh = s.sample()[idx];
    assert!(fresh.cpu_usage_ns < before.cpu_usage_ns, "the new cgroup's counters, not the old reading: {before:?} -> {fresh:?}");
    assert_eq!(fresh.pids, 0);
    let st = s.sample().to_vec();
    agg.on_tick(20_000_000, &s.targets, &st);
    let mut recs = Vec::new();
    agg.finish(|r| recs.push(r.to_owned()));
    let r = recs.iter().find(|r| r.cgroup_path == format!("/{rel}")).expect("a record");
    // Growth = the first cgroup's growth + the new cgroup's counter (reset: its value counts).
    assert_eq!(r.cpu_ns as u64, (before.cpu_usage_ns - base.cpu_usage_ns) + st[idx].cpu_usage_ns, "{r:?}");
    assert_eq!(r.ticks, 2);
}
