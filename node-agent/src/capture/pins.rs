//! BPF programs and maps pinned under a bpffs directory, so the kernel keeps counting while no
//! agent runs (killed, pod recreated, node drained) and the next agent reads what accumulated.
//! One directory per BPF object, named after the object's build hash and the configuration that
//! shapes its programs and maps: `<root>/<object>-<build hash>-<config hash>/{maps,links}/<name>`.
//! An agent reuses only a directory of its own name whose links are all pinned (links are pinned
//! last, so that means complete); any other directory of the object is unpinned first.
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use super::bpf::CaptureError;
use crate::shared::fnv1a::fnv1a;

/// Where the DaemonSet (and `--pin-bpf`) pins by default.
pub const DEFAULT_PIN_ROOT: &str = "/sys/fs/bpf/wattgraph";
/// The usual mount point of bpffs; mounted there when the root is below it and nothing is.
const BPFFS_MOUNT: &str = "/sys/fs/bpf";
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// The pins of one BPF object for the running agent, and the lock that keeps a second agent
/// on the same root out.
pub struct Pins {
    pub dir: PathBuf,
    /// Pins of a previous agent of the same object and configuration, complete: reuse its maps
    /// and attach nothing.
    pub reuse: bool,
    _lock: Arc<File>,
}

impl Pins {
    pub fn map_path(&self, name: &str) -> PathBuf {
        self.dir.join("maps").join(name)
    }
    pub fn link_path(&self, prog: &str) -> PathBuf {
        self.dir.join("links").join(prog)
    }

    /// Every state map of the opened `object` pinned here (or reused from here at load).
    pub fn set_map_paths(&self, object: &mut libbpf_rs::OpenObject) -> Result<(), CaptureError> {
        for mut map in object.maps_mut() {
            let name = map.name().to_string_lossy().into_owned();
            // Internal maps (.rodata) are the programs' own; the rest are state.
            if !name.contains('.') {
                map.set_pin_path(self.map_path(&name)).map_err(|e| super::bpf::bpf_err("set map pin path", e))?;
            }
        }
        Ok(())
    }

    /// Pins the attached programs' links, the last step: a directory with every link pinned is
    /// complete (`prepare`). A program not loaded has no link.
    pub fn pin_links<'a>(&self, links: impl IntoIterator<Item = (&'a str, Option<&'a mut libbpf_rs::Link>)>) -> Result<(), CaptureError> {
        for (name, link) in links {
            if let Some(link) = link {
                link.pin(self.link_path(name)).map_err(|e| super::bpf::bpf_err("pin link", e))?;
            }
        }
        Ok(())
    }
}

fn dir_err(root: &Path, what: &str, e: std::io::Error) -> CaptureError {
    CaptureError::Other(format!("BPF pin directory {}: {what}: {e}", root.display()))
}

/// Removes the pin directories of `object` under `root` other than `keep`; each removed path to
/// `removed` (for its log line).
fn remove_object_dirs(root: &Path, object: &str, keep: Option<&str>, mut removed: impl FnMut(&Path)) -> Result<usize, CaptureError> {
    let prefix = format!("{object}-");
    let mut n = 0;
    for entry in std::fs::read_dir(root).map_err(|e| dir_err(root, "list", e))? {
        let entry = entry.map_err(|e| dir_err(root, "list", e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && keep != Some(name.as_str()) {
            removed(&entry.path());
            std::fs::remove_dir_all(entry.path()).map_err(|e| dir_err(root, "unpin", e))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Prepares `root` for `object` (build hash `build`, configuration `config` as text); `links`
/// are the programs a complete pinning has links of.
pub fn prepare(root: &Path, object: &str, build: &str, config: &str, links: &[&str]) -> Result<Pins, CaptureError> {
    let err = |what: &str, e: std::io::Error| dir_err(root, what, e);
    ensure_bpffs(root).map_err(|e| err("mount bpffs", e))?;
    let lock = lock_root(root).map_err(|(what, e)| err(what, e))?;
    let name = format!("{object}-{build}-{:016x}", fnv1a(config.as_bytes()));
    let dir = root.join(&name);
    remove_object_dirs(root, object, Some(&name), |other| {
        log::warn!("unpinning {}: pinned by an agent of another {object} BPF object or configuration; loading fresh", other.display())
    })?;
    let complete = links.iter().all(|l| dir.join("links").join(l).exists());
    if dir.exists() && !complete {
        log::warn!("unpinning {}: incomplete (an agent stopped while pinning); loading fresh", dir.display());
        std::fs::remove_dir_all(&dir).map_err(|e| err("unpin", e))?;
    }
    let reuse = dir.exists();
    if reuse {
        log::info!("reusing the {object} BPF programs and maps pinned at {} by a previous agent (attached since then; not attached again)", dir.display());
    } else {
        for sub in ["maps", "links"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| err("create", e))?;
        }
    }
    Ok(Pins { dir, reuse, _lock: lock })
}

/// Unpins `object`'s programs and maps under `root`, if a previous agent left them: for an agent
/// that does not run that object (`--no-resources`), which would leave them counting for nobody.
/// Returns how many directories went.
pub fn unpin_object(root: &Path, object: &str) -> Result<usize, CaptureError> {
    if !root.exists() {
        return Ok(0);
    }
    let _lock = lock_root(root).map_err(|(what, e)| dir_err(root, what, e))?;
    remove_object_dirs(root, object, None, |dir| log::info!("unpinning {}: this agent does not run the {object} programs", dir.display()))
}

/// The lock on `root`, shared by the BPF objects of this agent (two open files of one process
/// conflict under flock too).
fn lock_root(root: &Path) -> Result<Arc<File>, (&'static str, std::io::Error)> {
    static LOCKS: Mutex<Vec<(PathBuf, Weak<File>)>> = Mutex::new(Vec::new());
    let mut locks = LOCKS.lock().unwrap_or_else(|p| p.into_inner());
    locks.retain(|(_, l)| l.strong_count() > 0);
    if let Some(held) = locks.iter().filter(|(p, _)| p == root).find_map(|(_, l)| l.upgrade()) {
        return Ok(held);
    }
    let lock = File::open(root).map_err(|e| ("open", e))?;
    // SAFETY: plain flock on an open descriptor.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(("locked by another running agent", std::io::Error::last_os_error()));
    }
    let lock = Arc::new(lock);
    locks.push((root.to_path_buf(), Arc::downgrade(&lock)));
    Ok(lock)
}

/// Removes every pin under `root` (`--unpin`): the programs detach, the maps are freed once no
/// process holds them. Returns how many object directories went; a missing root is none.
pub fn unpin_all(root: &Path) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut n = 0;
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
            n += 1;
        }
    }
    Ok(n)
}

fn is_bpffs(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else { return false };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == BPF_FS_MAGIC }
}

fn mount_bpffs(at: &Path) -> std::io::Result<()> {
    let target = std::ffi::CString::new(at.as_os_str().as_encoded_bytes())?;
    // SAFETY: valid C strings; no data.
    let rc = unsafe { libc::mount(c"bpf".as_ptr(), target.as_ptr(), c"bpf".as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    log::info!("mounted bpffs at {}", at.display());
    Ok(())
}

/// `root` exists on bpffs: below an existing bpffs it is created; below an unmounted
/// /sys/fs/bpf bpffs is mounted there; elsewhere it is created and bpffs mounted on it.
fn ensure_bpffs(root: &Path) -> std::io::Result<()> {
    if root.exists() && is_bpffs(root) {
        return Ok(());
    }
    let mut ancestor = root;
    while !ancestor.exists() {
        ancestor = ancestor.parent().unwrap_or(Path::new("/"));
    }
    if !is_bpffs(ancestor) {
        if root.starts_with(BPFFS_MOUNT) && !is_bpffs(Path::new(BPFFS_MOUNT)) {
            mount_bpffs(Path::new(BPFFS_MOUNT))?;
        } else {
            std::fs::create_dir_all(root)?;
            if std::fs::read_dir(root)?.next().is_some() {
                return Err(std::io::Error::other("not on bpffs and not empty (bpffs is mounted only on an empty directory)"));
            }
            return mount_bpffs(root);
        }
    }
    std::fs::create_dir_all(root)
}
