/* Shared between the BPF program and user space (mirrored in capture/connections: ring.rs, txn_maps.rs, shed.rs).
 * Fields ordered by size so there is no hidden padding. */
#ifndef WATTGRAPH_CONNECTIONS_H
#define WATTGRAPH_CONNECTIONS_H

enum ev_kind { EV_OPENED = 0, EV_SNAPSHOT = 1, EV_CLOSED = 2 };
enum conn_role { ROLE_CLIENT = 0, ROLE_SERVER = 1, ROLE_UNKNOWN = 2 };
enum stat_idx { STAT_RINGBUF_DROPS = 0, STAT_TXN_HIST_FULL = 1, STAT_TXN_CONN_FULL = 2,
		/* A socket's storage could not be created (its net.core.optmem_max, or no memory);
		 * per attempt: the socket's next call tries again. */
		STAT_SOCK_REFUSED = 3,
		/* State changes handled by handle_set_state_nested (the kernel skipped the nested call). */
		STAT_SET_STATE_NESTED = 4,
		/* HTTP routes: the route table was full (ROUTE_OTHER used); a request's bytes could
		 * not be read (syscall without a visible buffer: io_uring, sendfile, kernel thread). */
		STAT_ROUTES_FULL = 5, STAT_HTTP_NO_BUFFER = 6,
		/* Command lines: not copied for want of ring space; not readable (unmapped page). */
		STAT_PROC_ARGS_DROPS = 7, STAT_PROC_ARGS_UNREAD = 8,
		/* Transactions counted in a socket's own first row (sock_info.row): the drain
		 * walks the sockets when this moved, as when txn_hist did. */
		STAT_TXN_IN_SOCKET = 9, STAT_MAX = 10 };
/* sock_info.opened: OPENED being emitted (claimed), and in the ring (or shed). */
enum open_state { OPEN_NO = 0, OPEN_CLAIMED = 1, OPEN_DONE = 2 };
/* Transaction phase of a socket: which direction carried the last payload. */
enum txn_phase { TXN_NONE = 0, TXN_SENT = 1, TXN_RECEIVED = 2 };
/* Histogram kinds. */
enum txn_kind { TXN_CLIENT_RTT = 0, TXN_SERVER_TIME = 1 };
/* Kind bit of a socket's own first row (sock_info.row) wherever it is keyed: in txn_base, and
 * in txn_hist only when its final totals found txn_closed full. */
#define TXN_IN_SOCKET 0x40
/* Key kind of a socket's totals in txn_done (its cells keep their own kind). */
#define TXN_BASE_CONN 0xff
/* Log-linear buckets: values below 2^(TXN_SUB_BITS+1) are exact; above, the
 * exponent and the TXN_SUB_BITS bits below the leading one (relative width
 * <= 2^-TXN_SUB_BITS = 0.78%). Mirrored in capture/connections/transactions.rs. */
#define TXN_SUB_BITS 7
/* Histogram rows: the cumulative counts of TXN_ROW adjacent buckets of a socket, route and kind
 * (see txn_hist below). */
#define TXN_ROW_BITS 3
#define TXN_ROW (1 << TXN_ROW_BITS)

/* A socket's first histogram row (used = 1 once taken): its key (route, row, kind) and its
 * cumulative counts. */
struct txn_own_row {
	__u64 route;
	__u16 row;
	__u8 kind;
	__u8 used;
	__u8 _pad[4];
	__u64 count[TXN_ROW];
};

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
	__u8 opened;       /* enum open_state */
	__u8 ignored;
	__u8 txn_phase;    /* enum txn_phase */
	__u8 shed;         /* enum shed_state: lifecycle events shed by the load shedder */
	__u8 _pad[2];
	/* The keep fraction its events report (ConnectionEvent.keepProbability, fixed point):
	 * SHED_KEEP_ONE unless sampled; 0 for a shed connection reported for its traffic. */
	__u32 keep;
	/* Byte-rule crossings held back since the last report (snapshot_min_ns): the rule checks
	 * again after another snapshot_bytes. */
	__u32 snap_held;
	/* Transaction state (CLOCK_MONOTONIC ns): client: when the send of the current request's
	 * first byte began; server: unused (0). */
	__u64 txn_start_ns;
	/* client: last response byte received; server: last request byte received (rx_time). */
	__u64 txn_last_ns;
	/* Cumulative: completed transactions, and request / response payload bytes up to
	 * the last completed one (server: response bytes as of its first response byte). */
	__u64 txn_count;
	__u64 txn_req_bytes;
	__u64 txn_resp_bytes;
	/* Route of the current request (http_route.h: ROUTE_NONE when not HTTP/1.x). */
	__u64 route;
	/* Handshake (boot ns); 0 when it was not seen (socket older than the agent). */
	__u64 open_ns;
	/* The socket's first histogram row, kept here and not in txn_hist. A connection of one
	 * request costs no map entry; every other row goes to txn_hist. */
	struct txn_own_row row;
};

/* A process's argv, copied from its memory the first time one of its sockets is identified:
 * user space reading /proc/<pid>/cmdline later finds a short-lived process gone. */
#define PROC_ARGS_MAX 1024
struct proc_args {
	__u64 proc_start_ns;
	__u32 tgid;
	__u32 len;       /* bytes in args: NUL-separated argv, cut at PROC_ARGS_MAX; 0 = unreadable */
	__u32 full_len;  /* the whole argv (mm->arg_end - mm->arg_start) */
	__u32 _pad;
	char args[PROC_ARGS_MAX];
};

/* Final transaction totals of a socket that closed after at least one
 * transaction (its sock_info is deleted at close): a txn_closed ring record, which user space reads.
 * Live sockets' totals are read from their sock_info. */
struct txn_conn {
	__u64 cookie;
	__u64 proc_start_ns;
	__u64 cgroup_id;
	__u64 count;        /* completed transactions */
	__u64 req_bytes;    /* request payload bytes up to the last completed transaction */
	__u64 resp_bytes;   /* response payload bytes, idem (server: refreshed at the next request / close) */
	__u64 lifetime_ns;  /* handshake to close; ~0 when the handshake was not seen */
	__u32 tgid;
	__u32 netns;
	__u16 lport;
	__u16 rport;
	__u8 laddr[16];
	__u8 raddr[16];
	char comm[16];
	__u8 role;
	__u8 closed;
	__u8 _pad[10];
	/* The socket's first row (sock_info.row), final. */
	struct txn_own_row row;
};

/* Sparse histogram row: (socket, route, kind, bucket >> TXN_ROW_BITS) -> the cumulative counts of
 * TXN_ROW adjacent buckets. A socket's latencies cluster, so a row holds up to 8 of its cells in
 * one entry: 8 times the cells in the same entries, and fewer entries for a lookup to miss on.
 * Mirrored in capture/connections/txn_maps.rs. */
struct txn_hist_key {
	__u64 cookie;
	__u64 route;
	__u16 row;
	__u8 kind;
	__u8 _pad[5];
};
struct txn_row {
	__u64 count[TXN_ROW];
};

/* What the output journaled of a socket's transactions (txn_base, written by user space only):
 * for a histogram row its counts (v[bucket % TXN_ROW]); for the socket (kind TXN_BASE_CONN) its
 * count, request and response bytes, and closed = 1 once its final record was journaled. */
struct txn_base {
	__u64 v[TXN_ROW];
};

/* Load shedding of connection lifecycle events (capture/shedding, decided by control/shedding).
 * A connection is decided once, where its OPENED would be emitted: kept (as before) or shed
 * (no OPENED; no CLOSED unless a byte-threshold SNAPSHOT reported it meanwhile). */
enum shed_mode { SHED_OFF = 0, SHED_KERNEL = 1, SHED_KERNEL_DROP = 2 };
enum shed_state { SHED_NO = 0, SHED_UNREPORTED = 1, SHED_REPORTED = 2 };
/* Keep fractions are fixed point: SHED_KEEP_ONE = keep everything, 0 = keep nothing. */
#define SHED_KEEP_SHIFT 24
#define SHED_KEEP_ONE (1U << SHED_KEEP_SHIFT)
/* Value of shed_keep. A connection is kept when shed_conn_hash < keep: a hash of its client
 * endpoint, which the agents on both of its hosts compute alike, so that both keep it whenever
 * both keep at least that share (every event reports the share: sock_info.keep). */
struct shed_keep_val {
	__u32 keep;
	__u32 _pad;
};
#define SHED_DOMAINS 4096
/* shed_keep: the fraction for every domain without its own entry. */
#define SHED_DOMAIN_DEFAULT 0xffffffffffffffffULL
/* shed_counts: domains that found the map full, and every domain in kernel-drop mode. */
#define SHED_DOMAIN_OTHER 0xfffffffffffffffeULL

/* Cumulative per domain (per CPU, summed in user space). */
struct shed_count {
	__u64 kept;             /* connections whose lifecycle events are reported */
	__u64 shed;             /* connections shed */
	__u64 shed_bytes_sent;  /* payload of shed connections that closed unreported */
	__u64 shed_bytes_recv;
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
	__u8 _pad[2];
	__u32 keep;        /* sock_info.keep */
};

// Sampling hash of a connection for load shedding, in [0, SHED_KEEP_ONE): murmur3 (32-bit) of
// its client endpoint, which both hosts see alike where no NAT rewrote it (the server sees the
// client's own address and port). A socket whose role is unknown takes the endpoint with the
// higher port (the ephemeral one, as a rule); on equal ports the two endpoints' hashes combined.
// Mirrored by capture::shedding::connection_hash (tests/shedding_hash.rs compiles this natively and compares).
static inline __u32 shed_rotl(__u32 x, int r)
{
	return (x << r) | (x >> (32 - r));
}

static inline __u32 shed_hash(const __u8 *addr, __u16 port)
{
	__u32 h = 0x5748u ^ port; /* seed: "WH", then the port */
	for (int i = 0; i < 16; i += 4) {
		__u32 k = (__u32)addr[i] | (__u32)addr[i + 1] << 8 | (__u32)addr[i + 2] << 16 | (__u32)addr[i + 3] << 24;
		k *= 0xcc9e2d51u;
		k = shed_rotl(k, 15);
		k *= 0x1b873593u;
		h ^= k;
		h = shed_rotl(h, 13);
		h = h * 5 + 0xe6546b64u;
	}
	h ^= 18;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h & (SHED_KEEP_ONE - 1);
}

static inline __u32 shed_conn_hash(__u8 role, const __u8 *laddr, __u16 lport, const __u8 *raddr, __u16 rport)
{
	if (role == ROLE_CLIENT)
		return shed_hash(laddr, lport);
	if (role == ROLE_SERVER)
		return shed_hash(raddr, rport);
	if (lport != rport)
		return lport > rport ? shed_hash(laddr, lport) : shed_hash(raddr, rport);
	return shed_hash(laddr, lport) ^ shed_hash(raddr, rport);
}

// Log-linear bucket of a duration in ns (mirrored by transactions::bucket_of; the
// agent's tests compile this function natively and compare, tests/transaction_vectors.rs):
// v < 256 -> v (exact); else with e = floor(log2 v) (8..63) and m the 7 bits
// below the leading one: ((e - 6) << 7) | m. Bucket width / lower bound <= 1/128.
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
static __always_inline __u32 txn_bucket(__u64 v)
{
	if (v < (2ULL << TXN_SUB_BITS))
		return (__u32)v;
	__u64 x = v;
	__u32 e = 0;
	if (x >> 32) { e += 32; x >>= 32; }
	if (x >> 16) { e += 16; x >>= 16; }
	if (x >> 8) { e += 8; x >>= 8; }
	if (x >> 4) { e += 4; x >>= 4; }
	if (x >> 2) { e += 2; x >>= 2; }
	if (x >> 1) { e += 1; }
	__u32 m = (__u32)(v >> (e - TXN_SUB_BITS)) & ((1U << TXN_SUB_BITS) - 1);
	return ((e - TXN_SUB_BITS + 1) << TXN_SUB_BITS) | m;
}

#endif
