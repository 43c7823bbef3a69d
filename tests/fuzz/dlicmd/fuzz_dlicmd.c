/*
 * fuzz_dlicmd.c - libFuzzer target for dlicmd's argument strings, the "args"
 * of every exec submission (REST body, multipart part, CLI). The input, as a
 * string, goes through dlicmd_parse; an accepted submission must satisfy
 * the documented defaults and ranges, a refused one must say why. Then the
 * quoting round trip: whatever dlicmd_split accepts, dlicmd_join must turn
 * into a string that splits back into the very same words (the CLI relies
 * on it to carry argv to the host), or the target aborts.
 */
#include "exec/dlicmd.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"

static void check_parsed(const dlicmd *d)
{
    if (!d->exec_start || !d->exec_start[0])
        abort();
    if (d->device_type != DEVICE_KIND_CPU && d->device_type != DEVICE_KIND_GPU)
        abort();
    if (d->num_worker < 1 || d->num_worker > 1024 || d->worker_device_num < 1 ||
        d->worker_device_num > 64 || d->priority < -1000 || d->priority > 1000)
        abort();
    if (d->msd_env_count < 0 || d->arg_count < 0)
        abort();
    for (int i = 0; i < d->msd_env_count; i++) {
        const char *eq = strchr(d->msd_env[i], '=');
        if (!eq || eq == d->msd_env[i])
            abort();
    }
    if ((d->msd_env_count && d->msd_env[d->msd_env_count]) ||
        (d->arg_count && d->args[d->arg_count]))
        abort(); /* the vectors are NULL-terminated */
}

static void check_round_trip(const char *text)
{
    int count = -1;
    char **words = NULL;
    loom_error *err = dlicmd_split(text, &words, &count);
    if (err) {
        if (words || !loom_err_message(err)[0])
            abort(); /* a refusal names its reason and returns nothing */
        loom_err_free(err);
        return;
    }
    if (count < 0 || words[count])
        abort();
    char *joined = dlicmd_join(count, words);
    if (!joined)
        abort();
    int again_count = -1;
    char **again = NULL;
    err = dlicmd_split(joined, &again, &again_count);
    if (err || again_count != count)
        abort();
    for (int i = 0; i < count; i++)
        if (strcmp(words[i], again[i]) != 0)
            abort();
    dlicmd_free_words(again);
    free(joined);
    dlicmd_free_words(words);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    dlicmd d;
    loom_error *err = dlicmd_parse(text, &d);
    if (!err) {
        check_parsed(&d);
        dlicmd_free(&d);
    } else if (!loom_err_message(err)[0]) {
        abort(); /* a refusal must name its reason */
    }
    loom_err_free(err);
    check_round_trip(text);
    free(text);
    return 0;
}
