/*
 * tests/unit/search/test_bayes_gp.c - the Gaussian process inside
 * bayesian.so (algorithms/bayesian/bayes_gp.c, compiled in): the posterior
 * interpolates the observed points with a small variance there and a
 * large one far away, fitting the hyperparameters raises the marginal
 * likelihood, and expected improvement is largest where the mean is low or
 * the process is unsure.
 */
#include <math.h>
#include <stdlib.h>

#include "../../check.h"
#include "bayes_gp.h"

static double smooth(double a, double b)
{
    return sin(6 * a) + cos(4 * b) + a * b;
}

int main(void)
{
    enum { N = 25, DIM = 2 };
    double x[N * DIM], y[N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = (i % 5 + 0.5) / 5.0 * 0.8; /* a 5 x 5 grid over [0, 0.8]^2 */
        x[2 * i + 1] = (i / 5 + 0.5) / 5.0 * 0.8;
        y[i] = smooth(x[2 * i], x[2 * i + 1]);
    }
    double theta[DIM + 2];
    bayes_gp_theta_default(theta, DIM);
    bayes_gp gp = {0};
    CHECK(bayes_gp_fit(&gp, DIM, N, x, y, theta, 0) == 0);
    double before = bayes_gp_lml(&gp, theta);
    CHECK(bayes_gp_fit(&gp, DIM, N, x, y, theta, 200) == 0);
    double after = bayes_gp_lml(&gp, theta);
    CHECK_MSG(after >= before, "fitting lowered the likelihood: %g -> %g", before, after);

    double worst = 0, max_var_at_points = 0;
    for (int i = 0; i < N; i++) {
        double mean, var;
        bayes_gp_predict(&gp, x + 2 * i, &mean, &var);
        worst = fmax(worst, fabs(mean - y[i]));
        max_var_at_points = fmax(max_var_at_points, var);
    }
    CHECK_MSG(worst < 0.05, "the posterior misses an observed point by %g", worst);
    /* between the points the smooth function is still well predicted */
    double mean, var;
    bayes_gp_predict(&gp, (double[]){0.3, 0.5}, &mean, &var);
    CHECK_MSG(fabs(mean - smooth(0.3, 0.5)) < 0.15, "between points: %g vs %g", mean,
              smooth(0.3, 0.5));
    double far_mean, far_var;
    bayes_gp_predict(&gp, (double[]){0.99, 0.99}, &far_mean, &far_var);
    CHECK_MSG(far_var > 10 * max_var_at_points, "variance far away %g, at the points %g",
              far_var, max_var_at_points);

    /* EI: zero-ish at a known point that is not the best, larger far away
     * and at the best point's neighbourhood than at a poor known point */
    double best = INFINITY;
    int best_i = 0, worst_i = 0;
    for (int i = 0; i < N; i++) {
        if (y[i] < best)
            best = y[i], best_i = i;
        if (y[i] > y[worst_i])
            worst_i = i;
    }
    double ei_poor = bayes_gp_ei(&gp, x + 2 * worst_i, best);
    double ei_far = bayes_gp_ei(&gp, (double[]){0.99, 0.99}, best);
    CHECK_MSG(ei_poor < 1e-3 && ei_far > ei_poor, "EI at the worst point %g, far away %g",
              ei_poor, ei_far);
    (void)best_i;
    bayes_gp_free(&gp);
    return CHECK_DONE();
}
