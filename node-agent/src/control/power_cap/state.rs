//! The power-cap state file (`--power-cap-state-file`): the package limits found before the
//! agent's first cap, written durably (temp file, fsync, rename, fsync of the directory) before
//! that cap, and removed only once those limits are back at a clean stop. An agent killed while a
//! cap is written (SIGKILL, the OOM killer, a crash) leaves it behind: the next agent restores the
//! limits it names and keeps them as the originals, instead of taking the cap for the original.
//!
//! It names the host, the boot (`/proc/sys/kernel/random/boot_id`), the powercap root and each
//! package zone, and ends with a CRC-32 of everything before it. A text format with a CRC rather
//! than JSON: a flipped digit of a limit must be caught, which a parser alone does not.
use std::fmt::Write as _;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};

use crate::shared::durable::{crc32, sync_dir};

const HEAD: &str = "# wattgraph-agent power-cap state: package limits found before the first cap (restored, then removed, at a clean stop)";
/// Larger than any real file (a few lines per socket): anything bigger is not one.
const MAX_BYTES: u64 = 64 << 10;

/// One package zone's limit as found before the first cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneLimit {
    pub socket: u32,
    /// The zone's directory name under the powercap root (`intel-rapl:0`).
    pub zone: String,
    pub limit_uw: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapState {
    pub host_id: String,
    pub boot_id: String,
    pub root: PathBuf,
    pub zones: Vec<ZoneLimit>,
}

/// How a state file found at start relates to this agent.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// None there: the limits found now are the originals.
    Nothing,
    /// Written on this host, boot, root and zone set by an agent that did not stop cleanly: its
    /// limits are the originals.
    Recovered(CapState),
    /// Written before the last reboot, which set the limits back to the firmware's: the limits
    /// found now are the originals; the file is stale (boot ids: the file's).
    OtherBoot(String),
}

/// This boot's id (a random UUID the kernel draws at every boot).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

impl CapState {
    fn render(&self) -> String {
        let mut s = format!("{HEAD}\nversion 1\nhost {}\nboot {}\nroot {}\n", self.host_id, self.boot_id, self.root.display());
        for z in &self.zones {
            let _ = writeln!(s, "zone {} {} {}", z.socket, z.zone, z.limit_uw);
        }
        let crc = crc32(s.as_bytes());
        let _ = writeln!(s, "crc32 {crc:08x}");
        s
    }

    fn parse(text: &str) -> Result<CapState, String> {
        let body_end = text.trim_end_matches('\n').rfind('\n').map(|i| i + 1).ok_or("no checksum line")?;
        let (body, last) = text.split_at(body_end);
        let want = last.trim().strip_prefix("crc32 ").and_then(|h| u32::from_str_radix(h, 16).ok()).ok_or("the last line is not 'crc32 <hex>'")?;
        let got = crc32(body.as_bytes());
        if got != want {
            return Err(format!("checksum {got:08x} does not match the recorded {want:08x}"));
        }
        let mut st = CapState { host_id: String::new(), boot_id: String::new(), root: PathBuf::new(), zones: Vec::new() };
        let mut version = None;
        for (n, line) in body.lines().enumerate().filter(|(_, l)| !l.starts_with('#')) {
            let bad = || format!("line {}: '{line}'", n + 1);
            let (key, value) = line.split_once(' ').ok_or_else(bad)?;
            match key {
                "version" => version = Some(value),
                "host" => st.host_id = value.to_string(),
                "boot" => st.boot_id = value.to_string(),
                "root" => st.root = PathBuf::from(value),
                "zone" => {
                    let f: Vec<&str> = value.split(' ').collect();
                    let [socket, zone, uw] = f[..] else { return Err(bad()) };
                    let (socket, limit_uw) = (socket.parse().map_err(|_| bad())?, uw.parse().map_err(|_| bad())?);
                    st.zones.push(ZoneLimit { socket, zone: zone.to_string(), limit_uw });
                }
                _ => return Err(bad()),
            }
        }
        if version != Some("1") {
            return Err(format!("version {version:?}, expected 1"));
        }
        if st.host_id.is_empty() || st.root.as_os_str().is_empty() || st.zones.is_empty() {
            return Err("host, root or zones missing".into());
        }
        Ok(st)
    }

    /// Writes the file durably: a crash at any point leaves either no file or the whole file.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = self.render();
        if text.lines().count() != 6 + self.zones.len() {
            return Err(std::io::Error::other("host id or powercap root contains a line break"));
        }
        let dir = parent(path);
        std::fs::create_dir_all(&dir)?;
        let tmp = tmp_path(path);
        // create_new does not follow a symlink planted at the temp name.
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(&dir)
    }

    /// The file at `path` checked against this agent (`now`: host, boot, root and zones with the
    /// limits found now). Err: corrupt, unreadable, or written for another host, root or zone
    /// set; its limits must not be written then.
    pub fn load(path: &Path, now: &CapState) -> Result<Found, String> {
        let f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
            Err(e) => return Err(format!("cannot read it: {e}")),
        };
        let mut text = String::new();
        f.take(MAX_BYTES + 1).read_to_string(&mut text).map_err(|e| format!("corrupt: {e}"))?;
        if text.len() as u64 > MAX_BYTES {
            return Err(format!("corrupt: larger than {MAX_BYTES} bytes"));
        }
        let st = CapState::parse(&text).map_err(|e| format!("corrupt: {e}"))?;
        let zones = |s: &CapState| s.zones.iter().map(|z| format!("{}={}", z.socket, z.zone)).collect::<Vec<_>>().join(",");
        for (what, file, here) in [
            ("host", st.host_id.clone(), now.host_id.clone()),
            ("powercap root", st.root.display().to_string(), now.root.display().to_string()),
            ("package zones", zones(&st), zones(now)),
        ] {
            if file != here {
                return Err(format!("written for {what} '{file}', this agent has '{here}'"));
            }
        }
        if st.boot_id != now.boot_id {
            return Ok(Found::OtherBoot(st.boot_id));
        }
        Ok(Found::Recovered(st))
    }

    /// Removes the file (at a clean stop, once its limits are back).
    pub fn remove(path: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(path) {
            Ok(()) => sync_dir(&parent(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> CapState {
        CapState {
            host_id: "node 1".into(),
            boot_id: "b-1".into(),
            root: "/sys/class/powercap".into(),
            zones: vec![
                ZoneLimit { socket: 0, zone: "intel-rapl:0".into(), limit_uw: 165_000_000 },
                ZoneLimit { socket: 1, zone: "intel-rapl:1".into(), limit_uw: 150_000_000 },
            ],
        }
    }

    fn file(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wg-capstate-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d.join("sub/power-cap.state")
    }

    #[test]
    fn saved_state_loads_back_and_is_removed() {
        let p = file("roundtrip");
        let st = state();
        assert_eq!(CapState::load(&p, &st), Ok(Found::Nothing));
        st.save(&p).unwrap();
        assert!(!tmp_path(&p).exists());
        assert_eq!(CapState::load(&p, &st), Ok(Found::Recovered(st.clone())));
        // The limits found now do not matter: the file's are the originals.
        let mut capped = st.clone();
        capped.zones[0].limit_uw = 50_000_000;
        assert_eq!(CapState::load(&p, &capped), Ok(Found::Recovered(st.clone())));
        CapState::remove(&p).unwrap();
        assert!(!p.exists());
        CapState::remove(&p).unwrap();
        let _ = std::fs::remove_dir_all(p.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn another_host_root_zone_set_or_boot_is_told_apart() {
        let p = file("foreign");
        let st = state();
        st.save(&p).unwrap();
        let mut other = st.clone();
        other.host_id = "node-2".into();
        assert!(CapState::load(&p, &other).unwrap_err().contains("written for host 'node 1', this agent has 'node-2'"));
        let mut other = st.clone();
        other.root = "/tmp/fixture".into();
        assert!(CapState::load(&p, &other).unwrap_err().contains("powercap root '/sys/class/powercap'"));
        let mut other = st.clone();
        other.zones.pop();
        assert!(CapState::load(&p, &other).unwrap_err().contains("package zones '0=intel-rapl:0,1=intel-rapl:1'"));
        let mut other = st.clone();
        other.boot_id = "b-2".into();
        assert_eq!(CapState::load(&p, &other), Ok(Found::OtherBoot("b-1".into())));
        let _ = std::fs::remove_dir_all(p.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn a_corrupt_file_is_refused_with_the_reason() {
        let p = file("corrupt");
        let st = state();
        st.save(&p).unwrap();
        let good = std::fs::read_to_string(&p).unwrap();
        for (bad, why) in [
            (good.replace("165000000", "165000001"), "checksum"),
            (good[..good.len() - 5].to_string(), "checksum"),
            (good.lines().take(5).collect::<Vec<_>>().join("\n"), "crc32"),
            (String::new(), "no checksum line"),
            ("x".repeat(70_000), "larger than"),
        ] {
            std::fs::write(&p, &bad).unwrap();
            let e = CapState::load(&p, &st).unwrap_err();
            assert!(e.starts_with("corrupt") && e.contains(why), "{e}");
        }
        // A valid checksum over nonsense is still refused.
        let mut body = "version 1\nhost h\nzone 0 intel-rapl:0 many\n".to_string();
        let crc = crc32(body.as_bytes());
        body.push_str(&format!("crc32 {crc:08x}\n"));
        std::fs::write(&p, &body).unwrap();
        assert!(CapState::load(&p, &st).unwrap_err().contains("line 3: 'zone 0 intel-rapl:0 many'"));
        let mut bad = st.clone();
        bad.host_id = "a\nroot /elsewhere".into();
        assert!(bad.save(&p).is_err(), "a line break cannot smuggle a line in");
        let _ = std::fs::remove_dir_all(p.parent().unwrap().parent().unwrap());
    }
}
