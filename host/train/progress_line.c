/* train/progress_line.c - see progress_line.h. */
#include "train/progress_line.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void progress_digits(uint64_t n, char *out, size_t cap)
{
    char plain[24], grouped[32];
    int len = snprintf(plain, sizeof plain, "%llu", (unsigned long long)n);
    size_t at = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            grouped[at++] = ',';
        grouped[at++] = plain[i];
    }
    grouped[at] = 0;
    snprintf(out, cap, "%s", grouped);
}

/* Appends to a line that stays whole: a piece that does not fit is left
 * out and the line says so with "...". Returns 0 when it did not fit. */
typedef struct line_buf {
    char *out;
    size_t cap, used;
    int cut;
} line_buf;

static int add(line_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add(line_buf *b, const char *fmt, ...)
{
    if (b->cut)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->out + b->used, b->cap - b->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 4 >= b->cap - b->used) { /* room for "..." */
        b->out[b->used] = 0;
        snprintf(b->out + b->used, b->cap - b->used, "...");
        b->cut = 1;
        return 0;
    }
    b->used += (size_t)n;
    return 1;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* "epoch 1/2: 3,000 of 6,000 samples" */
static void add_epoch(line_buf *b, const progress_facts *f)
{
    char done[32], total[32];
    progress_digits(f->done, done, sizeof done);
    progress_digits(f->total, total, sizeof total);
    add(b, "epoch %u/%u: %s of %s samples", f->epoch, f->epochs, done, total);
}

static void add_workers(line_buf *b, const progress_facts *f)
{
    if (f->workers)
        add(b, ", %u %s", f->workers, plural(f->workers, "worker", "workers"));
    if (f->starting)
        add(b, "%s%u %s starting", f->workers ? " (" : ", ", f->starting,
            plural(f->starting, "worker", "workers"));
    if (f->workers && f->starting)
        add(b, ")");
}

static void add_test(line_buf *b, const cJSON *test)
{
    const char *sep = ", test ";
    const cJSON *v;
    cJSON_ArrayForEach(v, test) {
        if (!cJSON_IsNumber(v) || !v->string)
            continue;
        if (!add(b, "%s%s %.4g", sep, v->string, v->valuedouble))
            return;
        sep = ", ";
    }
}

void progress_line(const progress_facts *f, char *out, size_t cap)
{
    if (!cap)
        return;
    line_buf b = {.out = out, .cap = cap};
    out[0] = 0;
    const char *fw = f->framework && f->framework[0] ? f->framework : "the framework";
    char rate[32], trained[32];
    switch (f->stage) {
    case PROGRESS_STARTING:
        if (f->starting)
            add(&b, "starting %u %s (%s): loading the model and the data", f->starting,
                plural(f->starting, "worker", "workers"), fw);
        else
            add(&b, "starting the workers (%s)", fw);
        break;
    case PROGRESS_TRAINING:
        add_epoch(&b, f);
        add_workers(&b, f);
        if (f->done > 0 && f->rate > 0) {
            progress_digits((uint64_t)(f->rate + 0.5), rate, sizeof rate);
            add(&b, ", %s samples/s", rate);
        }
        if (f->have_loss)
            add(&b, ", train loss %.4f", f->loss);
        break;
    case PROGRESS_VALIDATING:
        add(&b, "epoch %u/%u trained: validating", f->epoch, f->epochs);
        add_workers(&b, f);
        break;
    case PROGRESS_CHECKPOINTING:
        add(&b, "epoch %u/%u trained: writing its checkpoint", f->epoch, f->epochs);
        add_test(&b, f->test);
        break;
    case PROGRESS_SAVING:
        add(&b, "epoch %u/%u trained: writing the model", f->epoch, f->epochs);
        add_test(&b, f->test);
        break;
    case PROGRESS_FINISHED:
        progress_digits(f->total * f->epochs, trained, sizeof trained);
        add(&b, "finished: %s samples in %u %s", trained, f->epochs,
            plural(f->epochs, "epoch", "epochs"));
        add_test(&b, f->test);
        break;
    case PROGRESS_ENDED:
        if (f->total == 0) {
            add(&b, "ended while the workers were starting");
            break;
        }
        add(&b, "ended in ");
        add_epoch(&b, f);
        break;
    }
}
