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

/// CLOCK_REALTIME now, Unix epoch ns.
pub fn unix_ns() -> i64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// From Unix time `unix_ns` to the first multiple of `every` at least `min` ahead. Periodic
/// reports scheduled on it leave every host at the same instants (clocks synchronised), so a
/// window of the job (a multiple of the period) never holds one end's report of a request and
/// not the other's because the two hosts' periods fell on either side of its boundary.
pub fn until_aligned(unix_ns: i64, every: std::time::Duration, min: std::time::Duration) -> std::time::Duration {
    let every = (every.as_nanos() as i64).max(1);
    let earliest = unix_ns + min.as_nanos() as i64;
    let next = earliest.div_euclid(every) * every + if earliest.rem_euclid(every) == 0 { 0 } else { every };
    std::time::Duration::from_nanos((next - unix_ns) as u64)
}

#[cfg(test)]
mod tests {
    use super::until_aligned;
    use std::time::Duration;

    #[test]
    fn reports_fall_on_multiples_of_their_period() {
        let s = Duration::from_secs(1);
        let ms = Duration::from_millis;
        // Two hosts started 370 ms apart meet the same instant, and keep meeting them.
        let (a, b) = (1_795_893_210_130_000_000i64, 1_795_893_210_500_000_000i64);
        assert_eq!(a + until_aligned(a, s, ms(0)).as_nanos() as i64, 1_795_893_211_000_000_000);
        assert_eq!(b + until_aligned(b, s, ms(0)).as_nanos() as i64, 1_795_893_211_000_000_000);
        // On a multiple: that instant, unless at least `min` ahead is asked for.
        let on = 1_795_893_211_000_000_000i64;
        assert_eq!(until_aligned(on, s, ms(0)), ms(0));
        assert_eq!(until_aligned(on, s, ms(500)), s);
        // Woken a little early or late around a multiple: the next one, not one right after.
        assert_eq!(until_aligned(on - 200_000, s, ms(500)), s + Duration::from_micros(200));
        assert_eq!(until_aligned(on + 3_000_000, s, ms(500)), ms(997));
        // Periods that do not divide a second still line up on Unix time.
        assert_eq!(until_aligned(1_000_000_123, ms(300), ms(0)), Duration::from_nanos(199_999_877));
    }
}
