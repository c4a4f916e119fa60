//! Turns a kernel event into a Kafka message: adds cmdline and container id,
//! converts the boot-clock timestamp to Unix time, encodes Avro, builds the key.
//! Buffers are reused, so a steady-state event does not allocate.
use anyhow::Result;

use crate::output::avro::connection::{Encoder, EventRecord};
use crate::capture::event::ConnEvent;
use crate::shared::net::canonical_key;
use crate::identity::proc_info::ProcCache;

pub struct Pipeline {
    host_id: String,
    boot_to_unix_ns: i64,
    encoder: Encoder,
    procs: ProcCache,
    payload: Vec<u8>,
    key: String,
}

impl Pipeline {
    pub fn new(host_id: &str, boot_to_unix_ns: i64, proc_cache_entries: usize) -> Result<Pipeline> {
        Ok(Pipeline {
            host_id: host_id.to_string(),
            boot_to_unix_ns,
            encoder: Encoder::new()?,
            procs: ProcCache::new(proc_cache_entries),
            payload: Vec::with_capacity(512),
            key: String::with_capacity(128),
        })
    }

    /// Command lines from the kernel's copies first (`CaptureHandle::kernel_cmdlines`).
    pub fn use_kernel_cmdlines(&mut self, kernel: std::sync::Arc<crate::identity::proc_info::KernelCmdlines>) {
        self.procs.use_kernel_cmdlines(kernel);
    }

    /// Returns (key, single-object Avro payload), valid until the next call.
    pub fn process(&mut self, ev: &ConnEvent) -> (&[u8], &[u8]) {
        let Pipeline { host_id, boot_to_unix_ns, encoder, procs, payload, key } = self;
        let (cmdline, container) = procs.lookup(ev.tgid, ev.proc_start_ns, ev.cgroup_id);
        let rec = EventRecord {
            kind: ev.kind,
            host_id,
            event_time_ns: (ev.ts_boot_ns as i64).saturating_add(*boot_to_unix_ns),
            local_address: ev.local_addr,
            local_port: ev.local_port as i32,
            remote_address: ev.remote_addr,
            remote_port: ev.remote_port as i32,
            role: ev.role,
            pid: ev.pid as i32,
            tgid: ev.tgid as i32,
            process_start_time_ns: ev.proc_start_ns as i64,
            comm: ev.comm_str(),
            cmdline,
            cgroup_id: ev.cgroup_id as i64,
            container_id: container,
            netns_inode: ev.netns as i64,
            socket_cookie: ev.cookie as i64,
            bytes_sent: ev.bytes_sent as i64,
            bytes_received: ev.bytes_recv as i64,
            nat: ev.nat,
            keep_probability: ev.keep_probability(),
        };
        encoder.encode(&rec, payload);
        let ((la, lp), (ra, rp)) = ev.key_endpoints();
        canonical_key(key, ev.role, (&la, lp), (&ra, rp));
        (key.as_bytes(), payload.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::avro::connection::decode_single_object;
    use crate::capture::event::Kind;
    use crate::shared::net::{addr16_from_ip, Role};

    #[test]
    fn process_own_process_event() {
        let mut p = Pipeline::new("host-a", 1_000, 16).unwrap();
        let me = std::process::id();
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"test");
        let ev = ConnEvent {
            kind: Kind::Closed,
            role: Role::Server,
            ts_boot_ns: 5_000,
            cookie: 42,
            proc_start_ns: 0,
            cgroup_id: 7,
            bytes_sent: 10,
            bytes_recv: 20,
            pid: me,
            tgid: me,
            netns: 4026531840,
            local_addr: addr16_from_ip("127.0.0.1".parse().unwrap()),
            local_port: 8080,
            remote_addr: addr16_from_ip("::1".parse().unwrap()),
            remote_port: 50000,
            comm,
            nat: None,
            keep: crate::capture::event::KEEP_ONE / 4,
        };
        let (key, payload) = p.process(&ev);
        assert_eq!(std::str::from_utf8(key).unwrap(), "[::1]:50000>127.0.0.1:8080");
        let d = decode_single_object(payload).unwrap();
        assert_eq!(d.host_id, "host-a");
        assert_eq!(d.event_time_ns, 6_000);
        assert_eq!((d.kind, d.role, d.comm.as_str()), (Kind::Closed, Role::Server, "test"));
        assert_eq!((d.bytes_sent, d.bytes_received, d.socket_cookie, d.netns_inode), (10, 20, 42, 4026531840));
        assert_eq!((d.local_port, d.remote_port, d.tgid), (8080, 50000, me as i32));
        assert_eq!(d.keep_probability, 0.25);
        assert!(d.cmdline.is_some(), "own cmdline readable (start time 0 skips the reuse guard)");
    }
}
