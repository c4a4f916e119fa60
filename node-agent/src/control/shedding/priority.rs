//! `--shed-priority NAME=LEVEL`: which domains a name, a pod or a namespace stands for.
use std::sync::Arc;

use crate::identity::pod_metadata::{PodDirectory, PodMeta};

/// Priority of a domain from `--shed-priority NAME=LEVEL`: a process domain matches its name
/// (comm) exactly; a cgroup domain matches when NAME equals its path or one of its components,
/// or, for a Kubernetes pod's cgroup, `pod:UID`, `pod:NAME` or `pod:NAMESPACE/NAME` and
/// `namespace:NAMESPACE` (names from the pod metadata, when the agent reads it).
pub fn priority_of(name: &str, priorities: &[(String, u32)], by_cgroup: bool, pods: Option<&PodDirectory>) -> u32 {
    // The domain's pod (UID from the path, metadata by UID): looked up once, and only when a pod
    // or namespace priority is configured.
    let mut pod: Option<(Option<String>, Option<Arc<PodMeta>>)> = None;
    for (n, p) in priorities {
        let hit = match (by_cgroup, PodKey::parse(n)) {
            (false, _) => name == n,
            (true, Some(key)) => {
                let (uid, meta) = pod.get_or_insert_with(|| {
                    let uid = crate::identity::cgroup::identify(name).pod_uid;
                    let meta = uid.as_deref().and_then(|u| pods.and_then(|d| d.get(u)));
                    (uid, meta)
                });
                key.matches(uid.as_deref(), meta.as_deref())
            }
            (true, None) => name == n || name.split('/').any(|c| c == n),
        };
        if hit {
            return *p;
        }
    }
    1
}

/// A `--shed-priority` NAME that names a pod (`pod:UID`, `pod:NAME`, `pod:NAMESPACE/NAME`) or a
/// namespace (`namespace:NAMESPACE`); the flag's validation and the matching share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodKey<'a> {
    Pod(&'a str),
    Namespace(&'a str),
}

impl<'a> PodKey<'a> {
    pub fn parse(name: &'a str) -> Option<PodKey<'a>> {
        name.strip_prefix("pod:").map(PodKey::Pod).or_else(|| name.strip_prefix("namespace:").map(PodKey::Namespace))
    }

    /// What follows the prefix.
    pub fn key(&self) -> &'a str {
        match *self {
            PodKey::Pod(k) | PodKey::Namespace(k) => k,
        }
    }

    /// A pod named by its UID, which the cgroup path holds: no pod metadata needed.
    pub fn is_uid(&self) -> bool {
        matches!(*self, PodKey::Pod(k) if k.len() == 36 && k.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
    }

    fn matches(&self, uid: Option<&str>, meta: Option<&PodMeta>) -> bool {
        match *self {
            PodKey::Pod(k) => {
                uid == Some(k) || meta.is_some_and(|m| k == m.name || k.split_once('/') == Some((m.namespace.as_str(), m.name.as_str())))
            }
            PodKey::Namespace(k) => meta.is_some_and(|m| k == m.namespace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn priorities_match_comm_or_cgroup_component() {
        let p = vec![("nginx".to_string(), 4), ("db.scope".to_string(), 7)];
        assert_eq!(priority_of("nginx", &p, false, None), 4);
        assert_eq!(priority_of("nginx-worker", &p, false, None), 1);
        assert_eq!(priority_of("/system.slice/db.scope", &p, true, None), 7);
        assert_eq!(priority_of("/other", &p, true, None), 1);
    }

    #[test]
    fn pod_and_namespace_priorities_match_a_pods_cgroup() {
        let uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
        let path = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{}.scope",
            uid.replace('-', "_"),
            "ab".repeat(32)
        );
        let other = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod11111111_2222_3333_4444_555555555555.slice/cri-containerd-x.scope";
        let p = |k: &str| vec![(k.to_string(), 8)];
        // UID: from the path alone.
        assert_eq!(priority_of(&path, &p(&format!("pod:{uid}")), true, None), 8);
        assert_eq!(priority_of(other, &p(&format!("pod:{uid}")), true, None), 1);
        // Names need the metadata: unknown until it is read, then by name, namespace/name, namespace.
        assert_eq!(priority_of(&path, &p("pod:web-0"), true, None), 1);
        let dir = PodDirectory::default();
        let meta = PodMeta { name: "web-0".into(), namespace: "shop".into(), labels: vec![], containers: vec![] };
        dir.replace(HashMap::from([(uid.to_string(), Arc::new(meta))]));
        for key in ["pod:web-0", "pod:shop/web-0", "namespace:shop"] {
            assert_eq!(priority_of(&path, &p(key), true, Some(&dir)), 8, "{key}");
            assert_eq!(priority_of(other, &p(key), true, Some(&dir)), 1, "{key} on another pod");
        }
        assert_eq!(priority_of(&path, &p("pod:other/web-0"), true, Some(&dir)), 1);
        assert_eq!(priority_of(&path, &p("namespace:web-0"), true, Some(&dir)), 1);
        // First match wins, as for names.
        let both = vec![("namespace:shop".to_string(), 2), (format!("pod:{uid}"), 9)];
        assert_eq!(priority_of(&path, &both, true, Some(&dir)), 2);
    }
}
