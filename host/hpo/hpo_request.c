/* hpo/hpo_request.c - see hpo_request.h. */
#include "hpo/hpo_request.h"

#include <stdio.h>
#include <stdlib.h>

loom_error *hpo_exp_request(const char *task_args, uint64_t id, double budget, dlicmd *out,
                            char **words)
{
    *words = NULL;
    char subid[40];
    snprintf(subid, sizeof subid, "SUBID=%llu", (unsigned long long)id);
    const char *checkpoint = "EDT_CHECKPOINT_LAST=1";
    loom_error *e = dlicmd_parse(task_args ? task_args : "", out);
    if (e)
        return loom_err_wrap(e, "modelSpec.args");
    /* Pushed first in reverse: SUBID ends up first. */
    if (budget > 0)
        e = dlicmd_env_first(out, checkpoint);
    if (!e)
        e = dlicmd_env_first(out, subid);
    char *const added[] = {"--msd-env", subid, "--msd-env", (char *)checkpoint};
    char *flags = e ? NULL : dlicmd_join(budget > 0 ? 4 : 2, added);
    if (!e && (!flags || asprintf(words, "%s %s", flags, task_args ? task_args : "") < 0)) {
        *words = NULL;
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    free(flags);
    if (e)
        dlicmd_free(out);
    return e;
}
