//! A thread in a fresh network namespace with `lo` up, for tests that must see only their own
//! traffic (the kernel maps of a capture are host-wide).
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;

/// A thread that entered a new network namespace and waits for `go` before running its work;
/// threads it spawns inherit the namespace.
pub struct NetnsThread<T> {
    /// nsfs path of the namespace (for CaptureOptions::netns).
    pub path: PathBuf,
    go: mpsc::Sender<()>,
    thread: JoinHandle<Option<T>>,
}

impl<T: Send + 'static> NetnsThread<T> {
    pub fn spawn(work: impl FnOnce() -> T + Send + 'static) -> NetnsThread<T> {
        let (ns_tx, ns_rx) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                ns_tx.send(Err(std::io::Error::last_os_error().to_string())).unwrap();
                return None;
            }
            lo_up();
            let tid = unsafe { libc::gettid() };
            ns_tx.send(Ok(PathBuf::from(format!("/proc/{}/task/{tid}/ns/net", std::process::id())))).unwrap();
            go_rx.recv().ok()?; // dropped without a go: nothing to run
            Some(work())
        });
        match ns_rx.recv().unwrap() {
            Ok(path) => NetnsThread { path, go, thread },
            Err(e) => panic!("unshare(CLONE_NEWNET) failed: {e}"),
        }
    }

    /// Runs the work and returns its result.
    pub fn run(self) -> T {
        self.go.send(()).unwrap();
        self.thread.join().unwrap().expect("work ran")
    }

    /// Ends the thread without running the work.
    pub fn cancel(self) {
        drop(self.go);
        let _ = self.thread.join();
    }
}

/// Brings `lo` up in the current thread's network namespace.
fn lo_up() {
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        assert!(fd >= 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut ifr), 0);
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        assert_eq!(libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &mut ifr), 0);
        libc::close(fd);
    }
}
