/*
 * train/comm/shm_layout.h - the layout of the shm back end's segment, shared
 * by the coordinator (shm_segment.c) and the workers (shm_member.c).
 *
 *   [header][slot 0 .. slot max_ranks-1][member list][pad][staging 0 .. n-1]
 *   [gradient region 0 .. n-1]
 *
 * A slot's gradient region is where its worker keeps its gradient buffer
 * when the adapter takes memory from the host (comm_shm_gradient_memory):
 * peers then reduce straight from it and into it, with no staging copies.
 * The regions are sparse: the file only holds the pages a worker reserved.
 *
 * Synchronisation is C11 atomics on 32-bit words plus futex(2) to sleep, so
 * no lock is ever held across a wait: a process that dies at any point
 * leaves nothing locked, and peers notice it through its pid (pidfd) or the
 * coordinator's dead flag.
 */
#ifndef LOOM_TRAIN_COMM_SHM_LAYOUT_H
#define LOOM_TRAIN_COMM_SHM_LAYOUT_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SHM_MAGIC 0x316d6d6f636d6f6full /* "loomcomm1" */
#define SHM_LAYOUT_VERSION 3u
#define SHM_CACHE_LINE 64u
#define SHM_PAGE 4096u

/* One member slot, a cache line of its own so one process's progress
 * stores do not slow down another's. */
typedef struct shm_slot {
    /* Collective progress of the process in this slot. It only ever grows
     * (never reset, not even for the slot's next process), so "reached
     * step X" stays true after the process leaves: a peer that finished
     * the last collective and left is not mistaken for one that vanished
     * mid-way. Chunk k of a generation moves it to gen_base + 2k+1 once
     * the chunk's input is staged, then gen_base + 2k+2. Futex word. */
    _Atomic uint32_t step;
    /* The step value when this slot joined its latest generation. */
    _Atomic uint32_t gen_base;
    /* Generation this slot is in now, 0 once it left. Futex word. */
    _Atomic uint32_t joined_gen;
    /* Latest generation this slot joined; not cleared on leaving, so the
     * join barrier sees a peer that joined and left again. Futex word. */
    _Atomic uint32_t adopted_gen;
    /* Processes sleeping on this slot's futex words: the writer skips the
     * wake syscall when there are none. */
    _Atomic uint32_t waiters;
    _Atomic int32_t pid;   /* attached process, 0 = free */
    _Atomic uint32_t dead; /* set by the coordinator once the pid is gone */
    uint32_t unused;
    /* Bytes of the slot's gradient region its process holds a buffer in
     * (0: none), set before it joins a generation; cleared when another
     * process claims the slot. */
    _Atomic uint64_t gradient_bytes;
    /* Per collective chunk, where this member's buffer is: 1 + its offset
     * in floats within the gradient region when reduced in place, 0 when
     * staged. Peers compare it with theirs before touching each other's
     * memory (see shm_collectives.c). */
    _Atomic uint64_t placement;
    uint8_t pad[SHM_CACHE_LINE - 8 * sizeof(uint32_t) - 2 * sizeof(uint64_t)];
} shm_slot;
_Static_assert(sizeof(shm_slot) == SHM_CACHE_LINE, "one slot per cache line");

typedef struct shm_header {
    _Atomic uint64_t magic; /* stored last, once the rest is initialised */
    uint32_t layout_version;
    uint32_t max_ranks;
    uint64_t max_buffer_bytes;
    uint64_t staging_bytes; /* per slot: two halves used alternately */
    uint64_t slots_offset;
    uint64_t members_offset;
    uint64_t staging_offset;
    uint64_t gradient_offset;       /* page aligned */
    uint64_t gradient_region_bytes; /* per slot, page aligned; 0: none */
    uint64_t stream_min_bytes;      /* comm_shm_config's, resolved */
    uint64_t total_bytes;
    int32_t coordinator_pid;
    /* The published generation (futex word) and its member list, written by
     * the coordinator under a sequence lock (odd while writing). */
    _Atomic uint32_t generation;
    _Atomic uint32_t publish_seq;
    _Atomic uint32_t member_count;
    _Atomic uint32_t generation_waiters;
} shm_header;

static inline shm_slot *shm_slots(shm_header *h)
{
    return (shm_slot *)((char *)h + h->slots_offset);
}

static inline _Atomic uint32_t *shm_members(shm_header *h)
{
    return (_Atomic uint32_t *)((char *)h + h->members_offset);
}

static inline float *shm_staging(shm_header *h, uint32_t slot, uint32_t half)
{
    return (float *)((char *)h + h->staging_offset +
                     (size_t)slot * h->staging_bytes +
                     (size_t)half * (h->staging_bytes / 2));
}

static inline float *shm_gradient_region(shm_header *h, uint32_t slot)
{
    return (float *)((char *)h + h->gradient_offset +
                     (size_t)slot * h->gradient_region_bytes);
}

/* Reads the published generation and its members consistently. `members`
 * must hold max_ranks entries. Returns the generation (0: none yet). */
static inline uint32_t shm_read_membership(shm_header *h, uint32_t *members,
                                           uint32_t *count)
{
    for (;;) {
        uint32_t seq = atomic_load_explicit(&h->publish_seq, memory_order_acquire);
        if (seq & 1u) {
            sched_yield(); /* the coordinator is mid-write: it is quick */
            continue;
        }
        uint32_t gen = atomic_load_explicit(&h->generation, memory_order_relaxed);
        uint32_t n = atomic_load_explicit(&h->member_count, memory_order_relaxed);
        if (n > h->max_ranks)
            continue;
        _Atomic uint32_t *list = shm_members(h);
        for (uint32_t i = 0; i < n; i++)
            members[i] = atomic_load_explicit(&list[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&h->publish_seq, memory_order_relaxed) == seq) {
            *count = n;
            return gen;
        }
    }
}

/* Futex helpers over a 32-bit word in the shared mapping (not private:
 * the waiters are other processes). */
void shm_futex_wake_all(_Atomic uint32_t *word);
/* Sleeps while *word == expected, at most timeout_ns. */
void shm_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);

/* Round up to a multiple of `align` (a power of two). */
static inline uint64_t shm_align_up(uint64_t v, uint64_t align)
{
    return (v + align - 1) & ~(align - 1);
}

#endif
