//! Files that survive a crash: the Kafka spool's segments and the power-cap state file check
//! their records with CRC-32 and make renames durable with an fsync of the directory.
use std::fs::File;
use std::io;
use std::path::Path;

/// CRC-32 (IEEE, as zlib).
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// fsync of a directory: makes a rename or a new file in it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_zlib() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }
}
