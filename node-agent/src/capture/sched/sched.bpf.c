// SPDX-License-Identifier: GPL-2.0
// Wattgraph CPU accounting: on-CPU time (and, where the CPU exposes them, cycles and
// instructions with HT-aware weighting, PowerThesis Eq. 3.1) per thread from sched:sched_switch,
// aggregated in the kernel; a dead thread's totals go to a ring buffer at its final
// switch; sched:sched_process_exec keeps names current. Tracepoints only (tp_btf).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sched.h"

#define TASK_DEAD 0x80

char LICENSE[] SEC("license") = "GPL";

const volatile __u8 have_counters = 0;     // perf event arrays filled by user space
const volatile __u8 have_cache_counters = 0; // cache references/misses arrays filled too
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
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1024);
} cache_ref_pe SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1024);
} cache_miss_pe SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} exits SEC(".maps");

/* User space's baseline, for the next agent when the programs are pinned (no program reads it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536); // resized from user space (twice --thread-entries)
	__type(key, struct cpu_base_key);
	__type(value, struct cpu_base);
} cpu_base SEC(".maps");

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

static __always_inline __u64 read_counter(void *map, __u8 have)
{
	struct bpf_perf_event_value v = {};
	if (!have)
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

/* A new entry for thread t whose runtime so far (rt) is not ours to count. */
static __always_inline struct thread_stat *thread_entry(struct task_struct *t, __u32 tid, __u64 rt)
{
	__u32 zero = 0;
	struct thread_stat *n = bpf_map_lookup_elem(&tscratch, &zero);
	if (!n)
		return 0;
	__builtin_memset(n, 0, sizeof(*n));
	n->tid = tid;
	n->tgid = t->tgid;
	n->rt_seen = rt;
	n->thread_start_ns = t->start_boottime;
	n->proc_start_ns = t->group_leader->start_boottime;
	n->cgroup_id = t->cgroups->dfl_cgrp->kn->id;
	__builtin_memcpy(n->comm, t->group_leader->comm, sizeof(n->comm));
	if (bpf_map_update_elem(&threads, &tid, n, BPF_NOEXIST) != 0)
		sstat_inc(SSTAT_MAP_FULL);
	else
		sstat_inc(SSTAT_INSERTS); /* with deletes and the scan: LRU evictions (resources/cpu.rs) */
	return bpf_map_lookup_elem(&threads, &tid);
}

/* Hands a thread's totals to user space and forgets it. */
static __always_inline void flush_thread(struct thread_stat *ts, __u32 tid)
{
	struct thread_stat *e = bpf_ringbuf_reserve(&exits, sizeof(*e), 0);
	if (e) {
		__builtin_memcpy(e, ts, sizeof(*e));
		bpf_ringbuf_submit(e, 0);
	} else {
		/* Counted; the entry goes anyway so the map never fills with the dead. */
		sstat_inc(SSTAT_RINGBUF_DROPS);
	}
	if (!bpf_map_delete_elem(&threads, &tid))
		sstat_inc(SSTAT_DELETES);
	sstat_inc(SSTAT_EXITS);
}

static __always_inline bool known_here(struct cpu_state *c, __u32 tid)
{
	for (int i = 0; i < KNOWN_TIDS; i++)
		if (c->known[i] == tid)
			return true;
	return false;
}

static __always_inline void forget_here(struct cpu_state *c, __u32 tid)
{
	for (int i = 0; i < KNOWN_TIDS; i++)
		if (c->known[i] == tid)
			c->known[i] = 0;
}

/* Work per switch: the leaving thread's runtime delta (one lookup), and for the entering one a
 * lookup only when it is not among the last KNOWN_TIDS threads with an entry switched in here.
 * A thread whose entry went meanwhile (LRU eviction) is re-created at its switch-out from the
 * runtime it had at its switch-in here (rt_in), so its slice still counts; only its visibility
 * while it runs waits for that switch-out. The clock is read only for the counters. */
SEC("tp_btf/sched_switch")
int BPF_PROG(wg_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_state *c = bpf_map_lookup_elem(&cpus, &cpu);
	if (!c)
		return 0;
	sstat_inc(SSTAT_SWITCHES);
	/* tp_btf: typed pointers, read directly (CO-RE relocated, no probe_read helper). */
	__u32 prev_tid = prev->pid;
	__u32 next_tid = next->pid;
	__u64 now = 0, slice = 0, cyc = 0, ins = 0, cref = 0, cmiss = 0;
	bool ours = false;
	if (have_counters) {
		now = bpf_ktime_get_ns();
		cyc = read_counter(&cycles_pe, have_counters);
		ins = read_counter(&instr_pe, have_counters);
		cref = read_counter(&cache_ref_pe, have_cache_counters);
		cmiss = read_counter(&cache_miss_pe, have_cache_counters);
		ours = prev_tid != 0 && c->tid == prev_tid && c->ts_in && now > c->ts_in;
		slice = ours ? now - c->ts_in : 0;
	}

	/* Leaving thread. On-CPU time is the scheduler's own runtime counter (what
	 * /proc/<pid>/stat reports: excludes steal and, with IRQ_TIME_ACCOUNTING, irq
	 * time), brought up to date by put_prev_task before this tracepoint. Counted
	 * against the thread's last seen value, not this CPU's switch-in, so a missed
	 * switch loses nothing. */
	if (prev_tid != 0) {
		__u64 rt = prev->se.sum_exec_runtime;
		struct thread_stat *ts = bpf_map_lookup_elem(&threads, &prev_tid);
		if (!ts) {
			/* Switched in here without an entry (gone meanwhile): count from then. */
			__u64 from = c->tid == prev_tid && c->rt_in <= rt ? c->rt_in : rt;
			ts = thread_entry(prev, prev_tid, from);
		}
		if (ts) {
			__u32 s = c->socket & (MAX_SOCKETS - 1);
			ts->oncpu_ns[s] += rt > ts->rt_seen ? rt - ts->rt_seen : 0;
			ts->rt_seen = rt;
			if (have_counters && ours) {
				__u64 overlap = 0;
				if (c->sibling != NO_SIBLING) {
					__u64 sb = cpu_busy_now(c->sibling, now);
					overlap = sb > c->sib_busy_in ? sb - c->sib_busy_in : 0;
					if (overlap > slice)
						overlap = slice;
				}
				__u64 dc = cyc > c->cycles_in ? cyc - c->cycles_in : 0;
				__u64 di = ins > c->instr_in ? ins - c->instr_in : 0;
				/* PowerThesis Eq. 3.1: cycles while the sibling was busy count HT_r/2; the
				 * overlap share of the slice's cycles is taken by time. */
				/* Overlap share in 1/1024ths first: dc * overlap could overflow. */
				__u64 frac = slice ? overlap * 1024 / slice : 0;
				__u64 ov = dc / 1024 * frac + (dc % 1024) * frac / 1024;
				ts->wcycles[s] += (dc - ov) + ov * ht_ratio_milli / 2000;
				ts->cycles += dc;
				ts->instructions += di;
			}
			if (have_cache_counters && ours) {
				ts->cache_references += cref > c->cache_ref_in ? cref - c->cache_ref_in : 0;
				ts->cache_misses += cmiss > c->cache_miss_in ? cmiss - c->cache_miss_in : 0;
			}
			/* current == prev here: its cgroup and, for a leader, the process name (prctl
			 * changes it) are refreshed. Other threads keep the leader's name from their
			 * creation; user space names a process after its leader's entry. */
			ts->cgroup_id = prev->cgroups->dfl_cgrp->kn->id;
			if (prev_tid == ts->tgid)
				__builtin_memcpy(ts->comm, prev->comm, sizeof(ts->comm));
			/* Final switch of a dead thread (do_task_dead): hand the totals over.
			 * Only here: a thread preempted while exiting runs again. */
			if (prev_state & TASK_DEAD) {
				flush_thread(ts, prev_tid);
				forget_here(c, prev_tid);
			}
		}
	}

	/* Entering thread: its entry exists from now on, so a thread that runs for long
	 * without a switch-out is visible (user space adds the running slice). */
	__u64 next_rt = next->se.sum_exec_runtime;
	if (next_tid != 0 && !known_here(c, next_tid)) {
		if (bpf_map_lookup_elem(&threads, &next_tid) || thread_entry(next, next_tid, next_rt)) {
			__u32 at = c->known_at & (KNOWN_TIDS - 1);
			c->known[at] = next_tid;
			c->known_at = at + 1;
		}
	}
	c->tid = next_tid;
	c->rt_in = next_rt;
	if (have_counters) {
		c->busy_ns += slice;
		c->ts_in = now;
		c->cycles_in = cyc;
		c->instr_in = ins;
		c->cache_ref_in = cref;
		c->cache_miss_in = cmiss;
		c->sib_busy_in = c->sibling != NO_SIBLING ? cpu_busy_now(c->sibling, now) : 0;
	}
	return 0;
}

/* exec renames the process (and a non-leader exec takes the leader's tid): refresh the
 * name now rather than at the next switch, and flush the old tid's entry. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(wg_sched_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tid = p->pid;
	struct thread_stat *ts = bpf_map_lookup_elem(&threads, &tid);
	if (ts)
		__builtin_memcpy(ts->comm, p->comm, sizeof(ts->comm));
	__u32 old = old_pid;
	if (old != tid) {
		struct thread_stat *o = bpf_map_lookup_elem(&threads, &old);
		if (o)
			flush_thread(o, old);
	}
	return 0;
}
