/*
 * algorithms/tpe/tpe_model.c - TPE's indexes, Parzen estimators and
 * candidate scoring (see tpe.h).
 */
#include "tpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRIOR_MU 0.5
#define PRIOR_SIGMA 1.0
/* Kernels farther than this many widths are left out of a density: each
 * adds under 0.2% of its peak, and the scores only rank candidates. */
#define KERNEL_REACH 3.5

static double loss_of(const loom_search_instance *inst, uint32_t i)
{
    return search_loss(inst->history.points[i].value, inst->maximize);
}

static int grow_indexes(loom_search_instance *inst)
{
    if (inst->scored < inst->scored_cap)
        return 0;
    uint32_t cap = inst->scored_cap ? 2 * inst->scored_cap : 64;
    uint32_t *by_loss = realloc(inst->by_loss, cap * sizeof *by_loss);
    if (!by_loss)
        return -1;
    inst->by_loss = by_loss;
    for (uint32_t d = 0; d < inst->space.count; d++) {
        uint32_t *c = realloc(inst->by_coord[d], cap * sizeof *c);
        if (!c)
            return -1;
        inst->by_coord[d] = c;
    }
    inst->scored_cap = cap;
    return 0;
}

/* Inserts `value` into a sorted index by binary search and a shift. */
static void insert_sorted(uint32_t *index, uint32_t n, uint32_t item, double value,
                          const loom_search_instance *inst, int dim)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        double v = dim < 0 ? loss_of(inst, index[mid])
                           : search_history_u(&inst->history, index[mid])[dim];
        if (v <= value)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(index + lo + 1, index + lo, (n - lo) * sizeof *index);
    index[lo] = item;
}

int tpe_index_add(loom_search_instance *inst, uint32_t i)
{
    if (!inst->history.points[i].has_value)
        return 0;
    if (grow_indexes(inst) < 0)
        return -1;
    insert_sorted(inst->by_loss, inst->scored, i, loss_of(inst, i), inst, -1);
    const double *u = search_history_u(&inst->history, i);
    for (uint32_t d = 0; d < inst->space.count; d++)
        insert_sorted(inst->by_coord[d], inst->scored, i, u[d], inst, (int)d);
    inst->scored++;
    return 0;
}

int tpe_index_rebuild(loom_search_instance *inst)
{
    inst->scored = 0;
    for (uint32_t i = 0; i < inst->history.count; i++)
        if (tpe_index_add(inst, i) < 0)
            return -1;
    return 0;
}

static void parzen_free(tpe_parzen *p)
{
    free(p->mu);
    memset(p, 0, sizeof *p);
}

void tpe_model_free(loom_search_instance *inst)
{
    for (uint32_t d = 0; inst->dims && d < inst->space.count; d++) {
        parzen_free(&inst->dims[d].good);
        parzen_free(&inst->dims[d].bad);
        free(inst->dims[d].p_good);
    }
}

static int parzen_reserve(tpe_parzen *p, uint32_t n)
{
    free(p->mu);
    p->mu = malloc(4 * (size_t)(n ? n : 1) * sizeof *p->mu);
    if (!p->mu)
        return -1;
    p->sigma = p->mu + n;
    p->max_left = p->sigma + n;
    p->max_right = p->max_left + n;
    p->n = 0;
    return 0;
}

/* Widths: the larger gap to a neighbour (the interval's ends count as
 * neighbours), clipped below as the number of points grows. */
static void parzen_finish(tpe_parzen *p)
{
    uint32_t n = p->n;
    double floor_sigma = 1.0 / fmin(100.0, (double)n + 1.0);
    for (uint32_t i = 0; i < n; i++) {
        double left = p->mu[i] - (i ? p->mu[i - 1] : 0.0);
        double right = (i + 1 < n ? p->mu[i + 1] : 1.0) - p->mu[i];
        double s = fmax(left, right);
        p->sigma[i] = fmin(fmax(s, floor_sigma), 1.0);
    }
    for (uint32_t i = 0; i < n; i++)
        p->max_left[i] = fmax(p->sigma[i], i ? p->max_left[i - 1] : 0);
    for (uint32_t i = n; i-- > 0;)
        p->max_right[i] = fmax(p->sigma[i], i + 1 < n ? p->max_right[i + 1] : 0);
}

static double kernel(double x, double mu, double sigma)
{
    double z = (x - mu) / sigma;
    return exp(-0.5 * z * z) / sigma;
}

/* log of the mixture density (unnormalised by sqrt(2 pi), which cancels in
 * l/g): the kernels near x and the prior, weighted equally. */
static double parzen_log_density(const tpe_parzen *p, double x)
{
    double sum = kernel(x, PRIOR_MU, PRIOR_SIGMA);
    uint32_t lo = 0, hi = p->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (p->mu[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t j = lo; j < p->n; j++) {
        if (p->mu[j] - x > KERNEL_REACH * p->max_right[j])
            break;
        sum += kernel(x, p->mu[j], p->sigma[j]);
    }
    for (uint32_t j = lo; j-- > 0;) {
        if (x - p->mu[j] > KERNEL_REACH * p->max_left[j])
            break;
        sum += kernel(x, p->mu[j], p->sigma[j]);
    }
    return log(sum / (p->n + 1.0) + 1e-300);
}

static double parzen_sample(const tpe_parzen *p, search_rng *rng)
{
    uint64_t k = search_rng_below(rng, p->n + 1);
    double mu = k < p->n ? p->mu[k] : PRIOR_MU;
    double sigma = k < p->n ? p->sigma[k] : PRIOR_SIGMA;
    for (int tries = 0; tries < 32; tries++) {
        double x = mu + sigma * search_rng_normal(rng);
        if (x >= 0 && x < 1)
            return x;
    }
    return search_rng_uniform(rng);
}

/* Splits the scored points into good and bad and builds each dimension's
 * estimators. */
static int build(loom_search_instance *inst)
{
    uint32_t n = inst->scored;
    double want = ceil(inst->good_ratio * n);
    uint32_t n_good = (uint32_t)fmin(fmax(want, 1), (double)inst->good_max);
    if (n_good >= n)
        n_good = n - 1;
    memset(inst->is_good, 0, inst->history.count);
    for (uint32_t r = 0; r < n_good; r++)
        inst->is_good[inst->by_loss[r]] = 1;
    for (uint32_t d = 0; d < inst->space.count; d++) {
        tpe_dim *dim = &inst->dims[d];
        const uint32_t *order = inst->by_coord[d];
        if (dim->categories) {
            uint32_t c = dim->categories;
            for (uint32_t k = 0; k < c; k++)
                dim->p_good[k] = dim->p_bad[k] = 1.0 / c; /* the prior */
            for (uint32_t j = 0; j < n; j++) {
                uint32_t i = order[j];
                uint32_t k = (uint32_t)(search_history_u(&inst->history, i)[d] * c);
                k = k < c ? k : c - 1;
                (inst->is_good[i] ? dim->p_good : dim->p_bad)[k] += 1;
            }
            for (uint32_t k = 0; k < c; k++) {
                dim->p_good[k] = log(dim->p_good[k] / (n_good + 1.0));
                dim->p_bad[k] = log(dim->p_bad[k] / (n - n_good + 1.0));
            }
            continue;
        }
        if (parzen_reserve(&dim->good, n_good) < 0 || parzen_reserve(&dim->bad, n - n_good) < 0)
            return -1;
        for (uint32_t j = 0; j < n; j++) {
            uint32_t i = order[j];
            tpe_parzen *p = inst->is_good[i] ? &dim->good : &dim->bad;
            p->mu[p->n++] = search_history_u(&inst->history, i)[d];
        }
        parzen_finish(&dim->good);
        parzen_finish(&dim->bad);
    }
    return 0;
}

static uint32_t sample_category(const double *log_p, uint32_t c, search_rng *rng)
{
    double r = search_rng_uniform(rng), acc = 0;
    for (uint32_t k = 0; k < c; k++) {
        acc += exp(log_p[k]);
        if (r < acc)
            return k;
    }
    return c - 1;
}

int tpe_model_pick(loom_search_instance *inst)
{
    uint8_t *flags = realloc(inst->is_good, inst->history.count ? inst->history.count : 1);
    if (!flags)
        return -1;
    inst->is_good = flags;
    if (build(inst) < 0)
        return -1;
    double best = -INFINITY;
    for (int64_t c = 0; c < inst->candidates; c++) {
        double score = 0;
        for (uint32_t d = 0; d < inst->space.count; d++) {
            tpe_dim *dim = &inst->dims[d];
            if (dim->categories) {
                uint32_t k = sample_category(dim->p_good, dim->categories, &inst->rng);
                inst->u[d] = (k + 0.5) / dim->categories;
                score += dim->p_good[k] - dim->p_bad[k];
            } else {
                double x = parzen_sample(&dim->good, &inst->rng);
                inst->u[d] = x;
                score += parzen_log_density(&dim->good, x) - parzen_log_density(&dim->bad, x);
            }
        }
        if (score > best) {
            best = score;
            memcpy(inst->best_u, inst->u, inst->space.count * sizeof *inst->u);
        }
    }
    return 0;
}
