/* The progress line of a training exec at each stage: workers starting
 * name the framework and count no samples; an epoch under way counts its
 * samples with the running rate; an ended epoch is never counted past the
 * last; a finished job says how much it trained and its test metrics; a
 * line with many long metric names stays within its buffer and says it was
 * cut. */
#include <string.h>

#include "check.h"
#include "train/progress_line.h"

static const char *line_of(const progress_facts *f)
{
    static char out[PROGRESS_LINE_MAX];
    progress_line(f, out, sizeof out);
    return out;
}

int main(void)
{
    char digits[32];
    progress_digits(0, digits, sizeof digits);
    CHECK_STR_EQ(digits, "0");
    progress_digits(999, digits, sizeof digits);
    CHECK_STR_EQ(digits, "999");
    progress_digits(15200, digits, sizeof digits);
    CHECK_STR_EQ(digits, "15,200");
    progress_digits(1234567890, digits, sizeof digits);
    CHECK_STR_EQ(digits, "1,234,567,890");

    progress_facts f = {.stage = PROGRESS_STARTING, .framework = "edtPyTorch", .starting = 2,
                        .epochs = 1};
    CHECK_STR_EQ(line_of(&f), "starting 2 workers (edtPyTorch): loading the model and the data");
    f.starting = 0; /* before the first process is started */
    CHECK_STR_EQ(line_of(&f), "starting the workers (edtPyTorch)");

    f = (progress_facts){.stage = PROGRESS_TRAINING, .framework = "native", .workers = 2,
                         .epoch = 1, .epochs = 1, .done = 3000, .total = 6000, .rate = 15200.4,
                         .have_loss = 1, .loss = 0.41234};
    CHECK_STR_EQ(line_of(&f),
                 "epoch 1/1: 3,000 of 6,000 samples, 2 workers, 15,200 samples/s, train loss 0.4123");
    /* No step yet: no rate and no loss to give. */
    f.done = 0, f.rate = 0, f.have_loss = 0;
    CHECK_STR_EQ(line_of(&f), "epoch 1/1: 0 of 6,000 samples, 2 workers");
    /* Every worker lost: the replacements are said to be starting. */
    f.workers = 0, f.starting = 2, f.done = 1200;
    CHECK_STR_EQ(line_of(&f), "epoch 1/1: 1,200 of 6,000 samples, 2 workers starting");
    f.workers = 1, f.starting = 1;
    CHECK_STR_EQ(line_of(&f), "epoch 1/1: 1,200 of 6,000 samples, 1 worker (1 worker starting)");

    cJSON *test = cJSON_CreateObject();
    cJSON_AddNumberToObject(test, "accuracy", 0.7);
    cJSON_AddNumberToObject(test, "loss", 0.51234);
    f = (progress_facts){.stage = PROGRESS_VALIDATING, .workers = 2, .epoch = 1, .epochs = 1,
                         .done = 6000, .total = 6000};
    CHECK_STR_EQ(line_of(&f), "epoch 1/1 trained: validating, 2 workers");
    f.stage = PROGRESS_CHECKPOINTING, f.test = test;
    CHECK_STR_EQ(line_of(&f),
                 "epoch 1/1 trained: writing its checkpoint, test accuracy 0.7, loss 0.5123");
    f.stage = PROGRESS_SAVING;
    CHECK_STR_EQ(line_of(&f), "epoch 1/1 trained: writing the model, test accuracy 0.7, loss 0.5123");
    f.stage = PROGRESS_FINISHED;
    CHECK_STR_EQ(line_of(&f), "finished: 6,000 samples in 1 epoch, test accuracy 0.7, loss 0.5123");
    f.epochs = 3;
    CHECK_CONTAINS(line_of(&f), "finished: 18,000 samples in 3 epochs");

    f = (progress_facts){.stage = PROGRESS_ENDED, .epoch = 2, .epochs = 3, .done = 10,
                         .total = 6000};
    CHECK_STR_EQ(line_of(&f), "ended in epoch 2/3: 10 of 6,000 samples");
    f.total = 0;
    CHECK_STR_EQ(line_of(&f), "ended while the workers were starting");

    /* Sixteen metrics with long names: cut, within the buffer, and said. */
    cJSON *many = cJSON_CreateObject();
    char name[80];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "a_rather_long_metric_name_number_%02d", i);
        cJSON_AddNumberToObject(many, name, i);
    }
    f = (progress_facts){.stage = PROGRESS_FINISHED, .epochs = 1, .total = 10, .test = many};
    const char *cut = line_of(&f);
    CHECK(strlen(cut) < PROGRESS_LINE_MAX);
    CHECK_CONTAINS(cut, "finished: 10 samples in 1 epoch, test a_rather_long_metric_name_number_00 0");
    CHECK(strlen(cut) >= 3 && strcmp(cut + strlen(cut) - 3, "...") == 0);
    cJSON_Delete(many);
    cJSON_Delete(test);
    return CHECK_DONE();
}
