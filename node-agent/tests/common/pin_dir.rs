//! A test's bpffs pin directory: unpinned and unmounted when dropped, also when the test failed,
//! so the pinned programs go with it.
use std::path::PathBuf;

pub struct PinDir(pub PathBuf);

impl Drop for PinDir {
    fn drop(&mut self) {
        let _ = wattgraph_agent::capture::pins::unpin_all(&self.0);
        if let Ok(c) = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()) {
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
    }
}
