// SPDX-License-Identifier: GPL-2.0
// What one use of each BPF primitive the connection programs are made of costs on this kernel and
// machine, without the noise of a load: each program runs its step args[1] times in a bpf_loop
// and returns the nanoseconds the loop took (helper_cost.sh runs them through BPF_PROG_TEST_RUN,
// in the caller's context, so args[0] is a readable address of the caller's memory).
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

struct step {
	__u64 user; // an address in the caller's memory
	__u64 sink; // every step adds to it, so that nothing is optimised away
	char src[128];
	char buf[128];
};

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
