/*
 * algorithms/tpe/tpe_model.c - TPE's indexes, estimators and candidate
 * scoring (see tpe.h).
 */
#include "tpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRIOR_MU 0.5
#define PRIOR_SIGMA 1.0
/* 1 / the prior's mass in [0, 1]: 1 / (Phi(0.5) - Phi(-0.5)). */
#define PRIOR_SCALE 2.6114622353
/* Kernels farther than this many widths are left out of a density: each
 * adds under 0.2% of its peak, and the scores only rank candidates. */
#define KERNEL_REACH 3.5

static double loss_of(const loom_search_instance *inst, uint32_t i)
{
    return search_loss(inst->history.points[i].value, inst->maximize);
}

/* The kernel's density (without the 1/sqrt(2 pi) every kernel shares). */
static double kernel(double x, double mu, double sigma)
{
    double z = (x - mu) / sigma;
    return exp(-0.5 * z * z) / sigma;
}

/* 1 / the mass of a kernel inside [0, 1]: kernels are truncated to the
 * cube, so one near an end is taller there (as a truncated normal). */
static double truncation(double mu, double sigma)
{
    double mass = 0.5 * (erf((1 - mu) / (sigma * M_SQRT2)) - erf(-mu / (sigma * M_SQRT2)));
    return 1.0 / fmax(mass, 1e-12);
}

/* A kernel's width: the larger gap to its neighbours, where the prior's
 * centre counts as one and the interval's ends do not (a point at an end
 * takes the gap on its inner side), floored as the points grow denser. */
static double kernel_width(double mu, const double *left, const double *right,
                           double floor_sigma)
{
    double lo = left ? *left : -INFINITY, hi = right ? *right : INFINITY;
    if (PRIOR_MU < mu && PRIOR_MU > lo)
        lo = PRIOR_MU;
    if (PRIOR_MU > mu && PRIOR_MU < hi)
        hi = PRIOR_MU;
    double gap_left = isfinite(lo) ? mu - lo : 0, gap_right = isfinite(hi) ? hi - mu : 0;
    double sigma = fmax(gap_left, gap_right);
    if (sigma <= 0)
        sigma = 1.0; /* alone: as wide as the prior */
    return fmin(fmax(sigma, floor_sigma), 1.0);
}

int tpe_model_init(loom_search_instance *inst)
{
    for (uint32_t d = 0; d < inst->space.count; d++) {
        tpe_dim *dim = &inst->dims[d];
        uint64_t levels = search_param_levels(&inst->space.params[d]);
        if (levels && levels <= TPE_MAX_CATEGORIES) {
            dim->categories = (uint32_t)levels;
            dim->count_all = calloc(3 * levels, sizeof(double));
            if (!dim->count_all)
                return -1;
            dim->p_good = dim->count_all + levels;
            dim->p_bad = dim->p_good + levels;
        } else {
            dim->grid = calloc(TPE_GRID_BINS + 1, sizeof(double));
            if (!dim->grid)
                return -1;
        }
    }
    return 0;
}

void tpe_model_free(loom_search_instance *inst)
{
    for (uint32_t d = 0; inst->dims && d < inst->space.count; d++) {
        free(inst->dims[d].good.mu);
        free(inst->dims[d].grid);
        free(inst->dims[d].count_all);
    }
}

static int grow_indexes(loom_search_instance *inst, uint32_t history_index)
{
    uint32_t dim = inst->space.count;
    if (history_index >= inst->width_cap) {
        uint32_t cap = inst->width_cap ? 2 * inst->width_cap : 64;
        while (cap <= history_index)
            cap *= 2;
        double *w = realloc(inst->width, 2 * (size_t)cap * dim * sizeof *w);
        if (!w)
            return -1;
        inst->width = w;
        inst->width_cap = cap;
    }
    if (inst->scored < inst->scored_cap)
        return 0;
    uint32_t cap = inst->scored_cap ? 2 * inst->scored_cap : 64;
    uint32_t *by_loss = realloc(inst->by_loss, cap * sizeof *by_loss);
    if (!by_loss)
        return -1;
    inst->by_loss = by_loss;
    for (uint32_t d = 0; d < dim; d++) {
        uint32_t *c = realloc(inst->by_coord[d], cap * sizeof *c);
        if (!c)
            return -1;
        inst->by_coord[d] = c;
    }
    inst->scored_cap = cap;
    return 0;
}

/* Inserts `item` with key `value` into a sorted index; returns where. */
static uint32_t insert_sorted(uint32_t *index, uint32_t n, uint32_t item, double value,
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
    return lo;
}

/* Adds a kernel to a dimension's summed-density table, over its reach. */
static void grid_add(double *grid, double mu, double sigma, double scale)
{
    double reach = KERNEL_REACH * sigma;
    long lo = (long)floor((mu - reach) * TPE_GRID_BINS), hi = (long)ceil((mu + reach) * TPE_GRID_BINS);
    lo = lo < 0 ? 0 : lo;
    hi = hi > TPE_GRID_BINS ? TPE_GRID_BINS : hi;
    for (long b = lo; b <= hi; b++)
        grid[b] += scale * kernel((double)b / TPE_GRID_BINS, mu, sigma);
}

static double grid_at(const double *grid, double x)
{
    double pos = x * TPE_GRID_BINS;
    long b = (long)pos;
    if (b >= TPE_GRID_BINS)
        return grid[TPE_GRID_BINS];
    double f = pos - (double)b;
    return grid[b] * (1 - f) + grid[b + 1] * f;
}

int tpe_index_add(loom_search_instance *inst, uint32_t i)
{
    if (!inst->history.points[i].has_value)
        return 0;
    if (grow_indexes(inst, i) < 0)
        return -1;
    insert_sorted(inst->by_loss, inst->scored, i, loss_of(inst, i), inst, -1);
    const double *u = search_history_u(&inst->history, i);
    double floor_sigma = 1.0 / fmin(100.0, (double)inst->scored + 2.0);
    for (uint32_t d = 0; d < inst->space.count; d++) {
        uint32_t *order = inst->by_coord[d];
        uint32_t at = insert_sorted(order, inst->scored, i, u[d], inst, (int)d);
        tpe_dim *dim = &inst->dims[d];
        if (dim->categories) {
            uint32_t k = (uint32_t)(u[d] * dim->categories);
            dim->count_all[k < dim->categories ? k : dim->categories - 1] += 1;
            continue;
        }
        const double *left = at ? search_history_u(&inst->history, order[at - 1]) + d : NULL;
        const double *right =
            at < inst->scored ? search_history_u(&inst->history, order[at + 1]) + d : NULL;
        double sigma = kernel_width(u[d], left, right, floor_sigma);
        double *slot = inst->width + 2 * ((size_t)i * inst->space.count + d);
        slot[0] = sigma;
        slot[1] = truncation(u[d], sigma);
        grid_add(dim->grid, u[d], sigma, slot[1]);
    }
    inst->scored++;
    return 0;
}

int tpe_index_rebuild(loom_search_instance *inst)
{
    inst->scored = 0;
    for (uint32_t d = 0; d < inst->space.count; d++) {
        tpe_dim *dim = &inst->dims[d];
        if (dim->grid)
            memset(dim->grid, 0, (TPE_GRID_BINS + 1) * sizeof *dim->grid);
        if (dim->count_all)
            memset(dim->count_all, 0, dim->categories * sizeof *dim->count_all);
    }
    for (uint32_t i = 0; i < inst->history.count; i++)
        if (tpe_index_add(inst, i) < 0)
            return -1;
    return 0;
}

/* A good point's weight by its rank r (0: the best) among n: (n - r)^2.
 * The good set stays the best GoodRatio of the history, but inside it the
 * best points draw most candidates and count most in l(x); with equal
 * weights a quarter of the history spread l too thin to exploit (Hartmann-6,
 * 50 trials, median of seeds 1-21: -2.60 equal, -2.83 ranked). */
static double rank_weight(uint32_t r, uint32_t n)
{
    double k = (double)(n - r);
    return k * k;
}

/* The good set's kernels in one dimension: sorted, widths from the gaps
 * between them (the interval's ends count as neighbours), each with its
 * rank weight (the weights sum to n, so the prior keeps 1 / (n + 1)). */
static int build_good(tpe_parzen *p, const loom_search_instance *inst, uint32_t d, uint32_t n)
{
    if (n > p->cap) {
        free(p->mu);
        p->mu = malloc(4 * (size_t)n * sizeof *p->mu);
        if (!p->mu)
            return -1;
        p->cap = n;
    }
    p->sigma = p->mu + p->cap;
    p->scale = p->sigma + p->cap;
    p->weight = p->scale + p->cap;
    p->n = n;
    double wsum = 0;
    for (uint32_t r = 0; r < n; r++)
        wsum += rank_weight(r, n);
    for (uint32_t r = 0; r < n; r++) { /* insertion sort: n is at most GoodMax */
        double x = search_history_u(&inst->history, inst->by_loss[r])[d];
        double w = n * rank_weight(r, n) / wsum;
        uint32_t j = r;
        for (; j > 0 && p->mu[j - 1] > x; j--) {
            p->mu[j] = p->mu[j - 1];
            p->weight[j] = p->weight[j - 1];
        }
        p->mu[j] = x;
        p->weight[j] = w;
    }
    double floor_sigma = 1.0 / fmin(100.0, (double)n + 1.0);
    for (uint32_t j = 0; j < n; j++)
    {
        p->sigma[j] = kernel_width(p->mu[j], j ? p->mu + j - 1 : NULL,
                                   j + 1 < n ? p->mu + j + 1 : NULL, floor_sigma);
        p->scale[j] = truncation(p->mu[j], p->sigma[j]);
    }
    return 0;
}

static double parzen_sample(const tpe_parzen *p, search_rng *rng)
{
    double pick = search_rng_uniform(rng) * (p->n + 1.0), acc = 0;
    uint64_t k = p->n;
    for (uint32_t j = 0; j < p->n; j++) {
        acc += p->weight[j];
        if (pick < acc) {
            k = j;
            break;
        }
    }
    double mu = k < p->n ? p->mu[k] : PRIOR_MU;
    double sigma = k < p->n ? p->sigma[k] : PRIOR_SIGMA;
    for (int tries = 0; tries < 32; tries++) {
        double x = mu + sigma * search_rng_normal(rng);
        if (x >= 0 && x < 1)
            return x;
    }
    return search_rng_uniform(rng);
}

/* log l(x) - log g(x) in continuous dimension d. */
static double continuous_score(const loom_search_instance *inst, uint32_t d, double x,
                               uint32_t n_good, uint32_t n_bad)
{
    const tpe_dim *dim = &inst->dims[d];
    double prior = PRIOR_SCALE * kernel(x, PRIOR_MU, PRIOR_SIGMA), l = prior, good_fixed = 0;
    for (uint32_t j = 0; j < dim->good.n; j++)
        if (fabs(x - dim->good.mu[j]) < KERNEL_REACH * dim->good.sigma[j])
            l += dim->good.weight[j] * dim->good.scale[j] * kernel(x, dim->good.mu[j], dim->good.sigma[j]);
    for (uint32_t r = 0; r < n_good; r++) {
        uint32_t i = inst->by_loss[r];
        const double *slot = inst->width + 2 * ((size_t)i * inst->space.count + d);
        double mu = search_history_u(&inst->history, i)[d];
        if (fabs(x - mu) < KERNEL_REACH * slot[0])
            good_fixed += slot[1] * kernel(x, mu, slot[0]);
    }
    /* The table holds every point; interpolation can leave a hair below
     * the good points' part, so the bad density keeps a floor. */
    double g = grid_at(dim->grid, x) - good_fixed;
    g = fmax(g, 1e-3 * prior) + prior;
    return log(l / (n_good + 1.0)) - log(g / (n_bad + 1.0));
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

/* Splits at the GoodRatio quantile and builds the good estimators and the
 * categorical probabilities. */
static int build(loom_search_instance *inst, uint32_t *n_good_out)
{
    uint32_t n = inst->scored;
    double want = ceil(inst->good_ratio * n);
    uint32_t n_good = (uint32_t)fmin(fmax(want, 1), (double)inst->good_max);
    if (n_good >= n)
        n_good = n - 1;
    *n_good_out = n_good;
    for (uint32_t d = 0; d < inst->space.count; d++) {
        tpe_dim *dim = &inst->dims[d];
        if (!dim->categories) {
            if (build_good(&dim->good, inst, d, n_good) < 0)
                return -1;
            continue;
        }
        uint32_t c = dim->categories;
        for (uint32_t k = 0; k < c; k++)
            dim->p_good[k] = 1.0 / c; /* the prior */
        for (uint32_t r = 0; r < n_good; r++) {
            uint32_t k = (uint32_t)(search_history_u(&inst->history, inst->by_loss[r])[d] * c);
            dim->p_good[k < c ? k : c - 1] += 1;
        }
        for (uint32_t k = 0; k < c; k++) {
            double bad = dim->count_all[k] - (dim->p_good[k] - 1.0 / c) + 1.0 / c;
            dim->p_bad[k] = log(bad / (n - n_good + 1.0));
            dim->p_good[k] = log(dim->p_good[k] / (n_good + 1.0));
        }
    }
    return 0;
}

int tpe_model_pick(loom_search_instance *inst)
{
    uint32_t n_good;
    if (build(inst, &n_good) < 0)
        return -1;
    uint32_t n_bad = inst->scored - n_good;
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
                score += continuous_score(inst, d, x, n_good, n_bad);
            }
        }
        if (score > best) {
            best = score;
            memcpy(inst->best_u, inst->u, inst->space.count * sizeof *inst->u);
        }
    }
    return 0;
}
