//! What clap cannot check: each value against what the agent can use; every message starts with
//! the offending flag (so `load` can name the config file key it came from).
use super::Config;

impl Config {
    /// Checks values clap cannot; each message names the offending value.
    pub fn validate(&self) -> Result<(), String> {
        if self.host_id.trim().is_empty() {
            return Err("--host-id must not be empty".into());
        }
        if self.host_id.contains('/') {
            return Err(format!("--host-id '{}' must not contain '/' (it is part of process ids)", self.host_id));
        }
        let brokers = self.kafka_brokers.as_deref().unwrap_or("");
        if brokers.trim().is_empty() && !self.once && !self.unpin {
            return Err("--kafka-brokers must not be empty".into());
        }
        for b in brokers.split(',').filter(|_| !brokers.trim().is_empty()) {
            let b = b.trim();
            let (host, port) = b
                .rsplit_once(':')
                .ok_or_else(|| format!("--kafka-brokers entry '{b}' is not HOST:PORT"))?;
            if host.is_empty() {
                return Err(format!("--kafka-brokers entry '{b}' has an empty host"));
            }
            match port.parse::<u16>() {
                Ok(p) if p > 0 => {}
                _ => return Err(format!("--kafka-brokers entry '{b}' has an invalid port '{port}'")),
            }
        }
        if !(self.once || self.unpin) || self.kafka_config.is_some() || !self.kafka_option.is_empty() {
            self.kafka_client()?;
        }
        for (flag, t) in [
            ("--topic", &self.topic),
            ("--resource-topic", &self.resource_topic),
            ("--transaction-topic", &self.transaction_topic),
            ("--cgroup-topic", &self.cgroup_topic),
            ("--power-budget-topic", &self.power_budget_topic),
        ] {
            if t.is_empty() || t.len() > 249 || !t.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) || t == "." || t == ".." {
                return Err(format!("{flag} '{t}' is not a valid Kafka topic name ([a-zA-Z0-9._-], 1..249 chars)"));
            }
        }
        if !(10..=3_600_000).contains(&self.sample_interval_ms) {
            return Err(format!("--sample-interval-ms '{}' must be between 10 and 3600000", self.sample_interval_ms));
        }
        if !(10..=3_600_000).contains(&self.transaction_interval_ms) {
            return Err(format!("--transaction-interval-ms '{}' must be between 10 and 3600000", self.transaction_interval_ms));
        }
        if !(1024..=16_777_216).contains(&self.transaction_hist_entries) {
            return Err(format!("--transaction-hist-entries '{}' must be between 1024 and 16777216", self.transaction_hist_entries));
        }
        if let Some(u) = &self.pod_metadata_url {
            if !(u.starts_with("http://") || u.starts_with("https://")) || u.len() < 10 {
                return Err(format!("--pod-metadata-url '{u}' must be an http:// or https:// URL"));
            }
        }
        if let Some(n) = &self.node_scope {
            let ok = !n.is_empty()
                && n.len() <= 253
                && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
                && n.starts_with(|c: char| c.is_ascii_alphanumeric())
                && n.ends_with(|c: char| c.is_ascii_alphanumeric());
            if !ok {
                return Err(format!("--node-scope '{n}' is not a Kubernetes node name (lowercase letters, digits, '-' and '.')"));
            }
            if self.pod_metadata_url.is_none() {
                return Err(format!(
                    "--node-scope '{n}' needs --pod-metadata-url: the node's pod CIDRs are read from that API server (GET <api>/api/v1/nodes/{n})"
                ));
            }
        }
        for (flag, f) in [("--pod-metadata-token-file", &self.pod_metadata_token_file), ("--pod-metadata-ca-file", &self.pod_metadata_ca_file)] {
            if let Some(f) = f {
                if let Err(e) = std::fs::File::open(f) {
                    return Err(format!("{flag} '{}' cannot be read: {e}", f.display()));
                }
            }
        }
        if let Some(r) = &self.unpin_when_daemonset_gone {
            crate::capture::pin_owner::parse_ref(r)?;
            if !self.pin_bpf {
                return Err(format!("--unpin-when-daemonset-gone '{r}' needs --pin-bpf (without pins there is nothing to unpin)"));
            }
        }
        let u = &self.kube_api_url;
        if !(u.starts_with("http://") || u.starts_with("https://")) || u.len() < 10 || u.contains(['?', '#']) {
            return Err(format!("--kube-api-url '{u}' must be an http:// or https:// URL without a query"));
        }
        if !(1000..=3_600_000).contains(&self.pod_metadata_interval_ms) {
            return Err(format!("--pod-metadata-interval-ms '{}' must be between 1000 and 3600000", self.pod_metadata_interval_ms));
        }
        if self.pod_labels.len() > 32 {
            return Err(format!("--pod-labels has {} keys; at most 32 (label values become record fields)", self.pod_labels.len()));
        }
        if let Some(k) = self.pod_labels.iter().find(|k| k.is_empty() || k.len() > 317 || k.chars().any(|c| c.is_whitespace() || c == '=')) {
            return Err(format!("--pod-labels '{k}' is not a label key"));
        }
        if self.http_routes > 1_048_576 {
            return Err(format!("--http-routes '{}' must be between 0 and 1048576", self.http_routes));
        }
        if self.http_route_idle_s > 604_800 {
            return Err(format!("--http-route-idle-s '{}' must be between 0 and 604800 (a week)", self.http_route_idle_s));
        }
        if self.mask_client_port_below > 1_000_000 {
            return Err(format!("--mask-client-port-below '{}' must be between 0 and 1000000", self.mask_client_port_below));
        }
        if self.nat_entries > 4_194_304 {
            return Err(format!("--nat-entries '{}' must be between 0 and 4194304", self.nat_entries));
        }
        if !(64..=4_194_304).contains(&self.thread_entries) {
            return Err(format!("--thread-entries '{}' must be between 64 and 4194304", self.thread_entries));
        }
        if !(1.0..=2.0).contains(&self.ht_ratio) {
            return Err(format!("--ht-ratio '{}' must be between 1.0 and 2.0", self.ht_ratio));
        }
        let w_ok = |w: f64| w.is_finite() && (0.0..=10_000.0).contains(&w);
        if let Some(w) = self.idle_watts_per_socket {
            if !w_ok(w) {
                return Err(format!("--idle-watts-per-socket '{w}' must be between 0 and 10000"));
            }
        }
        if !w_ok(self.idle_watts_per_cpu) {
            return Err(format!("--idle-watts-per-cpu '{}' must be between 0 and 10000", self.idle_watts_per_cpu));
        }
        if !w_ok(self.max_watts_per_cpu) || self.max_watts_per_cpu < self.idle_watts_per_cpu {
            return Err(format!(
                "--max-watts-per-cpu '{}' must be between --idle-watts-per-cpu ({}) and 10000",
                self.max_watts_per_cpu, self.idle_watts_per_cpu
            ));
        }
        if !w_ok(self.power_floor_watts) {
            return Err(format!("--power-floor-watts '{}' must be between 0 and 10000", self.power_floor_watts));
        }
        if !(1..=86_400).contains(&self.budget_timeout_s) {
            return Err(format!("--budget-timeout-s '{}' must be between 1 and 86400", self.budget_timeout_s));
        }
        if self.power_cap_state_file.is_dir() || self.power_cap_state_file.file_name().is_none() {
            return Err(format!("--power-cap-state-file '{}' must name a file, not a directory", self.power_cap_state_file.display()));
        }
        if self.cgroup_sample_interval_ms != 0 && !(10..=1000).contains(&self.cgroup_sample_interval_ms) {
            return Err(format!(
                "--cgroup-sample-interval-ms '{}' must be 0 (off) or between 10 and 1000",
                self.cgroup_sample_interval_ms
            ));
        }
        if self.cgroup_sample_interval_ms != 0 && !self.cgroup_root_v1.is_dir() {
            return Err(format!("--cgroup-root-v1 '{}' is not a directory", self.cgroup_root_v1.display()));
        }
        if let Some(p) = &self.cgroup_root {
            if !p.is_dir() {
                return Err(format!("--cgroup-root '{}' is not a directory", p.display()));
            }
        }
        if self.snapshot_interval_ms == 0 {
            return Err("--snapshot-interval-ms '0' must be at least 1".into());
        }
        if self.snapshot_interval_ms > 86_400_000 {
            return Err(format!("--snapshot-interval-ms '{}' is more than a day", self.snapshot_interval_ms));
        }
        if self.snapshot_bytes == 0 {
            return Err("--snapshot-bytes '0' must be at least 1".into());
        }
        if self.snapshot_min_interval_ms > 86_400_000 {
            return Err(format!("--snapshot-min-interval-ms '{}' is more than a day", self.snapshot_min_interval_ms));
        }
        if !(64..=4_194_304).contains(&self.map_entries) {
            return Err(format!("--map-entries '{}' must be between 64 and 4194304", self.map_entries));
        }
        if !["error", "warn", "info", "debug", "trace", "off"].contains(&self.log_level.as_str()) {
            return Err(format!("--log-level '{}' must be one of error, warn, info, debug, trace, off", self.log_level));
        }
        if self.stats_interval_s == 0 {
            return Err("--stats-interval-s '0' must be at least 1".into());
        }
        if !(1..=10_000_000).contains(&self.spool_memory_messages) {
            return Err(format!("--spool-memory-messages '{}' must be between 1 and 10000000", self.spool_memory_messages));
        }
        if !(1024..=1 << 40).contains(&self.spool_memory_bytes) || !self.spool_memory_bytes.is_multiple_of(1024) {
            return Err(format!("--spool-memory-bytes '{}' must be a multiple of 1024 between 1024 and 2^40", self.spool_memory_bytes));
        }
        if !(65_536..=1 << 50).contains(&self.spool_max_bytes) {
            return Err(format!("--spool-max-bytes '{}' must be between 65536 and 2^50", self.spool_max_bytes));
        }
        if let Some(d) = &self.spool_dir {
            if d.exists() && !d.is_dir() {
                return Err(format!("--spool-dir '{}' is not a directory", d.display()));
            }
        }
        self.shed_options()?;
        for (flag, paths) in [("--netns", &self.netns), ("--nat-netns", &self.nat_netns)] {
            for p in paths {
                netns_readable(flag, p)?;
            }
        }
        Ok(())
    }
}

/// A --netns/--nat-netns path exists and can be read; another process's /proc/<pid>/ns/net is
/// refused without ptrace read access to it (CAP_SYS_PTRACE when its capabilities exceed ours).
fn netns_readable(flag: &str, p: &std::path::Path) -> Result<(), String> {
    match std::fs::metadata(p) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("{flag} '{}' does not exist", p.display())),
        Err(e) => Err(format!(
            "{flag} '{}' cannot be read ({e}); a /proc/<pid>/ns path of another process needs CAP_SYS_PTRACE, a bind mount of it (ip netns) does not",
            p.display()
        )),
    }
}
