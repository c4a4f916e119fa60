//! Which physical package each CPU belongs to and which hardware thread shares its core, from
//! sysfs; the sched programs weigh cycles by it and the power model splits by package.
use std::path::Path;

use super::MAX_SOCKETS;

/// CPU numbers a kernel can have (x86_64's largest NR_CPUS); larger ones in a list are left out
/// (a range is expanded: "0-4294967295" would be 16 GiB).
pub const MAX_CPUS: u32 = 8192;

/// "0-3,8,10-11" -> [0,1,2,3,8,10,11]
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    out.extend(a..=b.min(MAX_CPUS - 1));
                }
            }
            None => {
                if let Ok(a) = part.trim().parse() {
                    if a < MAX_CPUS {
                        out.push(a)
                    }
                }
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTopo {
    /// physical_package_id, folded into 0..MAX_SOCKETS.
    pub socket: u32,
    /// The other hardware thread of the same core, if any.
    pub sibling: Option<u32>,
}

/// Topology of CPUs 0..n from `<root>/cpuN/topology/{physical_package_id,thread_siblings_list}`
/// (root normally /sys/devices/system/cpu). Missing files: socket 0, no sibling.
pub fn read_topology(root: &Path, n: usize) -> Vec<CpuTopo> {
    (0..n as u32)
        .map(|cpu| {
            let dir = root.join(format!("cpu{cpu}/topology"));
            let socket = std::fs::read_to_string(dir.join("physical_package_id"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .map(|s| (s.max(0) as u32) % MAX_SOCKETS as u32)
                .unwrap_or(0);
            let sibling = std::fs::read_to_string(dir.join("thread_siblings_list"))
                .ok()
                .and_then(|s| parse_cpu_list(&s).into_iter().find(|&c| c != cpu));
            CpuTopo { socket, sibling }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("5"), vec![5]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
    }

    #[test]
    fn cpu_numbers_past_the_kernels_limit_are_left_out_of_a_list() {
        // Found by fuzz/proc_files: "0-1083795856" made a vector of 4.3 GB (a range is expanded).
        let huge = parse_cpu_list("0-100000000");
        assert_eq!((huge.len(), huge.last()), (MAX_CPUS as usize, Some(&(MAX_CPUS - 1))));
        assert_eq!(parse_cpu_list("2,8190-8195,9000"), vec![2, 8190, 8191]);
        assert_eq!(parse_cpu_list("7-3"), Vec::<u32>::new());
    }

    #[test]
    fn topology_from_fixture_tree() {
        let dir = std::env::temp_dir().join(format!("wg-topo-{}", std::process::id()));
        for (cpu, pkg, sib) in [(0, 0, "0,2"), (1, 1, "1,3"), (2, 0, "0,2"), (3, 1, "1,3")] {
            let t = dir.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{pkg}\n")).unwrap();
            std::fs::write(t.join("thread_siblings_list"), format!("{sib}\n")).unwrap();
        }
        let topo = read_topology(&dir, 5);
        assert_eq!(topo[0], CpuTopo { socket: 0, sibling: Some(2) });
        assert_eq!(topo[3], CpuTopo { socket: 1, sibling: Some(1) });
        assert_eq!(topo[4], CpuTopo { socket: 0, sibling: None }, "missing files: defaults");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
