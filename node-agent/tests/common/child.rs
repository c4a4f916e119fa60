//! A child process of a test (the test binary again, running one of its ignored entries), which
//! signals its progress by creating files.
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits until the child created `path`; fails when it exited or took a minute.
pub fn wait_file(path: &Path, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(child.try_wait().unwrap().is_none(), "child capture exited");
        assert!(Instant::now() < deadline, "timed out waiting for {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILLs the child when dropped (a failing test leaves none behind); forget it once reaped.
pub struct KillOnDrop(pub u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
    }
}
