//! A small tmpfs mounted for one test (a disk that fills up), unmounted when dropped, also when
//! the test fails. Needs root: without it the test is skipped (said), under CI=true it fails.
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// A tmpfs of `bytes` at a fresh directory named after `tag` and this process.
    pub fn mount(tag: &str, bytes: u64) -> Option<Tmpfs> {
        let dir = std::env::temp_dir().join(format!("wg-tmpfs-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let opts = CString::new(format!("size={bytes},mode=0700")).unwrap();
        // SAFETY: NUL-terminated strings that outlive the call.
        let rc = unsafe { libc::mount(c"tmpfs".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), 0, opts.as_ptr().cast()) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_dir(&dir);
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("cannot mount a tmpfs at {} (root needed) and CI=true: {e}", dir.display());
            }
            eprintln!("SKIPPED: cannot mount a tmpfs at {} (root needed): {e}", dir.display());
            return None;
        }
        Some(Tmpfs(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Free bytes (statvfs).
    pub fn free(&self) -> u64 {
        let p = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(p.as_ptr(), &mut s) }, 0, "statvfs {}", self.0.display());
        s.f_bavail as u64 * s.f_frsize as u64
    }

    /// Fills the tmpfs up to `leave` free bytes with a file `filler` (remove it to give the
    /// space back).
    pub fn fill(&self, leave: u64) -> PathBuf {
        let f = self.0.join("filler");
        let n = self.free().saturating_sub(leave);
        std::fs::write(&f, vec![0u8; n as usize]).unwrap();
        f
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let p = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        // Lazy: a file still open (a process of a failed test) does not keep it mounted.
        if unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH) } != 0 {
            eprintln!("umount {}: {}", self.0.display(), std::io::Error::last_os_error());
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}
