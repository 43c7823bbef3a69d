/*
 * algorithms/bayesian/bayes_gp.c - the Gaussian process (see bayes_gp.h).
 */
#include "bayes_gp.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SQRT5 2.23606797749979

/* Bounds of the log hyperparameters: length scales, signal, noise. */
static const double LOG_LEN_MIN = -4.6, LOG_LEN_MAX = 2.3;  /* 0.01 .. 10 */
static const double LOG_SIG_MIN = -3.0, LOG_SIG_MAX = 3.0;
static const double LOG_NOISE_MIN = -13.8, LOG_NOISE_MAX = -0.7; /* 1e-6 .. 0.5 */

void bayes_gp_theta_default(double *theta, uint32_t dim)
{
    for (uint32_t d = 0; d < dim; d++)
        theta[d] = log(0.3);
    theta[dim] = 0;
    theta[dim + 1] = log(1e-3);
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void clamp_theta(double *theta, uint32_t dim)
{
    for (uint32_t d = 0; d < dim; d++)
        theta[d] = clamp(theta[d], LOG_LEN_MIN, LOG_LEN_MAX);
    theta[dim] = clamp(theta[dim], LOG_SIG_MIN, LOG_SIG_MAX);
    theta[dim + 1] = clamp(theta[dim + 1], LOG_NOISE_MIN, LOG_NOISE_MAX);
}

static double matern(const double *a, const double *b, const double *theta, uint32_t dim)
{
    double r2 = 0;
    for (uint32_t d = 0; d < dim; d++) {
        double t = (a[d] - b[d]) / exp(theta[d]);
        r2 += t * t;
    }
    double r = sqrt(r2);
    return exp(theta[dim]) * (1 + SQRT5 * r + 5.0 / 3.0 * r2) * exp(-SQRT5 * r);
}

/* Factors K + noise I into gp->chol and solves alpha; returns the log
 * marginal likelihood, or -INFINITY when K is not positive definite. */
static double factor(bayes_gp *gp, const double *theta)
{
    uint32_t n = gp->n, dim = gp->dim;
    double noise = exp(theta[dim + 1]);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j <= i; j++) {
            double k = matern(gp->x + (size_t)i * dim, gp->x + (size_t)j * dim, theta, dim);
            gp->chol[(size_t)i * n + j] = k + (i == j ? noise + 1e-9 : 0);
        }
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, gp->chol, (lapack_int)n) != 0)
        return -INFINITY;
    memcpy(gp->alpha, gp->y, n * sizeof *gp->alpha);
    if (LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, 1, gp->chol, (lapack_int)n,
                       gp->alpha, 1) != 0)
        return -INFINITY;
    double fit = 0, logdet = 0;
    for (uint32_t i = 0; i < n; i++) {
        fit += gp->y[i] * gp->alpha[i];
        logdet += log(gp->chol[(size_t)i * n + i]);
    }
    return -0.5 * fit - logdet - 0.5 * n * log(2 * M_PI);
}

double bayes_gp_lml(bayes_gp *gp, const double *theta)
{
    return factor(gp, theta);
}

/* Pattern search over the log hyperparameters: try a step up and down in
 * each coordinate, keep improvements, halve the step when none helps. */
static double optimise_theta(bayes_gp *gp, double *theta, int max_evals)
{
    uint32_t m = bayes_gp_theta_count(gp->dim);
    double best = factor(gp, theta);
    double step = 1.0;
    for (int evals = 0; step > 0.05 && evals < max_evals;) {
        int improved = 0;
        for (uint32_t k = 0; k < m; k++)
            for (int sign = -1; sign <= 1; sign += 2) {
                double saved = theta[k];
                theta[k] += sign * step;
                clamp_theta(theta, gp->dim);
                double v = factor(gp, theta);
                evals++;
                if (v > best + 1e-9) {
                    best = v;
                    improved = 1;
                    break;
                }
                theta[k] = saved;
            }
        if (!improved)
            step *= 0.5;
    }
    return best;
}

void bayes_gp_free(bayes_gp *gp)
{
    free(gp->y);
    free(gp->chol);
    memset(gp, 0, sizeof *gp);
}

int bayes_gp_fit(bayes_gp *gp, uint32_t dim, uint32_t n, const double *x, const double *y,
                 double *theta, int optimise)
{
    bayes_gp_free(gp);
    gp->dim = dim;
    gp->n = n;
    gp->x = x;
    gp->y = malloc((3 * (size_t)n + 1) * sizeof *gp->y + bayes_gp_theta_count(dim) * sizeof(double));
    gp->chol = malloc(((size_t)n * n + 1) * sizeof *gp->chol);
    if (!gp->y || !gp->chol)
        return -1;
    gp->alpha = gp->y + n;
    gp->work = gp->alpha + n;
    gp->theta = gp->work + n;
    double mean = 0, var = 0;
    for (uint32_t i = 0; i < n; i++)
        mean += y[i];
    mean /= n ? n : 1;
    for (uint32_t i = 0; i < n; i++)
        var += (y[i] - mean) * (y[i] - mean);
    double scale = n > 1 ? sqrt(var / (n - 1)) : 1;
    gp->y_mean = mean;
    gp->y_scale = scale > 1e-12 ? scale : 1;
    for (uint32_t i = 0; i < n; i++)
        gp->y[i] = (y[i] - mean) / gp->y_scale;
    clamp_theta(theta, dim);
    if (optimise)
        optimise_theta(gp, theta, optimise);
    /* The last factorisation may be of a rejected trial: redo the kept one. */
    double lml = factor(gp, theta);
    if (!isfinite(lml)) {
        /* More noise always makes the matrix positive definite. */
        theta[dim + 1] = LOG_NOISE_MAX;
        lml = factor(gp, theta);
    }
    memcpy(gp->theta, theta, bayes_gp_theta_count(dim) * sizeof *theta);
    return isfinite(lml) ? 0 : -1;
}

void bayes_gp_predict(const bayes_gp *gp, const double *x, double *mean, double *var)
{
    uint32_t n = gp->n, dim = gp->dim;
    double *v = gp->work;
    double mu = 0;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = matern(x, gp->x + (size_t)i * dim, gp->theta, dim);
        mu += v[i] * gp->alpha[i];
    }
    /* forward substitution: v = L^-1 k* */
    double vv = 0;
    for (uint32_t i = 0; i < n; i++) {
        const double *row = gp->chol + (size_t)i * n;
        double s = v[i];
        for (uint32_t j = 0; j < i; j++)
            s -= row[j] * v[j];
        v[i] = s / row[i];
        vv += v[i] * v[i];
    }
    double s2 = exp(gp->theta[dim]) - vv;
    *mean = gp->y_mean + gp->y_scale * mu;
    *var = (s2 > 1e-12 ? s2 : 1e-12) * gp->y_scale * gp->y_scale;
}

double bayes_gp_ei(const bayes_gp *gp, const double *x, double best)
{
    double mean, var;
    bayes_gp_predict(gp, x, &mean, &var);
    double sd = sqrt(var);
    double z = (best - mean) / sd;
    double cdf = 0.5 * erfc(-z / M_SQRT2);
    double pdf = exp(-0.5 * z * z) / sqrt(2 * M_PI);
    return (best - mean) * cdf + sd * pdf;
}
