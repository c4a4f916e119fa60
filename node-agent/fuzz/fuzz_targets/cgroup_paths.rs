//! cgroup paths and /proc/<pid>/cgroup texts (a container names its own cgroups): container and
//! pod identity (`cgroup::identify*`) and the ConnectionEvent container id (`proc_info`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wattgraph_agent::identity::cgroup::{identify, identify_proc_cgroup, Identity, HOST_GROUP};
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
    for c in [container_id_from_proc_cgroup(text), container_id_from_cgroup_path(text)].into_iter().flatten() {
        assert!(hex64(&c), "{c:?}");
    }
});
