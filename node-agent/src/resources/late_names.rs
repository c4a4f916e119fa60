//! Pod names for groups whose records went out before the pod directory knew their pod: names
//! only travel with records, so such a group is reported once more, without usage, with its names.
use std::collections::HashMap;

use crate::identity::cgroup::Runtime;
use crate::identity::pod_metadata::{PodDirectory, PodFields};
use crate::resources::record::{ResourceRecord, Scope};

/// Bound of `LateNames` (pods of one node reported before the directory knew them).
const MAX_LATE_NAMES: usize = 4096;

/// Names records from the pod directory, and reports a pod's group once more, without usage and
/// with the names, when the directory learns the pod after the group's records went out unnamed:
/// names only travel with records, so a pod that did its work before the next PodList (a
/// CronJob's, a client that then waits) would otherwise stay unnamed in the graph.
#[derive(Default)]
pub(crate) struct LateNames {
    /// By group id: what its record needs, and the interval it last had a record in.
    pending: HashMap<String, (i64, Runtime, String, Option<String>, u64)>,
    interval: u64,
}

impl LateNames {
    pub(crate) fn name(&mut self, records: &mut Vec<ResourceRecord>, dir: &PodDirectory, base: &ResourceRecord) {
        self.interval += 1;
        for r in records.iter_mut() {
            let Some(uid) = &r.pod_uid else { continue };
            r.pod = PodFields::of(dir.get(uid).as_deref());
            if r.scope != Scope::Group {
                continue;
            }
            if r.pod.name.is_some() {
                self.pending.remove(&r.group_id);
            } else {
                if self.pending.len() >= MAX_LATE_NAMES && !self.pending.contains_key(&r.group_id) {
                    self.pending.clear();
                }
                self.pending.insert(r.group_id.clone(), (r.cgroup_id, r.runtime, uid.clone(), r.qos_class.clone(), self.interval));
            }
        }
        let interval = self.interval;
        self.pending.retain(|group, (cgroup_id, runtime, uid, qos, seen)| {
            let Some(meta) = (*seen != interval).then(|| dir.get(uid)).flatten() else { return true };
            records.push(ResourceRecord {
                scope: Scope::Group,
                cgroup_id: *cgroup_id,
                group_id: group.clone(),
                runtime: *runtime,
                pod_uid: Some(uid.clone()),
                qos_class: qos.clone(),
                pod: PodFields::of(Some(&meta)),
                ..base.clone()
            });
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::pod_metadata::parse_pod_list;
    use crate::resources::power::PowerSource;
    use crate::resources::record::WeightKind;

    fn host() -> ResourceRecord {
        let interval = (1_763_870_000_000_000_000, 1_763_870_001_000_000_000);
        ResourceRecord::host("host-1".into(), interval, WeightKind::CpuTime, PowerSource::Estimated, Some(2))
    }

    fn group(id: &str, uid: &str, cpu: i64) -> ResourceRecord {
        ResourceRecord {
            scope: Scope::Group,
            cgroup_id: 7,
            group_id: id.into(),
            runtime: Runtime::Containerd,
            pod_uid: Some(uid.into()),
            qos_class: Some("burstable".into()),
            processes: 1,
            cpu_time_ns: cpu,
            ..host()
        }
    }

    #[test]
    fn a_pod_named_after_its_records_is_reported_once_more_with_its_name() {
        let dir = PodDirectory::default();
        let base = host();
        let mut late = LateNames::default();
        // Interval 1: the CronJob's container ran before the directory knew its pod.
        let mut records = vec![base.clone(), group("c1", "uid-1", 500)];
        late.name(&mut records, &dir, &base);
        assert_eq!(2, records.len());
        assert_eq!(None, records[1].pod.name);
        // Interval 2: still unknown, nothing more.
        let mut records = vec![base.clone()];
        late.name(&mut records, &dir, &base);
        assert_eq!(1, records.len());
        // The PodList arrives: the quiet container is reported once, without usage, with the names.
        let list = r#"{"kind":"PodList","items":[{"metadata":{"uid":"uid-1","name":"job-1","namespace":"batch","labels":{"app":"job"}}}]}"#;
        dir.replace(parse_pod_list(list.as_bytes(), &["app".to_string()]).unwrap());
        let mut records = vec![base.clone()];
        late.name(&mut records, &dir, &base);
        assert_eq!(2, records.len());
        let r = &records[1];
        assert_eq!((Scope::Group, "c1", Some("uid-1"), 0, 0), (r.scope, r.group_id.as_str(), r.pod_uid.as_deref(), r.cpu_time_ns, r.processes));
        assert_eq!((Some("job-1"), Some("batch")), (r.pod.name.as_deref(), r.pod.namespace.as_deref()));
        assert_eq!(vec![("app".to_string(), "job".to_string())], r.pod.labels);
        assert_eq!((base.interval_start_ns, base.interval_end_ns), (r.interval_start_ns, r.interval_end_ns));
        // And only once.
        let mut records = vec![base.clone()];
        late.name(&mut records, &dir, &base);
        assert_eq!(1, records.len());
    }

    #[test]
    fn an_active_group_is_named_in_its_own_record_not_twice() {
        let dir = PodDirectory::default();
        let base = host();
        let mut late = LateNames::default();
        let mut records = vec![group("c1", "uid-1", 500)];
        late.name(&mut records, &dir, &base);
        let list = r#"{"kind":"PodList","items":[{"metadata":{"uid":"uid-1","name":"web-1","namespace":"shop"}}]}"#;
        dir.replace(parse_pod_list(list.as_bytes(), &[]).unwrap());
        let mut records = vec![group("c1", "uid-1", 800)];
        late.name(&mut records, &dir, &base);
        assert_eq!(1, records.len());
        assert_eq!(Some("web-1"), records[0].pod.name.as_deref());
        assert_eq!(800, records[0].cpu_time_ns);
        let mut records = vec![];
        late.name(&mut records, &dir, &base);
        assert!(records.is_empty());
    }
}
