//! The flags (`Config`) turned into each stage's options.
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::capture::connections::CaptureOptions;
use crate::capture::pin_owner::{self, OwnerWatch};
use crate::capture::sched::SchedOptions;
use crate::config::Config;
use crate::control::power_cap::consumer::ConsumerOptions;
use crate::control::shedding::ShedController;
use crate::identity::kube_api::KubeClient;
use crate::identity::pod_metadata::{PodDirectory, PodSource, PodSourceOptions};
use crate::output::kafka::SpoolOptions;
use crate::output::kafka_client::KafkaClient;
use crate::output::Topics;
use crate::resources::cgroup_report::CgroupThread;
use crate::resources::cgroup_sampler::Hierarchy;
use crate::resources::power::ModelParams;
use crate::resources::sampler::{ResourceOptions, SamplerThread};

use super::scope::NodeScope;

/// Where a pod's service account token and CA are mounted.
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The capture of the running agent; shedding priorities by pod name read `pods`. Under
/// --node-scope: the agent's own namespace (the node's: hostNetwork) too, and the pod CIDRs.
pub(super) fn capture(cfg: &Config, pods: Option<Arc<PodDirectory>>, scope: Option<&NodeScope>) -> CaptureOptions {
    let mut netns = cfg.netns.clone();
    if scope.is_some() {
        netns.push(PathBuf::from("/proc/self/ns/net"));
    }
    CaptureOptions {
        snapshot_bytes: cfg.snapshot_bytes,
        snapshot_min_interval: Duration::from_millis(cfg.snapshot_min_interval_ms),
        snapshot_interval: Duration::from_millis(cfg.snapshot_interval_ms),
        netns,
        local_cidrs: scope.map(|s| s.cidrs.clone()).unwrap_or_default(),
        map_entries: cfg.map_entries,
        ignore_self: !cfg.include_self,
        transaction_interval: (!cfg.no_transactions).then(|| Duration::from_millis(cfg.transaction_interval_ms)),
        txn_hist_entries: cfg.transaction_hist_entries,
        http_routes: cfg.http_routes,
        http_route_idle: Duration::from_secs(cfg.http_route_idle_s),
        mask_client_port_below: cfg.mask_client_port_below,
        nat_entries: cfg.nat_entries as usize,
        nat_netns: cfg.nat_netns.clone(),
        shed: cfg.shed_options().unwrap_or(None).map(|o| ShedController::boxed(o, pods)),
        pin_root: cfg.pin_bpf.then(|| cfg.bpf_pin_dir.clone()),
        ..Default::default()
    }
}

/// The capture of `--once`: one sampling interval, every connection swept and drained at its end.
pub(super) fn capture_once(cfg: &Config, scope: Option<&NodeScope>) -> CaptureOptions {
    let every = Duration::from_millis(cfg.sample_interval_ms.max(100));
    CaptureOptions {
        snapshot_bytes: CaptureOptions::default().snapshot_bytes,
        snapshot_interval: every,
        transaction_interval: (!cfg.no_transactions).then_some(every),
        pin_root: None, // a diagnostic: nothing outlives it
        ..capture(cfg, None, scope)
    }
}

pub(super) fn spool(cfg: &Config) -> SpoolOptions {
    SpoolOptions { memory_messages: cfg.spool_memory_messages, memory_bytes: cfg.spool_memory_bytes, dir: cfg.spool_dir.clone(), max_bytes: cfg.spool_max_bytes }
}

pub(super) fn topics(cfg: &Config) -> Topics {
    Topics {
        connections: cfg.topic.clone(),
        transactions: cfg.transaction_topic.clone(),
        resources: cfg.resource_topic.clone(),
        cgroups: cfg.cgroup_topic.clone(),
    }
}

/// The pod metadata refresher of --pod-metadata-url, with the pod's service account token and
/// CA as defaults when the agent runs in a pod. A source that cannot be set up is an error;
/// one that is down at start only delays the names.
pub(super) fn start_pod_metadata(cfg: &Config, stop: Arc<AtomicBool>) -> anyhow::Result<Option<(Arc<PodDirectory>, JoinHandle<()>)>> {
    let Some(source) = pod_source(cfg)? else { return Ok(None) };
    let dir = Arc::new(PodDirectory::default());
    log::info!("pod metadata: PodList from {} every {} ms", cfg.pod_metadata_url.as_deref().unwrap_or(""), cfg.pod_metadata_interval_ms);
    let t = source.spawn(dir.clone(), stop);
    Ok(Some((dir, t)))
}

/// --pod-metadata-token-file and --pod-metadata-ca-file, else the service account's for https.
pub(super) fn kube_credentials(cfg: &Config, url: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let sa = |f: &str| {
        let p = Path::new(SA_DIR).join(f);
        (url.starts_with("https://") && p.is_file()).then_some(p)
    };
    (cfg.pod_metadata_token_file.clone().or_else(|| sa("token")), cfg.pod_metadata_ca_file.clone().or_else(|| sa("ca.crt")))
}

/// The watch of --unpin-when-daemonset-gone (with --pin-bpf).
pub(super) fn owner_watch(cfg: &Config, stop: Arc<AtomicBool>) -> anyhow::Result<Option<OwnerWatch>> {
    let Some(r) = cfg.unpin_when_daemonset_gone.as_deref().filter(|_| cfg.pin_bpf) else { return Ok(None) };
    let (ns, name) = pin_owner::parse_ref(r).map_err(anyhow::Error::msg)?;
    let (token, ca) = kube_credentials(cfg, &cfg.kube_api_url);
    let client = KubeClient::new(token, ca.as_ref(), false, "--pod-metadata-ca-file")?;
    log::info!("pins: unpinned at a clean stop if the DaemonSet {ns}/{name} is gone (watched on {})", cfg.kube_api_url);
    Ok(Some(OwnerWatch::start(client, &cfg.kube_api_url, &ns, &name, stop)))
}

pub(super) fn pod_source(cfg: &Config) -> anyhow::Result<Option<PodSource>> {
    let Some(url) = &cfg.pod_metadata_url else { return Ok(None) };
    let (token_file, ca_file) = kube_credentials(cfg, url);
    let opts = PodSourceOptions {
        url: url.clone(),
        token_file,
        ca_file,
        insecure_tls: cfg.pod_metadata_insecure_tls,
        interval: Duration::from_millis(cfg.pod_metadata_interval_ms),
        labels: cfg.pod_labels.clone(),
    };
    Ok(Some(PodSource::new(opts)?))
}

/// The cgroup sampler thread's options, None when --cgroup-sample-interval-ms is 0.
pub(super) fn cgroups(cfg: &Config, max_intervals: Option<u64>, pods: Option<Arc<PodDirectory>>, scope: Option<&NodeScope>) -> Option<CgroupThread> {
    if cfg.cgroup_sample_interval_ms == 0 {
        return None;
    }
    let v2 = cfg.cgroup_root.clone().unwrap_or_else(crate::identity::cgroup::default_v2_root);
    Some(CgroupThread {
        host_id: cfg.host_id.clone(),
        hierarchy: Hierarchy::detect(&v2, &cfg.cgroup_root_v1),
        tick_interval_ns: cfg.cgroup_sample_interval_ms * 1_000_000,
        report_interval_ns: cfg.sample_interval_ms * 1_000_000,
        realtime: cfg.cgroup_sampler_realtime,
        max_intervals,
        pods,
        within: scope.and_then(|s| s.cgroups.as_ref()).map(|r| r.path.clone()).unwrap_or_default(),
    })
}

pub(super) fn sampler(cfg: &Config, max_intervals: Option<u64>, pods: Option<Arc<PodDirectory>>, scope: Option<&NodeScope>) -> SamplerThread {
    let mut opts = ResourceOptions::new(&cfg.host_id);
    opts.pods = pods;
    opts.node_cgroups = scope.and_then(|s| s.cgroups.clone());
    opts.sched = SchedOptions {
        thread_entries: cfg.thread_entries,
        ht_ratio: cfg.ht_ratio,
        use_counters: !cfg.no_hw_counters,
        // `--once` is a diagnostic: nothing outlives it.
        pin_root: (cfg.pin_bpf && max_intervals.is_none()).then(|| cfg.bpf_pin_dir.clone()),
        ..SchedOptions::default()
    };
    opts.powercap_root = cfg.powercap_root.clone();
    opts.idle_watts_per_socket = cfg.idle_watts_per_socket;
    opts.model = ModelParams { idle_watts_per_cpu: cfg.idle_watts_per_cpu, max_watts_per_cpu: cfg.max_watts_per_cpu };
    if let Some(r) = &cfg.cgroup_root {
        opts.cgroup_root = r.clone();
    }
    SamplerThread { opts, interval: Duration::from_millis(cfg.sample_interval_ms), max_intervals }
}

pub(super) fn power_cap(cfg: &Config, kafka: KafkaClient) -> ConsumerOptions {
    ConsumerOptions {
        host_id: cfg.host_id.clone(),
        mode: cfg.power_cap,
        powercap_root: cfg.powercap_root.clone(),
        state_file: cfg.power_cap_state_file.clone(),
        floor_watts: cfg.power_floor_watts,
        budget_timeout: Duration::from_secs(cfg.budget_timeout_s),
        topic: cfg.power_budget_topic.clone(),
        kafka,
    }
}
