// SPDX-License-Identifier: GPL-2.0
// Wattgraph CPU accounting: on-CPU time (and, where the CPU exposes them, cycles and
// instructions with HT-aware weighting, Eq. 3.1) per thread from sched:sched_switch,
// aggregated in the kernel; thread exits flushed to a ring buffer from
// sched:sched_process_exit + the final switch. Tracepoints only (tp_btf).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "sched.h"

#define TASK_DEAD 0x80

char LICENSE[] SEC("license") = "GPL";

const volatile __u8 have_counters = 0;     // perf event arrays filled by user space
const volatile __u32 ht_ratio_milli = 1100; // HT_r * 1000

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768); // resized from user space (--thread-entries)
	__type(key, __u32);         // tid
	__type(value, struct thread_stat);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024); // resized to the number of possible CPUs
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1024);
} cycles_pe SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1024);
} instr_pe SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SSTAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct thread_stat);
} tscratch SEC(".maps");

static __always_inline void sstat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&sstats, &idx);
	if (v)
		*v += 1;
}

static __always_inline __u64 read_counter(void *map)
{
	struct bpf_perf_event_value v = {};
	if (!have_counters)
		return 0;
	if (bpf_perf_event_read_value(map, BPF_F_CURRENT_CPU, &v, sizeof(v)) != 0)
		return 0;
	return v.counter;
}

/* Busy ns of a CPU including its running slice. */
static __always_inline __u64 cpu_busy_now(__u32 cpu, __u64 now)
{
	struct cpu_state *c = bpf_map_lookup_elem(&cpus, &cpu);
	if (!c)
		return 0;
	__u64 b = c->busy_ns;
	if (c->tid && c->ts_in && now > c->ts_in)
		b += now - c->ts_in;
	return b;
}

static __always_inline struct thread_stat *thread_entry(struct task_struct *t, __u32 tid)
{
	struct thread_stat *ts = bpf_map_lookup_elem(&threads, &tid);
	if (ts)
		return ts;
	__u32 zero = 0;
	struct thread_stat *n = bpf_map_lookup_elem(&tscratch, &zero);
	if (!n)
		return 0;
	__builtin_memset(n, 0, sizeof(*n));
	n->tid = tid;
	n->tgid = BPF_CORE_READ(t, tgid);
	n->thread_start_ns = BPF_CORE_READ(t, start_boottime);
	n->proc_start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
	BPF_CORE_READ_STR_INTO(&n->comm, t, group_leader, comm);
	if (bpf_map_update_elem(&threads, &tid, n, BPF_NOEXIST) != 0)
		sstat_inc(SSTAT_MAP_FULL);
	return bpf_map_lookup_elem(&threads, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wg_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_state *c = bpf_map_lookup_elem(&cpus, &cpu);
	if (!c)
		return 0;
	sstat_inc(SSTAT_SWITCHES);
	/* tp_btf: typed pointers, read directly (CO-RE relocated, no probe_read helper). */
	__u32 prev_tid = prev->pid;
	__u32 next_tid = next->pid;
	__u64 cyc = read_counter(&cycles_pe);
	__u64 ins = read_counter(&instr_pe);

	/* Leaving thread: account the slice since its switch-in. */
	if (prev_tid != 0 && c->tid == prev_tid && c->ts_in && now > c->ts_in) {
		__u64 slice = now - c->ts_in;
		/* On-CPU time as the scheduler charges it (excludes steal and, with
		 * IRQ_TIME_ACCOUNTING, irq time; what /proc/<pid>/stat reports); prev was
		 * brought up to date by put_prev_task before this tracepoint. */
		/* Not bounded by `slice`: the scheduler's clock for the switch-in was read at
		 * the start of that __schedule (before a newidle balance, say), earlier than
		 * this tracepoint's, so its delta can exceed the tracepoint-to-tracepoint time. */
		__u64 rt = prev->se.sum_exec_runtime;
		__u64 run = rt > c->rt_in ? rt - c->rt_in : 0;
		__u64 overlap = 0;
		if (c->sibling != NO_SIBLING) {
			__u64 sb = cpu_busy_now(c->sibling, now);
			overlap = sb > c->sib_busy_in ? sb - c->sib_busy_in : 0;
			if (overlap > slice)
				overlap = slice;
		}
		struct thread_stat *ts = thread_entry(prev, prev_tid);
		if (ts) {
			__u32 s = c->socket & (MAX_SOCKETS - 1);
			ts->oncpu_ns[s] += run;
			if (have_counters) {
				__u64 dc = cyc > c->cycles_in ? cyc - c->cycles_in : 0;
				__u64 di = ins > c->instr_in ? ins - c->instr_in : 0;
				/* Eq. 3.1: cycles while the sibling was busy count HT_r/2; the
				 * overlap share of the slice's cycles is taken by time. */
				/* Overlap share in 1/1024ths first: dc * overlap could overflow. */
				__u64 frac = slice ? overlap * 1024 / slice : 0;
				__u64 ov = dc / 1024 * frac + (dc % 1024) * frac / 1024;
				ts->wcycles[s] += (dc - ov) + ov * ht_ratio_milli / 2000;
				ts->cycles += dc;
				ts->instructions += di;
			}
			ts->cgroup_id = bpf_get_current_cgroup_id();
			/* The process name: the leader's own comm, refreshed (exec and prctl change
			 * it; current == prev here). Other threads keep the leader's name from
			 * their creation; user space names a process after its leader's entry. */
			if (prev_tid == ts->tgid)
				bpf_get_current_comm(&ts->comm, sizeof(ts->comm));
			if (ts->exiting || (prev_state & TASK_DEAD)) {
				/* Final switch of a dead thread: hand the totals over, forget it. */
				struct thread_stat *e = bpf_ringbuf_reserve(&exits, sizeof(*e), 0);
				if (e) {
					__builtin_memcpy(e, ts, sizeof(*e));
					bpf_ringbuf_submit(e, 0);
					bpf_map_delete_elem(&threads, &prev_tid);
				} else {
					/* Counted; a dead thread's entry goes anyway so the map
					 * never fills with the dead (its last slices are lost). */
					sstat_inc(SSTAT_RINGBUF_DROPS);
					if (prev_state & TASK_DEAD)
						bpf_map_delete_elem(&threads, &prev_tid);
				}
				sstat_inc(SSTAT_EXITS);
			}
		}
		c->busy_ns += slice;
	}

	/* Entering thread. */
	c->tid = next_tid;
	c->ts_in = now;
	c->cycles_in = cyc;
	c->instr_in = ins;
	c->rt_in = next->se.sum_exec_runtime;
	c->sib_busy_in = c->sibling != NO_SIBLING ? cpu_busy_now(c->sibling, now) : 0;
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(wg_sched_process_exit, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct thread_stat *ts = bpf_map_lookup_elem(&threads, &tid);
	if (ts)
		ts->exiting = 1; // flushed at this thread's final switch-out
	return 0;
}
