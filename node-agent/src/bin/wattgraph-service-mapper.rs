//! wattgraph-service-mapper: publishes the cluster's Service virtual addresses and their ready
//! backends (Services + EndpointSlices from the API server) to the compacted topic the stream
//! job reads for VIP resolution. One per cluster (k8s/service-mapper.yaml); see
//! `wattgraph_agent::service_mapper`.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use wattgraph_agent::output::kafka_client::KafkaClient;
use wattgraph_agent::service_mapper::{MappingPublisher, PublisherOptions};

const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[derive(Parser, Debug)]
#[command(name = "wattgraph-service-mapper", version, about = "Publish Kubernetes Service VIP -> backend mappings to Kafka")]
struct Args {
    /// Kafka bootstrap servers.
    #[arg(long = "kafka-brokers", value_name = "HOST:PORT,...")]
    kafka_brokers: String,
    /// librdkafka properties file (`key=value` lines), e.g. security.protocol=SASL_SSL,
    /// sasl.mechanisms=SCRAM-SHA-512, sasl.username, sasl.password, ssl.ca.location (mode 600).
    #[arg(long = "kafka-config", value_name = "FILE")]
    kafka_config: Option<PathBuf>,
    /// One librdkafka property, overriding --kafka-config's; not for secrets. Repeatable.
    #[arg(long = "kafka-option", value_name = "KEY=VALUE")]
    kafka_option: Vec<String>,
    /// Compacted topic the stream job reads (--service-mappings-topic of the job).
    #[arg(long = "topic", default_value = "wattgraph.service-mappings")]
    topic: String,
    /// API server base URL.
    #[arg(long = "api-url", default_value = "https://kubernetes.default.svc")]
    api_url: String,
    /// Bearer token file, re-read at every request (default: the pod's service account token).
    #[arg(long = "token-file", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// CA bundle (PEM) of the API server (default: the service account's ca.crt).
    #[arg(long = "ca-file", value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Do not verify the API server's certificate.
    #[arg(long = "insecure-tls")]
    insecure_tls: bool,
    /// How often Services and EndpointSlices are listed.
    #[arg(long = "interval-ms", default_value_t = 10_000)]
    interval_ms: u64,
    /// One round, then exit (0 when it succeeded).
    #[arg(long)]
    once: bool,
    #[arg(long = "log-level", default_value = "info")]
    log_level: String,
}

impl Args {
    fn validate(&self) -> Result<KafkaClient, String> {
        if self.kafka_brokers.trim().is_empty() {
            return Err("--kafka-brokers '' is empty".into());
        }
        if self.topic.is_empty() || self.topic.len() > 249 || !self.topic.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
            return Err(format!("--topic '{}' is not a Kafka topic name", self.topic));
        }
        if !(self.api_url.starts_with("https://") || self.api_url.starts_with("http://")) {
            return Err(format!("--api-url '{}' must be an http:// or https:// URL", self.api_url));
        }
        for (flag, f) in [("--token-file", &self.token_file), ("--ca-file", &self.ca_file)] {
            if let Some(f) = f {
                if !f.is_file() {
                    return Err(format!("{flag} '{}' is not a readable file", f.display()));
                }
            }
        }
        if !(1000..=3_600_000).contains(&self.interval_ms) {
            return Err(format!("--interval-ms '{}' must be between 1000 and 3600000", self.interval_ms));
        }
        KafkaClient::load(&self.kafka_brokers, self.kafka_config.as_deref(), &self.kafka_option)
    }
}

fn main() {
    let args = Args::parse();
    let kafka = match args.validate() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("wattgraph-service-mapper: error: {e}");
            std::process::exit(2);
        }
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(&args.log_level)).target(env_logger::Target::Stderr).init();
    kafka.warnings.iter().for_each(|w| log::warn!("{w}"));
    log::info!("publishing to topic {} on {}", args.topic, kafka.describe());
    let sa = |f: &str| {
        let p = Path::new(SA_DIR).join(f);
        (args.api_url.starts_with("https://") && p.is_file()).then_some(p)
    };
    let opts = PublisherOptions {
        api_url: args.api_url.clone(),
        token_file: args.token_file.clone().or_else(|| sa("token")),
        ca_file: args.ca_file.clone().or_else(|| sa("ca.crt")),
        insecure_tls: args.insecure_tls,
        kafka,
        topic: args.topic.clone(),
    };
    let mut publisher = match MappingPublisher::new(opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("wattgraph-service-mapper: error: {e:#}");
            std::process::exit(1);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).expect("signal handler");
    }
    let interval = Duration::from_millis(args.interval_ms);
    let mut failing = false;
    loop {
        match publisher.round() {
            Ok(r) => {
                if r.upserts + r.deletes > 0 || failing {
                    log::info!("{} service mappings: {} published, {} deleted", r.mappings, r.upserts, r.deletes);
                }
                failing = false;
                if args.once {
                    return;
                }
            }
            Err(e) => {
                // Kept running: the API server or Kafka coming back is the normal way out.
                log::warn!("round failed: {e:#} (the topic keeps the last published mappings)");
                failing = true;
                if args.once {
                    std::process::exit(1);
                }
            }
        }
        let until = Instant::now() + interval;
        while Instant::now() < until {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
