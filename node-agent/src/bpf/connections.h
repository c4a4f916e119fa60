/* Shared between the BPF program and user space (mirrored in src/capture.rs).
 * Fields ordered by size so there is no hidden padding. */
#ifndef WATTGRAPH_CONNECTIONS_H
#define WATTGRAPH_CONNECTIONS_H

enum ev_kind { EV_OPENED = 0, EV_SNAPSHOT = 1, EV_CLOSED = 2 };
enum conn_role { ROLE_CLIENT = 0, ROLE_SERVER = 1, ROLE_UNKNOWN = 2 };
enum stat_idx { STAT_RINGBUF_DROPS = 0, STAT_MAX = 1 };

struct sock_info {
	__u64 cookie;
	__u64 bytes_sent;
	__u64 bytes_recv;
	__u64 reported_sent;
	__u64 reported_recv;
	__u64 last_report_ns;
	__u64 proc_start_ns;
	__u64 cgroup_id;
	__u32 pid;
	__u32 tgid;
	__u32 netns;
	__u16 lport;
	__u16 rport;
	__u8 laddr[16];
	__u8 raddr[16];
	char comm[16];
	__u8 role;
	__u8 has_identity;
	__u8 opened;
	__u8 ignored;
	__u8 _pad[4];
};

struct conn_event {
	__u64 ts_boot_ns;
	__u64 cookie;
	__u64 proc_start_ns;
	__u64 cgroup_id;
	__u64 bytes_sent;
	__u64 bytes_recv;
	__u32 pid;
	__u32 tgid;
	__u32 netns;
	__u16 lport;
	__u16 rport;
	__u8 laddr[16];
	__u8 raddr[16];
	char comm[16];
	__u8 kind;
	__u8 role;
	__u8 _pad[6];
};

#endif
