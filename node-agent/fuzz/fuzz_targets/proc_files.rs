//! Files of /proc and /sys the agent parses; the first byte picks which parser reads the rest:
//! 0 /proc/<pid>/stat (start time), 1 /proc/<pid>/cmdline, 2 /proc/<pid>/net/tcp{,6},
//! 3 a sysfs CPU list (thread_siblings_list), 4.. a cgroup counter file of each kind.
#![no_main]
use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use wattgraph_agent::resources::cgroup_sampler::{parse_into, CgroupStats, Kind};
use wattgraph_agent::capture::sched;
use wattgraph_agent::identity::{listening, proc_info};

const KINDS: [Kind; 8] =
    [Kind::V2CpuStat, Kind::V2Memory, Kind::V2Io, Kind::V1CpuUsage, Kind::V1CpuStat, Kind::V1Memory, Kind::V1Io, Kind::Pids];

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else { return };
    let text = std::str::from_utf8(body);
    match which % 12 {
        0 => drop(text.map(proc_info::start_ticks_from_stat)),
        1 => {
            if let Some(c) = proc_info::cmdline_from_raw(body) {
                assert!(!c.is_empty() && c.len() <= 3 * body.len(), "{c:?}");
            }
        }
        2 => {
            if let Ok(t) = text {
                listening::parse_listeners(t, &mut HashSet::new());
            }
        }
        3 => drop(text.map(sched::parse_cpu_list)),
        k => parse_into(KINDS[k as usize - 4], body, &mut CgroupStats::default()),
    }
});
