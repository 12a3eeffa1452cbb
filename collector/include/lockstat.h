/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every map key and value shared by the BPF programs and the Go loader, defined
 * once. bpf2go generates the Go types from these (-type), so the two sides
 * cannot drift apart.
 */
#ifndef __KLOCKSTAT_LOCKSTAT_H__
#define __KLOCKSTAT_LOCKSTAT_H__

#include "vmlinux.h"

/* contention_begin flag bits are below 1<<6; see lockspec.MaxFlags. */
#define MAX_FLAGS 64
/* Lock types a spec can define; see collector.MaxTypes. */
#define MAX_TYPES 32
/* Log-linear histogram layout; must match capture.BucketIndex. */
#define HIST_SUB_BITS 4
#define HIST_BUCKETS 976
/* Buckets of the timeline per lock type: the window fills at least half of
 * them (collector.timelineShift). */
#define TIMELINE_BUCKETS 256
/* Waits open at once on one CPU: task, softirq, hardirq, NMI. */
#define MAX_NEST 4
/* Runs of our programs nested on one CPU (interrupts, or a lock one of our
 * map operations contends on), each with its own scratch space. */
#define MAX_LEVELS 4
/* Deepest stack bpf_get_stack takes (PERF_MAX_STACK_DEPTH). */
#define MAX_STACK_DEPTH 127
/* Raw kernel stack read above the probe context to recognise a known path:
 * 4 KiB. Path walks keep large structures on the stack (nameidata): with
 * 1 KiB, the 16th frame lay beyond the window for 93% of the stacks of
 * stress-ng --dentry and 98% of --open, which were then walked every time. */
#define STACK_WINDOW_WORDS 512
/* Most return addresses a known path compares: longer paths are walked. */
#define VERIFY_FRAMES 32
/* Most first frames of a walk learn_path tries (see lead_frames). */
#define LEAD_FRAMES 4
/* Frames a path_key names: the lock function, its wrapper, its caller. */
#define KEY_FRAMES 3
/* Paths remembered per key: one caller's callers share it. The run queue
 * lock's key (its slow path, _raw_spin_lock, __schedule) is shared by every
 * way into schedule(), try_to_wake_up's by every waker: with 4 ways they
 * evicted one another, and 4 in 10 walks of stress-ng --fault were of paths
 * learnt before. */
#define PATH_WAYS 16
/* Functions that shift the kernel stack by a random offset (syscall entry
 * with randomize_kstack_offset) a loader can name; see kstack_shifter_lo. */
#define MAX_KSTACK_SHIFTERS 8
/* Tracepoint machinery functions a loader can name; see key_skip_lo. */
#define MAX_KEY_SKIP 4
/* Acquire and internal functions that tell apart lock types sharing
 * contention_begin flags (see shared_flags.bpf.h). */
#define MAX_SHARED_FUNCS 64
/* --cgroup values one capture takes. */
#define MAX_CGROUP_FILTERS 64
/* Owners a wait chain follows past the wait's own owner (ownerchain.bpf.h). */
#define MAX_CHAIN 4
/* Kernel and IRQ stacks are this large and aligned to it (x86-64, arm64). */
#define KSTACK_SIZE 16384

/* Identifies one aggregate: a lock, as waited for by one thread from one stack. */
struct wait_key {
	__u64 lock;
	__u64 stack; /* key into the stacks map, 0: no stack (stacks off, or it could not be stored) */
	__u64 cgroup; /* the waiter's cgroup v2 id (its directory's inode number) when the wait began */
	__u32 pid;   /* tgid */
	__u32 tid;
	__u32 type;  /* index into the lock spec's types */
	__u32 _pad;
};

enum lock_name {
	LOCK_NAME_NONE = 0,
	LOCK_NAME_MMAP = 1,    /* current->mm->mmap_lock */
	LOCK_NAME_SIGHAND = 2, /* current->sighand->siglock */
};

/* The slab cache of a lock inside a slab object, as the lock's first record
 * found it (slabname.bpf.h). */
struct slab_name {
	char cache[32];
};

/* One bucket of the timeline of one lock type: the waits that ended in it. */
struct timeline_cell {
	__u64 count;
	__u64 total_ns;
};

struct wait_stats {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 spin_ns; /* part of total_ns spent spinning (see spin.bpf.h) */
	char comm[16];
	__u32 lock_name; /* enum lock_name */
	__u32 _pad;
};

/* One wait in progress: begin seen, end not yet. */
struct wait_slot {
	__u64 lock;  /* 0: slot free */
	__u64 ts;    /* bpf_ktime_get_ns() at begin */
	__u64 stack;
	__u64 spin_ns;   /* spin phases already closed */
	__u64 spin_from; /* start of the spin phase in progress, 0: not spinning */
	__u64 cgroup;    /* the waiter's cgroup v2 id, 0 for a wait not captured */
	__u32 tid;
	__u32 pid;
	__u16 type;
	__u16 skip;  /* begin was filtered out: pair it, record nothing */
	__u32 repeat; /* function probes: entries of listed functions calling one another for this lock */
	/* The owner (--owners, owner.bpf.h), behind the 64 bytes every wait
	 * uses: without --owners a wait touches none of what follows. Valid
	 * only while owner_reason is not OWNER_UNTRACKED. */
	__u64 owner_from;   /* when the wait began to be charged to owner_tid */
	__u64 owner_lock;   /* the lock whose owner word names owner_tid: this one, or on PREEMPT_RT an rwsem's inner rtmutex */
	__u32 owner_tid;    /* the lock's owner at begin, or a later one (owner_again); its owner_marks key */
	__u8 owner_reason;  /* enum owner_reason */
	__u8 owner_state;   /* enum owner_state */
	__u8 owner_flags;   /* the contention flags (below MAX_FLAGS) owner_lock's owner word is read by */
	/* The wait chain as the owner was last read: the owner itself waited
	 * for chain_lock, held by chain_tid, through chain_depth owners
	 * (0: the owner was not waiting), since chain_from; see
	 * ownerchain.bpf.h. */
	__u8 chain_type;
	__u64 chain_from; /* when the chain began to be charged, 0: since owner_from */
	__u64 chain_lock;
	__u32 chain_tid;
	__u8 chain_depth;
	__u8 chain_cycle; /* the chain came back to a thread already in it */
	__u8 owner_clocked; /* owner_on_ns and owner_run_ns hold the owner's clock at owner_from */
	/* The waiter left its CPU asleep since owner_from (on_switch): a wait
	 * of a lock that records no owner that never did had no waker. */
	__u8 owner_slept;
	/* The owner's clock (struct owner_mark) as the wait began to be
	 * charged to it: its time on its CPU so far, and runnable and with
	 * its tenure over, >> OWNER_SNAP_SHIFT, modulo 2^32 (owner_split). */
	__u64 owner_on_ns;
	__u32 owner_run_snap;
	__u32 owner_free_snap;
	/* The thread that woke the waiter, for a lock that records no owner
	 * (owner_reason OWNER_NO_FIELD or OWNER_READERS): what released it,
	 * as the sched_waking program saw it (owner.bpf.h). */
	__u64 waker_stack;  /* stacks map key, 0: see waker_taken */
	__u32 waker_tid;    /* 0: no waker seen */
	__u8 waker;         /* enum owner_waker */
	__u8 waker_taken;   /* enum owner_stack_reason: TAKEN or FAILED */
	__u16 _pad2;
	/* The lock of the thread's last wait that ended, its stack left in
	 * stack: the path it took to the lock, for when it wakes waiters. */
	__u64 last_lock;
};

/* Whether a wait's owner is known, and why not. */
enum owner_reason {
	OWNER_UNTRACKED = 0, /* owners off, a spinning lock, or a filtered wait */
	OWNER_KNOWN,         /* owner_tid held the lock */
	OWNER_NO_FIELD,      /* the lock records no owner (semaphore, percpu rwsem, rwlock-rt) */
	OWNER_READERS,       /* an rwsem held by readers */
	OWNER_NONE,          /* the owner word was empty: released, or handed over, as we looked */
	OWNER_WOKEN,         /* no owner field, or readers: owner_tid is the thread that woke the waiter (enum owner_waker) */
	OWNER_NEVER_SLEPT,   /* no owner field, or readers, and the waiter never slept: nothing woke it, the lock came free first */
	OWNER_PASSED,        /* the part of a wait after its owner let the lock go: it went to other threads first */
};

/* Who woke a waiter of a lock that records no owner, and which of its
 * stacks the wait is charged to. */
enum owner_waker {
	OWNER_WAKER_NONE = 0,
	OWNER_WAKER_WRITER_WAITED, /* a writer seen waiting for the lock, or sleeping in percpu_down_write: the stack it waited at, its path to the lock */
	OWNER_WAKER_WRITER,        /* a writer (a percpu rwsem's readers are woken by percpu_up_write only): its stack as it woke the waiter */
	OWNER_WAKER_READER,        /* a reader seen waiting for the lock, leaving it: its stack as it woke the waiter */
	OWNER_WAKER_RELEASER,      /* the thread that released the lock, reader or writer: the kernel does not say which */
};

/* What a lock's owner was doing when a wait began. */
enum owner_state {
	OWNER_ON_CPU = 0, /* running on a CPU */
	OWNER_RUNNABLE,   /* runnable, waiting for a CPU (preempted) */
	OWNER_SLEEP_S,    /* asleep, interruptible (TASK_INTERRUPTIBLE) */
	OWNER_SLEEP_D,    /* asleep, uninterruptible (TASK_UNINTERRUPTIBLE: I/O, another lock) */
	OWNER_OTHER,      /* stopped, traced, exiting */
	OWNER_STATES,
};

/* What an owner did over a share of a wait charged to it: the owner_key a
 * share goes to, and the state of an owner's clock (struct owner_mark). */
enum owner_held {
	OWNER_HELD_UNSPLIT = 0, /* not split: an unknown owner, or a lost mark */
	OWNER_HELD_ON_CPU,      /* on its CPU */
	OWNER_HELD_RUNNABLE,    /* runnable but not running: preempted holding the lock */
	OWNER_HELD_OFF_CPU,     /* off its CPU, not runnable: asleep or blocked */
	OWNER_HELD_FREE,        /* the mark's clock only: its tenure is over, the lock went to others */
};

/* Why a known owner's waits carry no stack. */
enum owner_stack_reason {
	OWNER_STACK_TAKEN = 0, /* the key's stack; none when stacks are off */
	OWNER_STACK_RAN,       /* the owner was not seen leaving a CPU while it held the lock */
	OWNER_STACK_FAILED,    /* the walk failed, or the stack map was full */
	OWNER_STACK_LOST,      /* the owner's mark was gone: map full, or it went on to own another contended lock */
	OWNER_STACK_EXITED,    /* the owner exited before the wait ended, not seen leaving a CPU holding the lock */
	OWNER_STACK_BEFORE,    /* a runnable or off-CPU share: the owner left its CPU before it was marked, and not since */
};

/* Waits charged to one owner of one lock and one of its stacks, or to one
 * reason it is unknown. */
struct owner_key {
	__u64 lock;
	__u64 stack;  /* the owner's stack (stacks map key), 0: none, see stack_reason */
	__u32 tid;    /* the owner thread, 0 when unknown */
	__u32 type;   /* the waits' lock type */
	__u32 reason; /* enum owner_reason */
	__u32 stack_reason; /* enum owner_stack_reason */
	__u32 held;   /* enum owner_held: the owner's state over the share charged */
	__u32 waker;  /* enum owner_waker, for OWNER_WOKEN */
};

/*
 * An owner some thread waits for: the lock it holds, and its kernel stacks
 * the first time it left a CPU holding it, blocked and preempted
 * (owner.bpf.h). By owner thread. And the thread's clock, turned at its
 * switches until the tenure ends and then standing still as free until its
 * next, its totals carried over to its later tenures: its time on its CPU,
 * runnable, and with its tenure over since it was first marked, so that a
 * wait knows what its owner did over it, and how long it was not its owner.
 */
struct owner_mark {
	__u64 lock;
	__u64 stack;   /* stacks map key, 0: not taken */
	__u64 task;    /* the owner's task_struct, as the lock's owner word names it */
	__u32 flags;   /* the lock's contention flags, to read its owner word */
	__u16 taken;   /* enum owner_stack_reason: TAKEN, FAILED, or RAN while waiting for one */
	__u16 ended;   /* the owner was seen not holding the lock: its tenure is over */
	__u64 charged; /* the lock its waits are charged to (owner_key.lock): the wait's, which differs from lock on PREEMPT_RT */
	__u32 type;    /* the waits' lock type, for the samples' key */
	__u16 preempt_taken; /* as taken, for preempt_stack */
	__u16 clock_state;   /* enum owner_held: what the owner does since clock_since */
	__u64 preempt_stack; /* stacks map key of where it was preempted holding the lock, 0: not taken */
	__u64 clock_since;   /* when clock_state began */
	__u64 clock_on_ns;   /* time on its CPU before clock_since */
	__u64 clock_run_ns;  /* time runnable, not running, before clock_since */
	__u64 clock_free_ns; /* time with its tenure over (OWNER_HELD_FREE), before clock_since */
};

/* Samples of marked owners on their CPU, holding the lock others wait for
 * (ownersample.bpf.h): one entry per owner, lock and kernel stack. */
struct owner_sample_key {
	__u64 lock;  /* as owner_key.lock */
	__u64 stack; /* stacks map key, 0: the walk failed */
	__u32 tid;
	__u32 type;
};

/* Waits whose owner was itself waiting: charged to the chain's end, the
 * lock and thread the chain of owners led to (ownerchain.bpf.h). */
struct chain_key {
	__u64 lock;     /* as owner_key.lock */
	__u64 end_lock; /* the lock the last owner of the chain held */
	__u32 tid;      /* the waits' owner, the chain's first link */
	__u32 end_tid;  /* the thread at the end of the chain */
	__u32 type;
	__u16 end_type;
	__u8 depth;     /* owners between the waiter and the end, the owner included: 1 for waiter -> owner -> end */
	__u8 cycle;     /* the chain came back to one of its threads: end_tid waits, in a cycle */
};

struct chain_stats {
	__u64 count;
	__u64 total_ns;
};

/* The threads whose id falls in one bucket of thread_buckets
 * (threads.bpf.h): how many have a wait slot, whether one was ever marked
 * a lock owner, how many have an owner-tracked wait open, and whether one
 * was seen writing a percpu rwsem. */
struct thread_bucket {
	__u32 slots;
	__u32 owner;
	__u32 waiters;
	__u32 writers;
};

struct owner_stats {
	__u64 count;
	__u64 total_ns;
	__u64 state_count[OWNER_STATES]; /* by enum owner_state, known owners only */
	__u64 state_ns[OWNER_STATES];
	__u32 pid; /* the owner's process */
	char comm[16];
	__u32 _pad;
};

/*
 * A kernel path already walked, recognised without walking again: the
 * return addresses of its first frames sit at known places in the raw stack
 * above the probe context. Keyed by the contention flags, the return
 * addresses of its first KEY_FRAMES frames, and one of PATH_WAYS slots. Not
 * by where in the stack the context lies: a syscall moves the whole stack by
 * a random offset (randomize_kstack_offset), not the frames relative to one
 * another.
 */
struct path_key {
	__u64 ip[KEY_FRAMES];
	__u16 flags;
	__u16 way;
	__u32 _pad;
};

struct path {
	__u64 stack;              /* the stacks map key of the walked stack */
	__u64 ip[VERIFY_FRAMES];  /* return addresses to find again ... */
	__u16 pos[VERIFY_FRAMES]; /* ... at these words of the window */
	__u32 nframes;
	/* Bytes from the context to the top of its stack when the walk ended
	 * there (a user-mode entry, a kernel thread), 0 when the path ends at
	 * a kstack shifter or at the stack depth. The same frames at the same
	 * places do not prove that nothing lies above them: a page fault
	 * taken in the kernel has the frames of one taken in user mode, and
	 * more above. Only a stack whose top is as far away ends as early. */
	__u32 top;
};

/* Per-CPU scratch space, too large for the BPF stack. */
struct stack_scratch {
	__u64 window[STACK_WINDOW_WORDS];
	__u64 ips[MAX_STACK_DEPTH + 1];
	struct path fresh; /* the path being learnt */
};

/* Events a main tracepoint program took that its rescue copy has not seen
 * yet, per CPU and role: at most one per nesting level, and a few left by a
 * rescue copy the kernel skipped. */
#define TAKEN_SLOTS 8

struct taken {
	__u64 lock;
	__u32 level; /* our runs already in progress on the CPU */
	__u32 _pad;
};

/* Our programs running on one CPU; see claim() and enter(). */
struct cpu_busy {
	__u32 depth;   /* runs in progress, nested */
	__u32 next[2]; /* by role: the taken slot to write next */
	__u32 _pad;
	struct taken taken[2][TAKEN_SLOTS];
};

/* Waits of spinning locks on one CPU, innermost last. A spinning task cannot
 * migrate, and interrupts nest, so a small per-CPU stack is exact. */
struct cpu_waits {
	__u32 depth;
	__u32 _pad;
	struct wait_slot slot[MAX_NEST];
};

/*
 * The function-probe backends (fentry/fexit, kprobe/kretprobe) learn which
 * locks.json entry fired from a per-attachment value (a BPF cookie, or a
 * constant patched into a per-function copy of the program): the lock type's
 * index in the low bits, and FN_HOLD if hold time is wanted.
 */
enum fn_info {
	FN_TYPE_MASK = 0xffff,
	FN_HOLD = 1 << 16,    /* measure hold time, acquire return to release */
	FN_MARK = 0x6b6c736b, /* the marked `mov rX, imm` the loader patches per function */
};

/* Set from user space while the programs run. */
struct fn_control {
	__u64 threshold_ns; /* an acquire longer than this counts as contended */
	__u32 calib_tid;    /* non-zero: calibrating, only this thread's acquires count, as samples */
	__u32 calib_n;      /* samples taken */
	__u32 stopped;      /* non-zero: the capture has ended, the programs change nothing */
	__u32 _pad;
};

/* Uncontended acquire times taken while calibrating. */
#define CALIB_SAMPLES 8192

/* A lock one thread holds, for hold time. */
struct hold_key {
	__u64 lock;
	__u32 tid;
	__u32 _pad;
};

struct hold_slot {
	__u64 ts;    /* bpf_ktime_get_ns() when the acquire returned */
	__u64 stack;
	__u32 pid;
	__u32 type;
};

/* Per-CPU counters, summed in user space. */
enum counter {
	CNT_BEGIN = 0,          /* contention_begin events accepted by the filters */
	CNT_END,                /* contention_end events that closed a recorded wait */
	CNT_FILTERED,           /* begin events rejected by the filters */
	CNT_NESTED,             /* begin while another wait of this thread was open */
	CNT_UNMATCHED_BEGIN,    /* open wait abandoned: its end never came */
	CNT_UNMATCHED_END,      /* end with no begin */
	CNT_LOST_AGG_FULL,      /* wait not stored: aggregation map full */
	CNT_LOST_WAIT_FULL,     /* begin not stored: per-thread wait map full */
	CNT_LOST_NEST_DEPTH,    /* begin not stored: more than MAX_NEST nested waits */
	CNT_LOST_LEVELS,        /* begin dropped: more than MAX_LEVELS of our runs nested on this CPU */
	CNT_STACK_FAILED,       /* wait stored without a stack: stack walk failed or stack map full */
	CNT_STACK_WALKED,       /* stacks taken by walking the kernel stack */
	CNT_STACK_KNOWN,        /* stacks recognised from a path walked before */
	CNT_FAST,               /* function probes: acquires no longer than the threshold */
	CNT_HOLD,               /* function probes: holds recorded */
	CNT_LOST_HOLD_FULL,     /* hold not timed: per-lock hold map full */
	CNT_LOST_HOLD_AGG_FULL, /* hold not stored: hold aggregation map full */
	CNT_RESCUED_BEGIN,      /* begins the kernel skipped for the main program, taken by its rescue copy */
	CNT_RESCUED_END,        /* the same for ends */
	CNT_LOST_OWNER_FULL,    /* wait not charged to its owner: owner map full */
	CNT_OWNER_STACK,        /* owner stacks taken as the owner left a CPU holding the lock */
	CNT_OWNER_STACK_FAILED, /* owner stacks not taken: walk failed or stack map full */
	CNT_OWNER_SAMPLE,       /* samples of marked owners on their CPU holding the lock */
	CNT_LOST_OWNER_SAMPLE,  /* owner samples not stored: owner sample map full */
	CNT_LOST_CHAIN_FULL,    /* wait not charged to its chain: chain map full */
	CNT_LOST_TREE_FULL,     /* process not added to the workload's tree: tree map full */
	CNT_LOST_SLAB_NAME,     /* slab lock's cache not stored: slab name map full */
	CNT_TREE_PROCESSES,     /* processes added to the workload's tree */
	CNT_TREE_THREADS,       /* threads of the tree's processes started (their first included) */
	CNT_TREE_ENDED,         /* threads of the tree freed */
	CNT_TREE_START_NS,      /* sum of the tree's threads' start times, ns, modulo 2^64 */
	CNT_TREE_END_NS,        /* sum of the tree's threads' free times, ns, modulo 2^64 */
	CNT_LOST_TREE_THREAD,   /* thread of the tree not timed: tree thread map full */
	CNT_MAX,
};

#endif /* __KLOCKSTAT_LOCKSTAT_H__ */
