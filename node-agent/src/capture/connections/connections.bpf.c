// SPDX-License-Identifier: GPL-2.0
// Wattgraph connection capture (BlackBox's KernelAgg): TCP sockets, per-socket byte
// counters aggregated in-kernel, OPENED / SNAPSHOT / CLOSED pushed to a ring
// buffer. Only tracepoints are used (kprobes/fentry are unavailable here).
// Length: about 940 lines, one compilation unit because it is one BPF object (one skeleton):
// its programs share the socket map and the helpers, in sections (maps, identity, shedding,
// transactions, the programs); the HTTP request parser and the shared layouts are headers.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "connections.h"
#include "http_route.h"

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define MSG_PEEK 2

#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_SYN_RECV 3
#define TCP_CLOSE 7

char LICENSE[] SEC("license") = "GPL";

// Set by user space before load.
const volatile __u64 snapshot_bytes = 1048576;
const volatile __u64 snapshot_interval_ns = 5000000000ULL;
// The byte rule reports a socket at most once per this long (0 = at every crossing).
const volatile __u64 snapshot_min_ns = 1000000000ULL;
const volatile __u8 filter_netns = 0;    // 1 = only namespaces in netns_filter
const volatile __u8 filter_cidr = 0;     // with filter_netns: also sockets whose local address is in local_cidrs
const volatile __u8 track_txn = 1;       // 0 = no transaction tracking (nobody drains)
const volatile __u8 track_http = 1;      // 1 = HTTP/1.x routes of transactions (needs track_txn)
const volatile __u8 shed_mode = SHED_OFF; // enum shed_mode; SHED_OFF compiles the shedder out
const volatile __u8 shed_by_cgroup = 0;  // accounting domain: 0 = process (tgid), 1 = cgroup id

// Each socket's state, stored in the socket itself (bpf_sk_storage_get from the socket pointer):
// no hash lookup per send or receive, no eviction, freed with the socket. User space lists it
// with the dump_socks iterator below (every namespace in one walk).
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_info);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);   // netns inode
	__type(value, __u8);
} netns_filter SEC(".maps");

// --node-scope: the node's pod CIDRs (IPv4 as ::ffff:a.b.c.d/96+n), for pods' sockets, which live in
// namespaces of their own. Consulted only with filter_cidr.
struct lpm_key {
	__u32 prefixlen;
	__u8 addr[16];
};
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_key);
	__type(value, __u8);
} local_cidrs SEC(".maps");

// The agent's own process (its Kafka traffic), ignored; 0 = none. A map, not a constant: pinned
// programs outlive the agent that loaded them, and the next agent writes its own pid here.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} self_tgid SEC(".maps");

#define EVENTS_RING_BYTES (4 * 1024 * 1024)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EVENTS_RING_BYTES);
} events SEC(".maps");

// Wake the reader only once this much is waiting: a wakeup per event (the default) cost the agent
// a futex wake and two context switches per event, more than handling the event. Below it the
// reader finds the events at its next poll, every EVENT_POLL (connections/thread.rs, 20 ms).
#define EVENTS_WAKEUP_BYTES (EVENTS_RING_BYTES / 16)

// Command lines of processes as their first socket is identified (struct proc_args), and the
// incarnations already sent (tgid -> group leader's start time). The reader finds them at its
// next poll of `events` (no wakeup of their own), before the events read with them.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024);
} proc_args_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} procs_seen SEC(".maps");

// Per-CPU counters, summed in user space (STAT_*).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

// Transactions (request/response exchanges), see txn_on_bytes. A closed socket's final totals
// (struct txn_conn), one record each, read by the drain: a ring record instead of a hash entry
// takes ~3 µs off a connection's two closes (docs/benchmarks/agent.md). No wakeup: the drain reads
// the ring on its timer. Resized from user space (--map-entries).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} txn_closed SEC(".maps");
// Never written: it puts struct txn_conn, the record's layout, into the skeleton's types.
struct txn_conn *txn_closed_record;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct txn_hist_key);
	__type(value, struct txn_row);      // cumulative counts
} txn_hist SEC(".maps");

// The TransactionStats baseline: what of txn_hist and each socket's totals the output has
// journaled (struct txn_base). Only user space writes it; pinned, it tells the next agent where
// to continue. Resized from user space.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct txn_hist_key);
	__type(value, struct txn_base);
} txn_base SEC(".maps");

// HTTP routes seen on this host: id -> method and normalised path (bounded; ROUTE_OTHER past it).
// Resized from user space (--http-routes).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct http_route);
} http_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct http_parse);
} http_scratch SEC(".maps");

// The route table's generation: user space adds one after it prunes routes from http_routes
// (drain.rs), so a route a CPU remembered before (http_parse.last_id) is parsed and named again.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} http_routes_gen SEC(".maps");

// Load shedding: keep fraction per domain (SHED_KEEP_ONE fixed point), written by user space
// every interval; SHED_DOMAIN_DEFAULT holds the fraction of domains without an entry.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHED_DOMAINS);
	__type(key, __u64);
	__type(value, struct shed_keep_val);
} shed_keep SEC(".maps");

// Kept / shed connections per domain, cumulative (user space takes differences).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SHED_DOMAINS);
	__type(key, __u64);
	__type(value, struct shed_count);
} shed_counts SEC(".maps");

// A softirq can interrupt a socket program running in process context on the same CPU (a
// state change while a send builds an entry). Per CPU: how many programs hold a scratch slot
// now (new_entry), and whether handle_set_state is running. Nesting on one CPU is strictly
// last in, first out, so only the time a slot is in use needs counting.
#define NEST_MAX 3
struct nest_state {
	__u32 depth;
	__u32 in_set_state;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nest_state);
} nest SEC(".maps");

// Scratch for building a new entry (too big for the 512-byte stack with the event), one slot
// per nesting depth so an interrupting program does not overwrite the one it interrupted.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NEST_MAX);
	__type(key, __u32);
	__type(value, struct sock_info);
} scratch SEC(".maps");

// When the sendmsg now running on this CPU began (tcp_sendmsg_locked, before any byte is
// pushed): sock_send_length fires only after the send returned, and on loopback that is after
// the peer was woken and may already have answered. A new sendmsg is told from the same one by
// the bytes still to copy, which only shrink within one call. idle_sk / idle_seq: the socket of
// the last send that returned on this CPU and its read position (copied_seq) then; a new send on
// it while that is unchanged continues the request or response, and needs no time.
struct send_begin {
	__u64 sk;
	__u64 left;
	__u64 ts; // CLOCK_MONOTONIC, as every transaction time
	__u64 idle_sk;
	__u32 idle_seq;
	__u32 _pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct send_begin);
} send_begins SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);
	if (v)
		*v += 1;
}

static __always_inline bool is_self(void)
{
	__u32 zero = 0;
	__u32 *me = bpf_map_lookup_elem(&self_tgid, &zero);
	return me && *me && (bpf_get_current_pid_tgid() >> 32) == *me;
}

// The socket's cookie (its name in events and transaction maps), taken once, when its state is
// created: a plain load once the kernel has made one, else the helper.
static __always_inline __u64 sock_cookie(struct sock *sk)
{
	__u64 c = sk->__sk_common.skc_cookie.counter;
	return c ? c : bpf_get_socket_cookie(sk);
}

static __always_inline struct sock_info *sock_state(struct sock *sk)
{
	return bpf_sk_storage_get(&socks, sk, 0, 0);
}

// The application's read position in the byte stream: it moves with every byte read (not
// with a peek), so an unchanged value means nothing was received since.
static __always_inline __u32 copied_seq(struct sock *sk)
{
	return bpf_core_cast(sk, struct tcp_sock)->copied_seq;
}

static __always_inline __u32 sk_netns(const struct sock *sk)
{
	return sk->__sk_common.skc_net.net->ns.inum;
}

// The local address as fill_tuple normalises it. A v4-mapped AF_INET6 socket (Java's) has
// ::ffff:a.b.c.d there from the moment its IPv4 source is set (sk_rcv_saddr_set writes both), so
// before SYN_SENT too (tests/node_scope.rs dials one).
static __always_inline bool local_in_cidrs(const struct sock *sk)
{
	struct lpm_key k = { .prefixlen = 128 };
	if (sk->__sk_common.skc_family == AF_INET) {
		__u32 l = sk->__sk_common.skc_rcv_saddr;
		__builtin_memset(k.addr, 0, 10);
		k.addr[10] = 0xff; k.addr[11] = 0xff;
		__builtin_memcpy(&k.addr[12], &l, 4);
	} else {
		__builtin_memcpy(k.addr, sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8, 16);
	}
	return bpf_map_lookup_elem(&local_cidrs, &k) != NULL;
}

// Whether a socket first met counts: every socket, or (filter_netns) those of the listed
// namespaces, and (filter_cidr) those whose local address is in the node's pod CIDRs. The
// default compiles to true.
static __always_inline bool sock_allowed(const struct sock *sk, __u32 ns)
{
	if (!filter_netns)
		return true;
	if (bpf_map_lookup_elem(&netns_filter, &ns))
		return true;
	return filter_cidr && local_in_cidrs(sk);
}

// TCP over IPv4/IPv6 only.
static __always_inline bool is_tcp_inet(const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;
	if (family != AF_INET && family != AF_INET6)
		return false;
	return sk->sk_protocol == IPPROTO_TCP;
}

// Addresses normalised to 16 bytes; IPv4 becomes ::ffff:a.b.c.d.
static __always_inline void fill_tuple(struct sock_info *si, const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;
	if (family == AF_INET) {
		__u32 l = sk->__sk_common.skc_rcv_saddr;
		__u32 r = sk->__sk_common.skc_daddr;
		__builtin_memset(si->laddr, 0, 16);
		__builtin_memset(si->raddr, 0, 16);
		si->laddr[10] = 0xff; si->laddr[11] = 0xff;
		si->raddr[10] = 0xff; si->raddr[11] = 0xff;
		__builtin_memcpy(&si->laddr[12], &l, 4);
		__builtin_memcpy(&si->raddr[12], &r, 4);
	} else {
		__builtin_memcpy(si->laddr, sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8, 16);
		__builtin_memcpy(si->raddr, sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8, 16);
	}
	// inet_sport rather than skc_num: skc_num is cleared before close. inet_sock lies beyond
	// struct sock, where the typed pointer does not reach: a read-only cast (a plain load that
	// cannot fault) instead of a probe-read helper call.
	si->lport = bpf_ntohs(bpf_core_cast(sk, struct inet_sock)->inet_sport);
	si->rport = bpf_ntohs(sk->__sk_common.skc_dport);
}

// Copies the current process's argv once per incarnation (process context only).
static __always_inline void note_process(struct task_struct *task, __u32 tgid, __u64 start_ns)
{
	__u64 *seen = bpf_map_lookup_elem(&procs_seen, &tgid);
	if (seen && *seen == start_ns)
		return;
	struct proc_args *a = bpf_ringbuf_reserve(&proc_args_ring, sizeof(*a), 0);
	if (!a) {
		stat_inc(STAT_PROC_ARGS_DROPS); // not marked seen: the next socket tries again
		return;
	}
	bpf_map_update_elem(&procs_seen, &tgid, &start_ns, BPF_ANY);
	a->proc_start_ns = start_ns;
	a->tgid = tgid;
	a->_pad = 0;
	// No mm (kernel thread): the loads fault and read 0 (the verifier's probe loads).
	unsigned long from = task->mm->arg_start;
	unsigned long to = task->mm->arg_end;
	__u64 n = to > from ? to - from : 0;
	a->full_len = n > 0xffffffffULL ? 0xffffffff : (__u32)n;
	if (n > PROC_ARGS_MAX)
		n = PROC_ARGS_MAX;
	a->len = 0;
	if (n > 0) {
		// Fails only if the page is not resident (argv was swapped out): /proc then.
		if (!bpf_probe_read_user(a->args, n, (const void *)from))
			a->len = n;
		else
			stat_inc(STAT_PROC_ARGS_UNREAD);
	}
	bpf_ringbuf_submit(a, BPF_RB_NO_WAKEUP);
}

// Identity of the current task; only meaningful in process context.
static __always_inline void fill_identity(struct sock_info *si)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
	si->pid = (__u32)id;
	si->tgid = id >> 32;
	si->proc_start_ns = task->group_leader->start_boottime;
	si->cgroup_id = bpf_get_current_cgroup_id();
	// The process's name (its leader's), as the sched programs record it: the current thread's
	// (bpf_get_current_comm) named a process after its I/O thread, e.g. Neo4jDriverIO-2.
	__builtin_memcpy(si->comm, task->group_leader->comm, sizeof(si->comm));
	si->has_identity = 1;
	note_process(task, si->tgid, si->proc_start_ns);
}

static __always_inline void emit(struct sock_info *si, __u8 kind, __u64 now)
{
	struct conn_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_RINGBUF_DROPS);
		return;
	}
	e->ts_boot_ns = now;
	e->cookie = si->cookie;
	e->proc_start_ns = si->proc_start_ns;
	e->cgroup_id = si->cgroup_id;
	e->bytes_sent = si->bytes_sent;
	e->bytes_recv = si->bytes_recv;
	e->pid = si->pid;
	e->tgid = si->tgid;
	e->netns = si->netns;
	e->lport = si->lport;
	e->rport = si->rport;
	__builtin_memcpy(e->laddr, si->laddr, 16);
	__builtin_memcpy(e->raddr, si->raddr, 16);
	__builtin_memcpy(e->comm, si->comm, 16);
	e->kind = kind;
	e->role = si->role;
	e->_pad[0] = 0; e->_pad[1] = 0;
	e->keep = si->keep;
	__u64 waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(e, waiting >= EVENTS_WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	si->reported_sent = si->bytes_sent;
	si->reported_recv = si->bytes_recv;
	si->last_report_ns = now;
	si->snap_held = 0;
}

static __always_inline __u64 shed_domain(const struct sock_info *si)
{
	if (shed_mode == SHED_KERNEL_DROP)
		return SHED_DOMAIN_OTHER; // the baseline is blind to domains
	return shed_by_cgroup ? si->cgroup_id : (__u64)si->tgid;
}

static __always_inline struct shed_count *shed_counter(__u64 dom)
{
	struct shed_count *c = bpf_map_lookup_elem(&shed_counts, &dom);
	if (c)
		return c;
	struct shed_count zero = {};
	bpf_map_update_elem(&shed_counts, &dom, &zero, BPF_NOEXIST);
	c = bpf_map_lookup_elem(&shed_counts, &dom);
	if (c)
		return c;
	__u64 other = SHED_DOMAIN_OTHER; // map full: created by user space at load
	return bpf_map_lookup_elem(&shed_counts, &other);
}

// Decides whether the lifecycle events of a connection are reported; counts the decision.
static __attribute__((noinline)) int shed_decide(struct sock_info *si, __u64 now)
{
	__u64 dom = shed_domain(si);
	__u64 def = SHED_DOMAIN_DEFAULT;
	struct shed_keep_val *keep = NULL;
	if (shed_mode == SHED_KERNEL)
		keep = bpf_map_lookup_elem(&shed_keep, &dom);
	if (!keep)
		keep = bpf_map_lookup_elem(&shed_keep, &def);
	__u32 k = keep ? keep->keep : SHED_KEEP_ONE;
	if (k > SHED_KEEP_ONE)
		k = SHED_KEEP_ONE;
	int admit = k == SHED_KEEP_ONE ||
		    shed_conn_hash(si->role, si->laddr, si->lport, si->raddr, si->rport) < k;
	struct shed_count *c = shed_counter(dom);
	if (c) {
		if (admit)
			__sync_fetch_and_add(&c->kept, 1);
		else
			__sync_fetch_and_add(&c->shed, 1);
	}
	si->keep = admit ? k : 0;
	if (!admit) {
		si->shed = SHED_UNREPORTED;
		// As if reported now: the time rule of SNAPSHOT starts from here, not from 0.
		si->reported_sent = si->bytes_sent;
		si->reported_recv = si->bytes_recv;
		si->last_report_ns = now;
	}
	return admit;
}

// Where OPENED would be emitted. With shedding off (the default) this is a constant true and
// the verifier removes the rest.
static __always_inline void open_conn(struct sock_info *si, __u64 now)
{
	si->opened = OPEN_CLAIMED; // a call on another CPU does not open it again
	if (shed_mode == SHED_OFF || shed_decide(si, now))
		emit(si, EV_OPENED, now);
	// Only once OPENED is in the ring: the sweep reads the ring after its walk (sweep.rs), so a
	// socket it saw OPEN_DONE has its OPENED delivered before its SNAPSHOT.
	si->opened = OPEN_DONE;
}

// At TCP_CLOSE of a shed connection never reported: its bytes go to its domain's counters.
static __attribute__((noinline)) void shed_closed_unreported(struct sock_info *si)
{
	struct shed_count *c = shed_counter(shed_domain(si));
	if (c) {
		__sync_fetch_and_add(&c->shed_bytes_sent, si->bytes_sent);
		__sync_fetch_and_add(&c->shed_bytes_recv, si->bytes_recv);
	}
}

// The first bytes of the payload of the socket call now running, from user memory: the buffer
// argument of read/write/recvfrom/sendto, or the first iovecs of readv/writev/recvmsg/sendmsg.
// At sock_send_length / sock_recv_length the data is there (copied, not yet reused).
// Fills p->raw with up to HTTP_PEEK of the call's `len` bytes; returns how many (0: not visible).
#define PF_KTHREAD 0x00200000
#define HTTP_IOVECS 4
static __always_inline __u32 read_payload(struct http_parse *p, __u64 len)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *task = bpf_get_current_task_btf();
	if (task->flags & PF_KTHREAD)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr = regs->orig_ax;
	__u64 a2 = regs->si;
	__u64 a3 = regs->dx;
	__u64 want = len < HTTP_PEEK ? len : HTTP_PEEK;
	__u64 iov, iovcnt;
	switch (nr) {
	case 0: case 1: case 44: case 45: // read, write, sendto, recvfrom
		if (want > a3)
			want = a3;
		if (!want || bpf_probe_read_user(p->raw, want, (void *)a2))
			return 0;
		return want;
	case 19: case 20: // readv, writev (iov, iovcnt)
		iov = a2;
		iovcnt = a3;
		break;
	case 46: case 47: { // sendmsg, recvmsg: struct user_msghdr, msg_iov and msg_iovlen at 16
		__u64 m[2];
		if (bpf_probe_read_user(m, sizeof(m), (void *)(a2 + 16)))
			return 0;
		iov = m[0];
		iovcnt = m[1];
		break;
	}
	default:
		return 0;
	}
	__u32 got = 0;
	for (int k = 0; k < HTTP_IOVECS; k++) {
		if (k >= iovcnt || got >= want)
			break;
		__u64 v[2]; // struct iovec: base, len
		if (bpf_probe_read_user(v, sizeof(v), (void *)(iov + 16 * k)))
			break;
		__u64 take = v[1] < want - got ? v[1] : want - got;
		__u32 at = http_idx(got, HTTP_PEEK - 1);
		take = http_idx(take, 2 * HTTP_PEEK - 1);
		if (take > HTTP_PEEK)
			take = HTTP_PEEK;
		// raw is 2 * HTTP_PEEK long, so offset < HTTP_PEEK plus size <= HTTP_PEEK always fits.
		if (take && bpf_probe_read_user(p->raw + at, take, (void *)v[0]))
			break;
		got += take;
	}
	return got;
#else
	return 0; // syscall arguments are only read on x86_64 (user space says so at start)
#endif
}

// Route of the request whose first `len` bytes the current socket call carries.
static __attribute__((noinline)) __u64 http_route_of_payload(__u64 len)
{
	__u32 zero = 0;
	struct http_parse *p = bpf_map_lookup_elem(&http_scratch, &zero);
	if (!p)
		return ROUTE_NONE;
	__u32 n = read_payload(p, len);
	if (!n) {
		stat_inc(STAT_HTTP_NO_BUFFER);
		return ROUTE_NONE;
	}
	p->n = n;
	__u32 *gen = bpf_map_lookup_elem(&http_routes_gen, &zero);
	if (!gen)
		return ROUTE_NONE;
	// A client on keep-alive connections mostly repeats its requests: the same route as the
	// last one parsed on this CPU, without the parse and the table lookup.
	if (p->last_gen == *gen && http_repeats_last(p))
		return p->last_id;
	__u64 id = http_route_parse(p);
	if (id == ROUTE_NONE)
		return id;
	if (!bpf_map_lookup_elem(&http_routes, &id) &&
	    bpf_map_update_elem(&http_routes, &id, &p->r, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&http_routes, &id)) {
		stat_inc(STAT_ROUTES_FULL);
		return ROUTE_OTHER;
	}
	http_remember(p, id, *gen);
	return id;
}

// Boot-clock ns, read at the first need: a clock read costs about as much as the rest of a
// send or receive (65 ns of ~230 on the 2-vCPU VM, docs/benchmarks/agent.md).
static __always_inline __u64 clock_now(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_boot_ns();
	return *now;
}

// Transaction times are CLOCK_MONOTONIC ns, the clock TCP keeps per socket (only differences
// of them are reported). A send's is when it began (send_begins), read at the first need.
static __always_inline __u64 txn_clock(__u64 *t)
{
	if (!*t)
		*t = bpf_ktime_get_ns();
	return *t;
}

// A receive's transaction time without a clock read: TCP's own stamp of the socket
// (tcp_clock_cache), which the kernel refreshes when a receive copies bytes out
// (tcp_rcv_space_adjust), so the read's time as before; on any kernel between the arrival of the
// last byte read and this receive's return. A load where a clock read costs as much as the rest.
static __always_inline __u64 rx_time(struct sock *sk)
{
	__u64 t = 0;
	if (bpf_core_field_exists(struct tcp_sock, tcp_clock_cache))
		t = bpf_core_cast(sk, struct tcp_sock)->tcp_clock_cache;
	return t ? t : bpf_ktime_get_ns();
}

static __always_inline __u64 elapsed(__u64 from, __u64 to)
{
	return to > from ? to - from : 0;
}

// A count in the socket's row `row_of` of txn_hist, the row created at its first count.
static __always_inline void txn_hist_add(struct sock_info *si, __u8 kind, __u32 bucket, __u16 row_of)
{
	struct txn_hist_key k;
	__builtin_memset(&k, 0, sizeof(k));
	k.cookie = si->cookie;
	k.route = si->route;
	k.row = row_of;
	k.kind = kind;
	struct txn_row *row = bpf_map_lookup_elem(&txn_hist, &k);
	if (!row) {
		// A new row is created zero and then added to like any other, so a program that
		// creates it first (another CPU, or one nested on this one) loses no count.
		struct txn_row zero;
		__builtin_memset(&zero, 0, sizeof(zero));
		bpf_map_update_elem(&txn_hist, &k, &zero, BPF_NOEXIST);
		row = bpf_map_lookup_elem(&txn_hist, &k);
	}
	if (row)
		__sync_fetch_and_add(&row->count[bucket & (TXN_ROW - 1)], 1);
	else
		stat_inc(STAT_TXN_HIST_FULL);
}

// The socket's own row as a txn_hist entry (kind | TXN_IN_SOCKET).
static __attribute__((noinline)) void txn_own_row_to_hist(struct sock_info *si)
{
	struct txn_hist_key k;
	__builtin_memset(&k, 0, sizeof(k));
	k.cookie = si->cookie;
	k.route = si->row.route;
	k.row = si->row.row;
	k.kind = si->row.kind | TXN_IN_SOCKET;
	struct txn_row row;
	__builtin_memcpy(row.count, si->row.count, sizeof(row.count));
	if (bpf_map_update_elem(&txn_hist, &k, &row, BPF_NOEXIST))
		stat_inc(STAT_TXN_HIST_FULL);
}

// One completed transaction: its bucket's count in the socket's histogram row +1, totals in the
// socket's own entry. Runs once per transaction (at a change of direction). The socket's first row
// is in its own storage: a short connection's transactions cost no map entry (creating one cost
// its close ~1.5 µs cold, docs/benchmarks/agent.md); other rows are txn_hist entries.
static __attribute__((noinline)) void txn_done(struct sock_info *si, __u8 kind, __u64 dt, __u64 req, __u64 resp)
{
	__u32 bucket = txn_bucket(dt);
	__u16 row_of = (__u16)(bucket >> TXN_ROW_BITS);
	if (!si->row.used) {
		si->row.route = si->route;
		si->row.row = row_of;
		si->row.kind = kind;
		si->row.used = 1;
	}
	if (si->row.route == si->route && si->row.row == row_of && si->row.kind == kind) {
		__sync_fetch_and_add(&si->row.count[bucket & (TXN_ROW - 1)], 1);
		stat_inc(STAT_TXN_IN_SOCKET);
	} else {
		txn_hist_add(si, kind, bucket, row_of);
	}
	// After the count, as the drain reads them.
	si->txn_count += 1;
	si->txn_req_bytes = req;
	si->txn_resp_bytes = resp;
}

// Transactions from the direction of the payload (PowerThesis Fig. 3.4).
// Client: a send after a receive starts a new request and completes the previous
// transaction, whose round trip runs from its first request byte sent to its last
// response byte received. Server: the first send after a receive is the first
// response byte; server time = that minus the last request byte received.
// The request's first bytes name its HTTP route (client: the send that starts it; server: the
// receive that starts it); the transaction is filed under that route when it completes.
// Called before the bytes of this event are added to the socket's counters.
// `*t` (monotonic) is when the send began (see send_begins), 0 = not read yet (txn_clock reads
// it, only where a time is kept); a receive's time is rx_time's.
static __always_inline void txn_on_bytes(struct sock_info *si, struct sock *sk, bool is_send, __u64 *t, __u64 len)
{
	__u8 phase = si->txn_phase;
	if (!is_send) {
		if (track_http && si->role == ROLE_SERVER && phase != TXN_RECEIVED)
			si->route = http_route_of_payload(len);
		si->txn_last_ns = rx_time(sk);
		si->txn_phase = TXN_RECEIVED;
		return;
	}
	if (phase == TXN_SENT)
		return; // request (client) or response (server) continues
	si->txn_phase = TXN_SENT;
	if (si->role == ROLE_CLIENT) {
		if (phase == TXN_RECEIVED && si->txn_start_ns)
			txn_done(si, TXN_CLIENT_RTT, elapsed(si->txn_start_ns, si->txn_last_ns),
				 si->bytes_sent, si->bytes_recv);
		si->txn_start_ns = txn_clock(t);
		if (track_http)
			si->route = http_route_of_payload(len);
	} else if (si->role == ROLE_SERVER && phase == TXN_RECEIVED) {
		txn_done(si, TXN_SERVER_TIME, elapsed(si->txn_last_ns, txn_clock(t)), si->bytes_recv, si->bytes_sent);
	}
}

// At TCP_CLOSE: a client's last response ends here; the final totals and the
// identity go to txn_closed (the socket's entry is deleted right after).
static __attribute__((noinline)) void txn_on_close(struct sock_info *si, __u64 now)
{
	if (si->role == ROLE_CLIENT && si->txn_phase == TXN_RECEIVED && si->txn_start_ns) {
		txn_done(si, TXN_CLIENT_RTT, elapsed(si->txn_start_ns, si->txn_last_ns), si->bytes_sent, si->bytes_recv);
		si->txn_phase = TXN_NONE;
	}
	if (!si->txn_count)
		return;
	struct txn_conn *r = bpf_ringbuf_reserve(&txn_closed, sizeof(*r), 0);
	if (!r) {
		stat_inc(STAT_TXN_CONN_FULL);
		// Its final totals are lost; its own row goes where the drain finds a socket's rows
		// without totals, so it is forgotten as before its row was kept in the socket
		// (TXN_IN_SOCKET in its kind: the cells the drain read from the socket).
		if (si->row.used)
			txn_own_row_to_hist(si);
		return;
	}
	// Built on the stack and copied whole: the record's padding is zero too.
	struct txn_conn n;
	__builtin_memset(&n, 0, sizeof(n));
	n.cookie = si->cookie;
	n.proc_start_ns = si->proc_start_ns;
	n.cgroup_id = si->cgroup_id;
	n.count = si->txn_count;
	n.lifetime_ns = si->open_ns ? now - si->open_ns : ~0ULL;
	if (si->role == ROLE_CLIENT) {
		n.req_bytes = si->bytes_sent;
		n.resp_bytes = si->bytes_recv;
	} else {
		n.req_bytes = si->bytes_recv;
		n.resp_bytes = si->bytes_sent;
	}
	n.tgid = si->tgid;
	n.netns = si->netns;
	n.lport = si->lport;
	n.rport = si->rport;
	__builtin_memcpy(n.laddr, si->laddr, 16);
	__builtin_memcpy(n.raddr, si->raddr, 16);
	__builtin_memcpy(n.comm, si->comm, 16);
	n.role = si->role;
	n.closed = 1;
	n.row = si->row;
	__builtin_memcpy(r, &n, sizeof(n));
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline struct nest_state *nest_state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&nest, &zero);
}

static __always_inline struct sock_info *new_entry(struct sock *sk, __u32 ns, __u8 role, __u64 open_ns)
{
	struct nest_state *n = nest_state();
	if (!n)
		return NULL;
	__u32 slot = n->depth;
	if (slot >= NEST_MAX)
		return NULL;
	struct sock_info *si = bpf_map_lookup_elem(&scratch, &slot);
	if (!si)
		return NULL;
	n->depth = slot + 1; // a program interrupting this one takes the next slot
	__builtin_memset(si, 0, sizeof(*si));
	si->cookie = sock_cookie(sk);
	si->netns = ns;
	si->role = role;
	si->open_ns = open_ns;
	si->keep = SHED_KEEP_ONE;
	fill_tuple(si, sk);
	struct sock_info *got = bpf_sk_storage_get(&socks, sk, si, BPF_SK_STORAGE_GET_F_CREATE);
	n->depth = slot;
	if (got)
		return got;
	// NULL: another CPU created it meanwhile (keep that one), or the kernel refused the memory
	// (the socket's net.core.optmem_max, or no memory): counted, tried again at its next call.
	got = sock_state(sk);
	if (!got)
		stat_inc(STAT_SOCK_REFUSED);
	return got;
}

// The state changes that matter (about half of a connection's): the filter first, then the
// socket's state; the clock only where a time is kept.
static __always_inline int set_state(struct sock *sk, int oldstate, int newstate)
{
	if (newstate != TCP_SYN_SENT && newstate != TCP_CLOSE &&
	    !(newstate == TCP_ESTABLISHED && (oldstate == TCP_SYN_SENT || oldstate == TCP_SYN_RECV)))
		return 0;
	if (!is_tcp_inet(sk))
		return 0;
	struct sock_info *si;

	if (newstate == TCP_SYN_SENT) {
		// connect(): process context, the dialling task is current.
		__u32 ns = sk_netns(sk);
		if (!sock_allowed(sk, ns))
			return 0;
		if (is_self())
			return 0;
		si = new_entry(sk, ns, ROLE_CLIENT, bpf_ktime_get_boot_ns());
		if (si)
			fill_identity(si);
		return 0;
	}

	si = sock_state(sk);
	if (newstate == TCP_ESTABLISHED) {
		if (oldstate == TCP_SYN_SENT) {
			if (!si)
				return 0; // not ours (filtered, or agent started mid-handshake)
			// Source port is 0 at SYN_SENT: take the 4-tuple again.
			fill_tuple(si, sk);
			if (si->has_identity && !si->opened)
				open_conn(si, bpf_ktime_get_boot_ns());
			return 0;
		}
		if (!si) {
			// From SYN_RECV, in softirq: current task is unrelated. Register now, identify
			// and emit OPENED at the first send/recv (process context).
			__u32 ns = sk_netns(sk);
			if (!sock_allowed(sk, ns))
				return 0;
			new_entry(sk, ns, ROLE_SERVER, bpf_ktime_get_boot_ns());
		}
		return 0;
	}

	// TCP_CLOSE
	if (!si)
		return 0;
	if (!si->ignored) {
		__u64 now = bpf_ktime_get_boot_ns();
		if (track_txn)
			txn_on_close(si, now);
		// An accepted socket closed without any payload: still a connection.
		if (!si->opened && si->role == ROLE_SERVER)
			open_conn(si, now);
		if (shed_mode != SHED_OFF && si->shed == SHED_UNREPORTED)
			shed_closed_unreported(si);
		else if (si->opened)
			emit(si, EV_CLOSED, now);
	}
	// Gone before the socket: a later call on it (e.g. data read after a reset) finds none.
	bpf_sk_storage_delete(&socks, sk);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(handle_set_state, struct sock *sk, int oldstate, int newstate)
{
	struct nest_state *n = nest_state();
	if (n)
		n->in_set_state++;
	set_state(sk, oldstate, newstate);
	if (n && n->in_set_state)
		n->in_set_state--;
	return 0;
}

// The kernel does not run a program inside itself on one CPU: a state change in a softirq that
// interrupts handle_set_state is skipped for it (its recursion_misses). This second program on
// the same tracepoint runs for every change too, and does the work only in exactly that case.
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(handle_set_state_nested, struct sock *sk, int oldstate, int newstate)
{
	struct nest_state *n = nest_state();
	if (!n || !n->in_set_state)
		return 0;
	stat_inc(STAT_SET_STATE_NESTED);
	set_state(sk, oldstate, newstate);
	return 0;
}

// The begin time of the send that just returned on this CPU, or 0 when it was not seen (the
// send slept and moved to another CPU, or began before the agent) or not needed. Consumes it.
static __always_inline __u64 send_began(struct send_begin *b, struct sock *sk)
{
	if (b->sk != (__u64)sk)
		return 0;
	b->sk = 0;
	return b->ts;
}

static __always_inline int on_bytes(struct sock *sk, int ret, bool is_send)
{
	if (ret <= 0 || !is_tcp_inet(sk))
		return 0;
	// A send's transaction time is when it began (send_begins); a receive's, rx_time's.
	__u32 zero = 0;
	struct send_begin *b = track_txn && is_send ? bpf_map_lookup_elem(&send_begins, &zero) : NULL;
	__u64 now = 0, txn_t = 0; // boot clock for events, monotonic for transactions: 0 = not read
	__u32 seq = 0;
	if (b) {
		seq = copied_seq(sk); // before this send's phase change (a racing receive voids it)
		txn_t = send_began(b, sk);
	}
	struct sock_info *si = sock_state(sk);

	if (!si) {
		// Handshake not seen (socket older than the agent, or its storage refused then): role
		// UNKNOWN, identity from the current task.
		// Not for a socket already closed (e.g. data read after the peer's reset): its
		// TCP_CLOSE was seen, and its state was removed then.
		if (sk->__sk_common.skc_state == TCP_CLOSE)
			return 0;
		__u32 ns = sk_netns(sk);
		if (!sock_allowed(sk, ns))
			return 0;
		if (is_self())
			return 0;
		si = new_entry(sk, ns, ROLE_UNKNOWN, 0);
		if (!si)
			return 0;
	}
	if (si->ignored)
		return 0;
	if (!si->has_identity) {
		if (is_self()) {
			si->ignored = 1;
			return 0;
		}
		fill_identity(si);
	}
	if (!si->opened) {
		fill_tuple(si, sk);
		open_conn(si, clock_now(&now));
	}

	// A socket of unknown role has no transactions (txn_on_bytes would only flip its phase).
	if (track_txn && si->role != ROLE_UNKNOWN)
		txn_on_bytes(si, sk, is_send, &txn_t, (__u64)ret);
	if (b) {
		b->idle_sk = (__u64)sk;
		b->idle_seq = seq;
	}

	if (is_send)
		__sync_fetch_and_add(&si->bytes_sent, (__u64)ret);
	else
		__sync_fetch_and_add(&si->bytes_recv, (__u64)ret);

	// The byte rule. The time rule (unreported bytes older than the interval) is the sweep's,
	// which reads every entry each interval anyway, so the common call reads no clock. A shed
	// connection keeps it here: only a kernel SNAPSHOT makes it reported (SHED_REPORTED).
	__u64 unreported = (si->bytes_sent - si->reported_sent) + (si->bytes_recv - si->reported_recv);
	bool due = unreported >= snapshot_bytes * ((__u64)si->snap_held + 1);
	// A busy socket crosses the byte rule hundreds of times a second: it is reported at most once
	// per snapshot_min_ns, the clock read once per crossing, not per call. (A shed connection's
	// first report is its rule, kept as it was.)
	if (due && snapshot_min_ns && si->shed != SHED_UNREPORTED &&
	    clock_now(&now) - si->last_report_ns < snapshot_min_ns) {
		si->snap_held = (__u32)(unreported / snapshot_bytes);
		due = false;
	}
	if (due ||
	    (shed_mode != SHED_OFF && si->shed == SHED_UNREPORTED && unreported > 0 &&
	     clock_now(&now) - si->last_report_ns >= snapshot_interval_ns)) {
		emit(si, EV_SNAPSHOT, clock_now(&now));
		// A shed connection that got long or heavy is reported from now on (bytes are never shed).
		if (shed_mode != SHED_OFF && si->shed == SHED_UNREPORTED)
			si->shed = SHED_REPORTED;
	}
	return 0;
}

SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(handle_sendmsg_begin, struct sock *sk, struct msghdr *msg, struct sk_buff *skb, int size_goal)
{
	if (!track_txn)
		return 0;
	__u32 zero = 0;
	struct send_begin *b = bpf_map_lookup_elem(&send_begins, &zero);
	if (!b)
		return 0;
	__u64 left = msg->msg_iter.count;
	if (b->sk != (__u64)sk || left >= b->left) {
		b->sk = (__u64)sk;
		// The last send here was on this socket and nothing was read since: the request or
		// response continues, and its begin time is not used (0: read at the send if it is).
		b->ts = b->idle_sk == (__u64)sk && copied_seq(sk) == b->idle_seq ? 0 : bpf_ktime_get_ns();
	}
	b->left = left;
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(handle_send, struct sock *sk, int ret, int flags)
{
	on_bytes(sk, ret, true);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(handle_recv, struct sock *sk, int ret, int flags)
{
	if (flags & MSG_PEEK)
		return 0; // peeked bytes are received again later
	on_bytes(sk, ret, false);
	return 0;
}

// The sweep's walk (sweep.rs): every socket's state, of every namespace, as raw struct sock_info.
SEC("iter/bpf_sk_storage_map")
int dump_socks(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct sock_info *si = ctx->value;
	if (ctx->sk && si)
		bpf_seq_write(ctx->meta->seq, si, sizeof(*si));
	return 0;
}

// The transaction drain's walk (drain.rs): only sockets with completed transactions.
SEC("iter/bpf_sk_storage_map")
int dump_txn_socks(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct sock_info *si = ctx->value;
	if (ctx->sk && si && si->txn_count)
		bpf_seq_write(ctx->meta->seq, si, sizeof(*si));
	return 0;
}

// The same walks where the kernel refuses map-element iterators (seen on a kernel in lockdown
// integrity; walk.rs falls back to these): the TCP sockets of one network namespace, the one
// current when user space opens the iterator, so user space opens one per namespace.
static __always_inline struct sock_info *tcp_walk_state(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	if (!skc)
		return NULL;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(skc); // NULL for request and TIME_WAIT sockets
	if (!tp)
		return NULL;
	return bpf_sk_storage_get(&socks, (struct sock *)tp, 0, 0);
}

SEC("iter/tcp")
int dump_socks_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_info *si = tcp_walk_state(ctx);
	if (si)
		bpf_seq_write(ctx->meta->seq, si, sizeof(*si));
	return 0;
}

SEC("iter/tcp")
int dump_txn_socks_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_info *si = tcp_walk_state(ctx);
	if (si && si->txn_count)
		bpf_seq_write(ctx->meta->seq, si, sizeof(*si));
	return 0;
}
