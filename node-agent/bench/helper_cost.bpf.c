// SPDX-License-Identifier: GPL-2.0
// What one use of each BPF primitive the connection programs are made of costs on this kernel and
// machine, without the noise of a load: each raw_tp program runs its step args[1] times in a
// bpf_loop and returns the nanoseconds the loop took (helper_cost.sh runs them through
// BPF_PROG_TEST_RUN, in the caller's context, so args[0] is a readable address of the caller's
// memory); socket-local storage, which only a program given a socket can use, is timed on the
// send tracepoint (sk_storage_create_delete).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define KEYS 1024

struct key24 {
	__u64 a, b, c; // the size of txn_hist's key
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * KEYS);
	__type(key, struct key24);
	__type(value, __u64);
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} tstore SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); // holds a run's events; the runner empties it after each run
} ring SEC(".maps");

struct step {
	__u64 user; // an address in the caller's memory
	__u64 sink; // every step adds to it, so that nothing is optimised away
	char src[128];
	char buf[128];
};

// argv-sized reads go to a per-CPU buffer (too big for the stack)
struct big_buf {
	char b[1024];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct big_buf);
} big SEC(".maps");

static __always_inline __u64 timed(struct bpf_raw_tracepoint_args *ctx, void *cb)
{
	struct step s = { .user = ctx->args[0] };
	__u64 t0 = bpf_ktime_get_ns();
	bpf_loop((__u32)ctx->args[1], cb, &s, 0);
	__u64 t1 = bpf_ktime_get_ns();
	asm volatile("" : : "r"(s.sink));
	return t1 - t0;
}

#define STEP(name, ...)                                                         \
	static int name##_step(__u32 i, struct step *s)                         \
	{                                                                       \
		__VA_ARGS__;                                                    \
		return 0;                                                       \
	}                                                                       \
	SEC("raw_tp")                                                           \
	__u64 name(struct bpf_raw_tracepoint_args *ctx)                         \
	{                                                                       \
		return timed(ctx, name##_step);                                 \
	}

static __attribute__((noinline)) __u64 subprog(__u64 x)
{
	asm volatile("" : "+r"(x));
	return x + 1;
}

// The loop and the callback's call alone: every other figure is read against it.
STEP(empty, s->sink += i)
STEP(ktime_get_ns, s->sink += bpf_ktime_get_ns())
STEP(ktime_get_boot_ns, s->sink += bpf_ktime_get_boot_ns())
STEP(bpf_to_bpf_call, s->sink += subprog(i))
STEP(probe_read_user_8, bpf_probe_read_user(s->buf, 8, (void *)s->user); s->sink += s->buf[0])
STEP(probe_read_user_40, bpf_probe_read_user(s->buf, 40, (void *)s->user); s->sink += s->buf[0])
STEP(probe_read_user_128, bpf_probe_read_user(s->buf, 128, (void *)s->user); s->sink += s->buf[0])
STEP(probe_read_kernel_40, bpf_probe_read_kernel(s->buf, 40, s->src); s->sink += s->buf[0])
STEP(percpu_array_lookup, {
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&pcpu, &zero);
	if (v)
		s->sink += *v;
})
STEP(atomic_add, {
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&pcpu, &zero);
	if (v)
		__sync_fetch_and_add(v, 1);
})
// A hash lookup that finds its key, the same key every time (its bucket and element in cache) and
// one of KEYS keys in turn (as a histogram's rows are).
STEP(hash_lookup_same_key, {
	struct key24 k = { 1, 2, 3 };
	__u64 *v = bpf_map_lookup_elem(&hash, &k);
	if (v)
		s->sink += *v;
})
STEP(hash_lookup_1024_keys, {
	struct key24 k = { i % KEYS, 2, 3 };
	__u64 *v = bpf_map_lookup_elem(&hash, &k);
	if (v)
		s->sink += *v;
})
#if defined(__TARGET_ARCH_x86)
// How read_payload finds a socket call's buffer: the syscall's registers.
STEP(task_pt_regs, {
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	s->sink += r->si;
})
#endif
STEP(task_storage_get, {
	__u64 *v = bpf_task_storage_get(&tstore, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		s->sink += *v;
})

// A socket's state is local storage created at its first state change and deleted at its close
// (sk storage; task storage is the same kernel code, and a test run may call it).
STEP(task_storage_create_delete, {
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 *v = bpf_task_storage_get(&tstore, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		s->sink += *v;
	bpf_task_storage_delete(&tstore, t);
})
// What the same lifecycle costs in hash maps keyed by the socket cookie (the design before
// socket-local storage): an entry inserted at the open and deleted at the close.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct step);
} by_cookie SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct step);
} lru_by_cookie SEC(".maps");
STEP(hash_insert_delete, {
	__u64 k = i;
	bpf_map_update_elem(&by_cookie, &k, s, BPF_NOEXIST);
	bpf_map_delete_elem(&by_cookie, &k);
})
STEP(lru_hash_insert_delete, {
	__u64 k = i;
	bpf_map_update_elem(&lru_by_cookie, &k, s, BPF_NOEXIST);
	bpf_map_delete_elem(&lru_by_cookie, &k);
})
// An event through a ring buffer, reserved, filled and submitted without a wakeup.
STEP(ringbuf_event, {
	__u64 *e = bpf_ringbuf_reserve(&ring, 128, 0);
	if (e) {
		e[0] = i;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
})
STEP(current_pid_tgid, s->sink += bpf_get_current_pid_tgid())
STEP(current_cgroup_id, s->sink += bpf_get_current_cgroup_id())
// A process's argv is copied once per process (note_process).
STEP(probe_read_user_1024, {
	__u32 zero = 0;
	struct big_buf *b = bpf_map_lookup_elem(&big, &zero);
	if (b) {
		bpf_probe_read_user(b->b, sizeof(b->b), (void *)s->user);
		s->sink += b->b[0];
	}
})

// Socket-local storage, as the connection programs keep a socket's state: created and deleted
// SOCK_STEPS times on one socket, in a program on the send tracepoint (a test run has no socket to
// give). The runner sets sock_run (iters, tgid), sends a byte of its own, and reads result_ns.
#define SOCK_STEPS 1000
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct step);
} sstore SEC(".maps");

struct {
	__u64 result_ns; // the SOCK_STEPS steps' time; 0 until they ran
	__u32 tgid;      // only a send of this process runs them
	__u32 armed;     // once
} sock_run;

SEC("tp_btf/sock_send_length")
int BPF_PROG(sk_storage_create_delete, struct sock *sk, int ret, int flags)
{
	if (!sock_run.armed || (bpf_get_current_pid_tgid() >> 32) != sock_run.tgid)
		return 0;
	sock_run.armed = 0;
	__u64 sink = 0;
	__u64 t0 = bpf_ktime_get_ns();
	for (int i = 0; i < SOCK_STEPS; i++) {
		struct step *v = bpf_sk_storage_get(&sstore, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (v)
			sink += v->sink;
		bpf_sk_storage_delete(&sstore, sk);
	}
	__u64 t1 = bpf_ktime_get_ns();
	asm volatile("" : : "r"(sink));
	sock_run.result_ns = t1 - t0;
	return 0;
}

static int fill_step(__u32 i, void *unused)
{
	struct key24 k = { i % KEYS, 2, 3 };
	__u64 one = 1;
	bpf_map_update_elem(&hash, &k, &one, BPF_ANY);
	return 0;
}

// Run first: the keys the hash lookups find.
SEC("raw_tp")
__u64 fill(struct bpf_raw_tracepoint_args *ctx)
{
	struct key24 k = { 1, 2, 3 };
	__u64 one = 1;
	bpf_map_update_elem(&hash, &k, &one, BPF_ANY);
	bpf_loop(KEYS, fill_step, NULL, 0);
	return 0;
}
