/*
 * tests/unit/search/objectives.h - the standard test functions the search
 * tests and bench/hpo use: Branin (2-D, x1 in [-5, 10], x2 in [0, 15],
 * minimum 0.397887) and Hartmann-6 ([0, 1]^6, minimum -3.32237).
 */
#ifndef LOOM_TEST_OBJECTIVES_H
#define LOOM_TEST_OBJECTIVES_H

#include <math.h>
#include <stdint.h>

static inline double branin(const double *x, uint32_t dim)
{
    (void)dim;
    const double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10,
                 t = 1 / (8 * M_PI);
    double q = x[1] - b * x[0] * x[0] + c * x[0] - r;
    return a * q * q + s * (1 - t) * cos(x[0]) + s;
}

static inline double hartmann6(const double *x, uint32_t dim)
{
    (void)dim;
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double P[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                   {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                   {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                   {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int j = 0; j < 6; j++)
            e += A[i][j] * (x[j] - P[i][j]) * (x[j] - P[i][j]);
        sum += alpha[i] * exp(-e);
    }
    return -sum;
}

#endif
