//! Process details user space adds to kernel events: command line (read once per
//! process incarnation) and container id derived from the cgroup path.
use std::collections::HashMap;
use std::fs;

/// Bounded caches; when full they are simply cleared (v0: cheap and good enough).
pub struct ProcCache {
    cmdlines: HashMap<(u32, u64), Option<String>>,
    containers: HashMap<u64, Option<String>>,
    cap: usize,
    clk_tck: u64,
    proc_root: String,
}

impl ProcCache {
    pub fn new(cap: usize) -> Self {
        Self::with_root(cap, "/proc")
    }

    pub fn with_root(cap: usize, proc_root: &str) -> Self {
        let clk = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ProcCache {
            cmdlines: HashMap::new(),
            containers: HashMap::new(),
            cap: cap.max(1),
            clk_tck: if clk > 0 { clk as u64 } else { 100 },
            proc_root: proc_root.to_string(),
        }
    }

    /// Command line of (tgid, start time ns since boot); None when the process is gone,
    /// its pid was reused, or it has no command line (kernel threads).
    pub fn cmdline(&mut self, tgid: u32, start_ns: u64) -> Option<&str> {
        if tgid == 0 {
            return None;
        }
        if !self.cmdlines.contains_key(&(tgid, start_ns)) {
            if self.cmdlines.len() >= self.cap {
                self.cmdlines.clear();
            }
            let v = self.read_cmdline(tgid, start_ns);
            self.cmdlines.insert((tgid, start_ns), v);
        }
        self.cmdlines.get(&(tgid, start_ns)).and_then(|o| o.as_deref())
    }

    /// Container id for a cgroup id, learnt from `/proc/<tgid>/cgroup` the first time
    /// the cgroup is seen.
    pub fn container_id(&mut self, cgroup_id: u64, tgid: u32) -> Option<&str> {
        if tgid == 0 {
            return None;
        }
        if !self.containers.contains_key(&cgroup_id) {
            let text = match fs::read_to_string(format!("{}/{}/cgroup", self.proc_root, tgid)) {
                Ok(t) => t,
                Err(_) => return None, // process gone: try again with the next event
            };
            if self.containers.len() >= self.cap {
                self.containers.clear();
            }
            self.containers.insert(cgroup_id, container_id_from_proc_cgroup(&text));
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
        let after = &stat[stat.rfind(')')? + 1..];
        let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
        let tick_ns = 1_000_000_000 / self.clk_tck;
        if start_ns > 0 && ticks.abs_diff(start_ns / tick_ns) > 1 {
            return None;
        }
        let raw = fs::read(format!("{}/{}/cmdline", self.proc_root, tgid)).ok()?;
        cmdline_from_raw(&raw)
    }
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
}
