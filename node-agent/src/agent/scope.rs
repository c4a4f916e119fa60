//! `--node-scope NODE` at start: the node's pod CIDRs from the API server (waited for) and its
//! kubelet cgroup root from the agent's own cgroup, said in the log; each stage's options take
//! their part (`options`).
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::config::Config;
use crate::identity::kube_api::KubeClient;
use crate::identity::node_cgroups::{kubelet_root, KubeletRoot};
use crate::identity::node_scope::{api_base, wait_for_pod_cidrs, PodCidr};

/// How long the start waits for the Node to have pod CIDRs.
const CIDR_WAIT: Duration = Duration::from_secs(60);

/// What belongs to the node.
pub(super) struct NodeScope {
    pub cidrs: Vec<PodCidr>,
    /// None when neither CPU accounting nor the cgroup sampler runs.
    pub cgroups: Option<KubeletRoot>,
}

/// The scope of --node-scope (None without it, or when `stop` came while waiting).
pub(super) fn resolve(cfg: &Config, stop: &AtomicBool) -> Result<Option<NodeScope>> {
    let Some(node) = cfg.node_scope.as_deref() else { return Ok(None) };
    let Some(url) = cfg.pod_metadata_url.as_deref() else { bail!("--node-scope '{node}' needs --pod-metadata-url") };
    // Before the wait: a start that cannot count CPU should not first wait a minute.
    let cgroups = if cfg.no_resources && cfg.cgroup_sample_interval_ms == 0 {
        None
    } else {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        match kubelet_root(&own) {
            Some(r) => Some(r),
            None => bail!(
                "--node-scope '{node}': no kubelet cgroup root: the agent's own cgroup (/proc/self/cgroup) has no kubepods segment \
                 (run it as a pod of the node, or with --no-resources and --cgroup-sample-interval-ms 0)"
            ),
        }
    };
    let api = api_base(url)?;
    let (token, ca) = super::options::kube_credentials(cfg, url);
    let client = KubeClient::new(token, ca.as_ref(), cfg.pod_metadata_insecure_tls, "--pod-metadata-ca-file")?;
    let Some(cidrs) = wait_for_pod_cidrs(&client, &api, node, CIDR_WAIT, stop)? else { return Ok(None) };
    let netns = std::iter::once("this network namespace".to_string()).chain(cfg.netns.iter().map(|p| p.display().to_string()));
    let cpu = match &cgroups {
        None => "no CPU accounting".to_string(),
        Some(r) => format!(
            "CPU and cgroups of tasks under the kubelet cgroup root '{}' (cgroup {})",
            if r.path.is_empty() { "/" } else { &r.path },
            if r.controllers.is_empty() { "v2".to_string() } else { format!("v1 {}", r.controllers) }
        ),
    };
    log::info!(
        "node scope: node {node}; sockets of {} and of local addresses in the pod CIDRs {} (GET {api}/api/v1/nodes/{node}); {cpu}",
        netns.collect::<Vec<_>>().join(", "),
        cidrs.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(", "),
    );
    Ok(Some(NodeScope { cidrs, cgroups }))
}
