/*
 * train/comm/shm_wait.c - how a shm member waits for its peers: spin
 * briefly (a peer on another core usually arrives within microseconds),
 * then sleep on the peer's futex word in short slices, checking between
 * slices whether the peer died, left, or the deadline passed. No wait is
 * ever unbounded, and a SIGKILLed peer is noticed within one slice.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>

#include "util/error.h"
#include "shm_member.h"

/* Iterations of the spin phase before the first sleep. */
#define SPIN_ITERATIONS 4000u
/* Longest single sleep: bounds how late a dead peer is noticed. */
#define SLEEP_SLICE_NS (5ull * 1000 * 1000)

void shm_futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void shm_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ull),
                          .tv_nsec = (long)(timeout_ns % 1000000000ull)};
    /* EAGAIN (value changed), EINTR and ETIMEDOUT all mean "look again". */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Steps wrap around at 2^32; peers are never 2^31 steps apart. */
static inline int step_reached(uint32_t have, uint32_t want)
{
    return (int32_t)(have - want) >= 0;
}

void shm_signal_step(shm_member *m, uint32_t step)
{
    /* seq_cst store then load: a peer that registered as a waiter before
     * this store is seen here and woken; one that registers after it sees
     * the new step before it sleeps. */
    atomic_store(&m->self->step, m->step_base[m->slot] + step);
    if (atomic_load(&m->self->waiters) > 0)
        shm_futex_wake_all(&m->self->step);
}

void shm_forget_peers(shm_member *m)
{
    for (uint32_t s = 0; s < m->header->max_ranks; s++) {
        if (m->pidfd[s] >= 0)
            close(m->pidfd[s]);
        m->pidfd[s] = -1;
        m->pidfd_pid[s] = 0;
    }
}

/* True when the process in `peer` is known to be gone: flagged by the
 * coordinator, or its pidfd is readable (it exited; this holds while it is
 * still an unreaped zombie, unlike kill(pid, 0)). */
static int peer_is_dead(shm_member *m, uint32_t peer, int32_t *pid_out)
{
    shm_slot *s = &shm_slots(m->header)[peer];
    int32_t pid = atomic_load(&s->pid);
    *pid_out = pid;
    if (atomic_load(&s->dead))
        return 1;
    if (pid == 0)
        return 0; /* not attached (yet): the deadline covers it */
    if (m->pidfd_pid[peer] != pid) {
        if (m->pidfd[peer] >= 0)
            close(m->pidfd[peer]);
        m->pidfd[peer] = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        m->pidfd_pid[peer] = pid;
        if (m->pidfd[peer] < 0 && errno == ESRCH)
            return 1;
    }
    if (m->pidfd[peer] >= 0) {
        struct pollfd p = {.fd = m->pidfd[peer], .events = POLLIN};
        return poll(&p, 1, 0) > 0;
    }
    /* No pidfd (old kernel): kill(2) sees a process until it is reaped. */
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

typedef enum wait_kind {
    WAIT_STEP,      /* peer's step reaches target (absolute) in our generation */
    WAIT_JOINED,    /* peer's adopted_gen equals target */
    WAIT_PUBLISHED  /* the published generation reaches target */
} wait_kind;

typedef struct wait_spec {
    wait_kind kind;
    uint32_t peer;   /* WAIT_STEP, WAIT_JOINED */
    uint32_t target; /* step or generation */
    uint32_t generation; /* the generation the wait belongs to */
    const char *op;
} wait_spec;

/* The cheap checks, run on every spin: 1 = done, 0 = keep waiting, or an
 * error when waiting can no longer succeed. */
static loom_error *check_once(shm_member *m, const wait_spec *w, int *done)
{
    shm_header *h = m->header;
    uint32_t published = atomic_load_explicit(&h->generation, memory_order_acquire);
    *done = 0;
    if (w->kind == WAIT_PUBLISHED) {
        *done = published != 0 && step_reached(published, w->target);
        return NULL;
    }
    shm_slot *p = &shm_slots(h)[w->peer];
    if (w->kind == WAIT_STEP) {
        /* joined_gen first, then step: a peer signals its last step before
         * it leaves, so having seen it leave we also see that step. */
        uint32_t joined = atomic_load_explicit(&p->joined_gen, memory_order_acquire);
        uint32_t step = atomic_load_explicit(&p->step, memory_order_acquire);
        if (step_reached(step, w->target)) {
            *done = 1;
            return NULL;
        }
        if (joined == 0)
            return loom_err(LOOM_ERR_UNAVAILABLE,
                            "%s: slot %u detached from generation %u", w->op,
                            w->peer, w->generation);
        if (joined != w->generation)
            return loom_err(LOOM_ERR_UNAVAILABLE,
                            "%s: slot %u left generation %u for generation %u",
                            w->op, w->peer, w->generation, joined);
    } else if (atomic_load_explicit(&p->adopted_gen, memory_order_acquire) == w->target) {
        *done = 1;
        return NULL;
    }
    if (published != w->generation)
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "%s: generation %u was superseded by generation %u", w->op,
                        w->generation, published);
    return NULL;
}

/* The checks between sleeps: a dead peer, or the deadline. */
static loom_error *check_slow(shm_member *m, const wait_spec *w, uint64_t started,
                              uint64_t now, uint64_t deadline_ns)
{
    unsigned long long waited_ms = (now - started) / 1000000ull;
    if (w->kind == WAIT_PUBLISHED) {
        if (now >= deadline_ns)
            return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                            "join: generation %u was not published within %llu ms "
                            "(latest is %u)",
                            w->target, waited_ms, atomic_load(&m->header->generation));
        return NULL;
    }
    int32_t pid = 0;
    if (peer_is_dead(m, w->peer, &pid)) {
        /* A peer that got there and then exited is no failure; the caller's
         * next check sees that too. */
        int done = 0;
        loom_err_free(check_once(m, w, &done));
        if (done)
            return NULL;
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "%s: slot %u (pid %d) died; generation %u needs a new "
                        "membership without it",
                        w->op, w->peer, (int)pid, w->generation);
    }
    if (now >= deadline_ns) {
        if (pid == 0)
            return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                            "%s: slot %u did not attach within %llu ms (generation %u)",
                            w->op, w->peer, waited_ms, w->generation);
        return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                        "%s: slot %u (pid %d) did not arrive within %llu ms "
                        "(generation %u)",
                        w->op, w->peer, (int)pid, waited_ms, w->generation);
    }
    return NULL;
}

/* When a wait fails because a peer detached or left, the root cause is
 * often another member's death (the peer saw it first and moved on): name
 * the dead member instead, so every survivor reports the same slot. */
static loom_error *blame_dead_member(shm_member *m, const wait_spec *w, loom_error *err)
{
    if (err == NULL || w->kind == WAIT_PUBLISHED ||
        loom_err_code(err) == LOOM_ERR_DEADLINE_EXCEEDED)
        return err;
    for (uint32_t r = 0; r < m->base.world_size; r++) {
        int32_t pid = 0;
        uint32_t peer = m->members[r];
        if (peer != m->slot && peer != w->peer && peer_is_dead(m, peer, &pid)) {
            loom_err_free(err);
            return loom_err(LOOM_ERR_UNAVAILABLE,
                            "%s: slot %u (pid %d) died; generation %u needs a new "
                            "membership without it",
                            w->op, peer, (int)pid, w->generation);
        }
    }
    return err;
}

static loom_error *wait_until(shm_member *m, const wait_spec *w, uint64_t deadline_ns);

static loom_error *wait_for(shm_member *m, const wait_spec *w, uint64_t deadline_ns)
{
    uint64_t started = comm_now_ns();
    loom_error *err = blame_dead_member(m, w, wait_until(m, w, deadline_ns));
    m->base.wait_ns += comm_now_ns() - started;
    return err;
}

static loom_error *wait_until(shm_member *m, const wait_spec *w, uint64_t deadline_ns)
{
    int done = 0;
    loom_error *err;
    uint64_t started = comm_now_ns();
    for (uint32_t i = 0; i < SPIN_ITERATIONS; i++) {
        if ((err = check_once(m, w, &done)) != NULL || done)
            return err;
        cpu_relax();
        /* More processes than cores (tests, oversubscribed nodes): let the
         * peer we wait for run. */
        if ((i & 127u) == 127u)
            sched_yield();
    }

    _Atomic uint32_t *word, *waiters;
    if (w->kind == WAIT_PUBLISHED) {
        word = &m->header->generation;
        waiters = &m->header->generation_waiters;
    } else {
        shm_slot *p = &shm_slots(m->header)[w->peer];
        word = w->kind == WAIT_STEP ? &p->step : &p->adopted_gen;
        waiters = &p->waiters;
    }
    for (;;) {
        uint64_t now = comm_now_ns();
        if ((err = check_slow(m, w, started, now, deadline_ns)) != NULL)
            return err;
        if ((err = check_once(m, w, &done)) != NULL || done)
            return err;
        atomic_fetch_add(waiters, 1);
        uint32_t seen = atomic_load(word);
        err = check_once(m, w, &done);
        if (err == NULL && !done) {
            uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
            shm_futex_wait(word, seen, left < SLEEP_SLICE_NS ? left + 1 : SLEEP_SLICE_NS);
        }
        atomic_fetch_sub(waiters, 1);
        if (err || done)
            return err;
        if ((err = check_once(m, w, &done)) != NULL || done)
            return err;
    }
}

loom_error *shm_wait_step(shm_member *m, uint32_t peer, uint32_t step,
                          uint64_t deadline_ns, const char *op)
{
    wait_spec w = {WAIT_STEP, peer, m->step_base[peer] + step, m->base.generation, op};
    return wait_for(m, &w, deadline_ns);
}

loom_error *shm_wait_all_steps(shm_member *m, uint32_t step, uint64_t deadline_ns,
                               const char *op)
{
    for (uint32_t r = 0; r < m->base.world_size; r++) {
        if (m->members[r] == m->slot)
            continue;
        loom_error *err = shm_wait_step(m, m->members[r], step, deadline_ns, op);
        if (err)
            return err;
    }
    return NULL;
}

loom_error *shm_wait_joined(shm_member *m, uint32_t peer, uint32_t generation,
                            uint64_t deadline_ns)
{
    wait_spec w = {WAIT_JOINED, peer, generation, generation, "join"};
    loom_error *err = wait_for(m, &w, deadline_ns);
    if (err)
        return err;
    /* gen_base was stored before adopted_gen; if adopted_gen still reads
     * `generation` afterwards, the base belongs to it. */
    shm_slot *p = &shm_slots(m->header)[peer];
    m->step_base[peer] = atomic_load_explicit(&p->gen_base, memory_order_acquire);
    if (atomic_load(&p->adopted_gen) != generation)
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "join: slot %u moved past generation %u during the join",
                        peer, generation);
    return NULL;
}

loom_error *shm_wait_published(shm_member *m, uint32_t generation,
                               uint64_t deadline_ns)
{
    wait_spec w = {WAIT_PUBLISHED, 0, generation, generation, "join"};
    return wait_for(m, &w, deadline_ns);
}

loom_error *shm_check_peers_stayed(shm_member *m, const char *op)
{
    /* Orders our reads of peers' staging before the checks below. */
    atomic_thread_fence(memory_order_acquire);
    shm_slot *slots = shm_slots(m->header);
    uint32_t *latest = NULL, latest_count = 0, latest_gen = 0;
    loom_error *err = NULL;
    for (uint32_t r = 0; r < m->base.world_size && err == NULL; r++) {
        uint32_t peer = m->members[r];
        uint32_t joined = atomic_load_explicit(&slots[peer].joined_gen,
                                               memory_order_relaxed);
        /* Still here, or left without writing anything since. */
        if (peer == m->slot || joined == m->base.generation || joined == 0)
            continue;
        /* The peer moved to another generation. It writes staging there only
         * after all of that generation's members joined it, so our reads are
         * intact if we are one of them. Only the latest membership is kept:
         * anything older counts as not. */
        if (latest == NULL) {
            latest = malloc(m->header->max_ranks * sizeof(uint32_t));
            if (latest == NULL)
                return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", op);
            latest_gen = shm_read_membership(m->header, latest, &latest_count);
        }
        int still_member = 0;
        for (uint32_t i = 0; joined == latest_gen && i < latest_count; i++)
            still_member |= latest[i] == m->slot;
        if (!still_member)
            err = loom_err(LOOM_ERR_UNAVAILABLE,
                           "%s: slot %u moved to generation %u, which does not "
                           "include slot %u, during the call; the result is void",
                           op, peer, joined, m->slot);
    }
    free(latest);
    return err;
}
