/*
 * tests/unit/hpo/test_hpo_request.c - a tuning experiment's exec request
 * is a structure with the task's fields and the experiment's SUBID (and,
 * with a budget, EDT_CHECKPOINT_LAST) first among its --msd-env pairs;
 * the words kept with the exec say the same; bad task args are refused
 * naming modelSpec.args.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hpo/hpo_request.h"

static const char task_args[] =
    "--exec-start edtPyTorch --numWorker 2 --msd-env SUBID=mine --msd-env LR=0.1 "
    "--model-main main.py -- --epochs 3";

static void check_fields(const dlicmd *d, int with_budget)
{
    CHECK_STR_EQ(d->exec_start, "edtPyTorch");
    CHECK_STR_EQ(d->model_main, "main.py");
    CHECK(d->num_worker == 2);
    CHECK(d->arg_count == 2 && !strcmp(d->args[0], "--epochs") && !strcmp(d->args[1], "3"));
    int n = with_budget ? 4 : 3;
    CHECK_MSG(d->msd_env_count == n, "%d pairs", d->msd_env_count);
    if (d->msd_env_count != n)
        return;
    CHECK_STR_EQ(d->msd_env[0], "SUBID=7");
    if (with_budget)
        CHECK_STR_EQ(d->msd_env[1], "EDT_CHECKPOINT_LAST=1");
    /* the task's own pairs after, so its SUBID wins */
    CHECK_STR_EQ(d->msd_env[n - 2], "SUBID=mine");
    CHECK_STR_EQ(d->msd_env[n - 1], "LR=0.1");
}

static void check_request(double budget)
{
    dlicmd d;
    char *words = NULL;
    loom_error *e = hpo_exp_request(task_args, 7, budget, &d, &words);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (e)
        return;
    check_fields(&d, budget > 0);
    dlicmd_free(&d);
    /* The words kept for a restarted host read back to the same request. */
    dlicmd back;
    e = dlicmd_parse(words, &back);
    CHECK(e == NULL);
    if (!e) {
        check_fields(&back, budget > 0);
        dlicmd_free(&back);
    }
    loom_err_free(e);
    free(words);
}

int main(void)
{
    check_request(0);
    check_request(3);

    dlicmd d;
    char *words = NULL;
    loom_error *e = hpo_exp_request("--numWorker 2", 1, 0, &d, &words);
    CHECK(loom_err_code(e) == LOOM_E_INVALID);
    CHECK(e && strstr(loom_err_message(e), "modelSpec.args"));
    CHECK(e && strstr(loom_err_message(e), "--exec-start"));
    CHECK(words == NULL);
    loom_err_free(e);
    return CHECK_DONE();
}
