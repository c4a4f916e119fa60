//! The cgroup sampler's steady state allocates nothing: reading the targets, aggregating a tick,
//! ending an interval and encoding its records, a pod's names and its container's requests
//! included (a counting global allocator, per thread).
use crate::common;
use common::alloc_count::allocs;

use std::sync::Arc;
use wattgraph_agent::identity::pod_metadata::{parse_pod_list, PodDirectory};
use wattgraph_agent::output::avro::cgroup::CgroupStatsEncoder;
use wattgraph_agent::resources::cgroup_report::CgroupAggregator;
use wattgraph_agent::resources::cgroup_sampler::{CgroupSampler, CgroupStats, Hierarchy};


#[test]
fn ticks_intervals_and_encoding_allocate_nothing() {
    let root = std::env::temp_dir().join(format!("wg-cgr-alloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
    for (i, pod) in [(0, None), (1, Some("11111111-2222-3333-4444-555555555555"))] {
        let id = format!("{i}").repeat(64);
        let d = match pod {
            None => root.join(format!("system.slice/docker-{id}.scope")),
            Some(p) => root.join(format!("kubepods/burstable/pod{p}/{id}")),
        };
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cpu.stat"), "usage_usec 1500\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250\n").unwrap();
        std::fs::write(d.join("memory.current"), "73728\n").unwrap();
        std::fs::write(d.join("io.stat"), "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2\n").unwrap();
        std::fs::write(d.join("pids.current"), "4\n").unwrap();
    }
    let h = Hierarchy::detect(&root, &root.join("no-v1"));
    let mut sampler = CgroupSampler::new(h.clone());
    assert_eq!(sampler.targets.len(), 2);
    let mut agg = CgroupAggregator::new("h", &h, 10_000_000, 0);
    agg.sync(&sampler.targets);
    let pods = format!(
        r#"{{"kind":"PodList","items":[{{"metadata":{{"uid":"11111111-2222-3333-4444-555555555555","name":"web-0","namespace":"shop","labels":{{"app":"web"}}}},
          "spec":{{"containers":[{{"name":"web","resources":{{"requests":{{"cpu":"250m","memory":"64Mi"}}}}}}]}},
          "status":{{"containerStatuses":[{{"name":"web","containerID":"containerd://{}"}}]}}}}]}}"#,
        "1".repeat(64)
    );
    let dir = Arc::new(PodDirectory::default());
    dir.replace(parse_pod_list(pods.as_bytes(), &["app".to_string()]).unwrap());
    agg.set_pods(dir);
    let mut requests = 0usize;
    let enc = CgroupStatsEncoder::new().unwrap();
    let mut buf = Vec::with_capacity(1024);
    let mut sent = 0usize;
    let mut run = |agg: &mut CgroupAggregator, sampler: &mut CgroupSampler, from: u64| {
        for k in 0..10u64 {
            let mut st = [CgroupStats::default(); 2];
            st.copy_from_slice(sampler.sample());
            agg.on_tick((from + k) * 10_000_000, &sampler.targets, &st);
        }
        agg.finish(|r| {
            if r.cpu_request_cores == Some(0.25) && r.memory_request_bytes == Some(64 << 20) && r.pod.name == Some("web-0") {
                requests += 1;
            }
            enc.encode(r, &mut buf);
            sent += buf.len();
        })
    };
    assert_eq!(run(&mut agg, &mut sampler, 0), 2, "warm-up");
    let before = allocs();
    for i in 1..5 {
        assert_eq!(run(&mut agg, &mut sampler, i * 10), 2);
    }
    assert_eq!(allocs() - before, 0, "steady state allocated");
    let b = allocs();
    drop(std::hint::black_box(vec![1u8; 10]));
    assert_eq!(allocs() - b, 1, "the counter counts");
    assert!(sent > 0);
    assert_eq!(requests, 5, "the pod's record carries its requests every interval");
    let _ = std::fs::remove_dir_all(&root);
}
