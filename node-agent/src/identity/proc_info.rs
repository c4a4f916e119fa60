//! Process details user space adds to kernel events: command line (once per process
//! incarnation: the kernel's copy, else /proc) and container id derived from the cgroup path.
use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::identity::cgroup::{default_v2_root, CgroupResolver};

/// A process incarnation: tgid and the group leader's start time (boot clock ns).
pub type ProcKey = (u32, u64);

/// Command lines the kernel copied from each process's memory as its first socket was
/// identified (capture thread inserts, the pipeline takes). Unlike /proc they outlive the
/// process, which a pipeline working through a backlog may only reach after it exited.
pub struct KernelCmdlines {
    map: Mutex<HashMap<ProcKey, KernelCmdline>>,
    cap: usize,
}

pub struct KernelCmdline {
    pub cmdline: String,
    /// False when the kernel's copy was cut (argv longer than it copies).
    pub complete: bool,
}

impl KernelCmdlines {
    pub fn new(cap: usize) -> Self {
        KernelCmdlines { map: Mutex::new(HashMap::new()), cap: cap.max(1) }
    }

    /// From the raw NUL-separated argv; `complete` = nothing was cut. Empty argv is ignored.
    pub fn insert(&self, key: ProcKey, raw: &[u8], complete: bool) {
        let Some(cmdline) = cmdline_from_raw(raw) else { return };
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        // Entries nobody took (their events were shed or lost) go when full.
        if m.len() >= self.cap {
            m.clear();
        }
        m.insert(key, KernelCmdline { cmdline, complete });
    }

    pub fn take(&self, key: ProcKey) -> Option<KernelCmdline> {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).remove(&key)
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bounded caches; when full they are simply cleared (v0: cheap and good enough).
pub struct ProcCache {
    cmdlines: HashMap<ProcKey, Option<String>>,
    containers: HashMap<u64, Option<String>>,
    kernel: Option<Arc<KernelCmdlines>>,
    /// cgroup id -> path, for processes gone before /proc/<pid>/cgroup was read.
    cgroups: CgroupResolver,
    cap: usize,
    clk_tck: u64,
    proc_root: String,
}

impl ProcCache {
    pub fn new(cap: usize) -> Self {
        Self::with_root(cap, "/proc")
    }

    pub fn with_root(cap: usize, proc_root: &str) -> Self {
        Self::with_roots(cap, proc_root, default_v2_root())
    }

    /// With another /proc and cgroup v2 mount (fixture trees in tests).
    pub fn with_roots(cap: usize, proc_root: &str, cgroup_root: PathBuf) -> Self {
        let clk = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ProcCache {
            cmdlines: HashMap::new(),
            containers: HashMap::new(),
            kernel: None,
            cgroups: CgroupResolver::new(cgroup_root),
            cap: cap.max(1),
            clk_tck: if clk > 0 { clk as u64 } else { 100 },
            proc_root: proc_root.to_string(),
        }
    }

    /// Takes command lines from the kernel's copies first (see `KernelCmdlines`).
    pub fn use_kernel_cmdlines(&mut self, kernel: Arc<KernelCmdlines>) {
        self.kernel = Some(kernel);
    }

    /// Command line of (tgid, start time ns since boot): the kernel's copy, else /proc; None
    /// when neither has it (process gone before the kernel copy existed, pid reused, kernel
    /// thread).
    pub fn cmdline(&mut self, tgid: u32, start_ns: u64) -> Option<&str> {
        if tgid == 0 {
            return None;
        }
        let key = (tgid, start_ns);
        match self.cmdlines.get(&key) {
            Some(Some(_)) => {}
            Some(None) => {
                // /proc had nothing; the kernel's copy may have been read since.
                if let Some(k) = self.kernel.as_ref().and_then(|k| k.take(key)) {
                    self.cmdlines.insert(key, Some(k.cmdline));
                }
            }
            None => {
                if self.cmdlines.len() >= self.cap {
                    self.cmdlines.clear();
                }
                let v = match self.kernel.as_ref().and_then(|k| k.take(key)) {
                    Some(k) if k.complete => Some(k.cmdline),
                    // Cut by the kernel: whole from /proc while the process lives.
                    Some(k) => self.read_cmdline(tgid, start_ns).or(Some(k.cmdline)),
                    None => self.read_cmdline(tgid, start_ns),
                };
                self.cmdlines.insert(key, v);
            }
        }
        self.cmdlines.get(&key).and_then(|o| o.as_deref())
    }

    /// Container id for a cgroup id, learnt from `/proc/<tgid>/cgroup` the first time
    /// the cgroup is seen.
    pub fn container_id(&mut self, cgroup_id: u64, tgid: u32) -> Option<&str> {
        if tgid == 0 {
            return None;
        }
        if !self.containers.contains_key(&cgroup_id) {
            let found = match fs::read_to_string(format!("{}/{}/cgroup", self.proc_root, tgid)) {
                Ok(t) => container_id_from_proc_cgroup(&t),
                // Process gone; its cgroup (the container) usually is not. Not found either:
                // try again with the next event.
                Err(_) => container_id_from_cgroup_path(self.cgroups.path(cgroup_id)?),
            };
            if self.containers.len() >= self.cap {
                self.containers.clear();
            }
            self.containers.insert(cgroup_id, found);
        }
        self.containers.get(&cgroup_id).and_then(|o| o.as_deref())
    }

    /// Both lookups at once (fills misses first), so callers can borrow both strings.
    pub fn lookup(&mut self, tgid: u32, start_ns: u64, cgroup_id: u64) -> (Option<&str>, Option<&str>) {
        let _ = self.cmdline(tgid, start_ns);
        let _ = self.container_id(cgroup_id, tgid);
        if tgid == 0 {
            return (None, None);
        }
        (
            self.cmdlines.get(&(tgid, start_ns)).and_then(|o| o.as_deref()),
            self.containers.get(&cgroup_id).and_then(|o| o.as_deref()),
        )
    }

    fn read_cmdline(&self, tgid: u32, start_ns: u64) -> Option<String> {
        // Guard against pid reuse: the start time (clock ticks) must match.
        let stat = fs::read_to_string(format!("{}/{}/stat", self.proc_root, tgid)).ok()?;
        let ticks = start_ticks_from_stat(&stat)?;
        let tick_ns = 1_000_000_000 / self.clk_tck;
        if start_ns > 0 && ticks.abs_diff(start_ns / tick_ns) > 1 {
            return None;
        }
        let raw = fs::read(format!("{}/{}/cmdline", self.proc_root, tgid)).ok()?;
        cmdline_from_raw(&raw)
    }
}

/// Field 22 of /proc/<pid>/stat (start time, clock ticks since boot). Counted after the last
/// ')': the command name in parentheses may itself hold spaces and ')'.
pub fn start_ticks_from_stat(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// NUL-separated argv to one space-separated string.
pub fn cmdline_from_raw(raw: &[u8]) -> Option<String> {
    let s: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    if s.is_empty() {
        None
    } else {
        Some(s.join(" "))
    }
}

/// Picks the cgroup v2 line ("0::/path") of /proc/<pid>/cgroup, else any line that
/// names a container.
pub fn container_id_from_proc_cgroup(text: &str) -> Option<String> {
    let mut paths = text.lines().filter_map(|l| l.splitn(3, ':').nth(2).map(|p| (l.starts_with("0::"), p)));
    let all: Vec<(bool, &str)> = paths.by_ref().collect();
    all.iter()
        .filter(|(v2, _)| *v2)
        .chain(all.iter().filter(|(v2, _)| !*v2))
        .find_map(|(_, p)| container_id_from_cgroup_path(p))
}

/// Container id from a cgroup path: docker (`/docker/<id>`, `docker-<id>.scope`),
/// containerd (`cri-containerd-<id>.scope`, kubepods `/<id>`), cri-o (`crio-<id>.scope`),
/// podman (`libpod-<id>.scope`). The id is 64 hex digits.
pub fn container_id_from_cgroup_path(path: &str) -> Option<String> {
    for seg in path.rsplit('/') {
        let s = seg.strip_suffix(".scope").unwrap_or(seg);
        if s.starts_with("crio-conmon-") || s.starts_with("libpod-conmon-") {
            continue; // the runtime's monitor, not the container
        }
        let s = ["docker-", "cri-containerd-", "crio-", "libpod-", "containerd-"]
            .iter()
            .find_map(|p| s.strip_prefix(p))
            .unwrap_or(s);
        if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(s.to_ascii_lowercase());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e";

    #[test]
    fn container_patterns() {
        let cases = [
            format!("/docker/{ID}"),
            format!("/system.slice/docker-{ID}.scope"),
            format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-{ID}.scope"),
            format!("/kubepods.slice/kubepods-pod1.slice/crio-{ID}.scope"),
            format!("/kubepods/besteffort/pod0f1e2d3c-aaaa-bbbb-cccc-000000000000/{ID}"),
            format!("/machine.slice/libpod-{ID}.scope/container"),
        ];
        for c in &cases {
            assert_eq!(container_id_from_cgroup_path(c).as_deref(), Some(ID), "{c}");
        }
        for c in ["/", "/user.slice/user-0.slice/session-3.scope", "/system.slice/sshd.service", "/docker/abc"] {
            assert_eq!(container_id_from_cgroup_path(c), None, "{c}");
        }
        assert_eq!(container_id_from_cgroup_path(&format!("/x/crio-conmon-{ID}.scope")), None);
    }

    #[test]
    fn proc_cgroup_file_prefers_v2_line() {
        let hybrid = format!("12:memory:/\n1:name=systemd:/user.slice\n0::/system.slice/docker-{ID}.scope\n");
        assert_eq!(container_id_from_proc_cgroup(&hybrid).as_deref(), Some(ID));
        assert_eq!(container_id_from_proc_cgroup("0::/user.slice/session-1.scope\n"), None);
        let v1_only = format!("4:cpu,cpuacct:/docker/{ID}\n");
        assert_eq!(container_id_from_proc_cgroup(&v1_only).as_deref(), Some(ID));
    }

    #[test]
    fn cmdline_parsing() {
        assert_eq!(cmdline_from_raw(b"curl\0-s\0http://x/\0").as_deref(), Some("curl -s http://x/"));
        assert_eq!(cmdline_from_raw(b""), None);
    }

    #[test]
    fn cache_reads_own_process_and_rejects_wrong_start() {
        let mut c = ProcCache::new(4);
        let me = std::process::id();
        let stat = fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        let ticks: u64 = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().parse().unwrap();
        let start_ns = ticks * (1_000_000_000 / c.clk_tck);
        let cl = c.cmdline(me, start_ns).map(str::to_string);
        assert!(cl.is_some());
        assert_eq!(c.cmdline(me, start_ns + 10_000_000_000), None, "pid reuse guard");
        assert_eq!(c.cmdline(0, 0), None);
        for i in 0..10 {
            c.cmdline(me, i);
        }
        assert!(c.cmdlines.len() <= 4, "bounded");
    }

    #[test]
    fn container_of_a_process_gone_from_proc_comes_from_its_cgroup_id() {
        use std::os::unix::fs::MetadataExt;
        let root = std::env::temp_dir().join(format!("wg-proc-info-cg-{}", std::process::id()));
        let scope = root.join(format!("kubepods.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope"));
        fs::create_dir_all(&scope).unwrap();
        let host = root.join("system.slice/sshd.service");
        fs::create_dir_all(&host).unwrap();
        let id_of = |p: &std::path::Path| fs::metadata(p).unwrap().ino();
        let mut c = ProcCache::with_roots(16, "/nonexistent-proc", root.clone());
        assert_eq!(c.container_id(id_of(&scope), 4242), Some(ID));
        assert_eq!(c.container_id(id_of(&host), 4242), None, "found, not a container");
        assert_eq!(c.containers.get(&id_of(&host)), Some(&None), "and that is final");
        assert_eq!(c.container_id(u64::MAX - 1, 4242), None, "unknown id");
        assert!(!c.containers.contains_key(&(u64::MAX - 1)), "unknown: asked again with the next event");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn kernel_copy_outlives_the_process() {
        let kernel = Arc::new(KernelCmdlines::new(2));
        let mut c = ProcCache::with_root(16, "/nonexistent-proc");
        c.use_kernel_cmdlines(kernel.clone());
        assert_eq!(c.cmdline(4242, 7), None, "neither source has it yet");
        // The copy arrives after the first event: later events of the process get it.
        kernel.insert((4242, 7), b"srv\0--port\08080\0", true);
        assert_eq!(c.cmdline(4242, 7), Some("srv --port 8080"));
        assert!(kernel.is_empty(), "taken, not copied");
        // A cut copy is used when /proc has nothing better.
        kernel.insert((4343, 9), b"java\0-cp\0/very/lo", false);
        assert_eq!(c.cmdline(4343, 9), Some("java -cp /very/lo"));
        // Other incarnations of the pid do not get it.
        kernel.insert((4444, 1), b"a\0", true);
        assert_eq!(c.cmdline(4444, 2), None);
        // Bounded: untaken entries go when full; an empty argv is not kept.
        kernel.insert((1, 1), b"b\0", true);
        kernel.insert((2, 2), b"c\0", true);
        kernel.insert((3, 3), b"\0\0", true);
        assert!(kernel.len() <= 2);
    }
}
