//! The clocks records are stamped with: the kernel's timestamps are CLOCK_BOOTTIME (connection
//! programs) or CLOCK_MONOTONIC (sched programs, `bpf_ktime_get_ns`), records carry Unix time.

fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// CLOCK_BOOTTIME now, ns.
pub fn boot_time_ns() -> u64 {
    clock_ns(libc::CLOCK_BOOTTIME) as u64
}

/// Unix epoch ns minus boot-clock ns, measured once (kernel timestamps use the boot clock).
pub fn boot_to_unix_offset_ns() -> i64 {
    let b1 = clock_ns(libc::CLOCK_BOOTTIME);
    let r = clock_ns(libc::CLOCK_REALTIME);
    let b2 = clock_ns(libc::CLOCK_BOOTTIME);
    r - (b1 + (b2 - b1) / 2)
}

/// CLOCK_MONOTONIC ns (= bpf_ktime_get_ns).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Unix epoch ns minus monotonic ns, now.
pub fn mono_to_unix_offset() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    let r = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
    r - mono_ns() as i64
}
