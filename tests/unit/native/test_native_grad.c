/*
 * test_native_grad.c - the native adapter's backward passes against finite
 * differences of its forward pass, one small network per layer type (dense,
 * conv2d with stride and padding, max-pool with overlapping windows, relu,
 * dropout, softmax cross-entropy), plus the dropout mask's independence
 * from batch order, and the CPU back end's row-walking im2col/col2im and
 * max-pool against the per-element kernels the CUDA twin runs: same bits.
 * The CPU's sample-by-sample runs through per-sample layers (with their
 * reused buffers) against whole-chunk passes, and a relu run after the
 * max-pool it precedes against the layer order as written.
 */
#include <math.h>
#include <stdlib.h>

#include "../../check.h"
#include "backend.h"
#include "errbuf.h"
#include "kernels.h"
#include "model.h"
#include "spec.h"

#define ROWS 5

typedef struct grad_case {
    native_spec spec;
    native_model *model;
    native_backend *be;
    float *x;
    int32_t labels[ROWS];
    uint64_t ids[ROWS];
    native_pass pass;
} grad_case;

static float uniform(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f;
}

/* Builds the network described by `layers_json` for inputs of `shape`. */
static int case_open(grad_case *c, const char *layers_json, const int32_t *shape,
                     int ndim, int classes)
{
    char json[2048], err[NATIVE_ERR_LEN];
    snprintf(json, sizeof json,
             "{\"model\": {\"layers\": %s}, \"optimizer\": {\"type\": \"sgd\", "
             "\"lr\": 0.1}, \"dataset\": {\"format\": \"idx\"}}",
             layers_json);
    memset(c, 0, sizeof *c);
    if (native_spec_parse(json, &c->spec, err, sizeof err) != 0) {
        fprintf(stderr, "spec: %s\n", err);
        return -1;
    }
    c->be = native_backend_cpu_create();
    if (native_model_create(&c->spec, shape, ndim, classes, c->be, 11, &c->model,
                            err, sizeof err) != 0) {
        fprintf(stderr, "model: %s\n", err);
        return -1;
    }
    uint32_t s = 99;
    c->x = malloc((size_t)(ROWS * c->model->in_size) * sizeof(float));
    for (int64_t i = 0; i < ROWS * c->model->in_size; i++)
        c->x[i] = uniform(&s);
    for (int r = 0; r < ROWS; r++) {
        c->labels[r] = (int32_t)(r % classes);
        c->ids[r] = 1000 + (uint64_t)r * 17;
    }
    c->pass = (native_pass){.train = 1, .loss_scale = 1.0f / ROWS,
                            .dropout_seed = 5, .dropout_epoch = 2};
    return 0;
}

static void case_close(grad_case *c)
{
    native_model_destroy(c->model);
    if (c->be)
        c->be->destroy(c->be);
    native_spec_free(&c->spec);
    free(c->x);
}

/* Mean loss of the batch at the current weights (training mode, so dropout
 * masks match the analytic pass; the gradients it adds are discarded). */
static double mean_loss(grad_case *c)
{
    double loss = 0, correct = 0;
    char err[NATIVE_ERR_LEN];
    if (native_model_run(c->model, c->x, c->labels, c->ids, ROWS, &c->pass, &loss,
                         &correct, err, sizeof err) != 0)
        fprintf(stderr, "run: %s\n", err);
    return loss / ROWS;
}

/* Compares every parameter's analytic gradient with a central difference.
 * Returns the number of mismatches and prints the worst. */
static int check_gradients(grad_case *c, const char *label)
{
    native_model *m = c->model;
    int64_t n = m->param_count;
    memset(m->grads, 0, (size_t)n * sizeof(float));
    mean_loss(c);
    float *analytic = malloc((size_t)n * sizeof(float));
    memcpy(analytic, m->grads, (size_t)n * sizeof(float));
    /* Gradients accumulate: a second pass doubles them. */
    mean_loss(c);
    int not_added = 0;
    for (int64_t j = 0; j < n; j++)
        not_added += fabsf(m->grads[j] - 2 * analytic[j]) > 1e-6f * (1 + fabsf(analytic[j]));
    if (not_added)
        fprintf(stderr, "%s: %d gradients were overwritten, not added\n", label, not_added);
    const float eps = 1e-3f;
    int bad = 0;
    double worst = 0;
    int64_t worst_at = -1;
    for (int64_t j = 0; j < n; j++) {
        float saved = m->weights[j];
        m->weights[j] = saved + eps;
        double up = mean_loss(c);
        m->weights[j] = saved - eps;
        double down = mean_loss(c);
        m->weights[j] = saved;
        double numeric = (up - down) / (2.0 * eps);
        double diff = fabs(numeric - analytic[j]);
        double tol = 1e-3 + 1e-2 * fmax(fabs(numeric), fabs(analytic[j]));
        if (diff > tol) {
            bad++;
            fprintf(stderr, "%s: parameter %lld: analytic %.6g numeric %.6g\n", label,
                    (long long)j, analytic[j], numeric);
        }
        if (diff - tol > worst - 1e-12 || worst_at < 0) {
            worst = diff - tol;
            worst_at = j;
        }
    }
    if (bad)
        fprintf(stderr, "%s: %d of %lld gradients differ; worst at %lld\n", label,
                bad, (long long)n, (long long)worst_at);
    /* Non-zero gradients prove the check compared something. */
    double norm = 0;
    for (int64_t j = 0; j < n; j++)
        norm += fabs(analytic[j]);
    free(analytic);
    return bad + not_added + (norm == 0);
}

static void test_softmax_xent(void)
{
    grad_case c;
    int32_t shape[1] = {6};
    CHECK(case_open(&c, "[{\"type\": \"dense\", \"units\": 4}]", shape, 1, 4) == 0);
    CHECK(check_gradients(&c, "softmax_xent") == 0);
    /* Zero weights give uniform probabilities: loss ln(4) for every row. */
    memset(c.model->weights, 0, (size_t)c.model->param_count * sizeof(float));
    CHECK(fabs(mean_loss(&c) - log(4.0)) < 1e-6);
    /* A hand-computed row: logits (1, 2, 0, -1) from the bias alone. */
    float *bias = c.model->weights + c.model->params[1].offset;
    bias[0] = 1, bias[1] = 2, bias[2] = 0, bias[3] = -1;
    double z[4] = {1, 2, 0, -1}, sum = 0;
    for (int j = 0; j < 4; j++)
        sum += exp(z[j]);
    double expect = 0;
    for (int r = 0; r < ROWS; r++)
        expect += log(sum) - z[c.labels[r]];
    CHECK(fabs(mean_loss(&c) - expect / ROWS) < 1e-5);
    case_close(&c);
}

static void test_dense_relu(void)
{
    grad_case c;
    int32_t shape[1] = {5};
    CHECK(case_open(&c,
                    "[{\"type\": \"dense\", \"units\": 7}, {\"type\": \"relu\"}, "
                    "{\"type\": \"dense\", \"units\": 3}]",
                    shape, 1, 3) == 0);
    CHECK(check_gradients(&c, "dense+relu") == 0);
    case_close(&c);
}

static void test_conv2d(void)
{
    grad_case c;
    int32_t shape[3] = {2, 6, 6};
    CHECK(case_open(&c,
                    "[{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, "
                    "\"padding\": 1},"
                    " {\"type\": \"relu\"},"
                    " {\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, "
                    "\"stride\": 2, \"padding\": 1},"
                    " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}]",
                    shape, 3, 3) == 0);
    CHECK(c.model->layers[0].out_shape[1] == 6);
    CHECK(c.model->layers[2].out_shape[1] == 3);
    CHECK(check_gradients(&c, "conv2d") == 0);
    case_close(&c);
}

static void test_maxpool(void)
{
    grad_case c;
    int32_t shape[3] = {1, 7, 7};
    /* Overlapping windows (kernel 3, stride 2) exercise the gather-form
     * backward where one input feeds several outputs. */
    CHECK(case_open(&c,
                    "[{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, "
                    "\"padding\": 1},"
                    " {\"type\": \"max_pool2d\", \"kernel\": 3, \"stride\": 2},"
                    " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}]",
                    shape, 3, 3) == 0);
    CHECK(c.model->layers[1].out_shape[1] == 3);
    CHECK(check_gradients(&c, "max_pool2d overlapping") == 0);
    case_close(&c);

    int32_t square[3] = {2, 8, 8};
    CHECK(case_open(&c,
                    "[{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3},"
                    " {\"type\": \"max_pool2d\", \"kernel\": 2},"
                    " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}]",
                    square, 3, 3) == 0);
    CHECK(c.model->layers[1].out_shape[1] == 3);
    CHECK(check_gradients(&c, "max_pool2d") == 0);
    case_close(&c);
}

/* The CPU loops and the shared per-element kernels (the GPU's form) agree
 * bit for bit, with overlapping windows, stride and padding. */
static void test_cpu_matches_kernels(void)
{
    native_backend *be = native_backend_cpu_create();
    uint32_t seed = 7;
    nk_pool_geom pg = {.height = 9, .width = 7, .kernel = 3, .stride = 2,
                       .out_height = 4, .out_width = 3};
    int64_t planes = 3, in_n = planes * 9 * 7, out_n = planes * 4 * 3;
    float *x = malloc(sizeof(float) * (size_t)in_n), *y1 = malloc(sizeof(float) * (size_t)out_n),
          *y2 = malloc(sizeof(float) * (size_t)out_n), *dy = malloc(sizeof(float) * (size_t)out_n),
          *dx1 = malloc(sizeof(float) * (size_t)in_n), *dx2 = malloc(sizeof(float) * (size_t)in_n);
    int32_t *a1 = malloc(sizeof(int32_t) * (size_t)out_n), *a2 = malloc(sizeof(int32_t) * (size_t)out_n);
    for (int64_t i = 0; i < in_n; i++)
        x[i] = (float)(int)(uniform(&seed) * 8) / 4; /* ties: the first maximum wins */
    for (int64_t i = 0; i < out_n; i++)
        dy[i] = uniform(&seed) - 0.5f;
    be->maxpool_fwd(be, x, y1, a1, planes, pg);
    for (int64_t i = 0; i < out_n; i++)
        nk_maxpool_fwd(i, x, y2, a2, pg);
    CHECK(memcmp(y1, y2, sizeof(float) * (size_t)out_n) == 0);
    CHECK(memcmp(a1, a2, sizeof(int32_t) * (size_t)out_n) == 0);
    be->maxpool_bwd(be, dy, a1, dx1, planes, pg);
    for (int64_t i = 0; i < in_n; i++)
        nk_maxpool_bwd(i, dy, a2, dx2, pg);
    CHECK(memcmp(dx1, dx2, sizeof(float) * (size_t)in_n) == 0);

    /* The 2x2, stride 2 window's own loop, odd sizes leaving a row and a
     * column out, ties everywhere. */
    nk_pool_geom p2 = {.height = 7, .width = 9, .kernel = 2, .stride = 2,
                       .out_height = 3, .out_width = 4};
    for (int64_t i = 0; i < in_n; i++)
        x[i] = (float)(int)(uniform(&seed) * 4) / 2;
    int64_t out2 = planes * 3 * 4;
    be->maxpool_fwd(be, x, y1, a1, planes, p2);
    for (int64_t i = 0; i < out2; i++)
        nk_maxpool_fwd(i, x, y2, a2, p2);
    CHECK(memcmp(y1, y2, sizeof(float) * (size_t)out2) == 0);
    CHECK(memcmp(a1, a2, sizeof(int32_t) * (size_t)out2) == 0);

    nk_conv_geom cg = {.channels = 2, .height = 6, .width = 5, .kernel = 3, .stride = 2,
                       .padding = 1, .out_height = 3, .out_width = 3};
    int64_t img = 2 * 6 * 5, cols = 2 * 3 * 3 * 3 * 3;
    float *im = malloc(sizeof(float) * (size_t)img), *c1 = malloc(sizeof(float) * (size_t)cols),
          *c2 = malloc(sizeof(float) * (size_t)cols), *b1 = malloc(sizeof(float) * (size_t)img),
          *b2 = malloc(sizeof(float) * (size_t)img);
    for (int64_t i = 0; i < img; i++)
        im[i] = uniform(&seed);
    be->im2col(be, im, c1, cg);
    for (int64_t i = 0; i < cols; i++)
        nk_im2col(i, im, c2, cg);
    CHECK(memcmp(c1, c2, sizeof(float) * (size_t)cols) == 0);
    for (int64_t i = 0; i < cols; i++)
        c1[i] = uniform(&seed) - 0.5f;
    be->col2im(be, c1, b1, cg);
    for (int64_t i = 0; i < img; i++)
        nk_col2im(i, c1, b2, cg);
    for (int64_t i = 0; i < img; i++)
        CHECK_MSG(fabsf(b1[i] - b2[i]) <= 1e-6f, "col2im element %lld: %g vs %g", (long long)i,
                  b1[i], b2[i]);
    /* "Same" padding, stride 1 (the CPU's one-copy rows), and a kernel
     * wider than the padding reaches. */
    nk_conv_geom same[] = {
        {.channels = 3, .height = 5, .width = 6, .kernel = 3, .stride = 1, .padding = 1,
         .out_height = 5, .out_width = 6},
        {.channels = 2, .height = 4, .width = 7, .kernel = 5, .stride = 1, .padding = 2,
         .out_height = 4, .out_width = 7},
        {.channels = 2, .height = 3, .width = 2, .kernel = 5, .stride = 1, .padding = 2,
         .out_height = 3, .out_width = 2},
    };
    for (size_t t = 0; t < sizeof same / sizeof *same; t++) {
        nk_conv_geom sg = same[t];
        int64_t n_img = (int64_t)sg.channels * sg.height * sg.width;
        int64_t n_col = n_img * sg.kernel * sg.kernel;
        /* Exactly sized, so ASan sees any read outside the image. */
        float *simg = malloc(sizeof(float) * (size_t)n_img);
        float *s1 = malloc(sizeof(float) * (size_t)n_col), *s2 = malloc(sizeof(float) * (size_t)n_col);
        for (int64_t i = 0; i < n_img; i++)
            simg[i] = uniform(&seed) + 1.0f;
        be->im2col(be, simg, s1, sg);
        for (int64_t i = 0; i < n_col; i++)
            nk_im2col(i, simg, s2, sg);
        CHECK_MSG(memcmp(s1, s2, sizeof(float) * (size_t)n_col) == 0, "im2col, same padding %zu", t);
        /* col2im's one-stretch rows against the gather, which sums in the
         * same order: same bits. */
        float *g1 = malloc(sizeof(float) * (size_t)n_img), *g2 = malloc(sizeof(float) * (size_t)n_img);
        for (int64_t i = 0; i < n_col; i++)
            s1[i] = uniform(&seed) - 0.5f;
        be->col2im(be, s1, g1, sg);
        for (int64_t i = 0; i < n_img; i++)
            nk_col2im(i, s1, g2, sg);
        CHECK_MSG(memcmp(g1, g2, sizeof(float) * (size_t)n_img) == 0, "col2im, same padding %zu", t);
        free(simg), free(s1), free(s2), free(g1), free(g2);
    }
    free(x), free(y1), free(y2), free(dy), free(dx1), free(dx2), free(a1), free(a2);
    free(im), free(c1), free(c2), free(b1), free(b2);
    be->destroy(be);
}

/* A network shaped like the benchmark CNN: conv-relu-pool twice, then
 * dense layers, with odd sizes so windows leave a row and column out. */
static const char *cnn_layers =
    "[{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": 1},"
    " {\"type\": \"relu\"}, {\"type\": \"max_pool2d\", \"kernel\": 2},"
    " {\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": 1},"
    " {\"type\": \"relu\"}, {\"type\": \"max_pool2d\", \"kernel\": 2},"
    " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 6},"
    " {\"type\": \"relu\"}, {\"type\": \"dense\", \"units\": 3}]";

static void test_cnn(void)
{
    grad_case c;
    int32_t shape[3] = {2, 9, 9};
    CHECK(case_open(&c, cnn_layers, shape, 3, 3) == 0);
    CHECK(c.model->layers[5].out_shape[1] == 2);
    CHECK(check_gradients(&c, "conv-relu-pool") == 0);
    case_close(&c);
}

/* Loss and gradients of one pass with `run_rows` samples per pass through
 * each run of per-sample layers (a run_rows >= ROWS: the whole chunk). */
static double run_with(grad_case *c, int64_t run_rows, float *grads)
{
    native_model *m = c->model;
    m->run_rows = run_rows;
    memset(m->grads, 0, (size_t)m->param_count * sizeof(float));
    double loss = mean_loss(c);
    memcpy(grads, m->grads, (size_t)m->param_count * sizeof(float));
    return loss;
}

/* Sample by sample (as the CPU runs by default), a few at a time and the
 * whole chunk at once give the same loss, and gradients equal up to the
 * order their per-sample parts are summed in. Sample-local buffers that a
 * later pass still needed would show up as wrong gradients here. */
static void test_runs_match_whole_chunk(void)
{
    const char *nets[] = {
        cnn_layers,
        /* dropout inside the run, a flatten chain, a conv reading a relu */
        "[{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3},"
        " {\"type\": \"relu\"}, {\"type\": \"dropout\", \"rate\": 0.3},"
        " {\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 2, \"stride\": 2},"
        " {\"type\": \"max_pool2d\", \"kernel\": 3, \"stride\": 1},"
        " {\"type\": \"flatten\"}, {\"type\": \"flatten\"},"
        " {\"type\": \"dense\", \"units\": 3}]",
    };
    for (size_t t = 0; t < sizeof nets / sizeof *nets; t++) {
        grad_case c;
        int32_t shape[3] = {2, 9, 9};
        CHECK(case_open(&c, nets[t], shape, 3, 3) == 0);
        int64_t n = c.model->param_count;
        float *whole = malloc((size_t)n * sizeof(float)), *part = malloc((size_t)n * sizeof(float));
        double whole_loss = run_with(&c, ROWS, whole);
        int64_t steps[] = {1, 2};
        for (int s = 0; s < 2; s++) {
            double loss = run_with(&c, steps[s], part);
            CHECK_MSG(fabs(loss - whole_loss) <= 1e-6 * fabs(whole_loss),
                      "net %zu, %lld rows a pass: loss %.9g, whole chunk %.9g", t,
                      (long long)steps[s], loss, whole_loss);
            int bad = 0;
            double norm = 0;
            for (int64_t j = 0; j < n; j++) {
                norm += fabs(whole[j]);
                bad += fabsf(part[j] - whole[j]) > 1e-5f * (1 + fabsf(whole[j]));
            }
            CHECK_MSG(bad == 0, "net %zu, %lld rows a pass: %d of %lld gradients differ",
                      t, (long long)steps[s], bad, (long long)n);
            CHECK(norm > 0);
        }
        free(whole), free(part);
        case_close(&c);
    }
}

/* A relu before a max-pool runs after it: a network that keeps the order
 * as written (a dropout of rate 0, an exact copy, between the two) gives
 * the same loss and the same gradient bits, ties and negative windows
 * included (inputs from a small set of values). */
static void test_relu_pool_swap(void)
{
    const char *swapped =
        "[{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"padding\": 1},"
        " {\"type\": \"relu\"}, {\"type\": \"max_pool2d\", \"kernel\": 2},"
        " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}]";
    const char *as_written =
        "[{\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"padding\": 1},"
        " {\"type\": \"relu\"}, {\"type\": \"dropout\", \"rate\": 0},"
        " {\"type\": \"max_pool2d\", \"kernel\": 2},"
        " {\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 3}]";
    grad_case a, b;
    int32_t shape[3] = {1, 7, 7};
    CHECK(case_open(&a, swapped, shape, 3, 3) == 0);
    CHECK(case_open(&b, as_written, shape, 3, 3) == 0);
    for (int64_t i = 0; i < ROWS * a.model->in_size; i++)
        a.x[i] = b.x[i] = (float)((int)(a.x[i] * 5) - 2); /* -2 .. 2 */
    int64_t n = a.model->param_count;
    CHECK(n == b.model->param_count);
    memcpy(b.model->weights, a.model->weights, (size_t)n * sizeof(float));
    float *ga = malloc((size_t)n * sizeof(float)), *gb = malloc((size_t)n * sizeof(float));
    CHECK(run_with(&a, 0, ga) == run_with(&b, 0, gb));
    CHECK(memcmp(ga, gb, (size_t)n * sizeof(float)) == 0);
    double norm = 0;
    for (int64_t j = 0; j < n; j++)
        norm += fabs(ga[j]);
    CHECK(norm > 0);
    free(ga), free(gb);
    case_close(&a);
    case_close(&b);
}

/* nk_sum (bias gradients) against a double sum, tails and empty included. */
static void test_lane_sum(void)
{
    uint32_t seed = 3;
    float v[200];
    for (int i = 0; i < 200; i++)
        v[i] = uniform(&seed) - 0.3f;
    int64_t sizes[] = {0, 1, 15, 16, 17, 33, 196, 200};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        double exact = 0;
        for (int64_t i = 0; i < sizes[t]; i++)
            exact += v[i];
        float got = nk_sum(v, sizes[t]);
        CHECK_MSG(fabs(got - exact) <= 1e-5 * (1 + fabs(exact)), "nk_sum of %lld: %.9g, exact %.9g",
                  (long long)sizes[t], got, exact);
    }
}

static void test_dropout(void)
{
    grad_case c;
    int32_t shape[1] = {8};
    CHECK(case_open(&c,
                    "[{\"type\": \"dense\", \"units\": 12}, {\"type\": \"dropout\", "
                    "\"rate\": 0.5}, {\"type\": \"dense\", \"units\": 3}]",
                    shape, 1, 3) == 0);
    CHECK(check_gradients(&c, "dropout") == 0);

    /* The mask follows the sample, not its row: the batch reversed (ids and
     * all) gives the same loss and gradients. */
    native_model *m = c.model;
    int64_t n = m->param_count, in = m->in_size;
    memset(m->grads, 0, (size_t)n * sizeof(float));
    double loss = mean_loss(&c);
    float *forward = malloc((size_t)n * sizeof(float));
    memcpy(forward, m->grads, (size_t)n * sizeof(float));
    float *x = malloc((size_t)(ROWS * in) * sizeof(float));
    int32_t labels[ROWS];
    uint64_t ids[ROWS];
    for (int r = 0; r < ROWS; r++) {
        memcpy(x + r * in, c.x + (ROWS - 1 - r) * in, (size_t)in * sizeof(float));
        labels[r] = c.labels[ROWS - 1 - r];
        ids[r] = c.ids[ROWS - 1 - r];
    }
    memcpy(c.x, x, (size_t)(ROWS * in) * sizeof(float));
    memcpy(c.labels, labels, sizeof labels);
    memcpy(c.ids, ids, sizeof ids);
    memset(m->grads, 0, (size_t)n * sizeof(float));
    CHECK(fabs(mean_loss(&c) - loss) < 1e-6);
    double diff = 0;
    for (int64_t j = 0; j < n; j++)
        diff = fmax(diff, fabs(forward[j] - m->grads[j]));
    CHECK_MSG(diff < 1e-6, "reordered batch changes gradients by %g", diff);

    /* Another epoch draws another mask. */
    c.pass.dropout_epoch++;
    CHECK(fabs(mean_loss(&c) - loss) > 1e-4);
    /* Evaluation ignores dropout: the same loss at any epoch. */
    c.pass.train = 0;
    double eval1 = mean_loss(&c);
    c.pass.dropout_epoch++;
    CHECK(fabs(mean_loss(&c) - eval1) < 1e-9);
    free(forward);
    free(x);
    case_close(&c);
}

int main(void)
{
    test_softmax_xent();
    test_dense_relu();
    test_conv2d();
    test_maxpool();
    test_cpu_matches_kernels();
    test_dropout();
    test_cnn();
    test_runs_match_whole_chunk();
    test_relu_pool_swap();
    test_lane_sum();
    return CHECK_DONE();
}
