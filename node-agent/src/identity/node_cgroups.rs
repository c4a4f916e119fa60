//! `--node-scope`, CPU side: the node's kubelet cgroup root (what comes before `kubepods` in the
//! agent's own cgroup, since the agent is a pod of the node) and which processes lie under it.
//! Several kubelets on one kernel each have their own root (`cgroupRoot`); an ordinary node's
//! is "" (the whole hierarchy).
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::identity::cgroup::CgroupResolver;

/// A kubelet's cgroup root in one hierarchy of /proc/<pid>/cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletRoot {
    /// The hierarchy's controller field ("" = cgroup v2, "cpu,cpuacct", ...), matched on the
    /// lines of other processes.
    pub controllers: String,
    /// "/wattgraph-k8s-2", or "" for a root at the top.
    pub path: String,
}

/// The root before the `kubepods` (cgroupfs) or `kubepods.slice` (systemd) segment of `path`.
pub fn root_before_kubepods(path: &str) -> Option<String> {
    let mut root = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        if seg == "kubepods" || seg == "kubepods.slice" {
            return Some(root);
        }
        root.push('/');
        root.push_str(seg);
    }
    None
}

/// The kubelet root of a process from the text of its /proc/<pid>/cgroup: the v2 line when it
/// has a kubepods segment (the kernel's cgroup ids are v2 ones), else a v1 line with cpu or
/// cpuacct, else any v1 line that has one.
pub fn kubelet_root(proc_cgroup: &str) -> Option<KubeletRoot> {
    let lines: Vec<(&str, &str)> = proc_cgroup
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, c, p) = (f.next()?, f.next()?, f.next()?);
            Some((c, p))
        })
        .collect();
    let rank = |c: &str| match c {
        "" => 0,
        c if c.split(',').any(|x| x == "cpu" || x == "cpuacct") => 1,
        _ => 2,
    };
    lines
        .iter()
        .filter_map(|(c, p)| root_before_kubepods(p).map(|r| (rank(c), KubeletRoot { controllers: c.to_string(), path: r })))
        .min_by_key(|(r, _)| *r)
        .map(|(_, k)| k)
}

/// `path` is `root` or below it, on segment boundaries: "/a" holds "/a/b", not "/a-2/b".
pub fn under_root(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    root.is_empty() || path.strip_prefix(root).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Bounded caches; cleared when full, as the identity caches are.
const MAX_CACHED: usize = 16384;

/// Which processes belong to the node, decided once per cgroup (v2 root: the kernel's cgroup id,
/// which also names a process that exited) or per process (v1: its /proc/<pid>/cgroup line of
/// the root's hierarchy; a process gone before it was asked is not the node's).
pub struct NodeCgroups {
    root: KubeletRoot,
    proc_root: PathBuf,
    by_cgroup: HashMap<u64, bool>,
    by_proc: HashMap<(u32, u64), bool>,
}

impl NodeCgroups {
    pub fn new(root: KubeletRoot) -> NodeCgroups {
        Self::with_proc_root(root, Path::new("/proc"))
    }

    /// With another /proc (fixture trees in tests).
    pub fn with_proc_root(root: KubeletRoot, proc_root: &Path) -> NodeCgroups {
        NodeCgroups { root, proc_root: proc_root.to_path_buf(), by_cgroup: HashMap::new(), by_proc: HashMap::new() }
    }

    pub fn root(&self) -> &KubeletRoot {
        &self.root
    }

    /// Whether the process (tgid, start time) in the v2 cgroup `cgroup_id` is under the root.
    pub fn contains(&mut self, cgroups: &mut CgroupResolver, cgroup_id: u64, tgid: u32, start_ns: u64) -> bool {
        if self.root.path.is_empty() {
            return true;
        }
        if self.root.controllers.is_empty() {
            if let Some(&d) = self.by_cgroup.get(&cgroup_id) {
                return d;
            }
            if let Some(p) = cgroups.path(cgroup_id) {
                let d = under_root(p, &self.root.path);
                if self.by_cgroup.len() >= MAX_CACHED {
                    self.by_cgroup.clear();
                }
                self.by_cgroup.insert(cgroup_id, d);
                return d;
            }
        }
        if let Some(&d) = self.by_proc.get(&(tgid, start_ns)) {
            return d;
        }
        let d = std::fs::read_to_string(self.proc_root.join(format!("{tgid}/cgroup"))).is_ok_and(|t| {
            t.lines().any(|l| {
                let mut f = l.splitn(3, ':');
                let (_, c, p) = (f.next(), f.next(), f.next());
                c == Some(self.root.controllers.as_str()) && p.is_some_and(|p| under_root(p, &self.root.path))
            })
        });
        if self.by_proc.len() >= MAX_CACHED {
            self.by_proc.clear();
        }
        self.by_proc.insert((tgid, start_ns), d);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    const CID: &str = "7103607bee0024684e78d1de222c3fa2fb2ae8c283d60d270695edbeda36cc49";
    const UID: &str = "260c1fef-8ad3-4a2d-b6fe-8fa54491519a";

    #[test]
    fn root_from_the_agents_own_cgroup() {
        assert_eq!(root_before_kubepods(&format!("/wattgraph-k8s-2/kubepods/besteffort/pod{UID}/{CID}")).as_deref(), Some("/wattgraph-k8s-2"));
        assert_eq!(root_before_kubepods(&format!("/kubepods/burstable/pod{UID}/{CID}")).as_deref(), Some(""), "an ordinary node: everything");
        assert_eq!(root_before_kubepods("/kubepods.slice/kubepods-besteffort.slice/x.scope").as_deref(), Some(""));
        assert_eq!(root_before_kubepods("/docker/abc/kubelet/kubepods/pod1/c").as_deref(), Some("/docker/abc/kubelet"), "kind's node container");
        assert_eq!(root_before_kubepods("/system.slice/kubepods-x.scope"), None, "a segment that only starts with kubepods");
        assert_eq!(root_before_kubepods("/"), None);
        // The layout of this machine's second test node (cgroupfs, v1 hierarchies, hybrid).
        let hybrid = format!("9:name=systemd:/wattgraph-k8s-2/kubepods/besteffort/pod{UID}/{CID}\n4:memory:/wattgraph-k8s-2/kubepods/besteffort/pod{UID}/{CID}\n1:cpu:/wattgraph-k8s-2/kubepods/besteffort/pod{UID}/{CID}\n0::/wattgraph-k8s-2/kubepods/besteffort/pod{UID}/{CID}\n");
        assert_eq!(kubelet_root(&hybrid), Some(KubeletRoot { controllers: String::new(), path: "/wattgraph-k8s-2".into() }), "v2 first");
        let v1 = format!("9:name=systemd:/a/kubepods/pod{UID}/{CID}\n4:memory:/m/kubepods/pod{UID}/{CID}\n2:cpu,cpuacct:/n2/kubepods/pod{UID}/{CID}\n0::/\n");
        assert_eq!(kubelet_root(&v1), Some(KubeletRoot { controllers: "cpu,cpuacct".into(), path: "/n2".into() }), "then cpu");
        assert_eq!(kubelet_root("4:memory:/m/kubepods/x\n0::/user.slice\n").map(|r| r.path).as_deref(), Some("/m"));
        assert_eq!(kubelet_root("0::/user.slice/session-1.scope\n1:cpu:/\n"), None, "not in a pod");
    }

    #[test]
    fn segment_boundaries() {
        assert!(under_root("/wattgraph-k8s/kubepods/pod1/c", "/wattgraph-k8s"));
        assert!(under_root("/wattgraph-k8s", "/wattgraph-k8s") && under_root("/wattgraph-k8s/", "/wattgraph-k8s/"));
        assert!(!under_root("/wattgraph-k8s-2/kubepods/pod1/c", "/wattgraph-k8s"), "another node's root sharing the prefix");
        assert!(!under_root("/", "/wattgraph-k8s") && !under_root("/wattgraph", "/wattgraph-k8s"));
        assert!(under_root("/anything", "") && under_root("/", ""), "an empty root holds everything");
    }

    /// A fixture v2 tree and /proc: ids resolve by directory inode, processes by their v1 line.
    #[test]
    fn processes_by_cgroup_id_or_proc_line() {
        let dir = std::env::temp_dir().join(format!("wg-node-cgroups-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (cg, proc_root) = (dir.join("cg"), dir.join("proc"));
        let mine = cg.join("n1/kubepods/besteffort/pod1/c1");
        let other = cg.join("n1-2/kubepods/besteffort/pod2/c2");
        for d in [&mine, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let id = |p: &Path| std::fs::metadata(p).unwrap().ino();
        for (pid, text) in [(10, "1:cpu:/n1/kubepods/pod1/c1\n0::/\n"), (20, "1:cpu:/n1-2/kubepods/pod2/c2\n0::/\n")] {
            std::fs::create_dir_all(proc_root.join(pid.to_string())).unwrap();
            std::fs::write(proc_root.join(format!("{pid}/cgroup")), text).unwrap();
        }
        let mut resolver = CgroupResolver::new(cg.clone());
        let v2 = KubeletRoot { controllers: String::new(), path: "/n1".into() };
        let mut s = NodeCgroups::with_proc_root(v2, &proc_root);
        assert!(s.contains(&mut resolver, id(&mine), 99, 1), "by the kernel's id: no /proc needed");
        assert!(!s.contains(&mut resolver, id(&other), 99, 1));
        assert!(!s.contains(&mut resolver, u64::MAX - 1, 99, 1), "an unknown id and no process: not the node's");

        let v1 = KubeletRoot { controllers: "cpu".into(), path: "/n1".into() };
        let mut s = NodeCgroups::with_proc_root(v1, &proc_root);
        assert!(s.contains(&mut resolver, 0, 10, 5) && !s.contains(&mut resolver, 0, 20, 5));
        std::fs::remove_dir_all(proc_root.join("10")).unwrap();
        assert!(s.contains(&mut resolver, 0, 10, 5), "decided once per process");
        assert!(!s.contains(&mut resolver, 0, 10, 6), "another incarnation, gone: not the node's");
        let mut all = NodeCgroups::with_proc_root(KubeletRoot { controllers: "cpu".into(), path: String::new() }, &proc_root);
        assert!(all.contains(&mut resolver, 0, 4242, 1), "an ordinary node counts everything");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
