//! What loading the BPF programs shares: the error that says whether permission was missing or
//! the kernel's policy refused, libbpf's errors and log mapped to it, and lookups in the kernel's
//! BTF (which tracepoints exist).
use std::sync::Mutex;

use libbpf_rs::libbpf_sys;

use crate::shared::caps;

#[derive(Debug)]
pub enum CaptureError {
    /// Not allowed to load BPF (EPERM/EACCES): the whole message (`permission_message`).
    Permission(String),
    Other(String),
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::Permission(m) | CaptureError::Other(m) => write!(f, "{m}"),
        }
    }
}
impl std::error::Error for CaptureError {}

/// A libbpf error of step `what`, as a permission error where it was one.
pub(crate) fn bpf_err(what: &str, e: libbpf_rs::Error) -> CaptureError {
    if e.kind() == libbpf_rs::ErrorKind::PermissionDenied {
        let program = refused_program();
        CaptureError::Permission(permission_message(&format!("{what}: {e}"), program.as_deref(), caps::effective_capabilities().ok(), lockdown().as_deref()))
    } else {
        CaptureError::Other(format!("{what}: {e}"))
    }
}

/// The program libbpf last failed to load, from its log: its error does not name it.
static REFUSED_PROGRAM: Mutex<Option<String>> = Mutex::new(None);

/// The program libbpf last failed to load (since `forget_refused`).
pub(crate) fn refused_program() -> Option<String> {
    REFUSED_PROGRAM.lock().ok().and_then(|p| p.clone())
}

pub(crate) fn forget_refused() {
    if let Ok(mut p) = REFUSED_PROGRAM.lock() {
        *p = None;
    }
}

/// Sends libbpf's messages to the logger at debug level, so a failure stays one line, and keeps
/// the name of a program it failed to load for the error.
pub(crate) fn route_libbpf_log() {
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, |_lvl, msg: String| {
        if let Some(p) = program_of_failed_load(&msg) {
            if let Ok(mut last) = REFUSED_PROGRAM.lock() {
                *last = Some(p.to_string());
            }
        }
        log::debug!(target: "libbpf", "{}", msg.trim_end())
    })));
}

/// The program of libbpf's "prog 'NAME': BPF program load failed: ..." line.
fn program_of_failed_load(line: &str) -> Option<&str> {
    let rest = &line[line.find("prog '")? + 6..];
    let (name, after) = rest.split_once('\'')?;
    after.starts_with(": BPF program load failed").then_some(name)
}

/// The message of a load the kernel refused with EPERM/EACCES (`detail`: the step and libbpf's
/// error). Without CAP_BPF and CAP_PERFMON it says what to grant; with them the kernel's own
/// policy refused (root cannot help), so it names the program and the lockdown mode (`lockdown`:
/// /sys/kernel/security/lockdown, the active mode in brackets). It starts as it always did, for
/// the scripts and tests that look for it.
fn permission_message(detail: &str, program: Option<&str>, effective: Option<u64>, lockdown: Option<&str>) -> String {
    let program = program.map(|p| format!(", program '{p}'")).unwrap_or_default();
    if !effective.is_some_and(caps::bpf_capable) {
        return format!(
            "BPF permission missing ({detail}{program}): run as root, or grant CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (CAP_SYS_ADMIN on older kernels); --log-level debug shows libbpf's details"
        );
    }
    let policy = kernel_policy(lockdown);
    format!("BPF permission missing ({detail}{program}): the agent has CAP_BPF and CAP_PERFMON, so the kernel's own policy refused it: {policy}; every program is needed, so this kernel cannot run the agent; --log-level debug shows libbpf's details")
}

/// What refuses a program a capable process loads: the lockdown mode of `lockdown` (the text of
/// /sys/kernel/security/lockdown, the active mode in brackets), else an LSM or a setting.
fn kernel_policy(lockdown: Option<&str>) -> String {
    match lockdown.and_then(|l| Some(&l[l.find('[')? + 1..l.find(']')?])) {
        Some("none") => "an LSM policy or a kernel setting (kernel lockdown is off)".to_string(),
        Some(m) => format!("kernel lockdown '{m}' (/sys/kernel/security/lockdown) or an LSM policy"),
        None => "kernel lockdown or an LSM policy (/sys/kernel/security/lockdown not readable)".to_string(),
    }
}

/// This kernel's `kernel_policy`, for a refusal that is not fatal.
pub(crate) fn refusing_policy() -> String {
    kernel_policy(lockdown().as_deref())
}

fn lockdown() -> Option<String> {
    std::fs::read_to_string("/sys/kernel/security/lockdown").ok()
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


#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::caps::{Capability, CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN};

    const DETAIL: &str = "load BPF programs: Operation not permitted (os error 1)";

    #[test]
    fn the_refused_program_is_read_from_libbpf_log() {
        assert_eq!(program_of_failed_load("libbpf: prog 'dump_socks': BPF program load failed: -EPERM\n"), Some("dump_socks"));
        assert_eq!(program_of_failed_load("libbpf: prog 'dump_socks': failed to load: -1"), None);
        assert_eq!(program_of_failed_load("libbpf: map 'txn_hist': created successfully, fd=13"), None);
        assert_eq!(program_of_failed_load("libbpf: prog 'unterminated"), None);
    }

    #[test]
    fn without_the_capabilities_the_message_says_what_to_grant() {
        let m = permission_message(DETAIL, None, Some(Capability::mask(&[CAP_BPF])), Some("none [integrity] confidentiality"));
        assert!(m.starts_with("BPF permission missing (load BPF programs: Operation not permitted (os error 1)): run as root, or grant CAP_BPF, CAP_PERFMON"), "{m}");
        let m = permission_message(DETAIL, Some("handle_send"), None, None);
        assert!(m.contains(", program 'handle_send'): run as root"), "{m}");
    }

    /// A root agent on a locked-down kernel was told to run as root.
    #[test]
    fn with_the_capabilities_the_message_names_the_program_and_the_kernel_policy() {
        for caps in [Capability::mask(&[CAP_BPF, CAP_PERFMON]), Capability::mask(&[CAP_SYS_ADMIN])] {
            let m = permission_message(DETAIL, Some("dump_socks"), Some(caps), Some("none [integrity] confidentiality\n"));
            assert!(m.starts_with("BPF permission missing (load BPF programs: Operation not permitted (os error 1), program 'dump_socks'): the agent has CAP_BPF and CAP_PERFMON"), "{m}");
            assert!(m.contains("kernel lockdown 'integrity'") && !m.contains("run as root"), "{m}");
        }
        let m = permission_message(DETAIL, None, Some(Capability::mask(&[CAP_SYS_ADMIN])), Some("[none] integrity confidentiality"));
        assert!(m.contains("an LSM policy or a kernel setting (kernel lockdown is off)"), "{m}");
        let m = permission_message(DETAIL, None, Some(Capability::mask(&[CAP_SYS_ADMIN])), None);
        assert!(m.contains("not readable"), "{m}");
    }
}
