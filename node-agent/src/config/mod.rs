//! Command line (contracts.md "Agent command line"), the `--config` file, and their validation.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

mod shedding;

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
    #[arg(long = "kafka-brokers", value_name = "HOST:PORT", required_unless_present = "once")]
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

    /// Written once the BPF programs are attached.
    #[arg(long = "ready-file", value_name = "PATH")]
    pub ready_file: Option<PathBuf>,

    /// Maximum tracked sockets (in-kernel LRU map size).
    #[arg(long = "map-entries", default_value_t = 65536)]
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

    /// HT_r of Eq. 3.1: power of two hyper-threads on one core relative to one.
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

    /// Histogram cells (connection, kind, bucket) the kernel can hold (in-kernel hash map).
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

    /// Client port masking (thesis §3.3.1): connections that close with fewer transactions than
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
    /// --cpu-setpoint: off, kernel-drop (the paper's domain-blind baseline, in the kernel),
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
    #[arg(long = "power-cap", value_enum, value_name = "MODE", default_value_t = crate::control::power_cap::budget::PowerCapMode::Off)]
    pub power_cap: crate::control::power_cap::budget::PowerCapMode,

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

    /// Disk tier of the spool: directory for segment files (created if missing). Without it,
    /// records beyond the memory tier are dropped (counted).
    #[arg(long = "spool-dir", value_name = "PATH")]
    pub spool_dir: Option<PathBuf>,

    /// Bound of the disk spool (segment files together); records beyond it are dropped (counted).
    #[arg(long = "spool-max-bytes", value_name = "BYTES", default_value_t = 1 << 30)]
    pub spool_max_bytes: u64,
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

/// Long names given on the command line (`--name` or `--name=value`), up to a `--`.
/// Exact because no flag takes a value starting with `--` as a separate token.
fn cli_names(argv: &[OsString]) -> HashSet<String> {
    let mut names = HashSet::new();
    for a in argv.iter().skip(1) {
        let Some(a) = a.to_str() else { continue };
        if a == "--" {
            break;
        }
        if let Some(n) = a.strip_prefix("--") {
            names.insert(n.split_once('=').map_or(n, |(k, _)| k).to_string());
        }
    }
    names
}

/// The `--config` value of the command line, if any.
fn config_path(argv: &[OsString]) -> Option<PathBuf> {
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if a == "--config" {
            return it.next().map(PathBuf::from);
        }
        if let Some(p) = a.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(PathBuf::from(p));
        }
    }
    None
}

/// The TOML type a flag takes in the file.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    Switch,
    List,
    Integer,
    Number,
    Text,
}

fn want(arg: &clap::Arg) -> Want {
    use std::any::TypeId;
    match arg.get_action() {
        ArgAction::SetTrue => Want::Switch,
        ArgAction::Append => Want::List,
        _ => {
            let t = arg.get_value_parser().type_id();
            if [TypeId::of::<u64>(), TypeId::of::<u32>(), TypeId::of::<u16>(), TypeId::of::<i64>()].iter().any(|x| t == *x) {
                Want::Integer
            } else if t == TypeId::of::<f64>() {
                Want::Number
            } else {
                Want::Text
            }
        }
    }
}

/// The file's keys as `--key=value` arguments (each checked for its TOML type), with the keys
/// they came from. Keys named in `skip` (given on the command line) are left out, so a
/// command-line list replaces the file's list instead of adding to it.
fn file_args(path: &Path, skip: &HashSet<String>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let where_ = format!("config file '{}'", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{where_}: cannot read it: {e}"))?;
    file_args_from_text(&text, &where_, skip)
}

/// `file_args` of a file's text; `where_` names the file in messages.
pub fn file_args_from_text(text: &str, where_: &str, skip: &HashSet<String>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| format!("{where_}: not valid TOML: {}", e.to_string().trim_end()))?;
    let cmd = Config::command();
    let mut args = Vec::new();
    let mut keys = Vec::new();
    for (key, item) in doc.as_table().iter() {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(key) && !["config", "help", "version"].contains(&key))
            .ok_or_else(|| format!("{where_}: unknown key '{key}' (keys are the long flag names without '--'; see --help)"))?;
        let w = want(arg);
        let bad = |expected: &str| {
            let got = match item {
                toml_edit::Item::Value(v) => v.type_name(),
                _ => "table",
            };
            format!("{where_}: key '{key}' must be {expected}, not {got}")
        };
        let value = item.as_value();
        let mut values: Vec<String> = Vec::new();
        match w {
            Want::Switch => match value.and_then(|v| v.as_bool()) {
                Some(true) => values.push(String::new()),
                Some(false) => {}
                None => return Err(bad("a boolean (true or false)")),
            },
            Want::List => {
                let a = value.and_then(|v| v.as_array()).ok_or_else(|| bad("an array of strings"))?;
                for v in a.iter() {
                    values.push(v.as_str().ok_or_else(|| bad("an array of strings"))?.to_string());
                }
            }
            Want::Integer => values.push(value.and_then(|v| v.as_integer()).ok_or_else(|| bad("an integer"))?.to_string()),
            Want::Number => {
                let v = value.and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64))).ok_or_else(|| bad("a number"))?;
                values.push(v.to_string());
            }
            Want::Text => values.push(value.and_then(|v| v.as_str()).ok_or_else(|| bad("a string"))?.to_string()),
        }
        if skip.contains(key) {
            continue;
        }
        for v in values {
            // `--key=value` in one token, so a value starting with '-' stays a value.
            args.push(OsString::from(if w == Want::Switch { format!("--{key}") } else { format!("--{key}={v}") }));
        }
        keys.push(key.to_string());
    }
    // The file's values alone through clap's own value parsers, to blame the file for them
    // (flags required of the whole configuration may come from the command line).
    let mut only_file = vec![OsString::from("wattgraph-agent")];
    only_file.extend(args.iter().cloned());
    if let Err(e) = Config::command().try_get_matches_from(only_file) {
        if e.kind() != clap::error::ErrorKind::MissingRequiredArgument {
            let arg = e.get(clap::error::ContextKind::InvalidArg).map(|a| a.to_string()).unwrap_or_default();
            let key = arg.trim_start_matches("--").split([' ', '=']).next().unwrap_or("").to_string();
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("").trim_start_matches("error: ");
            return Err(format!("{where_}: key '{key}': {first}"));
        }
    }
    Ok((args, keys))
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

    /// The brokers with --kafka-config and --kafka-option, checked (kafka_client.rs).
    pub fn kafka_client(&self) -> Result<crate::output::kafka_client::KafkaClient, String> {
        crate::output::kafka_client::KafkaClient::load(self.kafka_brokers.as_deref().unwrap_or(""), self.kafka_config.as_deref(), &self.kafka_option)
    }

    /// Checks values clap cannot; each message names the offending value.
    pub fn validate(&self) -> Result<(), String> {
        if self.host_id.trim().is_empty() {
            return Err("--host-id must not be empty".into());
        }
        if self.host_id.contains('/') {
            return Err(format!("--host-id '{}' must not contain '/' (it is part of process ids)", self.host_id));
        }
        let brokers = self.kafka_brokers.as_deref().unwrap_or("");
        if brokers.trim().is_empty() && !self.once {
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
        if !self.once || self.kafka_config.is_some() || !self.kafka_option.is_empty() {
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
        for (flag, f) in [("--pod-metadata-token-file", &self.pod_metadata_token_file), ("--pod-metadata-ca-file", &self.pod_metadata_ca_file)] {
            if let Some(f) = f {
                if let Err(e) = std::fs::File::open(f) {
                    return Err(format!("{flag} '{}' cannot be read: {e}", f.display()));
                }
            }
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
        if !(64..=16_777_216).contains(&self.map_entries) {
            return Err(format!("--map-entries '{}' must be between 64 and 16777216", self.map_entries));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Config, String> {
        let mut args = vec!["wattgraph-agent", "--host-id", "h1", "--kafka-brokers", "127.0.0.1:9092"];
        args.extend_from_slice(extra);
        let c = Config::try_parse_from(args).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.topic, "wattgraph.connections");
        assert_eq!(c.snapshot_interval_ms, 5000);
        assert_eq!(c.snapshot_bytes, 1_048_576);
        assert_eq!(c.map_entries, 65536);
        assert!(c.netns.is_empty() && c.ready_file.is_none() && !c.include_self);
        assert_eq!((c.sample_interval_ms, c.resource_topic.as_str(), c.ht_ratio), (1000, "wattgraph.resources", 1.1));
        assert!(c.metrics_addr.is_none() && !c.once && !c.no_resources);
        assert_eq!((c.transaction_topic.as_str(), c.transaction_interval_ms, c.transaction_hist_entries), ("wattgraph.transactions", 1000, 65536));
        assert!(!c.no_transactions);
    }

    #[test]
    fn cgroup_sampler_flags() {
        let c = parse(&[]).unwrap();
        assert_eq!((c.cgroup_sample_interval_ms, c.cgroup_topic.as_str()), (100, "wattgraph.cgroups"));
        assert!(!c.cgroup_sampler_realtime);
        assert_eq!(c.cgroup_root_v1, PathBuf::from("/sys/fs/cgroup"));
        let c = parse(&["--cgroup-sample-interval-ms", "0", "--cgroup-root-v1", "/nonexistent"]).unwrap();
        assert_eq!(c.cgroup_sample_interval_ms, 0, "0 disables the sampler (and its root is not needed)");
        let c = parse(&["--cgroup-sample-interval-ms", "10", "--cgroup-topic", "c", "--cgroup-sampler-realtime", "--cgroup-root-v1", "/tmp"]).unwrap();
        assert_eq!((c.cgroup_sample_interval_ms, c.cgroup_topic.as_str(), c.cgroup_sampler_realtime), (10, "c", true));
        for (args, needle) in [
            (&["--cgroup-sample-interval-ms", "9"][..], "--cgroup-sample-interval-ms '9'"),
            (&["--cgroup-sample-interval-ms", "1001"][..], "--cgroup-sample-interval-ms '1001'"),
            (&["--cgroup-topic", "a b"][..], "--cgroup-topic 'a b'"),
            (&["--cgroup-root-v1", "/nonexistent/v1"][..], "--cgroup-root-v1 '/nonexistent/v1'"),
        ] {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    #[test]
    fn power_cap_flags() {
        use crate::control::power_cap::budget::PowerCapMode;
        let c = parse(&[]).unwrap();
        assert_eq!((c.power_cap, c.power_budget_topic.as_str()), (PowerCapMode::Off, "wattgraph.power-budgets"));
        assert_eq!((c.power_floor_watts, c.budget_timeout_s), (0.0, 90));
        let c = parse(&["--power-cap", "dry-run", "--power-floor-watts", "80.5", "--budget-timeout-s", "30", "--power-budget-topic", "b"]).unwrap();
        assert_eq!((c.power_cap, c.power_floor_watts, c.budget_timeout_s), (PowerCapMode::DryRun, 80.5, 30));
        assert_eq!(parse(&["--power-cap", "on"]).unwrap().power_cap, PowerCapMode::On);
    }

    #[test]
    fn resource_flags_and_once() {
        let c = parse(&[
            "--sample-interval-ms", "10", "--powercap-root", "/tmp/pc", "--idle-watts-per-socket", "12.5",
            "--idle-watts-per-cpu", "2", "--max-watts-per-cpu", "9", "--ht-ratio", "1.15", "--no-hw-counters",
            "--metrics-addr", "127.0.0.1:9400", "--thread-entries", "1024",
        ])
        .unwrap();
        assert_eq!(c.idle_watts_per_socket, Some(12.5));
        assert_eq!(c.metrics_addr.unwrap().port(), 9400);
        let once = Config::try_parse_from(["x", "--host-id", "h", "--once"]).unwrap();
        assert!(once.validate().is_ok() && once.kafka_brokers.is_none());
    }

    #[test]
    fn full_command_line() {
        let c = parse(&[
            "--topic", "t1", "--netns", "/proc/self/ns/net", "--netns", "/proc/thread-self/ns/net",
            "--snapshot-interval-ms", "100", "--snapshot-bytes", "4096", "--ready-file", "/tmp/r",
            "--map-entries", "1024", "--log-level", "debug",
        ])
        .unwrap();
        assert_eq!(c.netns.len(), 2);
        assert_eq!(c.snapshot_bytes, 4096);
        assert_eq!(c.ready_file.unwrap().to_str(), Some("/tmp/r"));
    }

    /// A config file with `text` in a scratch directory of this test process.
    fn file(name: &str, text: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wg-config-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn load(f: &Path, extra: &[&str]) -> Result<Config, String> {
        let mut args = vec!["wattgraph-agent".to_string(), "--config".into(), f.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        Config::load(args).map_err(|e| e.to_string())
    }

    #[test]
    fn config_file_values_and_precedence() {
        let f = file(
            "prec.toml",
            "host-id = \"from-file\"\nkafka-brokers = \"k1:9092,k2:9093\"\ntopic = \"t.file\"\n\
             netns = [\"/proc/self/ns/net\", \"/proc/thread-self/ns/net\"]\nsnapshot-bytes = 4096\n\
             ht-ratio = 1\nidle-watts-per-cpu = 2.5\ninclude-self = true\nno-resources = false\n\
             power-cap = \"dry-run\"\nmetrics-addr = \"127.0.0.1:9400\"\n",
        );
        let c = load(&f, &[]).unwrap();
        assert_eq!((c.host_id.as_str(), c.kafka_brokers.as_deref(), c.topic.as_str()), ("from-file", Some("k1:9092,k2:9093"), "t.file"));
        assert_eq!(c.netns, vec![PathBuf::from("/proc/self/ns/net"), PathBuf::from("/proc/thread-self/ns/net")]);
        assert_eq!((c.snapshot_bytes, c.ht_ratio, c.idle_watts_per_cpu), (4096, 1.0, 2.5));
        assert!(c.include_self && !c.no_resources);
        assert_eq!(c.power_cap, crate::control::power_cap::budget::PowerCapMode::DryRun);
        assert_eq!(c.metrics_addr.unwrap().port(), 9400);
        assert_eq!(c.config.as_deref(), Some(f.as_path()));
        assert_eq!(c.map_entries, 65536, "keys absent from the file keep their defaults");

        // Flags override keys, before or after --config; a list flag replaces the file's list.
        let mut args = vec!["x", "--topic", "t.cli", "--config"];
        let fs = f.display().to_string();
        args.push(&fs);
        args.extend(["--snapshot-bytes=8192", "--netns", "/proc/self/ns/net", "--host-id", "from-cli"]);
        let c = Config::load(args).unwrap();
        assert_eq!((c.host_id.as_str(), c.topic.as_str(), c.snapshot_bytes), ("from-cli", "t.cli", 8192));
        assert_eq!(c.netns, vec![PathBuf::from("/proc/self/ns/net")]);
        assert_eq!(c.kafka_brokers.as_deref(), Some("k1:9092,k2:9093"));

        // A required flag may come from either side.
        let f2 = file("partial.toml", "kafka-brokers = \"k:1\"\n");
        assert_eq!(load(&f2, &["--host-id", "h"]).unwrap().host_id, "h");
        assert!(load(&f2, &[]).unwrap_err().contains("--host-id"));
    }

    #[test]
    fn config_file_errors_name_key_and_file() {
        let base = "host-id = \"h\"\nkafka-brokers = \"k:1\"\n";
        let cases: &[(&str, &[&str])] = &[
            ("snapshot-byte = 5\n", &["unknown key 'snapshot-byte'"]),
            ("config = \"other.toml\"\n", &["unknown key 'config'"]),
            ("[kafka]\nbrokers = \"k:1\"\n", &["unknown key 'kafka'"]),
            ("snapshot-bytes = \"lots\"\n", &["key 'snapshot-bytes' must be an integer, not string"]),
            ("include-self = \"yes\"\n", &["key 'include-self' must be a boolean", "not string"]),
            ("netns = \"/proc/self/ns/net\"\n", &["key 'netns' must be an array of strings"]),
            ("netns = [1]\n", &["key 'netns' must be an array of strings"]),
            ("topic = 5\n", &["key 'topic' must be a string, not integer"]),
            ("ht-ratio = true\n", &["key 'ht-ratio' must be a number, not boolean"]),
            ("snapshot-bytes = 0\n", &["key 'snapshot-bytes': --snapshot-bytes '0' must be at least 1"]),
            ("map-entries = -1\n", &["key 'map-entries'", "'-1'"]),
            ("power-cap = \"maybe\"\n", &["key 'power-cap'", "'maybe'"]),
            ("metrics-addr = \"nowhere\"\n", &["key 'metrics-addr'", "'nowhere'"]),
            ("netns = [\"/nonexistent/ns\"]\n", &["key 'netns': --netns '/nonexistent/ns' does not exist"]),
            ("spool-max-bytes = 10\n", &["key 'spool-max-bytes': --spool-max-bytes '10'"]),
            ("log-level = \"loud\"\n", &["key 'log-level': --log-level 'loud'"]),
            ("kafka-option = [\"enable.idempotence=false\"]\n", &["key 'kafka-option': --kafka-option 'enable.idempotence=false': key 'enable.idempotence' cannot be set"]),
            ("kafka-option = \"linger.ms=5\"\n", &["key 'kafka-option' must be an array of strings"]),
            ("topic = \"unterminated\n", &["not valid TOML"]),
        ];
        for (i, (extra, needles)) in cases.iter().enumerate() {
            let f = file(&format!("bad{i}.toml"), &format!("{base}{extra}"));
            let err = load(&f, &[]).unwrap_err();
            let fname = format!("config file '{}'", f.display());
            assert!(err.contains(&fname), "{extra:?}: {err}");
            for n in needles.iter() {
                assert!(err.contains(n), "{extra:?}: missing {n:?} in {err}");
            }
        }
        // A wrong value on the command line is the flag's own error, not the file's.
        let f = file("good.toml", base);
        let err = load(&f, &["--snapshot-bytes", "0"]).unwrap_err();
        assert!(err.contains("--snapshot-bytes '0'") && !err.contains("config file"), "{err}");
        // The command line overrides a bad value of the file (it is never used).
        let f = file("overridden.toml", &format!("{base}snapshot-bytes = 0\n"));
        assert_eq!(load(&f, &["--snapshot-bytes", "7"]).unwrap().snapshot_bytes, 7);
        let missing = std::env::temp_dir().join("wg-config-no-such-file.toml");
        let err = load(&missing, &[]).unwrap_err();
        assert!(err.contains("wg-config-no-such-file.toml") && err.contains("cannot read"), "{err}");
    }

    #[test]
    fn example_file_is_valid_and_lists_every_flag() {
        let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("wattgraph-agent.example.toml");
        let c = load(&example, &[]).unwrap();
        assert_eq!((c.host_id.as_str(), c.kafka_brokers.as_deref()), ("node-1", Some("127.0.0.1:9092")));
        // Every commented-out key is valid too: uncomment them all (except the exclusive once and
        // paths that exist only on a node).
        let text = std::fs::read_to_string(&example).unwrap();
        let mut all = String::new();
        let mut keys = HashSet::new();
        for line in text.lines() {
            let l = line.strip_prefix("# ").unwrap_or(line);
            if let Some((k, _)) = l.split_once(" = ") {
                if !k.contains(' ') {
                    keys.insert(k.to_string());
                    if !["once", "netns", "cgroup-root", "ready-file", "shed-priority", "shed-mode", "cpu-setpoint", "spool-dir", "pod-metadata-token-file", "pod-metadata-ca-file", "kafka-config"].contains(&k) {
                        all.push_str(l);
                        all.push('\n');
                    }
                }
            }
        }
        for a in Config::command().get_arguments() {
            let Some(long) = a.get_long() else { continue };
            if !["config", "help", "version"].contains(&long) {
                assert!(keys.contains(long), "example file lacks key '{long}'");
            }
        }
        let f = file("example-all.toml", &all);
        load(&f, &[]).unwrap_or_else(|e| panic!("{e}\n{all}"));
    }

    #[test]
    fn errors_name_the_value() {
        let cases: &[(&[&str], &str)] = &[
            (&["--snapshot-bytes", "0"], "--snapshot-bytes '0'"),
            (&["--snapshot-interval-ms", "0"], "--snapshot-interval-ms '0'"),
            (&["--map-entries", "3"], "--map-entries '3'"),
            (&["--topic", "bad topic"], "--topic 'bad topic'"),
            (&["--log-level", "loud"], "--log-level 'loud'"),
            (&["--netns", "/nonexistent/ns"], "/nonexistent/ns"),
            (&["--snapshot-bytes", "lots"], "lots"),
            (&["--sample-interval-ms", "5"], "--sample-interval-ms '5'"),
            (&["--ht-ratio", "3"], "--ht-ratio '3'"),
            (&["--max-watts-per-cpu", "1"], "--max-watts-per-cpu '1'"),
            (&["--idle-watts-per-socket=-1"], "--idle-watts-per-socket '-1'"),
            (&["--resource-topic", "a b"], "--resource-topic 'a b'"),
            (&["--thread-entries", "1"], "--thread-entries '1'"),
            (&["--metrics-addr", "nowhere"], "nowhere"),
            (&["--transaction-topic", "a/b"], "--transaction-topic 'a/b'"),
            (&["--transaction-interval-ms", "1"], "--transaction-interval-ms '1'"),
            (&["--transaction-hist-entries", "10"], "--transaction-hist-entries '10'"),
            (&["--http-routes", "2000000"], "--http-routes '2000000'"),
            (&["--http-route-idle-s", "604801"], "--http-route-idle-s '604801'"),
            (&["--mask-client-port-below", "1000001"], "--mask-client-port-below '1000001'"),
            (&["--nat-entries", "4194305"], "--nat-entries '4194305'"),
            (&["--nat-netns", "/nonexistent/ns"], "--nat-netns '/nonexistent/ns'"),
            (&["--pod-metadata-url", "ftp://x/pods"], "--pod-metadata-url 'ftp://x/pods'"),
            (&["--pod-metadata-token-file", "/nonexistent/token"], "--pod-metadata-token-file '/nonexistent/token'"),
            (&["--pod-metadata-interval-ms", "10"], "--pod-metadata-interval-ms '10'"),
            (&["--pod-labels", "app,a b"], "--pod-labels 'a b'"),
            (&["--power-cap", "maybe"], "'maybe'"),
            (&["--power-budget-topic", "a b"], "--power-budget-topic 'a b'"),
            (&["--power-floor-watts=-5"], "--power-floor-watts '-5'"),
            (&["--power-floor-watts", "NaN"], "--power-floor-watts 'NaN'"),
            (&["--budget-timeout-s", "0"], "--budget-timeout-s '0'"),
            (&["--kafka-option", "acks=0"], "--kafka-option 'acks=0': key 'acks' cannot be set"),
            (&["--kafka-option", "sasl.password=x"], "--kafka-option key 'sasl.password' holds a secret"),
            (&["--kafka-config", "/nonexistent/k.properties"], "--kafka-config '/nonexistent/k.properties' cannot be read"),
        ];
        for (args, needle) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
        let bad_broker = Config::try_parse_from(["x", "--host-id", "h", "--kafka-brokers", "localhost"]).unwrap();
        assert!(bad_broker.validate().unwrap_err().contains("'localhost'"));
        let bad_port = Config::try_parse_from(["x", "--host-id", "h", "--kafka-brokers", "k:99999"]).unwrap();
        assert!(bad_port.validate().unwrap_err().contains("'99999'"));
        assert!(Config::try_parse_from(["x", "--kafka-brokers", "k:1"]).is_err(), "--host-id is required");
    }
}
