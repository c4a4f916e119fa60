//! cgroup paths and /proc/<pid>/cgroup texts (a container names its own cgroups): container and
//! pod identity (`cgroup::identify*`), the ConnectionEvent container id (`proc_info`) and a
//! kubelet's cgroup root (`node_cgroups`, `--node-scope`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wattgraph_agent::identity::cgroup::{identify, identify_proc_cgroup, Identity, HOST_GROUP};
use wattgraph_agent::identity::node_cgroups::{kubelet_root, root_before_kubepods, under_root};
use wattgraph_agent::identity::proc_info::{container_id_from_cgroup_path, container_id_from_proc_cgroup};

fn hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check(id: &Identity) {
    assert!(id.is_host() == (id.group == HOST_GROUP), "{id:?}");
    assert!(id.is_host() || hex64(&id.group), "group is 64 lowercase hex: {id:?}");
    if let Some(uid) = &id.pod_uid {
        assert_eq!(uid.len(), 36, "{id:?}");
        assert_eq!(uid, &uid.to_ascii_lowercase());
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    check(&identify_proc_cgroup(text));
    check(&identify(text));
    if let Some(r) = kubelet_root(text) {
        assert!(r.path.is_empty() || (r.path.starts_with('/') && !r.path.ends_with('/')), "{r:?}");
    }
    if let Some(root) = root_before_kubepods(text) {
        assert!(under_root(&root, &root) && !root.contains("//") && !root.ends_with('/'), "{root:?}");
    }
    for c in [container_id_from_proc_cgroup(text), container_id_from_cgroup_path(text)].into_iter().flatten() {
        assert!(hex64(&c), "{c:?}");
    }
});
