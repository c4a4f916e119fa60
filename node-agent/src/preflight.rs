//! Start-up checks of what the agent needs from the kernel, so a node that cannot run it gets
//! one message naming what is missing instead of a libbpf error: kernel BTF (CO-RE and tp_btf),
//! a kernel at least `MIN_KERNEL`, and every tracepoint the programs attach to (looked up as
//! `btf_trace_<event>` in the kernel's BTF, which is what tp_btf attaches to).
use std::fmt;
use std::path::Path;

use libbpf_rs::libbpf_sys;

/// sock:sock_send_length / sock_recv_length, the byte path, arrived in Linux 6.3.
pub const MIN_KERNEL: (u32, u32) = (6, 3);
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// "6.18.44-fc-v782" -> (6, 18).
pub fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut it = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// `uname -r` of the running kernel.
pub fn kernel_release() -> String {
    // SAFETY: uname fills the zeroed struct; release is NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy().into_owned()
    }
}

/// The kernel's BTF, loaded once for several lookups.
pub struct KernelBtf(*mut libbpf_sys::btf);

impl KernelBtf {
    pub fn load() -> Option<KernelBtf> {
        // SAFETY: plain libbpf call; a null result means no BTF.
        let btf = unsafe { libbpf_sys::btf__load_vmlinux_btf() };
        (!btf.is_null()).then_some(KernelBtf(btf))
    }

    /// Whether tp_btf can attach to tracepoint "subsystem:event" (or plain "event").
    pub fn has_tracepoint(&self, tracepoint: &str) -> bool {
        let event = tracepoint.rsplit(':').next().unwrap_or(tracepoint);
        let Ok(name) = std::ffi::CString::new(format!("btf_trace_{event}")) else { return false };
        // SAFETY: valid BTF object and NUL-terminated name.
        unsafe { libbpf_sys::btf__find_by_name_kind(self.0, name.as_ptr(), libbpf_sys::BTF_KIND_TYPEDEF) >= 0 }
    }
}

impl Drop for KernelBtf {
    fn drop(&mut self) {
        // SAFETY: owned pointer from btf__load_vmlinux_btf.
        unsafe { libbpf_sys::btf__free(self.0) }
    }
}

/// Whether the running kernel has tracepoint "subsystem:event" for tp_btf.
pub fn kernel_has_tracepoint(tracepoint: &str) -> bool {
    KernelBtf::load().is_some_and(|b| b.has_tracepoint(tracepoint))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreflightError {
    NoBtf,
    MissingTracepoints { release: String, missing: Vec<String> },
}

impl fmt::Display for PreflightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreflightError::NoBtf => write!(
                f,
                "kernel BTF missing ({VMLINUX_BTF}): the agent needs a kernel built with CONFIG_DEBUG_INFO_BTF=y"
            ),
            PreflightError::MissingTracepoints { release, missing } => {
                write!(f, "kernel {release} lacks the tracepoint(s) {}", missing.join(", "))?;
                match parse_release(release) {
                    Some(v) if v < MIN_KERNEL => {
                        write!(f, "; the agent needs Linux {}.{} or newer", MIN_KERNEL.0, MIN_KERNEL.1)
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// What the kernel offers: tracepoints that are there and optional ones that are not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    pub release: String,
    pub missing_optional: Vec<String>,
}

/// Checks BTF and that every `required` tracepoint exists; lists absent `optional` ones.
pub fn check(required: &[&str], optional: &[&str]) -> Result<Preflight, PreflightError> {
    let release = kernel_release();
    if !Path::new(VMLINUX_BTF).exists() {
        return Err(PreflightError::NoBtf);
    }
    let btf = KernelBtf::load().ok_or(PreflightError::NoBtf)?;
    let missing: Vec<String> = required.iter().filter(|t| !btf.has_tracepoint(t)).map(|t| t.to_string()).collect();
    if !missing.is_empty() {
        return Err(PreflightError::MissingTracepoints { release, missing });
    }
    let missing_optional = optional.iter().filter(|t| !btf.has_tracepoint(t)).map(|t| t.to_string()).collect();
    Ok(Preflight { release, missing_optional })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases() {
        assert_eq!(parse_release("6.18.44-fc-v782"), Some((6, 18)));
        assert_eq!(parse_release("5.15.0-91-generic\n"), Some((5, 15)));
        assert_eq!(parse_release("6.3"), Some((6, 3)));
        assert_eq!(parse_release("garbage"), None);
        assert!(parse_release("6.2.9").unwrap() < MIN_KERNEL);
        assert!(parse_release("6.10.1").unwrap() >= MIN_KERNEL);
    }

    #[test]
    fn missing_tracepoints_are_named_with_the_minimum_kernel_when_older() {
        let e = PreflightError::MissingTracepoints {
            release: "5.15.0-91-generic".into(),
            missing: vec!["sock:sock_send_length".into(), "sock:sock_recv_length".into()],
        };
        assert_eq!(
            e.to_string(),
            "kernel 5.15.0-91-generic lacks the tracepoint(s) sock:sock_send_length, sock:sock_recv_length; the agent needs Linux 6.3 or newer"
        );
        let e = PreflightError::MissingTracepoints { release: "6.8.0".into(), missing: vec!["tcp:x".into()] };
        assert_eq!(e.to_string(), "kernel 6.8.0 lacks the tracepoint(s) tcp:x");
    }

    /// On the machine the tests run on (CI: this kind of machine, kernel >= 6.3 with BTF).
    #[test]
    fn this_kernel_has_what_the_agent_attaches_to() {
        let required: Vec<&str> = crate::capture::TRACEPOINTS.iter().chain(crate::sched::TRACEPOINTS.iter()).copied().collect();
        match check(&required, &["sock:no_such_event_wattgraph"]) {
            Ok(p) => {
                assert_eq!(p.missing_optional, vec!["sock:no_such_event_wattgraph".to_string()]);
                assert!(parse_release(&p.release).unwrap() >= MIN_KERNEL, "{}", p.release);
            }
            Err(e) => panic!("{e}"),
        }
        let e = check(&["sock:sock_send_length", "sock:no_such_event_wattgraph"], &[]).unwrap_err();
        assert!(e.to_string().contains("lacks the tracepoint(s) sock:no_such_event_wattgraph"), "{e}");
    }
}
