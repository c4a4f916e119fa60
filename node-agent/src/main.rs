//! wattgraph-agent: eBPF TCP connection capture -> Avro -> Kafka. The stages are the library's
//! modules; `wattgraph_agent::agent` starts them, in order, and stops them.
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use wattgraph_agent::agent;
use wattgraph_agent::config::{Config, ConfigError};

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    // Before anything decodes Avro (power budgets from Kafka): the decoders' allocation bound.
    wattgraph_agent::output::avro::limit_decoder_allocations();
    let cfg = match Config::load(std::env::args_os()) {
        Ok(c) => c,
        Err(ConfigError::Clap(e)) => e.exit(), // exit 2 (0 for --help / --version)
        Err(ConfigError::Invalid(msg)) => {
            eprintln!("wattgraph-agent: error: {msg}");
            return 2;
        }
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(&cfg.log_level))
        .target(env_logger::Target::Stderr)
        .init();

    if cfg.unpin {
        return agent::unpin(&cfg);
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            eprintln!("wattgraph-agent: error: cannot install signal handler: {e}");
            return 1;
        }
    }
    if let Err(code) = agent::check_host(&cfg) {
        return code;
    }
    if cfg.once {
        return agent::run_once(&cfg);
    }
    agent::run(&cfg, stop)
}
