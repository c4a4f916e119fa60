//! One sampling interval end to end: CPU per process (`cpu`) -> group by container
//! identity (`identity::cgroup`) -> host power and its attribution (`power`) -> ResourceSample
//! records (`record`) named by their pods (`late_names`). Not Send (owns the BPF skeleton): run it
//! on one thread.
use std::collections::HashMap;
use std::path::PathBuf;

use crate::identity::cgroup::{identify_proc_cgroup, CgroupResolver, Identity, Runtime};
use crate::identity::node_cgroups::{KubeletRoot, NodeCgroups};
use crate::resources::power::{attributed_watts, unattributed_watts, HostPower, Meter, ModelParams, PowerSource};
use crate::resources::record::{ResourceRecord, Scope, WeightKind};
use crate::shared::clock::mono_to_unix_offset;
use crate::capture::sched::{SchedOptions, MAX_SOCKETS};
use crate::resources::cpu::{CpuCollector, ProcCpu};
use crate::resources::late_names::LateNames;

#[derive(Debug, Clone)]
pub struct ResourceOptions {
    pub host_id: String,
    pub sched: SchedOptions,
    pub powercap_root: PathBuf,
    /// Idle watts per socket for RAPL; None = running minimum of the measured power.
    pub idle_watts_per_socket: Option<f64>,
    pub model: ModelParams,
    pub cgroup_root: PathBuf,
    /// Pod names for records with a pod UID (--pod-metadata-url); None = UIDs only.
    pub pods: Option<std::sync::Arc<crate::identity::pod_metadata::PodDirectory>>,
    /// --node-scope: only processes under this kubelet cgroup root; None = every process.
    pub node_cgroups: Option<KubeletRoot>,
}

impl ResourceOptions {
    pub fn new(host_id: &str) -> ResourceOptions {
        ResourceOptions {
            host_id: host_id.to_string(),
            sched: SchedOptions::default(),
            powercap_root: "/sys/class/powercap".into(),
            idle_watts_per_socket: None,
            model: ModelParams::default(),
            cgroup_root: crate::identity::cgroup::default_v2_root(),
            pods: None,
            node_cgroups: None,
        }
    }
}

#[derive(Default)]
struct GroupAgg {
    cgroup_id: u64,
    runtime: Option<Runtime>,
    pod_uid: Option<String>,
    qos: Option<&'static str>,
    threads: u32,
    processes: u32,
    cpu_ns: u64,
    cycles: u64,
    instructions: u64,
    cache_references: u64,
    cache_misses: u64,
    wcycles: u64,
    weight: f64,
    power: f64,
}

pub struct ResourceSampler {
    pub cpu: CpuCollector,
    cgroups: CgroupResolver,
    meter: Meter,
    host_id: String,
    mono_to_unix_ns: i64,
    records: Vec<ResourceRecord>,
    groups: HashMap<String, GroupAgg>,
    /// Identity from /proc/<tgid>/cgroup for processes whose v2 cgroup says "host"
    /// (v1-only or hybrid hosts where the runtime uses the v1 hierarchies).
    proc_ids: HashMap<(u32, u64), Identity>,
    proc_root: PathBuf,
    pub last_power: Option<HostPower>,
    pods: Option<std::sync::Arc<crate::identity::pod_metadata::PodDirectory>>,
    late_names: LateNames,
    /// --node-scope: the node's processes; the others are left out of every record.
    scope: Option<NodeCgroups>,
}

fn weights(p: &ProcCpu, counters: bool) -> [f64; MAX_SOCKETS] {
    let mut w = [0.0; MAX_SOCKETS];
    for s in 0..MAX_SOCKETS {
        w[s] = if counters { p.wcycles[s] as f64 } else { p.oncpu_ns[s] as f64 };
    }
    w
}

impl ResourceSampler {
    pub fn new(opts: &ResourceOptions) -> Result<ResourceSampler, crate::capture::bpf::CaptureError> {
        let cpu = CpuCollector::load(&opts.sched)?;
        let mut per_socket = [0u32; MAX_SOCKETS];
        for t in cpu.topology() {
            per_socket[t.socket as usize] += 1;
        }
        let meter = Meter::new(&opts.powercap_root, opts.idle_watts_per_socket, opts.model, per_socket);
        Ok(ResourceSampler {
            cpu,
            cgroups: CgroupResolver::new(opts.cgroup_root.clone()),
            meter,
            host_id: opts.host_id.clone(),
            mono_to_unix_ns: mono_to_unix_offset(),
            records: Vec::with_capacity(1024),
            groups: HashMap::with_capacity(64),
            proc_ids: HashMap::with_capacity(1024),
            proc_root: "/proc".into(),
            last_power: None,
            pods: opts.pods.clone(),
            late_names: LateNames::default(),
            scope: opts.node_cgroups.clone().map(NodeCgroups::new),
        })
    }

    pub fn power_source(&self) -> PowerSource {
        self.meter.source()
    }

    /// Records for the interval since the previous call: HOST first, then GROUPs, then
    /// PROCESSes (highest on-CPU time first).
    pub fn sample(&mut self) -> &[ResourceRecord] {
        let counters = self.cpu.has_counters();
        let cache = self.cpu.has_cache_counters();
        let iv = self.cpu.collect();
        let dt = iv.end_mono_ns.saturating_sub(iv.start_mono_ns).max(1);
        let start = iv.start_mono_ns as i64 + self.mono_to_unix_ns;
        let end = iv.end_mono_ns as i64 + self.mono_to_unix_ns;
        let secs = dt as f64 / 1e9;
        let mut busy = [0u64; MAX_SOCKETS];
        let mut total_w = [0.0; MAX_SOCKETS];
        for p in &iv.procs {
            let w = weights(p, counters);
            for s in 0..MAX_SOCKETS {
                busy[s] += p.oncpu_ns[s];
                total_w[s] += w[s];
            }
        }
        let hp = self.meter.interval(dt, &busy);
        self.last_power = Some(hp);
        let weight_kind = if counters { WeightKind::WeightedCycles } else { WeightKind::CpuTime };
        let opt = |x: u64| counters.then_some(x as i64);
        let copt = |x: u64| cache.then_some(x as i64);

        self.records.clear();
        self.groups.clear();
        let base = ResourceRecord::host(self.host_id.clone(), (start, end), weight_kind, hp.source, online_cpus());
        let (mut threads, mut cyc, mut ins, mut wc) = (0u64, 0u64, 0u64, 0u64);
        let (mut cref, mut cmiss) = (0u64, 0u64);
        let mut procs = Vec::with_capacity(iv.procs.len());
        // Under --node-scope the machine's figures above still drive the meter and the shares;
        // the node's (processes, CPU, weight, power) are summed here.
        let (mut n_procs, mut cpu_ns, mut weight, mut power) = (0i32, 0u64, 0.0f64, 0.0f64);
        for p in &iv.procs {
            if let Some(scope) = self.scope.as_mut() {
                if !scope.contains(&mut self.cgroups, p.cgroup_id, p.tgid, p.proc_start_ns) {
                    continue;
                }
            }
            let w = weights(p, counters);
            let watts = attributed_watts(&hp, &w, &total_w);
            let mut ident = self.cgroups.identity(p.cgroup_id).clone();
            if ident.is_host() {
                if self.proc_ids.len() >= 16384 {
                    self.proc_ids.clear();
                }
                let root = &self.proc_root;
                ident = self
                    .proc_ids
                    .entry((p.tgid, p.proc_start_ns))
                    .or_insert_with(|| {
                        std::fs::read_to_string(root.join(format!("{}/cgroup", p.tgid)))
                            .map(|t| identify_proc_cgroup(&t))
                            .unwrap_or_else(|_| Identity::host())
                    })
                    .clone();
            }
            let wsum: f64 = w.iter().sum();
            let wcyc: u64 = p.wcycles.iter().sum();
            (n_procs, cpu_ns, weight, power) = (n_procs + 1, cpu_ns + p.oncpu_total(), weight + wsum, power + watts);
            threads += p.threads as u64;
            cyc += p.cycles;
            ins += p.instructions;
            cref += p.cache_references;
            cmiss += p.cache_misses;
            wc += wcyc;
            let g = self.groups.entry(ident.group.clone()).or_default();
            if !ident.is_host() {
                g.cgroup_id = p.cgroup_id;
            }
            g.runtime = Some(ident.runtime);
            g.pod_uid.clone_from(&ident.pod_uid);
            g.qos = ident.qos.map(|q| q.as_str());
            g.threads += p.threads;
            g.processes += 1;
            g.cpu_ns += p.oncpu_total();
            g.cycles += p.cycles;
            g.instructions += p.instructions;
            g.cache_references += p.cache_references;
            g.cache_misses += p.cache_misses;
            g.wcycles += wcyc;
            g.weight += wsum;
            g.power += watts;
            procs.push(ResourceRecord {
                scope: Scope::Process,
                tgid: p.tgid as i32,
                process_start_time_ns: p.proc_start_ns as i64,
                comm: p.comm_str().to_string(),
                cgroup_id: p.cgroup_id as i64,
                group_id: ident.group.clone(),
                runtime: ident.runtime,
                pod_uid: ident.pod_uid.clone(),
                qos_class: ident.qos.map(|q| q.as_str().to_string()),
                threads: p.threads as i32,
                processes: 1,
                cpu_time_ns: p.oncpu_total() as i64,
                cycles: opt(p.cycles),
                instructions: opt(p.instructions),
                weighted_cycles: opt(wcyc),
                cache_references: copt(p.cache_references),
                cache_misses: copt(p.cache_misses),
                weight: wsum,
                power_watts: watts,
                energy_joules: watts * secs,
                ..base.clone()
            });
        }
        let host = ResourceRecord {
            threads: threads as i32,
            processes: iv.procs.len() as i32,
            cpu_time_ns: busy.iter().sum::<u64>() as i64,
            cycles: opt(cyc),
            instructions: opt(ins),
            weighted_cycles: opt(wc),
            cache_references: copt(cref),
            cache_misses: copt(cmiss),
            weight: total_w.iter().sum(),
            power_watts: hp.total(),
            energy_joules: hp.total() * secs,
            idle_power_watts: hp.idle(),
            unattributed_power_watts: unattributed_watts(&hp, &total_w),
            package_watts: hp.package_w,
            core_watts: hp.core_w,
            dram_watts: hp.dram_w,
            ..base.clone()
        };
        // A node sharing the machine: its tasks only; idle, unattributed and RAPL are the machine's.
        self.records.push(if self.scope.is_some() {
            ResourceRecord {
                processes: n_procs,
                cpu_time_ns: cpu_ns as i64,
                weight,
                power_watts: power,
                energy_joules: power * secs,
                idle_power_watts: 0.0,
                unattributed_power_watts: 0.0,
                package_watts: None,
                core_watts: None,
                dram_watts: None,
                ..host
            }
        } else {
            host
        });
        let mut gs: Vec<_> = self.groups.iter().collect();
        gs.sort_by_key(|g| std::cmp::Reverse(g.1.cpu_ns));
        for (gid, g) in gs {
            self.records.push(ResourceRecord {
                scope: Scope::Group,
                cgroup_id: g.cgroup_id as i64,
                group_id: gid.clone(),
                runtime: g.runtime.unwrap_or(Runtime::Host),
                pod_uid: g.pod_uid.clone(),
                qos_class: g.qos.map(str::to_string),
                threads: g.threads as i32,
                processes: g.processes as i32,
                cpu_time_ns: g.cpu_ns as i64,
                cycles: opt(g.cycles),
                instructions: opt(g.instructions),
                weighted_cycles: opt(g.wcycles),
                cache_references: copt(g.cache_references),
                cache_misses: copt(g.cache_misses),
                weight: g.weight,
                power_watts: g.power,
                energy_joules: g.power * secs,
                ..base.clone()
            });
        }
        self.records.extend(procs);
        if let Some(dir) = &self.pods {
            self.late_names.name(&mut self.records, dir, &base);
        }
        &self.records
    }
}

/// Where the sampling thread puts each interval's records: the output stage's route to Kafka
/// (`output::ResourceOutlet`), or whatever else takes them (`--once`'s printout, tests).
pub trait ResourceSink: Send {
    fn put_resources(&mut self, records: &[ResourceRecord]);
}

impl<F: FnMut(&[ResourceRecord]) + Send> ResourceSink for F {
    fn put_resources(&mut self, records: &[ResourceRecord]) {
        self(records)
    }
}

/// Options of the sampling thread.
pub struct SamplerThread {
    pub opts: ResourceOptions,
    pub interval: std::time::Duration,
    /// Stop after this many intervals (None = until `stop`).
    pub max_intervals: Option<u64>,
}

/// Runs a `ResourceSampler` on its own thread, calling `sink` with each interval's records.
/// Returns once the programs are attached (or with the load error). Logs once when hardware
/// counters or RAPL are absent.
pub fn spawn_sampler(
    cfg: SamplerThread,
    mut sink: Box<dyn ResourceSink>,
    metrics: std::sync::Arc<crate::resources::ResourceMetrics>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, crate::capture::bpf::CaptureError> {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let t = std::thread::Builder::new()
        .name("wg-resources".into())
        .spawn(move || {
            let mut s = match ResourceSampler::new(&cfg.opts) {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            match &s.cpu.counters_absent {
                Some(why) => log::warn!("hardware counters absent ({why}): on-CPU time is the power attribution weight"),
                None => log::info!("hardware counters open: weighted cycles (HT_r {}) are the power attribution weight", cfg.opts.sched.ht_ratio),
            }
            if let (None, Some(why)) = (&s.cpu.counters_absent, &s.cpu.cache_absent) {
                log::warn!("cache counters absent ({why}): cacheReferences and cacheMisses are null");
            }
            if s.power_source() == PowerSource::Estimated {
                log::warn!(
                    "RAPL not found under {}: power is ESTIMATED by the model ({} W idle, {} W busy per CPU)",
                    cfg.opts.powercap_root.display(),
                    cfg.opts.model.idle_watts_per_cpu,
                    cfg.opts.model.max_watts_per_cpu
                );
            }
            metrics.hw_counters.store(u64::from(s.cpu.has_counters()), Ordering::Relaxed);
            metrics.power_measured.store(u64::from(s.power_source() == PowerSource::Measured), Ordering::Relaxed);
            let start = Instant::now();
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                k += 1;
                let due = start + cfg.interval * k as u32;
                loop {
                    let now = Instant::now();
                    if now >= due || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep((due - now).min(Duration::from_millis(100)));
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let recs = s.sample();
                metrics.records.fetch_add(recs.len() as u64, Ordering::Relaxed);
                if let Some(h) = recs.first() {
                    metrics.host_power_watts_bits.store(h.power_watts.to_bits(), Ordering::Relaxed);
                }
                sink.put_resources(recs);
                // After the output took them (journaled, with a spool): their baseline.
                s.cpu.commit();
                let st = s.cpu.stats();
                let (fill, cap) = s.cpu.map_fill();
                metrics.sched_switches.store(st.switches, Ordering::Relaxed);
                metrics.thread_exits.store(st.exits, Ordering::Relaxed);
                metrics.sched_ringbuf_drops.store(st.ringbuf_drops, Ordering::Relaxed);
                metrics.thread_map_entries.store(fill, Ordering::Relaxed);
                metrics.thread_map_capacity.store(cap, Ordering::Relaxed);
                metrics.thread_map_evictions.store(st.map_evictions, Ordering::Relaxed);
                // Last, with Release: a scrape that sees the interval counted sees its figures.
                metrics.intervals.fetch_add(1, Ordering::Release);
                if cfg.max_intervals.is_some_and(|m| k >= m) {
                    break;
                }
            }
        })
        .map_err(|e| crate::capture::bpf::CaptureError::Other(format!("spawn resource thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(t),
        Ok(Err(e)) => {
            let _ = t.join();
            Err(e)
        }
        Err(_) => {
            let _ = t.join();
            Err(crate::capture::bpf::CaptureError::Other("resource thread died during start-up".into()))
        }
    }
}/// CPUs online now (hotplug can change it between intervals); None if the kernel won't say.
fn online_cpus() -> Option<i32> {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as i32)
}


