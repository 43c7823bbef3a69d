/*
 * train/comm/shm_member.c - a worker's membership in the shm back end:
 * attaching to a slot of the coordinator's segment, adopting a published
 * generation (the join barrier) and leaving.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/error.h"
#include "shm_member.h"

/* A slot's previous holder may be dead but not yet reaped by its parent;
 * kill(pid, 0) still succeeds on such a zombie, a pidfd does not lie. */
static int process_is_alive(int32_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0)
        return errno == ESRCH ? 0 : kill((pid_t)pid, 0) == 0 || errno == EPERM;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int exited = poll(&p, 1, 0) > 0;
    close(fd);
    return !exited;
}

static loom_error *map_segment(const char *name, int *fd_out, shm_header **header,
                               size_t *bytes)
{
    if (name == NULL || name[0] != '/')
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment name '%s' is invalid: expected '/name'",
                        name ? name : "(null)");
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return loom_err(LOOM_ERR_NOT_FOUND,
                            "shm segment '%s' does not exist (the coordinator "
                            "creates it before it starts workers)",
                            name);
        return loom_err(LOOM_ERR_UNAVAILABLE, "shm segment '%s': cannot open: %s",
                        name, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(shm_header)) {
        close(fd);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment '%s' is not a loom comm segment (too small)",
                        name);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                     fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "shm segment '%s': cannot map: %s",
                        name, strerror(e));
    }
    shm_header *h = map;
    const char *problem = NULL;
    if (atomic_load_explicit(&h->magic, memory_order_acquire) != SHM_MAGIC)
        problem = "no loom comm header (wrong name, or not initialised yet)";
    else if (h->layout_version != SHM_LAYOUT_VERSION)
        problem = "made by another loom version (layout version differs)";
    else if (h->total_bytes != (uint64_t)st.st_size)
        problem = "its size does not match its header";
    if (problem) {
        munmap(map, (size_t)st.st_size);
        close(fd);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "shm segment '%s': %s", name,
                        problem);
    }
    *fd_out = fd;
    *header = h;
    *bytes = (size_t)st.st_size;
    return NULL;
}

/* Takes `slot` for this process, unless a live process holds it. */
static loom_error *claim_slot(shm_header *h, const char *name, uint32_t slot)
{
    shm_slot *s = &shm_slots(h)[slot];
    int32_t me = (int32_t)getpid();
    int32_t holder = atomic_load(&s->pid);
    for (;;) {
        if (holder != 0 && process_is_alive(holder))
            return loom_err(LOOM_ERR_ALREADY_EXISTS,
                            "shm segment '%s': slot %u is already attached by pid %d",
                            name, slot, (int)holder);
        if (atomic_compare_exchange_strong(&s->pid, &holder, me))
            break;
    }
    /* The new holder is in no generation yet; peers still waiting on the
     * old holder see it detached. `step` carries on from where the old
     * holder left it (see shm_layout.h). */
    atomic_store(&s->joined_gen, 0);
    atomic_store(&s->dead, 0);
    atomic_store(&s->gradient_bytes, 0);
    atomic_store(&s->placement, 0);
    shm_futex_wake_all(&s->step);
    shm_futex_wake_all(&s->joined_gen);
    return NULL;
}

static void release_member(shm_member *m)
{
    if (m->pidfd)
        shm_forget_peers(m);
    free(m->pidfd);
    free(m->pidfd_pid);
    free(m->step_base);
    free(m->members);
    free(m->segment_name);
    if (m->header)
        munmap(m->header, m->map_bytes);
    if (m->fd >= 0)
        close(m->fd);
    free(m);
}

loom_error *comm_shm_attach(const char *name, uint32_t slot, comm **out)
{
    *out = NULL;
    int fd = -1;
    shm_header *h = NULL;
    size_t bytes = 0;
    loom_error *err = map_segment(name, &fd, &h, &bytes);
    if (err)
        return err;
    if (slot >= h->max_ranks) {
        uint32_t max = h->max_ranks;
        munmap(h, bytes);
        close(fd);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment '%s': slot %u is out of range (slots 0..%u)",
                        name, slot, max - 1);
    }

    shm_member *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        munmap(h, bytes);
        close(fd);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "shm attach: out of memory");
    }
    m->base.ops = &shm_member_ops;
    m->fd = fd;
    m->header = h;
    m->map_bytes = bytes;
    m->slot = slot;
    m->self = &shm_slots(h)[slot];
    m->segment_name = strdup(name);
    m->members = calloc(h->max_ranks, sizeof(uint32_t));
    m->pidfd = malloc(h->max_ranks * sizeof(int));
    m->pidfd_pid = calloc(h->max_ranks, sizeof(int32_t));
    m->step_base = calloc(h->max_ranks, sizeof(uint32_t));
    if (!m->segment_name || !m->members || !m->pidfd || !m->pidfd_pid || !m->step_base) {
        free(m->pidfd);
        m->pidfd = NULL;
        release_member(m);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "shm attach: out of memory");
    }
    for (uint32_t s = 0; s < h->max_ranks; s++)
        m->pidfd[s] = -1;

    if ((err = claim_slot(h, name, slot)) != NULL) {
        release_member(m);
        return err;
    }
    *out = &m->base;
    return NULL;
}

/* "0,2,3" for error messages. */
static void format_slots(char *out, size_t size, const uint32_t *slots, uint32_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++) {
        int w = snprintf(out + used, size - used, "%s%u", i ? "," : "", slots[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Stops being a member of any generation; peers waiting on us fail fast. */
static void leave_generation(shm_member *m)
{
    atomic_store(&m->self->joined_gen, 0);
    shm_futex_wake_all(&m->self->joined_gen);
    shm_futex_wake_all(&m->self->step);
    shm_futex_wake_all(&m->self->adopted_gen);
    m->base.generation = 0;
    m->base.world_size = 0;
    m->base.rank = 0;
    m->in_place_bytes = 0;
}

loom_error *comm_shm_join(comm *c, uint32_t generation, uint64_t deadline_ns)
{
    if (c == NULL || c->ops != &shm_member_ops)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "join: the handle is not attached to an shm segment");
    if (generation == 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "join: generation must be 1 or more (0 means none)");
    shm_member *m = (shm_member *)c;
    shm_header *h = m->header;
    /* Peers recorded where our steps start in this generation; joining it
     * again would move that base under them. */
    if (generation == m->base.generation)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "join: slot %u is already in generation %u", m->slot,
                        generation);
    if (m->base.generation != 0)
        leave_generation(m);

    loom_error *err = shm_wait_published(m, generation, deadline_ns);
    if (err)
        return err;
    uint32_t count = 0;
    uint32_t published = shm_read_membership(h, m->members, &count);
    if (published != generation)
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "join: generation %u was superseded by generation %u "
                        "before slot %u joined it",
                        generation, published, m->slot);
    uint32_t rank = count;
    for (uint32_t r = 0; r < count; r++)
        if (m->members[r] == m->slot)
            rank = r;
    if (rank == count) {
        char list[256];
        format_slots(list, sizeof(list), m->members, count);
        return loom_err(LOOM_ERR_NOT_FOUND,
                        "join: slot %u is not a member of generation %u (members: %s)",
                        m->slot, generation, list);
    }

    /* gen_base before adopted_gen: a peer that sees us in this generation
     * must also see where our steps start. */
    uint32_t base = atomic_load(&m->self->step);
    m->step_base[m->slot] = base;
    atomic_store(&m->self->gen_base, base);
    atomic_store(&m->self->joined_gen, generation);
    atomic_store(&m->self->adopted_gen, generation);
    shm_futex_wake_all(&m->self->adopted_gen);
    m->base.generation = generation;
    m->base.world_size = count;
    m->base.rank = rank;
    m->chunk = 0;
    m->in_place_bytes = 0;

    for (uint32_t r = 0; r < count; r++) {
        if (m->members[r] == m->slot)
            continue;
        if ((err = shm_wait_joined(m, m->members[r], generation, deadline_ns)) != NULL) {
            leave_generation(m);
            return err;
        }
    }
    /* Every member stored its gradient_bytes before it joined: all read
     * the same sizes, so all agree on reducing in place. */
    uint64_t in_place = m->gradient_bytes;
    for (uint32_t r = 0; r < count; r++)
        if (atomic_load(&shm_slots(h)[m->members[r]].gradient_bytes) != in_place)
            in_place = 0;
    m->in_place_bytes = in_place;
    return NULL;
}

loom_error *comm_shm_gradient_memory(comm *c, uint64_t bytes, float **out)
{
    *out = NULL;
    if (c == NULL || c->ops != &shm_member_ops)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "gradient memory: the handle is not attached to an shm segment");
    shm_member *m = (shm_member *)c;
    shm_header *h = m->header;
    if (bytes == 0 || bytes % sizeof(float))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "gradient memory: %llu bytes asked, expected a positive "
                        "multiple of 4", (unsigned long long)bytes);
    if (m->base.generation != 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "gradient memory: slot %u is in generation %u already (ask "
                        "before joining)", m->slot, m->base.generation);
    if (m->gradient_bytes != 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "gradient memory: slot %u holds a gradient buffer of %llu bytes "
                        "already (one per process)",
                        m->slot, (unsigned long long)m->gradient_bytes);
    if (bytes > h->gradient_region_bytes)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "gradient memory: %llu bytes exceed shm segment '%s' gradient "
                        "region of %llu bytes per slot",
                        (unsigned long long)bytes, m->segment_name,
                        (unsigned long long)h->gradient_region_bytes);
    float *region = shm_gradient_region(h, m->slot);
    off_t at = (off_t)((char *)region - (char *)h);
    int rc = posix_fallocate(m->fd, at, (off_t)shm_align_up(bytes, SHM_PAGE));
    if (rc != 0)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "gradient memory: cannot reserve %llu bytes in shm segment "
                        "'%s': %s", (unsigned long long)bytes, m->segment_name,
                        strerror(rc));
    /* A previous holder of the slot may have left its gradients there. */
    memset(region, 0, (size_t)bytes);
    m->gradient_bytes = bytes;
    atomic_store(&m->self->gradient_bytes, bytes);
    *out = region;
    return NULL;
}

uint64_t comm_shm_in_place_bytes(const comm *c)
{
    if (c == NULL || c->ops != &shm_member_ops)
        return 0;
    return ((const shm_member *)c)->in_place_bytes;
}

static void shm_member_close(comm *c)
{
    shm_member *m = (shm_member *)c;
    int32_t me = (int32_t)getpid();
    if (atomic_load(&m->self->pid) == me) {
        leave_generation(m);
        atomic_compare_exchange_strong(&m->self->pid, &me, 0);
    }
    release_member(m);
}

const comm_ops shm_member_ops = {
    .name = "shm",
    .allreduce_avg_f32 = shm_allreduce_avg_f32,
    .broadcast = shm_broadcast,
    .barrier = shm_barrier,
    .close = shm_member_close,
};
