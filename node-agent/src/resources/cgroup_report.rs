//! High-frequency cgroup ticks (`cgroup_sampler`) -> one CgroupStats record per container per
//! reporting interval (`record`, encoded by `output::avro::cgroup`), and the thread that runs them for the agent.
//!
//! Per container the aggregator keeps the previous reading; each tick adds the growth of the
//! cumulative counters since it. A counter that went down (reset, or the cgroup was removed and
//! created again under the same path) counts its new value as the growth, so growth is never
//! negative. A container's first tick only sets its baseline. Ticks allocate nothing; the
//! aggregator allocates only when the set of containers changes (`sync`).
//!
//! Length: about 350 lines of code; the rest are its unit tests, kept beside the aggregator and its
//! thread they drive.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::identity::cgroup::Identity;
use crate::resources::record::CgroupStatsRecord;
use crate::resources::cgroup_sampler::{mono_now, run_ticks, set_realtime, CgroupSampler, CgroupStats, Hierarchy, Target};
use crate::resources::ResourceMetrics;
use crate::identity::pod_metadata::{PodDirectory, PodRef};

/// SCHED_FIFO priority of the sampler thread with --cgroup-sampler-realtime.
pub const REALTIME_PRIORITY: i32 = 10;
/// Containers are discovered again this often (a walk of the hierarchy; never per tick).
pub const REDISCOVER_NS: u64 = 5_000_000_000;

/// Growth of a cumulative counter: its new value when it went down (reset or recreated cgroup).
pub fn growth(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else {
        cur
    }
}

fn clamp_i64(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// One container's state between ticks and its sums over the current interval.
#[derive(Debug)]
struct Entry {
    path: String,
    group: String,
    runtime: &'static str,
    pod_uid: Option<String>,
    qos: Option<&'static str>,
    /// Previous reading and its tick time (CLOCK_MONOTONIC ns); None before the first tick.
    prev: Option<(u64, CgroupStats)>,
    /// Tick time of the interval's baseline reading.
    start: u64,
    ticks: u32,
    max_gap: u64,
    cpu: u64,
    peak_cores: f64,
    throttled_periods: u64,
    throttled_ns: u64,
    memory_peak: u64,
    io_read: u64,
    io_write: u64,
}

impl Entry {
    fn new(path: &str, id: &Identity) -> Entry {
        Entry {
            path: path.to_string(),
            group: id.group.clone(),
            runtime: id.runtime.symbol(),
            pod_uid: id.pod_uid.clone(),
            qos: id.qos.map(|q| q.as_str()),
            prev: None,
            start: 0,
            ticks: 0,
            max_gap: 0,
            cpu: 0,
            peak_cores: 0.0,
            throttled_periods: 0,
            throttled_ns: 0,
            memory_peak: 0,
            io_read: 0,
            io_write: 0,
        }
    }

    fn tick(&mut self, t: u64, s: &CgroupStats) {
        let Some((pt, p)) = self.prev else {
            self.prev = Some((t, *s));
            self.start = t;
            return;
        };
        let gap = t.saturating_sub(pt);
        let dcpu = growth(p.cpu_usage_ns, s.cpu_usage_ns);
        self.ticks += 1;
        self.max_gap = self.max_gap.max(gap);
        self.cpu = self.cpu.saturating_add(dcpu);
        if gap > 0 {
            self.peak_cores = self.peak_cores.max(dcpu as f64 / gap as f64);
        }
        self.throttled_periods = self.throttled_periods.saturating_add(growth(p.nr_throttled, s.nr_throttled));
        self.throttled_ns = self.throttled_ns.saturating_add(growth(p.throttled_ns, s.throttled_ns));
        self.io_read = self.io_read.saturating_add(growth(p.io_read_bytes, s.io_read_bytes));
        self.io_write = self.io_write.saturating_add(growth(p.io_write_bytes, s.io_write_bytes));
        self.memory_peak = self.memory_peak.max(s.memory_bytes);
        self.prev = Some((t, *s));
    }

    /// Starts the next interval at the last reading.
    fn reset(&mut self) {
        if let Some((t, _)) = self.prev {
            self.start = t;
        }
        self.ticks = 0;
        self.max_gap = 0;
        self.cpu = 0;
        self.peak_cores = 0.0;
        self.throttled_periods = 0;
        self.throttled_ns = 0;
        self.memory_peak = 0;
        self.io_read = 0;
        self.io_write = 0;
    }
}

/// Turns ticks into per-interval CgroupStats records.
pub struct CgroupAggregator {
    host_id: String,
    hierarchy: &'static str,
    tick_interval_ns: u64,
    mono_to_unix_ns: i64,
    entries: Vec<Entry>,
    last_tick: Option<u64>,
    /// Largest gap between two ticks (any target) since the last `finish`.
    max_gap: u64,
    ticks: u64,
    pods: Option<Arc<PodDirectory>>,
}

impl CgroupAggregator {
    /// `mono_to_unix_ns` converts tick times (CLOCK_MONOTONIC) to Unix epoch ns.
    pub fn new(host_id: &str, hierarchy: &Hierarchy, tick_interval_ns: u64, mono_to_unix_ns: i64) -> CgroupAggregator {
        CgroupAggregator {
            host_id: host_id.to_string(),
            hierarchy: hierarchy_label(hierarchy),
            tick_interval_ns,
            mono_to_unix_ns,
            entries: Vec::new(),
            last_tick: None,
            max_gap: 0,
            ticks: 0,
            pods: None,
        }
    }

    /// Records with a pod UID carry the pod's name, namespace and labels when `pods` knows it.
    pub fn set_pods(&mut self, pods: Arc<PodDirectory>) {
        self.pods = Some(pods);
    }

    /// Lines the entries up with `targets` (by path): a known container keeps its baseline and
    /// sums, a new one starts without baseline, a gone one is dropped. Allocates; call it after
    /// `CgroupSampler::rediscover`, not per tick.
    pub fn sync(&mut self, targets: &[Target]) {
        let mut old = std::mem::take(&mut self.entries);
        for t in targets {
            let e = match old.iter().position(|e| e.path == t.path) {
                Some(i) => old.swap_remove(i),
                None => Entry::new(&t.path, &t.identity),
            };
            self.entries.push(e);
        }
    }

    /// One tick at `t` (CLOCK_MONOTONIC ns): `stats[i]` is the reading of `targets[i]`.
    /// Allocation-free unless the targets changed without `sync`.
    pub fn on_tick(&mut self, t: u64, targets: &[Target], stats: &[CgroupStats]) {
        if self.entries.len() != targets.len() {
            self.sync(targets);
        }
        if let Some(prev) = self.last_tick {
            self.max_gap = self.max_gap.max(t.saturating_sub(prev));
        }
        self.last_tick = Some(t);
        self.ticks += 1;
        for (e, s) in self.entries.iter_mut().zip(stats) {
            e.tick(t, s);
        }
    }

    /// Containers currently followed.
    pub fn targets(&self) -> usize {
        self.entries.len()
    }

    /// Ticks since the last `finish`, and the largest gap between two of them (ns).
    pub fn tick_summary(&self) -> (u64, u64) {
        (self.ticks, self.max_gap)
    }

    /// Ends the interval: hands one record per container with at least one tick after its
    /// baseline to `out` (a container with only its baseline waits for the next interval),
    /// then starts the next interval. Returns the number of records. Allocation-free.
    pub fn finish<F: FnMut(&CgroupStatsRecord<'_>)>(&mut self, mut out: F) -> usize {
        let mut n = 0;
        for e in &mut self.entries {
            if e.ticks == 0 {
                continue;
            }
            let Some((end, last)) = e.prev else { continue };
            let len = end.saturating_sub(e.start);
            let meta = match (&self.pods, &e.pod_uid) {
                (Some(d), Some(uid)) => d.get(uid),
                _ => None,
            };
            let req = meta.as_deref().and_then(|m| m.container(&e.group));
            let rec = CgroupStatsRecord {
                host_id: &self.host_id,
                interval_start_ns: e.start as i64 + self.mono_to_unix_ns,
                interval_end_ns: end as i64 + self.mono_to_unix_ns,
                group_id: &e.group,
                runtime: e.runtime,
                pod_uid: e.pod_uid.as_deref(),
                qos_class: e.qos,
                cgroup_path: &e.path,
                hierarchy: self.hierarchy,
                tick_interval_ns: clamp_i64(self.tick_interval_ns),
                ticks: e.ticks.min(i32::MAX as u32) as i32,
                max_tick_gap_ns: clamp_i64(e.max_gap),
                cpu_ns: clamp_i64(e.cpu),
                cpu_mean_cores: if len > 0 { e.cpu as f64 / len as f64 } else { 0.0 },
                cpu_peak_cores: e.peak_cores,
                throttled_periods: clamp_i64(e.throttled_periods),
                throttled_ns: clamp_i64(e.throttled_ns),
                memory_bytes: clamp_i64(last.memory_bytes),
                memory_peak_bytes: clamp_i64(e.memory_peak),
                io_read_bytes: clamp_i64(e.io_read),
                io_write_bytes: clamp_i64(e.io_write),
                pids: clamp_i64(last.pids),
                pod: PodRef::of(meta.as_deref()),
                cpu_request_cores: req.and_then(|r| r.cpu_cores),
                memory_request_bytes: req.and_then(|r| r.memory_bytes),
            };
            out(&rec);
            e.reset();
            n += 1;
        }
        self.ticks = 0;
        self.max_gap = 0;
        n
    }
}

/// "v1" or "v2", as in the record's `hierarchy` field.
pub fn hierarchy_label(h: &Hierarchy) -> &'static str {
    match h {
        Hierarchy::V1(_) => "v1",
        Hierarchy::V2(_) => "v2",
    }
}

/// Where the cgroup thread puts each record: the output stage's route to Kafka
/// (`output::CgroupOutlet`), or whatever else takes them (`--once`'s printout, tests).
pub trait CgroupSink: Send {
    fn put_cgroup(&mut self, record: &CgroupStatsRecord<'_>);
}

impl<F: FnMut(&CgroupStatsRecord<'_>) + Send> CgroupSink for F {
    fn put_cgroup(&mut self, record: &CgroupStatsRecord<'_>) {
        self(record)
    }
}

/// Options of the cgroup sampler thread.
#[derive(Debug, Clone)]
pub struct CgroupThread {
    pub host_id: String,
    pub hierarchy: Hierarchy,
    pub tick_interval_ns: u64,
    /// One record per container per this interval (--sample-interval-ms).
    pub report_interval_ns: u64,
    /// SCHED_FIFO priority REALTIME_PRIORITY for the thread (--cgroup-sampler-realtime).
    pub realtime: bool,
    /// Stop after this many reporting intervals (None = until `stop`).
    pub max_intervals: Option<u64>,
    /// Pod names for containers of pods (--pod-metadata-url).
    pub pods: Option<Arc<PodDirectory>>,
    /// Only containers below this kubelet cgroup root (--node-scope); "" = all.
    pub within: String,
}

/// Ticks per reporting interval (at least one).
pub fn ticks_per_report(tick_ns: u64, report_ns: u64) -> u64 {
    (report_ns / tick_ns.max(1)).max(1)
}

/// Runs the sampler on its own thread: ticks every `tick_interval_ns` (run_ticks, in chunks of
/// at most a second so `stop` is seen promptly), one record per container per reporting
/// interval to `sink`, containers rediscovered every REDISCOVER_NS.
pub fn spawn(
    cfg: CgroupThread,
    mut sink: Box<dyn CgroupSink>,
    metrics: Arc<ResourceMetrics>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("wg-cgroups".into()).spawn(move || {
        if cfg.realtime {
            match set_realtime(REALTIME_PRIORITY) {
                Ok(()) => log::info!("cgroup sampler thread runs SCHED_FIFO priority {REALTIME_PRIORITY}"),
                Err(e) => log::warn!(
                    "--cgroup-sampler-realtime: SCHED_FIFO priority {REALTIME_PRIORITY} refused ({e}); the cgroup sampler runs at normal priority"
                ),
            }
        }
        let mut sampler = CgroupSampler::within(cfg.hierarchy.clone(), &cfg.within);
        let mut agg = CgroupAggregator::new(
            &cfg.host_id,
            &cfg.hierarchy,
            cfg.tick_interval_ns,
            crate::shared::clock::mono_to_unix_offset(),
        );
        if let Some(p) = &cfg.pods {
            agg.set_pods(p.clone());
        }
        agg.sync(&sampler.targets);
        metrics.cgroups_sampled.store(agg.targets() as u64, Ordering::Relaxed);
        let per_report = ticks_per_report(cfg.tick_interval_ns, cfg.report_interval_ns);
        let chunk = (1_000_000_000 / cfg.tick_interval_ns.max(1)).max(1);
        let mut done = 0u64;
        let mut intervals = 0u64;
        let mut last_discovery = mono_now();
        while !stop.load(Ordering::Relaxed) {
            let n = (per_report - done).min(chunk);
            run_ticks(&mut sampler, cfg.tick_interval_ns, n, |t, targets, stats| agg.on_tick(t, targets, stats));
            metrics.cgroup_ticks.fetch_add(n, Ordering::Relaxed);
            done += n;
            if done >= per_report {
                done = 0;
                let (_, gap) = agg.tick_summary();
                let k = agg.finish(|r| sink.put_cgroup(r));
                metrics.cgroup_records.fetch_add(k as u64, Ordering::Relaxed);
                metrics.cgroup_max_tick_gap_ns.store(gap, Ordering::Relaxed);
                intervals += 1;
                if cfg.max_intervals.is_some_and(|m| intervals >= m) {
                    break;
                }
            }
            if mono_now().saturating_sub(last_discovery) >= REDISCOVER_NS {
                sampler.rediscover();
                agg.sync(&sampler.targets);
                metrics.cgroups_sampled.store(agg.targets() as u64, Ordering::Relaxed);
                last_discovery = mono_now();
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::cgroup::identify;
    use crate::resources::record::OwnedCgroupStats;

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const MS: u64 = 1_000_000;

    fn target(rel: &str) -> Target {
        // A hierarchy without files: the target holds nothing open; the test feeds readings.
        let h = Hierarchy::V2(std::env::temp_dir().join("wg-no-such-cgroup-root"));
        Target::open(&h, rel, identify(rel))
    }

    fn st(cpu: u64, thr: u64, thr_ns: u64, mem: u64, rd: u64, wr: u64, pids: u64) -> CgroupStats {
        CgroupStats {
            cpu_usage_ns: cpu,
            nr_periods: 0,
            nr_throttled: thr,
            throttled_ns: thr_ns,
            memory_bytes: mem,
            io_read_bytes: rd,
            io_write_bytes: wr,
            pids,
        }
    }

    use crate::identity::pod_metadata::PodFields;

    fn collect(agg: &mut CgroupAggregator) -> Vec<OwnedCgroupStats> {
        let mut v = Vec::new();
        agg.finish(|r| v.push(r.to_owned()));
        v
    }

    #[test]
    fn records_of_known_pods_carry_their_names_and_requests() {
        let uid = "11111111-2222-3333-4444-555555555555";
        let targets = vec![target(&format!("/kubepods/burstable/pod{uid}/{ID}")), target(&format!("/system.slice/docker-{ID}.scope"))];
        let mut agg = CgroupAggregator::new("node-a", &Hierarchy::V1("/x".into()), 100 * MS, 0);
        let dir = Arc::new(PodDirectory::default());
        let list = format!(r#"{{"kind":"PodList","items":[{{"metadata":{{"uid":"{uid}","name":"web-1","namespace":"shop","labels":{{"app":"web","tier":"x"}}}},
            "spec":{{"containers":[{{"name":"web","resources":{{"requests":{{"cpu":"250m","memory":"64Mi"}}}}}}]}},
            "status":{{"containerStatuses":[{{"name":"web","containerID":"containerd://{ID}"}}]}}}}]}}"#);
        dir.replace(crate::identity::pod_metadata::parse_pod_list(list.as_bytes(), &["app".to_string()]).unwrap());
        agg.set_pods(dir.clone());
        agg.sync(&targets);
        let s = st(MS, 0, 0, 1, 0, 0, 1);
        agg.on_tick(0, &targets, &[s, s]);
        agg.on_tick(100 * MS, &targets, &[s, s]);
        let recs = collect(&mut agg);
        assert_eq!(recs.len(), 2);
        let (pod, other) = if recs[0].pod_uid.is_some() { (&recs[0], &recs[1]) } else { (&recs[1], &recs[0]) };
        assert_eq!((pod.pod.name.as_deref(), pod.pod.namespace.as_deref()), (Some("web-1"), Some("shop")));
        assert_eq!(pod.pod.labels, vec![("app".to_string(), "web".to_string())], "only the kept key");
        assert_eq!((pod.cpu_request_cores, pod.memory_request_bytes), (Some(0.25), Some(64 << 20)), "its container's requests");
        assert_eq!(other.pod, PodFields::default(), "not a pod");
        assert_eq!((other.cpu_request_cores, other.memory_request_bytes), (None, None));
        // A pod the source no longer lists: UID only.
        dir.replace(Default::default());
        agg.on_tick(200 * MS, &targets, &[s, s]);
        assert!(collect(&mut agg).iter().all(|r| r.pod == PodFields::default() && r.cpu_request_cores.is_none() && r.memory_request_bytes.is_none()));
    }

    #[test]
    fn hand_computed_interval_with_reset() {
        let rel = format!("/kubepods/burstable/pod11111111-2222-3333-4444-555555555555/{ID}");
        let targets = vec![target(&rel)];
        let mut agg = CgroupAggregator::new("node-a", &Hierarchy::V1("/x".into()), 100 * MS, 1_000);
        agg.sync(&targets);
        // t=0: baseline only (its values are never growth).
        agg.on_tick(0, &targets, &[st(5_000 * MS, 4, 9 * MS, 100, 1000, 2000, 3)]);
        assert!(collect(&mut agg).is_empty(), "a baseline alone gives no record");
        // t=100 ms: +50 ms CPU (0.5 cores), +1 throttled period (+2 ms), +4096 read.
        agg.on_tick(100 * MS, &targets, &[st(5_050 * MS, 5, 11 * MS, 300, 5096, 2000, 4)]);
        // t=250 ms (gap 150 ms): counters reset (cgroup recreated): growth = the new values.
        agg.on_tick(250 * MS, &targets, &[st(30 * MS, 1, MS, 50, 10, 20, 1)]);
        // t=350 ms: +80 ms CPU in 100 ms = 0.8 cores (the peak).
        agg.on_tick(350 * MS, &targets, &[st(110 * MS, 1, MS, 200, 10, 520, 2)]);
        let recs = collect(&mut agg);
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!((r.interval_start_ns, r.interval_end_ns), (1_000, 350 * MS as i64 + 1_000));
        assert_eq!((r.ticks, r.max_tick_gap_ns, r.tick_interval_ns), (3, 150 * MS as i64, 100 * MS as i64));
        assert_eq!(r.cpu_ns, (50 + 30 + 80) * MS as i64);
        assert!((r.cpu_mean_cores - 160.0 / 350.0).abs() < 1e-12, "{}", r.cpu_mean_cores);
        assert!((r.cpu_peak_cores - 0.8).abs() < 1e-12, "{}", r.cpu_peak_cores);
        assert_eq!((r.throttled_periods, r.throttled_ns), (1 + 1, (2 + 1) * MS as i64));
        assert_eq!((r.memory_bytes, r.memory_peak_bytes, r.pids), (200, 300, 2));
        assert_eq!((r.io_read_bytes, r.io_write_bytes), (4096 + 10, 20 + 500));
        assert_eq!((r.group_id.as_str(), r.runtime.as_str(), r.hierarchy.as_str()), (ID, "CONTAINERD", "v1"));
        assert_eq!(r.pod_uid.as_deref(), Some("11111111-2222-3333-4444-555555555555"));
        assert_eq!((r.qos_class.as_deref(), r.host_id.as_str(), r.cgroup_path.as_str()), (Some("burstable"), "node-a", rel.as_str()));

        // Next interval starts at the last reading; an unchanged cgroup grows by 0.
        agg.on_tick(450 * MS, &targets, &[st(110 * MS, 1, MS, 100, 10, 520, 2)]);
        let r = &collect(&mut agg)[0];
        assert_eq!((r.interval_start_ns, r.interval_end_ns), (350 * MS as i64 + 1_000, 450 * MS as i64 + 1_000));
        assert_eq!((r.ticks, r.cpu_ns, r.cpu_mean_cores, r.cpu_peak_cores), (1, 0, 0.0, 0.0));
        assert_eq!((r.memory_bytes, r.memory_peak_bytes, r.io_write_bytes), (100, 100, 0));
    }

    #[test]
    fn targets_appearing_and_leaving_keep_their_own_baselines() {
        let a = format!("/system.slice/docker-{ID}.scope");
        let b = format!("/system.slice/docker-{}.scope", "ab".repeat(32));
        let mut agg = CgroupAggregator::new("h", &Hierarchy::V2("/x".into()), 10 * MS, 0);
        let only_a = vec![target(&a)];
        agg.sync(&only_a);
        agg.on_tick(0, &only_a, &[st(0, 0, 0, 1, 0, 0, 1)]);
        agg.on_tick(10 * MS, &only_a, &[st(10 * MS, 0, 0, 1, 0, 0, 1)]);
        // b appears (sorted before a: the order changes); a keeps its baseline, b sets its own.
        let both = vec![target(&b), target(&a)];
        agg.sync(&both);
        agg.on_tick(20 * MS, &both, &[st(999 * MS, 0, 0, 7, 0, 0, 1), st(15 * MS, 0, 0, 1, 0, 0, 1)]);
        let recs = collect(&mut agg);
        assert_eq!(recs.len(), 1, "b has only its baseline");
        assert_eq!((recs[0].cgroup_path.as_str(), recs[0].ticks, recs[0].cpu_ns), (a.as_str(), 2, 15 * MS as i64));
        assert_eq!((agg.tick_summary(), agg.targets()), ((0, 0), 2));
        agg.on_tick(30 * MS, &both, &[st(1_004 * MS, 0, 0, 7, 0, 0, 1), st(15 * MS, 0, 0, 1, 0, 0, 1)]);
        assert_eq!(agg.tick_summary(), (1, 10 * MS), "the gap from the previous interval's last tick counts");
        let recs = collect(&mut agg);
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].cpu_ns, recs[0].cpu_peak_cores), (5 * MS as i64, 0.5));
        // a leaves: dropped, b continues.
        let only_b = vec![target(&b)];
        agg.sync(&only_b);
        agg.on_tick(40 * MS, &only_b, &[st(1_006 * MS, 0, 0, 7, 0, 0, 1)]);
        let recs = collect(&mut agg);
        assert_eq!((recs.len(), recs[0].cpu_ns), (1, 2 * MS as i64));
    }

    #[test]
    fn thread_reads_a_fixture_tree_and_reports_each_interval() {
        let root = std::env::temp_dir().join(format!("wg-cgr-v2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let d = root.join(format!("system.slice/docker-{ID}.scope"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(root.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        std::fs::write(d.join("cpu.stat"), "usage_usec 1500\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250\n").unwrap();
        std::fs::write(d.join("memory.current"), "73728\n").unwrap();
        std::fs::write(d.join("pids.current"), "4\n").unwrap();
        let h = Hierarchy::detect(&root, &root.join("no-v1"));
        let (tx, rx) = std::sync::mpsc::channel();
        let metrics = Arc::new(ResourceMetrics::default());
        let cfg = CgroupThread {
            host_id: "h".into(),
            hierarchy: h,
            tick_interval_ns: 10 * MS,
            report_interval_ns: 30 * MS,
            realtime: false,
            max_intervals: Some(2),
            pods: None,
            within: String::new(),
        };
        let t = spawn(cfg, Box::new(move |r: &CgroupStatsRecord<'_>| tx.send(r.to_owned()).unwrap()), metrics.clone(), Arc::new(AtomicBool::new(false))).unwrap();
        t.join().unwrap();
        let recs: Vec<OwnedCgroupStats> = rx.try_iter().collect();
        // Interval 1: baseline + 2 ticks; interval 2: 3 ticks. Unchanged files grow by nothing.
        assert_eq!(recs.len(), 2, "{recs:?}");
        assert_eq!((recs[0].ticks, recs[1].ticks), (2, 3));
        assert_eq!(recs[0].interval_end_ns, recs[1].interval_start_ns);
        for r in &recs {
            assert_eq!((r.group_id.as_str(), r.runtime.as_str(), r.hierarchy.as_str()), (ID, "DOCKER", "v2"));
            assert_eq!((r.cpu_ns, r.throttled_periods, r.memory_bytes, r.memory_peak_bytes, r.pids), (0, 0, 73728, 73728, 4));
            assert!(r.interval_end_ns > r.interval_start_ns && r.max_tick_gap_ns > 0);
        }
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!((g(&metrics.cgroups_sampled), g(&metrics.cgroup_ticks), g(&metrics.cgroup_records)), (1, 6, 2));
        assert!(g(&metrics.cgroup_max_tick_gap_ns) > 0);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn growth_is_never_negative() {
        assert_eq!(growth(10, 15), 5);
        assert_eq!(growth(10, 10), 0);
        assert_eq!(growth(10, 3), 3);
        assert_eq!(growth(u64::MAX, 0), 0);
        assert_eq!(ticks_per_report(100 * MS, 1000 * MS), 10);
        assert_eq!(ticks_per_report(100 * MS, 10 * MS), 1);
    }
}
