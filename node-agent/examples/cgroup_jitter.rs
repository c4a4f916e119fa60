//! Sampling-interval jitter of the cgroup sampler (rAdvisor Tables 5/6 figures): samples every
//! container cgroup of this host every INTERVAL_MS for SECONDS and prints the observed intervals
//! between ticks (mean, σ, p90, p99, max, n) and the mean time one tick took.
//! Usage: cgroup_jitter INTERVAL_MS SECONDS [fifo]   (node-agent/bench/cgroup_jitter.sh sets up the load);
//! `fifo` runs the loop in SCHED_FIFO (priority 10), as the agent's --cgroup-sampler-realtime does.
use std::path::Path;

use wattgraph_agent::identity::cgroup::default_v2_root;
use wattgraph_agent::resources::cgroup_sampler::{mono_now, run_ticks, set_realtime, CgroupSampler, Hierarchy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(ms), Some(secs)) = (args.get(1).and_then(|a| a.parse::<u64>().ok()), args.get(2).and_then(|a| a.parse::<u64>().ok()))
    else {
        eprintln!("usage: cgroup_jitter INTERVAL_MS SECONDS [fifo]");
        std::process::exit(2);
    };
    let fifo = args.get(3).map(String::as_str) == Some("fifo");
    if fifo {
        if let Err(e) = set_realtime(10) {
            eprintln!("SCHED_FIFO refused: {e}");
            std::process::exit(1);
        }
    }
    let h = Hierarchy::detect(&default_v2_root(), Path::new("/sys/fs/cgroup"));
    let mut s = CgroupSampler::new(h.clone());
    let interval = ms * 1_000_000;
    let ticks = secs * 1000 / ms;
    let mut busy_ns = 0u64;
    let mut cpu_sum = 0u64;
    let iv = run_ticks(&mut s, interval, ticks, |start, _, stats| {
        cpu_sum = cpu_sum.wrapping_add(stats.iter().map(|x| x.cpu_usage_ns).sum::<u64>());
        busy_ns += mono_now() - start;
    });
    let f = |ns: f64| ns / 1e6;
    println!(
        "{} interval {ms} ms, {} cgroups ({:?}): mean {:.3} ms, σ {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, n {}; one tick took {:.1} µs on average",
        if fifo { "SCHED_FIFO" } else { "SCHED_OTHER" },
        s.targets.len(),
        match h { Hierarchy::V1(_) => "v1", Hierarchy::V2(_) => "v2" },
        f(iv.mean_ns()),
        f(iv.stddev_ns()),
        f(iv.percentile_ns(0.90) as f64),
        f(iv.percentile_ns(0.99) as f64),
        f(iv.max_ns() as f64),
        iv.count(),
        busy_ns as f64 / ticks as f64 / 1e3,
    );
    std::hint::black_box(cpu_sum);
}
