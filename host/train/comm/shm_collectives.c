/*
 * train/comm/shm_collectives.c - all-reduce (average), broadcast and barrier
 * for the members of one shm generation.
 *
 * Buffers move through each slot's staging memory in chunks. Chunk k uses
 * staging half k % 2 and moves every member's step to 2k+1 ("my input is
 * staged / I finished reading chunk k-1") and then 2k+2 ("my share of chunk
 * k is done"). A member writes into half k % 2 only after every peer reached
 * 2k-1, i.e. finished reading chunk k-2 from that half; with two halves
 * that costs no extra wait in a run of all-reduce chunks.
 *
 * All-reduce of one chunk, reduce-scatter + all-gather:
 *   1. copy my input into my staging half (all but my own share, which
 *      only I read); step 2k+1; wait for all peers;
 *   2. reduce my 1/world share of the chunk from every member's staging,
 *      summing in ascending slot order (deterministic), dividing by world;
 *      write it to my staging and my buffer; step 2k+2; wait for all;
 *   3. copy every other member's reduced share from its staging.
 * Each process reads and adds 1/world of the data, so all cores work.
 *
 * In place (every member's buffer in its gradient region, comm.h): one
 * round of two steps, no staging. Each member publishes where its buffer
 * is and signals "ready" (2k+1); once all are ready and agree on the place,
 * it sums its share straight from every member's region (ascending slot
 * order, the same bits as staged) and writes the average into every
 * region; "done" (2k+2) once all have, so a member's buffer is whole when
 * its call returns. The shares are disjoint, so no two members ever write
 * the same bytes, and each element crosses the memory bus about as often
 * as a memcpy moves it. Buffers too large for the last-level cache are
 * written with non-temporal stores: they would not stay in cache anyway,
 * and skipping the read for ownership saves a third of the traffic. (Below
 * that size streaming loses: on a machine with a 480 MB L3, 64 MB in place
 * ran at 2.5 GB/s streamed against 5 GB/s cached, under the same load.)
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/error.h"
#include "shm_member.h"

/* Floats reduced per pass: the accumulator stays in L1. */
#define REDUCE_BLOCK 2048
/* Shares are cut on whole cache lines of floats. */
#define SHARE_ALIGN 16

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Rank `rank`'s share [lo, hi) of a chunk of `len` floats. */
static void share_of(size_t len, uint32_t world, uint32_t rank, size_t *lo,
                     size_t *hi)
{
    size_t lines = (len + SHARE_ALIGN - 1) / SHARE_ALIGN;
    size_t per = lines / world, extra = lines % world;
    size_t first = rank * per + min_size(rank, extra);
    size_t count = per + (rank < extra ? 1 : 0);
    *lo = min_size(len, first * SHARE_ALIGN);
    *hi = min_size(len, (first + count) * SHARE_ALIGN);
}

static int is_power_of_two(uint32_t v) { return v && !(v & (v - 1)); }

/* acc[i] = (((src0[b+i] + src1[b+i]) + src2[b+i]) + ...) / world for n
 * floats, world >= 2: the sum in ascending slot order, then the average (a
 * power of two's reciprocal multiplies to the same bits as the division).
 * The staged and the in-place reductions share it, so both give the same
 * bits. */
static void average_block(float *acc, const float *const *src, uint32_t world, size_t b,
                          size_t n)
{
    const float *s0 = src[0] + b, *s1 = src[1] + b;
    if (world == 2) {
        for (size_t i = 0; i < n; i++)
            acc[i] = (s0[i] + s1[i]) * 0.5f;
        return;
    }
    for (size_t i = 0; i < n; i++)
        acc[i] = s0[i] + s1[i];
    for (uint32_t r = 2; r < world; r++) {
        const float *s = src[r] + b;
        for (size_t i = 0; i < n; i++)
            acc[i] += s[i];
    }
    const float divisor = (float)world, scale = 1.0f / divisor;
    if (is_power_of_two(world))
        for (size_t i = 0; i < n; i++)
            acc[i] *= scale;
    else
        for (size_t i = 0; i < n; i++)
            acc[i] /= divisor;
}

/* The average of floats [lo, hi) (average_block), written to both
 * `staged_out` (which may be one of the sources: each block is read fully
 * before it is written) and `user_out`. */
static void reduce_share(float *staged_out, float *user_out, const float *const *src,
                         uint32_t world, size_t lo, size_t hi)
{
    float acc[REDUCE_BLOCK];
    for (size_t b = lo; b < hi; b += REDUCE_BLOCK) {
        size_t n = min_size(REDUCE_BLOCK, hi - b);
        average_block(acc, src, world, b, n);
        memcpy(staged_out + b, acc, n * sizeof(float));
        memcpy(user_out + b, acc, n * sizeof(float));
    }
}

/* dst[i] = v[i] for n floats, bypassing the cache when `stream`. */
static void store_block(float *dst, const float *v, size_t n, int stream)
{
#if defined(__SSE2__)
    if (stream) {
        size_t i = 0;
        for (; i < n && ((uintptr_t)(dst + i) & 15u); i++)
            dst[i] = v[i];
        for (; i + 16 <= n; i += 16) {
            _mm_stream_ps(dst + i, _mm_loadu_ps(v + i));
            _mm_stream_ps(dst + i + 4, _mm_loadu_ps(v + i + 4));
            _mm_stream_ps(dst + i + 8, _mm_loadu_ps(v + i + 8));
            _mm_stream_ps(dst + i + 12, _mm_loadu_ps(v + i + 12));
        }
        for (; i < n; i++)
            dst[i] = v[i];
        return;
    }
#else
    (void)stream;
#endif
    memcpy(dst, v, n * sizeof(float));
}

#if defined(__SSE2__)
/* Two members, the common case, in one pass: a[i] = b[i] = (a[i] + b[i])
 * * 0.5 (the same bits as the division by 2). Returns 0 when the buffers'
 * alignments differ (they do not in one segment: pages plus one offset). */
static int reduce_pair(float *a, float *b, size_t lo, size_t hi, int stream)
{
    if (((uintptr_t)a ^ (uintptr_t)b) & 15u)
        return 0;
    size_t i = lo;
    for (; i < hi && ((uintptr_t)(a + i) & 15u); i++)
        a[i] = b[i] = (a[i] + b[i]) * 0.5f;
    const __m128 half = _mm_set1_ps(0.5f);
    for (; i + 8 <= hi; i += 8) {
        __m128 v0 = _mm_mul_ps(_mm_add_ps(_mm_load_ps(a + i), _mm_load_ps(b + i)), half);
        __m128 v1 = _mm_mul_ps(_mm_add_ps(_mm_load_ps(a + i + 4), _mm_load_ps(b + i + 4)), half);
        if (stream) {
            _mm_stream_ps(a + i, v0);
            _mm_stream_ps(a + i + 4, v1);
            _mm_stream_ps(b + i, v0);
            _mm_stream_ps(b + i + 4, v1);
        } else {
            _mm_store_ps(a + i, v0);
            _mm_store_ps(a + i + 4, v1);
            _mm_store_ps(b + i, v0);
            _mm_store_ps(b + i + 4, v1);
        }
    }
    for (; i < hi; i++)
        a[i] = b[i] = (a[i] + b[i]) * 0.5f;
    if (stream)
        _mm_sfence(); /* the streamed stores before the "done" signal */
    return 1;
}
#endif

/* The in-place reduction of floats [lo, hi) of every member's buffer
 * bufs[0..world): their average (average_block), written back to every
 * buffer. */
static void reduce_in_place(float *const *bufs, uint32_t world, size_t lo, size_t hi,
                            int stream)
{
#if defined(__SSE2__)
    if (world == 2 && reduce_pair(bufs[0], bufs[1], lo, hi, stream))
        return;
#endif
    float acc[REDUCE_BLOCK];
    for (size_t b = lo; b < hi; b += REDUCE_BLOCK) {
        size_t n = min_size(REDUCE_BLOCK, hi - b);
        average_block(acc, (const float *const *)bufs, world, b, n);
        for (uint32_t r = 0; r < world; r++)
            store_block(bufs[r] + b, acc, n, stream);
    }
#if defined(__SSE2__)
    if (stream)
        _mm_sfence(); /* the streamed stores before the "done" signal */
#endif
}

static loom_error *check_capacity(const shm_member *m, const char *op, size_t bytes)
{
    if (bytes > m->header->max_buffer_bytes)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "%s: %zu bytes exceed shm segment '%s' capacity of %llu "
                        "bytes per buffer (set when the coordinator created it)",
                        op, bytes, m->segment_name,
                        (unsigned long long)m->header->max_buffer_bytes);
    return NULL;
}

/* Before writing staging half k % 2: every peer has finished chunk k-2. */
static loom_error *wait_half_free(shm_member *m, uint64_t k, uint64_t deadline_ns,
                                  const char *op)
{
    if (k == 0)
        return NULL;
    return shm_wait_all_steps(m, (uint32_t)(2 * k - 1), deadline_ns, op);
}

/* Where `buf` lies in this member's gradient buffer when the generation
 * reduces in place: 1 + its offset in floats; 0 otherwise. */
static uint64_t in_place_placement(const shm_member *m, const float *buf, size_t count)
{
    if (m->in_place_bytes == 0)
        return 0;
    const float *region = shm_gradient_region(m->header, m->slot);
    size_t floats = (size_t)(m->in_place_bytes / sizeof(float));
    if (buf < region || buf >= region + floats || count > floats - (size_t)(buf - region))
        return 0;
    return 1 + (uint64_t)(buf - region);
}

/* Every member must have put the same buffer in the same place; a member
 * reducing elsewhere would neither read nor write what the others expect. */
static loom_error *check_placements(shm_member *m, uint64_t mine, const char *op)
{
    for (uint32_t r = 0; r < m->base.world_size; r++) {
        uint32_t peer = m->members[r];
        uint64_t theirs = atomic_load(&shm_slots(m->header)[peer].placement);
        if (theirs != mine)
            return loom_err(LOOM_ERR_INTERNAL,
                            "%s: slot %u reduces its buffer %s%llu but slot %u %s%llu: "
                            "members must all reduce their gradient buffers in place at "
                            "the same offset, or all reduce other buffers",
                            op, m->slot, mine ? "in place at float " : "staged, code ",
                            (unsigned long long)(mine ? mine - 1 : 0), peer,
                            theirs ? "in place at float " : "staged, code ",
                            (unsigned long long)(theirs ? theirs - 1 : 0));
    }
    return NULL;
}

static loom_error *allreduce_in_place(shm_member *m, uint64_t placement, size_t count,
                                      uint64_t deadline_ns)
{
    const char *op = "allreduce";
    uint32_t world = m->base.world_size, rank = m->base.rank;
    uint64_t k = m->chunk++;
    uint32_t ready = (uint32_t)(2 * k + 1), done = ready + 1;
    atomic_store(&m->self->placement, placement);
    shm_signal_step(m, ready); /* publishes the buffer and the placement */
    loom_error *err = shm_wait_all_steps(m, ready, deadline_ns, op);
    if (!err)
        err = check_placements(m, placement, op);
    if (err)
        return err;
    float *bufs[COMM_SHM_MAX_RANKS];
    for (uint32_t r = 0; r < world; r++)
        bufs[r] = shm_gradient_region(m->header, m->members[r]) + (placement - 1);
    size_t lo, hi;
    share_of(count, world, rank, &lo, &hi);
    /* Streamed when the buffers would not stay in the last-level cache. */
    uint64_t touched = (uint64_t)count * sizeof(float) * world;
    reduce_in_place(bufs, world, lo, hi, touched >= m->header->stream_min_bytes);
    shm_signal_step(m, done);
    if ((err = shm_wait_all_steps(m, done, deadline_ns, op)) != NULL)
        return err;
    return shm_check_peers_stayed(m, op);
}

loom_error *shm_allreduce_avg_f32(comm *c, float *buf, size_t count,
                                  uint64_t deadline_ns)
{
    shm_member *m = (shm_member *)c;
    shm_header *h = m->header;
    const char *op = "allreduce";
    loom_error *err = check_capacity(m, op, count * sizeof(float));
    if (err)
        return err;
    uint32_t world = m->base.world_size, rank = m->base.rank;
    if (world == 1 || count == 0)
        return NULL; /* the average of one buffer is itself */
    uint64_t placement = in_place_placement(m, buf, count);
    if (placement)
        return allreduce_in_place(m, placement, count, deadline_ns);

    const float *src[COMM_SHM_MAX_RANKS];
    size_t chunk_floats = h->staging_bytes / 2 / sizeof(float);
    for (size_t off = 0; off < count; off += chunk_floats) {
        size_t len = min_size(chunk_floats, count - off);
        uint64_t k = m->chunk++;
        uint32_t half = (uint32_t)(k & 1);
        uint32_t staged = (uint32_t)(2 * k + 1), reduced = staged + 1;

        if ((err = wait_half_free(m, k, deadline_ns, op)) != NULL)
            return err;
        atomic_store(&m->self->placement, 0);
        /* Peers read every share of my staging but mine, which only I
         * reduce, straight from my buffer. */
        float *mine = shm_staging(h, m->slot, half);
        size_t lo, hi;
        share_of(len, world, rank, &lo, &hi);
        memcpy(mine, buf + off, lo * sizeof(float));
        memcpy(mine + hi, buf + off + hi, (len - hi) * sizeof(float));
        shm_signal_step(m, staged);
        if ((err = shm_wait_all_steps(m, staged, deadline_ns, op)) != NULL ||
            (err = check_placements(m, 0, op)) != NULL)
            return err;

        for (uint32_t r = 0; r < world; r++)
            src[r] = r == rank ? buf + off : shm_staging(h, m->members[r], half);
        reduce_share(mine, buf + off, src, world, lo, hi);
        shm_signal_step(m, reduced);
        if ((err = shm_wait_all_steps(m, reduced, deadline_ns, op)) != NULL)
            return err;

        for (uint32_t r = 0; r < world; r++) {
            if (r == rank)
                continue;
            share_of(len, world, r, &lo, &hi);
            memcpy(buf + off + lo, src[r] + lo, (hi - lo) * sizeof(float));
        }
    }
    return shm_check_peers_stayed(m, op);
}

loom_error *shm_broadcast(comm *c, void *buf, size_t bytes, uint32_t root,
                          uint64_t deadline_ns)
{
    shm_member *m = (shm_member *)c;
    shm_header *h = m->header;
    const char *op = "broadcast";
    loom_error *err = check_capacity(m, op, bytes);
    if (err)
        return err;
    if (m->base.world_size == 1 || bytes == 0)
        return NULL;

    uint32_t root_slot = m->members[root];
    size_t chunk_bytes = h->staging_bytes / 2;
    char *data = buf;
    for (size_t off = 0; off < bytes; off += chunk_bytes) {
        size_t len = min_size(chunk_bytes, bytes - off);
        uint64_t k = m->chunk++;
        uint32_t half = (uint32_t)(k & 1);
        uint32_t staged = (uint32_t)(2 * k + 1), done = staged + 1;
        void *root_staging = shm_staging(h, root_slot, half);

        if (m->base.rank == root) {
            if ((err = wait_half_free(m, k, deadline_ns, op)) != NULL)
                return err;
            memcpy(root_staging, data + off, len);
            shm_signal_step(m, done); /* the root reads nothing back */
        } else {
            shm_signal_step(m, staged);
            if ((err = shm_wait_step(m, root_slot, staged, deadline_ns, op)) != NULL)
                return err;
            memcpy(data + off, root_staging, len);
            shm_signal_step(m, done);
        }
    }
    return shm_check_peers_stayed(m, op);
}

loom_error *shm_barrier(comm *c, uint64_t deadline_ns)
{
    shm_member *m = (shm_member *)c;
    if (m->base.world_size == 1)
        return NULL;
    uint64_t k = m->chunk++;
    uint32_t arrived = (uint32_t)(2 * k + 1);
    shm_signal_step(m, arrived);
    loom_error *err = shm_wait_all_steps(m, arrived, deadline_ns, "barrier");
    if (err)
        return err;
    shm_signal_step(m, arrived + 1);
    return NULL;
}
