//! Per-CPU hardware counters (perf_event_open) the sched programs read at each switch, and the
//! HT weighting of cycles they apply (PowerThesis Eq. 2.1/3.1), mirrored here for the tests.
use std::os::fd::{FromRawFd, OwnedFd};

/// PowerThesis Eq. 2.1/3.1 as applied per slice in the kernel: of `dc` cycles counted on a logical CPU
/// during a slice of `slice_ns`, the share while the HT sibling was busy (`overlap_ns`,
/// by time) counts `HT_r / 2`, the rest fully. `ht_ratio_milli` = HT_r * 1000.
/// Integer arithmetic identical to sched.bpf.c (overlap share resolved to 1/1024).
pub fn weighted_cycles(dc: u64, slice_ns: u64, overlap_ns: u64, ht_ratio_milli: u32) -> u64 {
    let overlap = overlap_ns.min(slice_ns);
    // Overlap fraction in 1/1024ths first, so long slices cannot overflow (dc · overlap would).
    let frac = (overlap * 1024).checked_div(slice_ns).unwrap_or(0);
    let ov = dc / 1024 * frac + (dc % 1024) * frac / 1024;
    (dc - ov) + ov * ht_ratio_milli as u64 / 2000
}

/// perf_event_attr, only the leading fields set (the rest zero; size 128 = VER8-compatible).
fn perf_open(config: u64, cpu: u32) -> std::io::Result<OwnedFd> {
    let mut attr = [0u64; 16];
    attr[0] = 128u64 << 32; // type PERF_TYPE_HARDWARE (0) | size 128 << 32
    attr[1] = config;
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), -1i32, cpu as i32, -1i32, 0u64) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Per-CPU hardware cycles and instructions counters, or the reason they are absent; with them,
/// the last-level cache references and misses where the CPU counts those too.
pub struct HwCounters {
    pub cycles: Vec<OwnedFd>,
    pub instructions: Vec<OwnedFd>,
    /// (references, misses) per CPU, or why they are absent (cycles are used without them).
    pub cache: Result<(Vec<OwnedFd>, Vec<OwnedFd>), String>,
}

pub fn open_hw_counters(ncpus: usize) -> Result<HwCounters, String> {
    let mut hw = HwCounters { cycles: Vec::new(), instructions: Vec::new(), cache: Ok((Vec::new(), Vec::new())) };
    for cpu in 0..ncpus as u32 {
        let c = perf_open(0 /* PERF_COUNT_HW_CPU_CYCLES */, cpu).map_err(|e| format!("cycles on cpu {cpu}: {e}"))?;
        let i = perf_open(1 /* PERF_COUNT_HW_INSTRUCTIONS */, cpu).map_err(|e| format!("instructions on cpu {cpu}: {e}"))?;
        hw.cycles.push(c);
        hw.instructions.push(i);
    }
    hw.cache = open_cache_counters(ncpus);
    Ok(hw)
}

fn open_cache_counters(ncpus: usize) -> Result<(Vec<OwnedFd>, Vec<OwnedFd>), String> {
    let (mut refs, mut misses) = (Vec::new(), Vec::new());
    for cpu in 0..ncpus as u32 {
        refs.push(perf_open(2 /* PERF_COUNT_HW_CACHE_REFERENCES */, cpu).map_err(|e| format!("cache references on cpu {cpu}: {e}"))?);
        misses.push(perf_open(3 /* PERF_COUNT_HW_CACHE_MISSES */, cpu).map_err(|e| format!("cache misses on cpu {cpu}: {e}"))?);
    }
    Ok((refs, misses))
}

// ---------------------------------------------------------------- collector

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_cycles_hand_computed() {
        // Alone the whole slice: all cycles count.
        assert_eq!(weighted_cycles(1_000_000, 1_000, 0, 1100), 1_000_000);
        // Sibling busy the whole slice, HT_r = 1.1: 1e6 * 1.1 / 2 = 550_000.
        assert_eq!(weighted_cycles(1_000_000, 1_000, 1_000, 1100), 550_000);
        // Half overlapped: 500_000 alone + 500_000 * 0.55 = 775_000.
        assert_eq!(weighted_cycles(1_000_000, 1_000, 500, 1100), 775_000);
        // A quarter overlapped, HT_r = 1.0: 750_000 + 250_000 * 0.5 = 875_000.
        assert_eq!(weighted_cycles(1_000_000, 2_000, 500, 1000), 875_000);
        // Overlap longer than the slice is clamped; empty slice: no overlap.
        assert_eq!(weighted_cycles(3_000, 100, 500, 1200), 1_800);
        assert_eq!(weighted_cycles(3_000, 0, 0, 1200), 3_000);
        // Two siblings fully overlapped share the core: together HT_r * cycles.
        let both = 2 * weighted_cycles(2_000_000, 10, 10, 1150);
        assert_eq!(both, 2_300_000);
        // A 10 s slice of 30e9 cycles, half overlapped, HT_r = 1.0: no overflow,
        // 15e9 + 15e9 * 0.5 = 22.5e9.
        assert_eq!(weighted_cycles(30_000_000_000, 10_000_000_000, 5_000_000_000, 1000), 22_500_000_000);
    }
}
