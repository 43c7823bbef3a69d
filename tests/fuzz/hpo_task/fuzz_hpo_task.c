/*
 * fuzz_hpo_task.c - libFuzzer target for WMLA tuning tasks, the `data`
 * field of POST /hypersearch and `loom hpo submit TASK.json`. An accepted
 * task must hold what the parser promises the search plugins (sdk
 * loom/search.h): names set and unique, bounds ordered, choice lists
 * non-empty and of the parameter's type, strings only as choices, explicit
 * experiments inside the space; a refused one must say why.
 */
#include "hpo/wmla_task.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"

static void check_param(const hpo_task_spec *t, uint32_t i)
{
    const loom_param *p = &t->params[i];
    if (!p->name || !p->name[0])
        abort();
    for (uint32_t k = 0; k < i; k++)
        if (!strcmp(t->params[k].name, p->name))
            abort();
    if (p->kind == LOOM_PARAM_RANGE) {
        if (p->type == LOOM_VALUE_STRING || !(p->low <= p->high) || p->step < 0 ||
            (p->log_base != 0 && !(p->log_base > 1)))
            abort();
    } else if (p->kind == LOOM_PARAM_CHOICE) {
        if (p->choice_count == 0 || p->choice_count > HPO_MAX_CHOICES)
            abort();
        const void *arrays[] = {p->choice_doubles, p->choice_ints, p->choice_strings};
        if (!arrays[p->type - 1])
            abort();
    } else {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    hpo_task_spec t;
    memset(&t, 0, sizeof t);
    loom_error *e = wmla_task_parse(text, strlen(text), &t);
    if (e) {
        if (!loom_err_message(e)[0])
            abort(); /* a refusal says why */
        loom_err_free(e);
    } else {
        if (!t.name[0] || t.param_count > HPO_MAX_PARAMS || t.max_parallel < 1)
            abort();
        for (uint32_t i = 0; i < t.param_count; i++)
            check_param(&t, i);
        for (uint32_t x = 0; x < t.experiment_count; x++)
            for (uint32_t i = 0; i < t.param_count; i++)
                if (hpo_value_in_space(&t.params[i], &t.experiments[x][i]) != NULL)
                    abort();
        hpo_task_spec_free(&t);
    }
    free(text);
    return 0;
}
