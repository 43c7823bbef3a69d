/*
 * algorithms/bayesian/bayes_gp.h - a Gaussian process over the unit cube:
 * a Matérn 5/2 kernel with one length scale per dimension, a signal
 * variance and a noise variance, fitted by maximising the log marginal
 * likelihood (a pattern search over the log hyperparameters), Cholesky
 * through LAPACKE; the posterior mean and variance, and the expected
 * improvement below the best observed value.
 */
#ifndef LOOM_BAYES_GP_H
#define LOOM_BAYES_GP_H

#include <stdint.h>

typedef struct bayes_gp {
    uint32_t dim, n;
    const double *x; /* n x dim, borrowed */
    double *y;       /* standardised targets */
    double y_mean, y_scale;
    /* log hyperparameters: dim length scales, then signal, then noise */
    double *theta;
    double *chol;  /* n x n lower Cholesky factor of K + noise I */
    double *alpha; /* (K + noise I)^-1 y */
    double *work;  /* n */
} bayes_gp;

/* Number of log hyperparameters for dim dimensions. */
static inline uint32_t bayes_gp_theta_count(uint32_t dim)
{
    return dim + 2;
}
/* The starting hyperparameters: length scales 0.3, signal 1, noise 1e-3. */
void bayes_gp_theta_default(double *theta, uint32_t dim);

/* Fits the GP to n points x (n x dim) with raw targets y (to minimise),
 * starting from and updating theta with at most `optimise` likelihood
 * evaluations (0: keep theta). Returns 0, or -1 when out of memory or
 * when no hyperparameters make the kernel matrix positive definite. */
int bayes_gp_fit(bayes_gp *gp, uint32_t dim, uint32_t n, const double *x, const double *y,
                 double *theta, int optimise);
void bayes_gp_free(bayes_gp *gp);

/* Posterior mean and variance (in raw units) at x. */
void bayes_gp_predict(const bayes_gp *gp, const double *x, double *mean, double *var);

/* Expected improvement of x below `best` (raw units). */
double bayes_gp_ei(const bayes_gp *gp, const double *x, double best);

/* The log marginal likelihood at theta (for tests), or -INFINITY. */
double bayes_gp_lml(bayes_gp *gp, const double *theta);

#endif
