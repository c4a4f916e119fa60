//! Command line (contracts.md "Agent command line"), the `--config` file, and their validation.
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};

use file::{cli_names, config_path, file_args};

mod file;
mod shedding;
mod validate;
#[cfg(test)]
mod tests;

pub use file::file_args_from_text;

#[derive(Parser, Debug, Clone)]
#[command(name = "wattgraph-agent", version, about = "Wattgraph node agent: TCP connections via eBPF -> Avro -> Kafka")]
pub struct Config {
    /// TOML file whose keys are the long flag names (`host-id = "a"`, `netns = ["/run/netns/x"]`,
    /// `include-self = true`); flags given on the command line override its keys.
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Configured identity of this host (hostId in every event).
    #[arg(long = "host-id", value_name = "ID")]
    pub host_id: String,

    /// Kafka bootstrap brokers, comma separated HOST:PORT (not needed with --once).
    #[arg(long = "kafka-brokers", value_name = "HOST:PORT", required_unless_present_any = ["once", "unpin"])]
    pub kafka_brokers: Option<String>,

    /// librdkafka properties file (`key=value` lines, `#` comments) for every Kafka client of the
    /// agent, e.g. `security.protocol=SASL_SSL`, `sasl.mechanisms=SCRAM-SHA-512`, `sasl.username`,
    /// `sasl.password`, `ssl.ca.location`. The place for secrets (mode 600).
    #[arg(long = "kafka-config", value_name = "FILE")]
    pub kafka_config: Option<PathBuf>,

    /// One librdkafka property, overriding --kafka-config's; not for secrets. Repeatable.
    #[arg(long = "kafka-option", value_name = "KEY=VALUE")]
    pub kafka_option: Vec<String>,

    /// Kafka topic for ConnectionEvent records.
    #[arg(long, default_value = "wattgraph.connections")]
    pub topic: String,

    /// Only sockets in these network namespaces (nsfs path, e.g. /run/netns/wg-a). Repeatable.
    #[arg(long = "netns", value_name = "PATH")]
    pub netns: Vec<PathBuf>,

    /// Every this often, a SNAPSHOT of each socket with bytes not reported yet (the sweep).
    #[arg(long = "snapshot-interval-ms", default_value_t = 5000)]
    pub snapshot_interval_ms: u64,

    /// Report a SNAPSHOT when this many bytes accumulated since the previous report.
    #[arg(long = "snapshot-bytes", default_value_t = 1_048_576)]
    pub snapshot_bytes: u64,

    /// The byte rule reports a socket at most once per this interval (0 = at every crossing).
    #[arg(long = "snapshot-min-interval-ms", default_value_t = 1000)]
    pub snapshot_min_interval_ms: u64,

    /// Written once the BPF programs are attached.
    #[arg(long = "ready-file", value_name = "PATH")]
    pub ready_file: Option<PathBuf>,

    /// Closed sockets' transaction totals the kernel holds between drains (a ring of at least
    /// this many records).
    #[arg(long = "map-entries", default_value_t = 32768)]
    pub map_entries: u32,

    /// Log level when RUST_LOG is not set (error, warn, info, debug, trace).
    #[arg(long = "log-level", default_value = "info")]
    pub log_level: String,

    /// Seconds between stats lines on stderr.
    #[arg(long = "stats-interval-s", default_value_t = 30)]
    pub stats_interval_s: u64,

    /// Also capture the agent's own sockets (normally ignored in the kernel).
    #[arg(long = "include-self")]
    pub include_self: bool,

    /// Kafka topic for ResourceSample records (CPU and power per host, group, process).
    #[arg(long = "resource-topic", default_value = "wattgraph.resources")]
    pub resource_topic: String,

    /// Length of a CPU/power sampling interval.
    #[arg(long = "sample-interval-ms", default_value_t = 1000)]
    pub sample_interval_ms: u64,

    /// Do not load the sched_switch programs nor emit ResourceSample records.
    #[arg(long = "no-resources")]
    pub no_resources: bool,

    /// Maximum tracked threads (in-kernel LRU map size).
    #[arg(long = "thread-entries", default_value_t = 32768)]
    pub thread_entries: u32,

    /// Root of the powercap sysfs tree holding intel-rapl:* zones.
    #[arg(long = "powercap-root", value_name = "PATH", default_value = "/sys/class/powercap")]
    pub powercap_root: PathBuf,

    /// RAPL: idle power per socket in watts (kept as the host's); default: the lowest
    /// power measured so far.
    #[arg(long = "idle-watts-per-socket", value_name = "W")]
    pub idle_watts_per_socket: Option<f64>,

    /// Estimation model (no RAPL): watts of one idle CPU.
    #[arg(long = "idle-watts-per-cpu", value_name = "W", default_value_t = 1.5)]
    pub idle_watts_per_cpu: f64,

    /// Estimation model (no RAPL): watts of one fully busy CPU.
    #[arg(long = "max-watts-per-cpu", value_name = "W", default_value_t = 6.0)]
    pub max_watts_per_cpu: f64,

    /// HT_r of PowerThesis Eq. 3.1: power of two hyper-threads on one core relative to one.
    #[arg(long = "ht-ratio", default_value_t = 1.1)]
    pub ht_ratio: f64,

    /// Do not open hardware counters (on-CPU time becomes the attribution weight).
    #[arg(long = "no-hw-counters")]
    pub no_hw_counters: bool,

    /// cgroup v2 mount used to resolve cgroup ids (default: /sys/fs/cgroup/unified on
    /// hybrid hosts, else /sys/fs/cgroup).
    #[arg(long = "cgroup-root", value_name = "PATH")]
    pub cgroup_root: Option<PathBuf>,

    /// Interval between ticks of the high-frequency cgroup sampler (CPU, throttling, memory,
    /// I/O, pids of every container); one CgroupStats per container every --sample-interval-ms.
    /// 0 disables it; otherwise 10..1000 (shutdown waits for the current tick).
    #[arg(long = "cgroup-sample-interval-ms", value_name = "MS", default_value_t = 100)]
    pub cgroup_sample_interval_ms: u64,

    /// Kafka topic for CgroupStats records (key = host id).
    #[arg(long = "cgroup-topic", default_value = "wattgraph.cgroups")]
    pub cgroup_topic: String,

    /// Run the cgroup sampler thread SCHED_FIFO (priority 10) so busy containers cannot delay
    /// its ticks; needs CAP_SYS_NICE (if refused, the agent says so and continues).
    #[arg(long = "cgroup-sampler-realtime")]
    pub cgroup_sampler_realtime: bool,

    /// Root of the cgroup v1 controller mounts (cpuacct, cpu, memory, blkio, pids), used by the
    /// cgroup sampler when the v2 root (--cgroup-root) offers no cpu controller.
    #[arg(long = "cgroup-root-v1", value_name = "PATH", default_value = "/sys/fs/cgroup")]
    pub cgroup_root_v1: PathBuf,

    /// Serve Prometheus text metrics on this address (e.g. 127.0.0.1:9400).
    #[arg(long = "metrics-addr", value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,

    /// Kafka topic for TransactionStats records (request/response latency histograms).
    #[arg(long = "transaction-topic", default_value = "wattgraph.transactions")]
    pub transaction_topic: String,

    /// Interval of TransactionStats records (one per connection with transactions).
    #[arg(long = "transaction-interval-ms", default_value_t = 1000)]
    pub transaction_interval_ms: u64,

    /// Histogram rows the kernel can hold (in-kernel hash map), each the cells (connection, route,
    /// kind, bucket) of 8 adjacent buckets.
    #[arg(long = "transaction-hist-entries", default_value_t = 65536)]
    pub transaction_hist_entries: u32,

    /// HTTP/1.x routes (method + normalised path) named per host; transactions of further routes
    /// are filed under OTHER. 0 = request lines are not read.
    #[arg(long = "http-routes", default_value_t = 1024)]
    pub http_routes: u32,

    /// A route without any transaction for this long leaves the route table, making room for
    /// new routes (its name is kept one more such period for requests under way). 0 = never.
    #[arg(long = "http-route-idle-s", default_value_t = 600)]
    pub http_route_idle_s: u64,

    /// Client port masking (PowerThesis §3.3.1): connections that close with fewer transactions than
    /// this, within one interval of their first, are reported merged per process, addresses and
    /// server port, with client port 0. 0 = one record per connection always.
    #[arg(long = "mask-client-port-below", default_value_t = 10)]
    pub mask_client_port_below: u64,

    /// Translated connections (DNAT and/or SNAT in the connection tracking of this host, or of
    /// the --netns namespaces) kept to report a socket that dialled a virtual address as its peer
    /// sees it (ConnectionEvent.nat). 0 = off: virtual addresses are reported as dialled.
    #[arg(long = "nat-entries", default_value_t = 65536)]
    pub nat_entries: u32,

    /// Network namespace(s) whose connection tracking holds the NAT (nsfs path). Default: the
    /// --netns namespaces, else the agent's own. An agent in its own pod network reads the host's
    /// with /proc/1/ns/net (host PID namespace). Repeatable.
    #[arg(long = "nat-netns", value_name = "PATH")]
    pub nat_netns: Vec<PathBuf>,

    /// PodList to name pods (name, namespace, labels) from their cgroup UID: the kubelet's
    /// https://NODE:10250/pods or the API server's
    /// https://kubernetes.default.svc/api/v1/pods?fieldSelector=spec.nodeName=NODE. Unset: UIDs only.
    #[arg(long = "pod-metadata-url", value_name = "URL")]
    pub pod_metadata_url: Option<String>,

    /// Bearer token for --pod-metadata-url, re-read at every fetch (default: the pod's service
    /// account token when the agent runs in a pod).
    #[arg(long = "pod-metadata-token-file", value_name = "FILE")]
    pub pod_metadata_token_file: Option<PathBuf>,

    /// CA bundle (PEM) for an https --pod-metadata-url (default: the service account's ca.crt
    /// when present, else the Web PKI roots).
    #[arg(long = "pod-metadata-ca-file", value_name = "FILE")]
    pub pod_metadata_ca_file: Option<PathBuf>,

    /// Do not verify the server certificate of --pod-metadata-url (kubelets often serve a
    /// self-signed one).
    #[arg(long = "pod-metadata-insecure-tls")]
    pub pod_metadata_insecure_tls: bool,

    /// For nodes sharing one kernel (kind-like clusters): count only what belongs to Kubernetes
    /// node NAME. Sockets: those of the agent's own network namespace and the --netns ones, and
    /// those whose local address is in the node's pod CIDRs (read at start from the API server of
    /// --pod-metadata-url, which it needs). CPU and cgroups: tasks under the node's kubelet cgroup
    /// root, the part of the agent's own cgroup before `kubepods`. The HOST record then covers
    /// those tasks only (their CPU and attributed power); idle and unattributed power and the
    /// RAPL readings are the machine's and left out.
    #[arg(long = "node-scope", value_name = "NODE")]
    pub node_scope: Option<String>,

    /// How often the PodList is fetched.
    #[arg(long = "pod-metadata-interval-ms", value_name = "MS", default_value_t = 15000)]
    pub pod_metadata_interval_ms: u64,

    /// Pod label keys carried in records (bounded: at most 32). Repeatable or comma separated.
    #[arg(long = "pod-labels", value_name = "KEY", value_delimiter = ',', default_values = crate::identity::pod_metadata::DEFAULT_LABELS)]
    pub pod_labels: Vec<String>,

    /// Do not track transactions (kernel) nor publish TransactionStats.
    #[arg(long = "no-transactions")]
    pub no_transactions: bool,

    /// Diagnostic: watch one sampling interval, print connections, top processes by CPU
    /// and the power source, then exit (no Kafka).
    #[arg(long = "once")]
    pub once: bool,

    /// Load shedding of connection lifecycle events to hold the agent's CPU near
    /// --cpu-setpoint: off, kernel-drop (Shedding's domain-blind baseline, in the kernel),
    /// user (read, then dropped in user space), kernel (per-domain plan applied in the kernel).
    #[arg(long = "shed-mode", value_name = "MODE", default_value = "off")]
    pub shed_mode: String,

    /// How the kept connections are shared over domains: fair or priority (--shed-priority).
    #[arg(long = "shed-policy", value_name = "POLICY", default_value = "fair")]
    pub shed_policy: String,

    /// Agent CPU to hold, in cores (CPU seconds per second): 0.05 = 5 % of one core
    /// (= 2.5 % of a 2-core host). Required with --shed-mode other than off.
    #[arg(long = "cpu-setpoint", value_name = "CORES")]
    pub cpu_setpoint: Option<f64>,

    /// Priority of a domain for --shed-policy priority: NAME is a process name (comm) or, with
    /// --shed-domain cgroup, a cgroup path or path component; LEVEL 1..1000 (others: 1). Repeatable.
    #[arg(long = "shed-priority", value_name = "NAME=LEVEL")]
    pub shed_priority: Vec<String>,

    /// Accounting domain of the shedder: process (tgid) or cgroup (cgroup v2 id).
    #[arg(long = "shed-domain", value_name = "DOMAIN", default_value = "process")]
    pub shed_domain: String,

    /// Length of a load-shedding control interval.
    #[arg(long = "shed-interval-ms", default_value_t = 1000)]
    pub shed_interval_ms: u64,

    /// Smallest share of a domain's connections the controller keeps (0..0.5): every
    /// connection keeps a chance to be reported, so counts rescaled from events stay unbiased.
    #[arg(long = "shed-min-keep", value_name = "FRACTION", default_value_t = 0.01)]
    pub shed_min_keep: f64,

    /// Power capping from the budgets graph-service publishes: off (no consumer), dry-run
    /// (consume, compute and report the limits, write nothing) or on (write the RAPL package
    /// limits under --powercap-root).
    #[arg(long = "power-cap", value_enum, value_name = "MODE", default_value_t = crate::control::power_cap::outcome::PowerCapMode::Off)]
    pub power_cap: crate::control::power_cap::outcome::PowerCapMode,

    /// Compacted Kafka topic of PowerBudget records (key = host id), read from the beginning.
    #[arg(long = "power-budget-topic", default_value = "wattgraph.power-budgets")]
    pub power_budget_topic: String,

    /// Never cap the host below this many watts (split over the package zones like the budget).
    #[arg(long = "power-floor-watts", value_name = "W", default_value_t = 0.0)]
    pub power_floor_watts: f64,

    /// Restore the original limits when no valid budget arrived for longer than this.
    #[arg(long = "budget-timeout-s", value_name = "S", default_value_t = 90)]
    pub budget_timeout_s: u64,

    /// The package limits found before the first cap, written here (durably) before it and
    /// removed once they are back at a clean stop; a killed agent's successor restores them.
    /// Must survive an agent restart (a hostPath in Kubernetes).
    #[arg(long = "power-cap-state-file", value_name = "PATH", default_value = "/var/lib/wattgraph/power-cap/original-limits.state")]
    pub power_cap_state_file: PathBuf,

    /// Memory tier of the spool: messages librdkafka holds while Kafka is slow or unreachable
    /// (they never time out). Beyond it records go to --spool-dir, else they are dropped and counted.
    #[arg(long = "spool-memory-messages", value_name = "N", default_value_t = 200_000)]
    pub spool_memory_messages: u64,

    /// Memory tier of the spool in bytes (payloads librdkafka holds; a multiple of 1024):
    /// whichever of this and --spool-memory-messages is reached first sends records on to
    /// --spool-dir. Size it below the container's memory limit.
    #[arg(long = "spool-memory-bytes", value_name = "BYTES", default_value_t = 1 << 30)]
    pub spool_memory_bytes: u64,

    /// Disk tier of the spool: directory for segment files (created if missing). Without it,
    /// records beyond the memory tier are dropped (counted).
    #[arg(long = "spool-dir", value_name = "PATH")]
    pub spool_dir: Option<PathBuf>,

    /// Bound of the disk spool (segment files together); records beyond it are dropped (counted).
    #[arg(long = "spool-max-bytes", value_name = "BYTES", default_value_t = 1 << 30)]
    pub spool_max_bytes: u64,

    /// Pin the connection programs and maps under --bpf-pin-dir: they keep counting while no
    /// agent runs (killed, restarted, drained), and the next agent continues from them. They
    /// stay after the agent stops; --unpin removes them.
    #[arg(long = "pin-bpf")]
    pub pin_bpf: bool,

    /// bpffs directory of the pins (bpffs is mounted at /sys/fs/bpf, or on the directory, when
    /// it is not yet). One agent per directory.
    #[arg(long = "bpf-pin-dir", value_name = "PATH", default_value = crate::capture::pins::DEFAULT_PIN_ROOT)]
    pub bpf_pin_dir: PathBuf,

    /// Remove the pins under --bpf-pin-dir (the pinned programs stop counting) and exit.
    #[arg(long = "unpin")]
    pub unpin: bool,

    /// With --pin-bpf, in a Kubernetes DaemonSet: at a clean stop, unpin when this DaemonSet
    /// (NAMESPACE/NAME) is gone or being deleted (an uninstall), keep the pins otherwise (a
    /// restart, or the API server cannot tell). Watched from the start on --kube-api-url with
    /// --pod-metadata-token-file and --pod-metadata-ca-file (the service account's by default).
    #[arg(long = "unpin-when-daemonset-gone", value_name = "NAMESPACE/NAME")]
    pub unpin_when_daemonset_gone: Option<String>,

    /// The Kubernetes API server, for --unpin-when-daemonset-gone.
    #[arg(long = "kube-api-url", value_name = "URL", default_value = "https://kubernetes.default.svc")]
    pub kube_api_url: String,
}

/// Why the configuration was refused.
#[derive(Debug)]
pub enum ConfigError {
    /// From clap (also `--help` / `--version`): `exit()` prints it with clap's exit code.
    Clap(clap::Error),
    /// A bad value or key; the message names it (and the file and key when it came from one).
    Invalid(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Clap(e) => write!(f, "{}", e.to_string().trim_end()),
            ConfigError::Invalid(m) => f.write_str(m),
        }
    }
}

impl Config {
    /// Parses the command line (`argv[0]` = program name) and the `--config` file it names,
    /// command-line flags overriding the file's keys, then `validate`s the result. Every message
    /// names the flag; a value taken from the file also names the file and its key.
    pub fn load<I, T>(argv: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
        let mut full: Vec<OsString> = argv.iter().take(1).cloned().collect();
        let mut from_file = (None, Vec::new());
        if let Some(path) = config_path(&argv) {
            let (args, keys) = file_args(&path, &cli_names(&argv)).map_err(ConfigError::Invalid)?;
            full.extend(args);
            from_file = (Some(path), keys);
        }
        full.extend(argv.iter().skip(1).cloned());
        let matches = Config::command().try_get_matches_from(full).map_err(ConfigError::Clap)?;
        let cfg = Config::from_arg_matches(&matches).map_err(ConfigError::Clap)?;
        cfg.validate().map_err(|msg| {
            // validate() messages start with the offending flag.
            let flag = msg.strip_prefix("--").and_then(|m| m.split([' ', '\'']).next()).unwrap_or("");
            match &from_file {
                (Some(path), keys) if keys.iter().any(|k| k == flag) => {
                    ConfigError::Invalid(format!("config file '{}': key '{flag}': {msg}", path.display()))
                }
                _ => ConfigError::Invalid(msg),
            }
        })?;
        Ok(cfg)
    }

    /// The brokers with --kafka-config and --kafka-option, checked (`output::kafka_client`).
    pub fn kafka_client(&self) -> Result<crate::output::kafka_client::KafkaClient, String> {
        crate::output::kafka_client::KafkaClient::load(self.kafka_brokers.as_deref().unwrap_or(""), self.kafka_config.as_deref(), &self.kafka_option)
    }
}
