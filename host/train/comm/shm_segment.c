/*
 * train/comm/shm_segment.c - the coordinator's side of the shm back end:
 * creates the segment, publishes generations (member lists) and flags dead
 * slots. The coordinator never takes part in a collective.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm.h"
#include "util/error.h"
#include "shm_layout.h"

struct comm_shm_segment {
    char *name;
    int fd;
    shm_header *header;
    size_t map_bytes;
};

/* shm_open(3) wants "/name" with no further slash. */
static loom_error *check_segment_name(const char *name)
{
    if (name == NULL || name[0] != '/' || name[1] == '\0' ||
        strchr(name + 1, '/') != NULL || strlen(name) > NAME_MAX)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment name '%s' is invalid: expected '/name' "
                        "with no other '/' and at most %d characters",
                        name ? name : "(null)", NAME_MAX);
    return NULL;
}

/* Staging is split into two halves used alternately; each half is whole
 * pages so chunks start page-aligned. */
static uint64_t staging_bytes_for(const comm_shm_config *cfg)
{
    uint64_t want = cfg->staging_bytes;
    if (want == 0) {
        want = COMM_SHM_DEFAULT_STAGING;
        if (2 * cfg->max_buffer_bytes < want)
            want = 2 * cfg->max_buffer_bytes;
    }
    uint64_t staging = shm_align_up(want, 2 * SHM_PAGE);
    return staging < 2 * SHM_PAGE ? 2 * SHM_PAGE : staging;
}

/* The largest cache the in-place all-reduce's buffers can stay in. */
static uint64_t last_level_cache_bytes(void)
{
    long size = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (size <= 0)
        size = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return size > 0 ? (uint64_t)size : COMM_SHM_DEFAULT_STREAM_BYTES;
}

loom_error *comm_shm_create(const char *name, const comm_shm_config *config,
                            comm_shm_segment **out)
{
    *out = NULL;
    loom_error *err = check_segment_name(name);
    if (err)
        return err;
    if (config == NULL || config->max_ranks == 0 ||
        config->max_ranks > COMM_SHM_MAX_RANKS)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment '%s': max_ranks must be 1..%u, got %u", name,
                        COMM_SHM_MAX_RANKS, config ? config->max_ranks : 0);
    if (config->max_buffer_bytes == 0 || config->max_buffer_bytes % sizeof(float))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment '%s': max_buffer_bytes must be a positive "
                        "multiple of 4, got %llu",
                        name, (unsigned long long)config->max_buffer_bytes);

    uint64_t staging = staging_bytes_for(config);
    uint64_t slots_offset = shm_align_up(sizeof(shm_header), SHM_CACHE_LINE);
    uint64_t members_offset = slots_offset + (uint64_t)config->max_ranks * sizeof(shm_slot);
    uint64_t staging_offset =
        shm_align_up(members_offset + (uint64_t)config->max_ranks * sizeof(uint32_t),
                     SHM_PAGE);
    uint64_t gradient_offset = staging_offset + (uint64_t)config->max_ranks * staging;
    uint64_t region = shm_align_up(config->gradient_region_bytes, SHM_PAGE);
    if (config->gradient_region_bytes > COMM_SHM_MAX_GRADIENT_REGION)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment '%s': gradient_region_bytes %llu exceeds the "
                        "limit of %llu per slot",
                        name, (unsigned long long)config->gradient_region_bytes,
                        (unsigned long long)COMM_SHM_MAX_GRADIENT_REGION);
    uint64_t total = gradient_offset + (uint64_t)config->max_ranks * region;

    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        int e = errno;
        return loom_err(e == EEXIST ? LOOM_ERR_ALREADY_EXISTS : LOOM_ERR_UNAVAILABLE,
                        "shm segment '%s': cannot create: %s", name, strerror(e));
    }
    if (ftruncate(fd, (off_t)total) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "shm segment '%s': cannot size to %llu bytes: %s", name,
                        (unsigned long long)total, strerror(e));
    }
    void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "shm segment '%s': cannot map %llu bytes: %s", name,
                        (unsigned long long)total, strerror(e));
    }

    /* ftruncate zero-filled the segment: every counter starts at 0. */
    shm_header *h = map;
    h->layout_version = SHM_LAYOUT_VERSION;
    h->max_ranks = config->max_ranks;
    h->max_buffer_bytes = config->max_buffer_bytes;
    h->staging_bytes = staging;
    h->slots_offset = slots_offset;
    h->members_offset = members_offset;
    h->staging_offset = staging_offset;
    h->gradient_offset = gradient_offset;
    h->gradient_region_bytes = region;
    h->stream_min_bytes = config->stream_min_bytes ? config->stream_min_bytes
                                                   : last_level_cache_bytes();
    h->total_bytes = total;
    h->coordinator_pid = (int32_t)getpid();
    atomic_store_explicit(&h->magic, SHM_MAGIC, memory_order_release);

    comm_shm_segment *seg = calloc(1, sizeof(*seg));
    char *copy = strdup(name);
    if (seg == NULL || copy == NULL) {
        free(seg);
        free(copy);
        munmap(map, total);
        close(fd);
        shm_unlink(name);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "shm segment '%s': out of memory",
                        name);
    }
    seg->name = copy;
    seg->fd = fd;
    seg->header = h;
    seg->map_bytes = total;
    *out = seg;
    return NULL;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Waiters sleep on the word of the peer they wait for; after a change every
 * member must look again, so wake every slot that has sleepers. */
static void wake_every_slot(shm_header *h)
{
    shm_slot *slots = shm_slots(h);
    for (uint32_t s = 0; s < h->max_ranks; s++) {
        if (atomic_load(&slots[s].waiters) > 0) {
            shm_futex_wake_all(&slots[s].step);
            shm_futex_wake_all(&slots[s].joined_gen);
            shm_futex_wake_all(&slots[s].adopted_gen);
        }
    }
}

loom_error *comm_shm_publish(comm_shm_segment *seg, const uint32_t *slots,
                             uint32_t count, uint32_t *generation)
{
    shm_header *h = seg->header;
    if (count == 0 || count > h->max_ranks || slots == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "shm segment '%s': a generation needs 1..%u member slots, got %u",
                        seg->name, h->max_ranks, count);
    uint32_t sorted[COMM_SHM_MAX_RANKS];
    memcpy(sorted, slots, count * sizeof(uint32_t));
    qsort(sorted, count, sizeof(uint32_t), compare_u32);
    for (uint32_t i = 0; i < count; i++) {
        if (sorted[i] >= h->max_ranks)
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "shm segment '%s': member slot %u is out of range 0..%u",
                            seg->name, sorted[i], h->max_ranks - 1);
        if (i > 0 && sorted[i] == sorted[i - 1])
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "shm segment '%s': member slot %u is listed twice",
                            seg->name, sorted[i]);
    }

    uint32_t next = atomic_load(&h->generation) + 1;
    _Atomic uint32_t *list = shm_members(h);
    atomic_fetch_add_explicit(&h->publish_seq, 1, memory_order_relaxed); /* odd */
    atomic_thread_fence(memory_order_release);
    for (uint32_t i = 0; i < count; i++)
        atomic_store_explicit(&list[i], sorted[i], memory_order_relaxed);
    atomic_store_explicit(&h->member_count, count, memory_order_relaxed);
    atomic_store_explicit(&h->generation, next, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->publish_seq, 1, memory_order_release); /* even */

    if (atomic_load(&h->generation_waiters) > 0)
        shm_futex_wake_all(&h->generation);
    wake_every_slot(h);
    if (generation)
        *generation = next;
    return NULL;
}

void comm_shm_mark_dead(comm_shm_segment *seg, uint32_t slot)
{
    shm_header *h = seg->header;
    if (slot >= h->max_ranks)
        return;
    shm_slot *s = &shm_slots(h)[slot];
    atomic_store(&s->dead, 1);
    /* Peers waiting on this slot sleep on its words. */
    shm_futex_wake_all(&s->step);
    shm_futex_wake_all(&s->joined_gen);
    shm_futex_wake_all(&s->adopted_gen);
}

uint32_t comm_shm_published_generation(const comm_shm_segment *seg)
{
    return atomic_load(&seg->header->generation);
}

void comm_shm_destroy(comm_shm_segment *seg)
{
    if (seg == NULL)
        return;
    munmap(seg->header, seg->map_bytes);
    close(seg->fd);
    shm_unlink(seg->name);
    free(seg->name);
    free(seg);
}
