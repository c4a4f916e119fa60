//! A test's bpffs pin directory: unpinned and unmounted when dropped, also when the test failed,
//! so the pinned programs go with it.
use std::path::PathBuf;

pub struct PinDir(pub PathBuf);

impl PinDir {
    /// A new empty directory `NAME-PID` under the temporary directory, with the pins at `bpf` in
    /// it (unpinned and removed with the directory when dropped).
    pub fn fresh(name: &str) -> (PathBuf, PinDir) {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        (dir.clone(), PinDir(dir.join("bpf")))
    }
}

impl Drop for PinDir {
    fn drop(&mut self) {
        let _ = wattgraph_agent::capture::pins::unpin_all(&self.0);
        if let Ok(c) = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()) {
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
    }
}

/// A restart test's scratch: bpffs pins (unpinned when dropped, with the directory), the agent's
/// ready file and spool, and a free metrics port.
pub struct Scratch {
    pub pins: PathBuf,
    pub ready: PathBuf,
    pub spool: PathBuf,
    pub port: u16,
    _unpin: PinDir,
}

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let dir = super::agent::tmp("restart", tag);
        let pins = dir.join("bpf");
        Scratch { ready: dir.join("ready"), spool: dir.join("spool"), port: super::agent::free_port(), _unpin: PinDir(pins.clone()), pins }
    }
}
