/// FNV-1a, 64 bits: tells one BPF object or configuration from another (not a security check).
/// Also `include!`d by build.rs, which hashes the objects it builds: one definition for both.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}
