/* Shared between sched.bpf.c and capture/sched/mod.rs (mirrored there; sizes asserted).
 * Fields ordered by size so there is no hidden padding. */
#ifndef WATTGRAPH_SCHED_H
#define WATTGRAPH_SCHED_H

#define MAX_SOCKETS 4
#define NO_SIBLING 0xffffffffu

enum sched_stat_idx { SSTAT_SWITCHES = 0, SSTAT_EXITS = 1, SSTAT_RINGBUF_DROPS = 2, SSTAT_MAP_FULL = 3, SSTAT_INSERTS = 4, SSTAT_DELETES = 5, SSTAT_MAX = 6 };

/* Cumulative per thread since first seen (created at the thread's first switch-in or
 * switch-out). Written only by the CPU the thread is switching on or off (a task is
 * never switched on two CPUs at once), so user space reads it while the writers run
 * and takes differences between reads. */
struct thread_stat {
	__u64 oncpu_ns[MAX_SOCKETS];   /* on-CPU ns, per socket the thread ran on */
	__u64 wcycles[MAX_SOCKETS];    /* HT-weighted cycles (PowerThesis Eq. 3.1), per socket */
	__u64 cycles;                  /* raw unhalted cycles (0 without counters) */
	__u64 instructions;
	__u64 cache_references;        /* last-level cache (0 without those counters) */
	__u64 cache_misses;
	__u64 thread_start_ns;         /* task->start_boottime: tells a reused tid apart */
	__u64 proc_start_ns;           /* group_leader->start_boottime (as in ConnectionEvent) */
	__u64 cgroup_id;               /* cgroup v2 id at the last switch */
	__u64 rt_seen;                 /* se.sum_exec_runtime already counted in oncpu_ns */
	__u32 tid;
	__u32 tgid;
	char comm[16];                 /* the group leader's (process) name */
};

/* Threads per CPU remembered as having an entry (struct cpu_state.known). */
#define KNOWN_TIDS 4

/* Per logical CPU scratchpad (PowerThesis's processor topology map). The clock and the
 * busy/sibling/counter fields are kept only with hardware counters (their HT weighting). */
struct cpu_state {
	__u64 ts_in;          /* ktime when the running thread was switched in (counters only) */
	__u64 busy_ns;        /* cumulative non-idle ns on this CPU (completed slices; counters only) */
	__u64 sib_busy_in;    /* sibling's busy ns (incl. its running slice) at our switch-in */
	__u64 cycles_in;      /* this CPU's cycle counter at switch-in */
	__u64 instr_in;
	__u64 cache_ref_in;
	__u64 cache_miss_in;
	__u64 rt_in;          /* the running thread's se.sum_exec_runtime at its switch-in */
	__u32 tid;            /* running thread, 0 = idle */
	__u32 sibling;        /* HT sibling CPU or NO_SIBLING (filled by user space) */
	__u32 socket;         /* physical package (filled by user space), < MAX_SOCKETS */
	__u32 known_at;       /* next slot of known to overwrite */
	__u32 known[KNOWN_TIDS]; /* threads recently switched in here that had an entry */
};

/* What user space last reported of a thread (cpu_base, written only by user space, pinned with
 * the programs): the next agent on the pins takes its differences from here. Key tid 0 (the
 * idle task, never an entry) holds the end of the last reported interval in raw_oncpu. */
struct cpu_base_key {
	__u32 tid;
	__u32 pad;
	__u64 thread_start_ns;
};

struct cpu_base {
	__u64 oncpu_ns[MAX_SOCKETS];   /* observed: completed and running slices, monotonic */
	__u64 wcycles[MAX_SOCKETS];
	__u64 raw_oncpu;               /* completed slices only, as thread_stat held them */
	__u64 cycles;
	__u64 instructions;
	__u64 cache_references;
	__u64 cache_misses;
};

#endif
