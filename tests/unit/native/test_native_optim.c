/*
 * test_native_optim.c - SGD (with momentum, Nesterov and weight decay) and
 * Adam updates against values worked out by hand from PyTorch's update
 * rules, and the learning-rate schedules.
 */
#include <math.h>

#include "../../check.h"
#include "backend.h"
#include "errbuf.h"
#include "optim.h"
#include "spec.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-6)

static void test_sgd_momentum(void)
{
    native_backend *be = native_backend_cpu_create();
    native_optimizer_spec spec = {.type = NATIVE_OPT_SGD, .lr = 0.1f, .momentum = 0.9f};
    native_optim o;
    char err[NATIVE_ERR_LEN];
    CHECK(native_optim_init(&o, &spec, be, 2, err, sizeof err) == 0);
    CHECK(o.slot_count == 1);
    CHECK_STR_EQ(o.slot_names[0], "momentum_buffer");
    float p[2] = {1.0f, -2.0f};
    float g[2] = {0.5f, 1.0f};
    /* Step 1: v = g = (0.5, 1); p = (1 - 0.05, -2 - 0.1). */
    native_optim_step(&o, be, p, g, 0.1f);
    CHECK(NEAR(p[0], 0.95) && NEAR(p[1], -2.1));
    CHECK(NEAR(o.slot[0][0], 0.5) && NEAR(o.slot[0][1], 1.0));
    /* Step 2 with g = (0.25, -1): v = (0.45 + 0.25, 0.9 - 1) = (0.7, -0.1);
     * p = (0.95 - 0.07, -2.1 + 0.01). */
    g[0] = 0.25f, g[1] = -1.0f;
    native_optim_step(&o, be, p, g, 0.1f);
    CHECK(NEAR(o.slot[0][0], 0.7) && NEAR(o.slot[0][1], -0.1));
    CHECK(NEAR(p[0], 0.88) && NEAR(p[1], -2.09));
    CHECK(o.step == 2);
    native_optim_free(&o, be);

    /* Plain SGD with weight decay 0.1 and no momentum keeps no state:
     * p = 1 - 0.5 * (2 + 0.1 * 1) = -0.05. */
    spec = (native_optimizer_spec){.type = NATIVE_OPT_SGD, .lr = 0.5f, .weight_decay = 0.1f};
    CHECK(native_optim_init(&o, &spec, be, 1, err, sizeof err) == 0);
    CHECK(o.slot_count == 0);
    float q = 1.0f, h = 2.0f;
    native_optim_step(&o, be, &q, &h, 0.5f);
    CHECK(NEAR(q, -0.05));
    native_optim_free(&o, be);

    /* Nesterov: v = g = 1 at the first step; p -= lr * (g + mu v) = 0.1*1.9. */
    spec = (native_optimizer_spec){.type = NATIVE_OPT_SGD, .lr = 0.1f, .momentum = 0.9f,
                                   .nesterov = 1};
    CHECK(native_optim_init(&o, &spec, be, 1, err, sizeof err) == 0);
    q = 0.0f, h = 1.0f;
    native_optim_step(&o, be, &q, &h, 0.1f);
    CHECK(NEAR(q, -0.19));
    native_optim_free(&o, be);
    be->destroy(be);
}

static void test_adam(void)
{
    native_backend *be = native_backend_cpu_create();
    native_optimizer_spec spec = {.type = NATIVE_OPT_ADAM, .lr = 0.01f, .beta1 = 0.9f,
                                  .beta2 = 0.999f, .eps = 1e-8f};
    native_optim o;
    char err[NATIVE_ERR_LEN];
    CHECK(native_optim_init(&o, &spec, be, 2, err, sizeof err) == 0);
    CHECK(o.slot_count == 2);
    CHECK_STR_EQ(o.slot_names[1], "exp_avg_sq");
    float p[2] = {1.0f, 1.0f};
    float g[2] = {0.5f, -2.0f};
    /* Step 1: bias correction makes m_hat = g and v_hat = g^2, so each
     * parameter moves by lr * sign(g) (minus the eps effect). */
    native_optim_step(&o, be, p, g, 0.01f);
    CHECK(NEAR(o.slot[0][0], 0.05) && NEAR(o.slot[0][1], -0.2));
    /* (1 - beta2) is 0.00099998713 in float: compare relatively. */
    CHECK(fabs(o.slot[1][0] / 0.00025 - 1) < 1e-4 && fabs(o.slot[1][1] / 0.004 - 1) < 1e-4);
    CHECK(NEAR(p[0], 0.99) && NEAR(p[1], 1.01));
    /* Step 2 with g = (0.5, 1): m = (0.045 + 0.05, -0.18 + 0.1) = (0.095, -0.08),
     * v = (0.00024975 + 0.00025, 0.003996 + 0.001) = (0.00049975, 0.004996);
     * m_hat = m / 0.19, v_hat = v / 0.001999. */
    g[1] = 1.0f;
    native_optim_step(&o, be, p, g, 0.01f);
    double m0 = 0.095 / 0.19, v0 = 0.00049975 / (1 - 0.999 * 0.999);
    double m1 = -0.08 / 0.19, v1 = 0.004996 / (1 - 0.999 * 0.999);
    CHECK(fabs(p[0] - (0.99 - 0.01 * m0 / (sqrt(v0) + 1e-8))) < 2e-6);
    CHECK(fabs(p[1] - (1.01 - 0.01 * m1 / (sqrt(v1) + 1e-8))) < 2e-6);
    native_optim_free(&o, be);
    be->destroy(be);
}

static void test_schedules(void)
{
    native_spec spec;
    char err[NATIVE_ERR_LEN];
    const char *step_json =
        "{\"model\": {\"layers\": [{\"type\": \"dense\", \"units\": 2}]},"
        " \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1},"
        " \"lr_schedule\": {\"type\": \"step\", \"step_size\": 2, \"gamma\": 0.5},"
        " \"dataset\": {\"format\": \"idx\"}}";
    CHECK(native_spec_parse(step_json, &spec, err, sizeof err) == 0);
    CHECK(NEAR(native_schedule_lr(&spec, 0, 10, 0, 100), 0.1));
    CHECK(NEAR(native_schedule_lr(&spec, 1, 10, 150, 100), 0.1));
    CHECK(NEAR(native_schedule_lr(&spec, 2, 10, 200, 100), 0.05));
    CHECK(NEAR(native_schedule_lr(&spec, 5, 10, 500, 100), 0.025));
    native_spec_free(&spec);

    const char *cos_json =
        "{\"model\": {\"layers\": [{\"type\": \"dense\", \"units\": 2}]},"
        " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.1},"
        " \"lr_schedule\": {\"type\": \"cosine\", \"min_lr\": 0.02},"
        " \"dataset\": {\"format\": \"idx\"}}";
    CHECK(native_spec_parse(cos_json, &spec, err, sizeof err) == 0);
    CHECK(NEAR(native_schedule_lr(&spec, 0, 4, 0, 10), 0.1));
    CHECK(NEAR(native_schedule_lr(&spec, 2, 4, 20, 10), 0.06)); /* half way */
    CHECK(NEAR(native_schedule_lr(&spec, 4, 4, 40, 10), 0.02));
    native_spec_free(&spec);
}

int main(void)
{
    test_sgd_momentum();
    test_adam();
    test_schedules();
    return CHECK_DONE();
}
