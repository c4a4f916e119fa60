//! Container and pod identity from cgroup paths, and cgroup v2 id -> path resolution.
//!
//! Recognised layouts (cgroup v1 and v2, cgroupfs and systemd drivers):
//! - Docker: `/docker/<id>`, `/system.slice/docker-<id>.scope`
//! - containerd / Kubernetes: `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope`,
//!   `/kubepods/besteffort/pod<uid>/<id>`, `/kubepods/pod<uid>/<id>` (guaranteed), `.../containerd-<id>.scope`
//! - CRI-O: `.../crio-<id>.scope` (`crio-conmon-<id>` is the monitor, not the container)
//! - Podman: `/machine.slice/libpod-<id>.scope[/container]`
//!
//! Anything else (systemd services, user sessions, `/`) is the named group "host": never dropped.
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const HOST_GROUP: &str = "host";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Runtime {
    Host,
    Docker,
    Containerd,
    Crio,
    Podman,
}

impl Runtime {
    /// Index in the Avro enum `ContainerRuntime`.
    pub fn index(self) -> u32 {
        self as u32
    }
    pub fn symbol(self) -> &'static str {
        ["HOST", "DOCKER", "CONTAINERD", "CRIO", "PODMAN"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<Runtime> {
        [Runtime::Host, Runtime::Docker, Runtime::Containerd, Runtime::Crio, Runtime::Podman]
            .into_iter()
            .find(|r| r.symbol() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "guaranteed",
            QosClass::Burstable => "burstable",
            QosClass::BestEffort => "besteffort",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    pub runtime: Runtime,
    /// Container id (64 lowercase hex) or "host".
    pub group: String,
    /// Pod UID in dashed form.
    pub pod_uid: Option<String>,
    pub qos: Option<QosClass>,
}

impl Identity {
    pub fn host() -> Identity {
        Identity { runtime: Runtime::Host, group: HOST_GROUP.to_string(), pod_uid: None, qos: None }
    }
    pub fn is_host(&self) -> bool {
        self.runtime == Runtime::Host
    }
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `pod<uid>` with the uid dashed (cgroupfs) or with underscores (systemd), optionally
/// prefixed `kubepods-[qos-]` and suffixed `.slice`.
fn pod_uid(seg: &str) -> Option<String> {
    let s = seg.strip_suffix(".slice").unwrap_or(seg);
    let s = s.rsplit_once("-pod").map(|(_, u)| u).or_else(|| s.strip_prefix("pod"))?;
    let uid = s.replace('_', "-");
    let ok = uid.len() == 36
        && uid.bytes().enumerate().all(|(i, b)| if [8, 13, 18, 23].contains(&i) { b == b'-' } else { b.is_ascii_hexdigit() });
    ok.then(|| uid.to_ascii_lowercase())
}

fn qos(seg: &str) -> Option<QosClass> {
    let s = seg.strip_suffix(".slice").unwrap_or(seg);
    if s == "burstable" || s == "kubepods-burstable" {
        Some(QosClass::Burstable)
    } else if s == "besteffort" || s == "kubepods-besteffort" {
        Some(QosClass::BestEffort)
    } else {
        None
    }
}

/// Identity of a cgroup path (as in /proc/<pid>/cgroup or under /sys/fs/cgroup).
pub fn identify(path: &str) -> Identity {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let kube = segs.iter().any(|s| *s == "kubepods" || s.starts_with("kubepods.slice") || *s == "kubepods.slice");
    // Container: the innermost segment that names one.
    let mut found = None;
    for (i, seg) in segs.iter().enumerate().rev() {
        let s = seg.strip_suffix(".scope").unwrap_or(seg);
        if s.starts_with("crio-conmon-") || s.starts_with("libpod-conmon-") {
            continue;
        }
        let (rt, id) = if let Some(id) = s.strip_prefix("docker-") {
            (Runtime::Docker, id)
        } else if let Some(id) = s.strip_prefix("cri-containerd-") {
            (Runtime::Containerd, id)
        } else if let Some(id) = s.strip_prefix("containerd-") {
            (Runtime::Containerd, id)
        } else if let Some(id) = s.strip_prefix("crio-") {
            (Runtime::Crio, id)
        } else if let Some(id) = s.strip_prefix("libpod-") {
            (Runtime::Podman, id)
        } else if i > 0 && segs[i - 1] == "docker" {
            (Runtime::Docker, s)
        } else if kube {
            // cgroupfs driver: /kubepods/<qos>/pod<uid>/<id>; the runtime is not in the path
            // (containerd is the common one; CRI-O with cgroupfs looks the same).
            (Runtime::Containerd, s)
        } else {
            continue;
        };
        if is_hex64(id) {
            found = Some((rt, id.to_ascii_lowercase()));
            break;
        }
    }
    let pod = if kube { segs.iter().find_map(|s| pod_uid(s)) } else { None };
    let q = if kube {
        Some(segs.iter().find_map(|s| qos(s)).unwrap_or(QosClass::Guaranteed))
    } else {
        None
    };
    match found {
        Some((runtime, group)) => Identity { runtime, group, pod_uid: pod, qos: q },
        None => Identity::host(),
    }
}

/// Identity from the text of /proc/<pid>/cgroup: the v2 line ("0::/path") first, then the
/// v1 controller lines (cgroup v1 or hybrid hosts whose runtime uses the v1 hierarchies).
pub fn identify_proc_cgroup(text: &str) -> Identity {
    let lines: Vec<(bool, &str)> = text
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2).map(|p| (l.starts_with("0::"), p)))
        .collect();
    lines
        .iter()
        .filter(|(v2, _)| *v2)
        .chain(lines.iter().filter(|(v2, _)| !*v2))
        .map(|(_, p)| identify(p))
        .find(|i| !i.is_host())
        .unwrap_or_else(Identity::host)
}

/// The cgroup v2 mount: /sys/fs/cgroup/unified on hybrid hosts, /sys/fs/cgroup on pure v2.
pub fn default_v2_root() -> PathBuf {
    let hybrid = Path::new("/sys/fs/cgroup/unified");
    if hybrid.join("cgroup.procs").exists() {
        hybrid.to_path_buf()
    } else {
        PathBuf::from("/sys/fs/cgroup")
    }
}

/// cgroup v2 id (= directory inode, what bpf_get_current_cgroup_id returns) -> path and
/// identity. Misses trigger a rescan of the hierarchy at most once per `rescan_every`.
pub struct CgroupResolver {
    root: PathBuf,
    paths: HashMap<u64, String>,
    ids: HashMap<u64, Identity>,
    last_scan: Option<Instant>,
    rescan_every: Duration,
    max_entries: usize,
}

impl CgroupResolver {
    pub fn new(root: PathBuf) -> CgroupResolver {
        CgroupResolver {
            root,
            paths: HashMap::new(),
            ids: HashMap::new(),
            last_scan: None,
            rescan_every: Duration::from_secs(2),
            max_entries: 65536,
        }
    }

    /// Walks the hierarchy (directories only; bounded by `max_entries`).
    pub fn rescan(&mut self) {
        self.paths.clear();
        self.ids.clear();
        let mut stack = vec![(self.root.clone(), String::from("/"))];
        while let Some((dir, rel)) = stack.pop() {
            if let Ok(md) = std::fs::metadata(&dir) {
                self.paths.insert(md.ino(), rel.clone());
            }
            if self.paths.len() >= self.max_entries {
                break;
            }
            let Ok(rd) = std::fs::read_dir(&dir) else { continue };
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let child = if rel == "/" { format!("/{name}") } else { format!("{rel}/{name}") };
                    stack.push((e.path(), child));
                }
            }
        }
        self.last_scan = Some(Instant::now());
    }

    pub fn path(&mut self, id: u64) -> Option<&str> {
        if !self.paths.contains_key(&id) && self.last_scan.is_none_or(|t| t.elapsed() >= self.rescan_every) {
            self.rescan();
        }
        self.paths.get(&id).map(|s| s.as_str())
    }

    /// Identity of a cgroup id; an unknown id (cgroup gone, or id 0) is the host group.
    pub fn identity(&mut self, id: u64) -> &Identity {
        if !self.ids.contains_key(&id) {
            let ident = self.path(id).map(identify).unwrap_or_else(Identity::host);
            self.ids.insert(id, ident);
        }
        &self.ids[&id]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e";
    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

    #[test]
    fn real_world_paths() {
        let uid_ = UID.replace('-', "_");
        use QosClass::*;
        use Runtime::*;
        let cases: Vec<(String, Runtime, Option<&str>, Option<QosClass>)> = vec![
            // Docker, cgroupfs (v1) and systemd (v2) drivers
            (format!("/docker/{ID}"), Docker, None, None),
            (format!("/system.slice/docker-{ID}.scope"), Docker, None, None),
            // Kubernetes + containerd, systemd driver, each QoS class
            (format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"), Containerd, Some(UID), Some(Burstable)),
            (format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice/cri-containerd-{ID}.scope"), Containerd, Some(UID), Some(BestEffort)),
            (format!("/kubepods.slice/kubepods-pod{uid_}.slice/cri-containerd-{ID}.scope"), Containerd, Some(UID), Some(Guaranteed)),
            // Kubernetes, cgroupfs driver (containerd or CRI-O: the path has no runtime)
            (format!("/kubepods/burstable/pod{UID}/{ID}"), Containerd, Some(UID), Some(Burstable)),
            (format!("/kubepods/besteffort/pod{UID}/{ID}"), Containerd, Some(UID), Some(BestEffort)),
            (format!("/kubepods/pod{UID}/{ID}"), Containerd, Some(UID), Some(Guaranteed)),
            // CRI-O, systemd driver
            (format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/crio-{ID}.scope"), Crio, Some(UID), Some(Burstable)),
            // containerd without Kubernetes (nerdctl, systemd driver)
            (format!("/system.slice/containerd-{ID}.scope"), Containerd, None, None),
            // Podman
            (format!("/machine.slice/libpod-{ID}.scope/container"), Podman, None, None),
            // kind / nested: container inside a docker container
            (format!("/docker/{}/kubepods/besteffort/pod{UID}/{ID}", "a".repeat(64)), Containerd, Some(UID), Some(BestEffort)),
        ];
        for (path, rt, pod, q) in &cases {
            let id = identify(path);
            assert_eq!((id.runtime, id.group.as_str(), id.pod_uid.as_deref(), id.qos), (*rt, ID, *pod, *q), "{path}");
        }
    }

    #[test]
    fn everything_else_is_the_host_group() {
        for p in [
            "/",
            "",
            "/user.slice/user-0.slice/session-3.scope",
            "/system.slice/sshd.service",
            "/docker/abc",
            "/process_api/85c20d99ce4063e5a36f8d5f02b5b499",
            "/kubepods.slice/kubepods-burstable.slice", // a QoS slice itself, no container
            &format!("/kubepods.slice/kubepods-pod{}.slice/crio-conmon-{ID}.scope", UID.replace('-', "_")),
        ] {
            let id = identify(p);
            assert!(id.is_host(), "{p}: {id:?}");
            assert_eq!(id.group, HOST_GROUP);
        }
        assert_eq!(Runtime::from_symbol("CRIO"), Some(Runtime::Crio));
    }

    #[test]
    fn proc_cgroup_text_v1_v2_and_hybrid() {
        // Hybrid: v2 line is the root, the container shows in the v1 controllers.
        let hybrid = format!("12:memory:/docker/{ID}\n11:cpu,cpuacct:/docker/{ID}\n1:name=systemd:/docker/{ID}\n0::/\n");
        let id = identify_proc_cgroup(&hybrid);
        assert_eq!((id.runtime, id.group.as_str()), (Runtime::Docker, ID));
        // Pure v2 with the systemd driver.
        let v2 = format!("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/cri-containerd-{ID}.scope\n", UID.replace('-', "_"));
        let id = identify_proc_cgroup(&v2);
        assert_eq!((id.runtime, id.pod_uid.as_deref(), id.qos), (Runtime::Containerd, Some(UID), Some(QosClass::BestEffort)));
        // Pure v1, cgroupfs kubepods.
        let v1 = format!("4:pids:/kubepods/burstable/pod{UID}/{ID}\n3:cpu:/kubepods/burstable/pod{UID}/{ID}\n");
        assert_eq!(identify_proc_cgroup(&v1).qos, Some(QosClass::Burstable));
        // This machine's own process: whatever it is, never dropped.
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let _ = identify_proc_cgroup(&own).group;
        assert!(identify_proc_cgroup("0::/user.slice/session-1.scope\n").is_host());
    }

    #[test]
    fn resolves_own_cgroup_id_on_this_machine() {
        // Our cgroup v2 path from /proc/self/cgroup ("0::/path"), its inode = the id.
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let Some(rel) = text.lines().find_map(|l| l.strip_prefix("0::")) else {
            eprintln!("SKIPPED: no cgroup v2 line in /proc/self/cgroup");
            return;
        };
        let root = default_v2_root();
        let dir = root.join(rel.trim_start_matches('/'));
        let ino = std::fs::metadata(&dir).unwrap().ino();
        let mut r = CgroupResolver::new(root);
        assert_eq!(r.path(ino), Some(rel), "inode {ino}");
        let _ = r.identity(ino);
        assert!(r.identity(u64::MAX - 1).is_host(), "unknown id is the host group");
    }
}
