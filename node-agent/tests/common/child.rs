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

/// The test runner's name of test `name` defined beside the caller, whose `module_path!()` is
/// `module` (the runner's names leave out the crate's): what `--exact` takes to run that test alone.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}
