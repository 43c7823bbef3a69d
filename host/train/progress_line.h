/*
 * train/progress_line.h - the one line that tells a person where a training
 * exec stands ("epoch 1/2: 3,000 of 6,000 samples, 2 workers, 15,200
 * samples/s, train loss 0.4121"): `loom exec view` shows it and `loom exec
 * logs -f` prints it as [progress]. It says what happens now (workers
 * starting, training, validating, a checkpoint, the final model), gives
 * the running epoch's rate, and never counts past the last epoch.
 */
#ifndef LOOM_TRAIN_PROGRESS_LINE_H
#define LOOM_TRAIN_PROGRESS_LINE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* The longest line progress_line writes, its NUL included. */
#define PROGRESS_LINE_MAX 512

typedef enum progress_stage {
    PROGRESS_STARTING = 0, /* workers started; none has loaded its data yet */
    PROGRESS_TRAINING,
    PROGRESS_VALIDATING,   /* an epoch ended; validation comes next */
    PROGRESS_CHECKPOINTING,/* an epoch ended; its checkpoint comes next */
    PROGRESS_SAVING,       /* every epoch done; the final model comes next */
    PROGRESS_FINISHED,
    PROGRESS_ENDED         /* the job ended unfinished (stopped or failed) */
} progress_stage;

typedef struct progress_facts {
    progress_stage stage;
    const char *framework;  /* the adapter's name ("native", "edtPyTorch") */
    uint32_t starting;      /* worker processes started, not yet members */
    uint32_t workers;       /* members */
    uint32_t epoch;         /* from 1: the epoch under way, or the last done */
    uint32_t epochs;
    uint64_t done, total;   /* the epoch's samples */
    double rate;            /* the epoch's samples/s so far; 0: not known yet */
    int have_loss;
    double loss;            /* the epoch's mean train loss so far */
    const cJSON *test;      /* the last validation's metrics, or NULL */
} progress_facts;

/* Writes the line into out (cap >= PROGRESS_LINE_MAX holds it whole: test
 * metrics that do not fit are left out and the line ends with "..."). */
void progress_line(const progress_facts *f, char *out, size_t cap);

/* n with a comma between groups of three digits: 15200 -> "15,200". */
void progress_digits(uint64_t n, char *out, size_t cap);

#endif
