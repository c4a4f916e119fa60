//! What loading the BPF programs shares: the error that says whether permission was missing,
//! libbpf's errors mapped to it, and lookups in the kernel's BTF (which tracepoints exist).
use libbpf_rs::libbpf_sys;

#[derive(Debug)]
pub enum CaptureError {
    /// Not allowed to load BPF (EPERM/EACCES).
    Permission(String),
    Other(String),
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::Permission(m) => write!(
                f,
                "BPF permission missing ({m}): run as root, or grant CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (CAP_SYS_ADMIN on older kernels); --log-level debug shows libbpf's details"
            ),
            CaptureError::Other(m) => write!(f, "{m}"),
        }
    }
}
impl std::error::Error for CaptureError {}

/// A libbpf error of step `what`, as a permission error where it was one.
pub(crate) fn bpf_err(what: &str, e: libbpf_rs::Error) -> CaptureError {
    if e.kind() == libbpf_rs::ErrorKind::PermissionDenied {
        CaptureError::Permission(format!("{what}: {e}"))
    } else {
        CaptureError::Other(format!("{what}: {e}"))
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

