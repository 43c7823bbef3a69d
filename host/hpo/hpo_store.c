/* hpo/hpo_store.c - see hpo_store.h. */
#include "hpo/hpo_store.h"

#include <string.h>

static const char *const task_state_words[] = {
    [HPO_TASK_SUBMITTED] = "SUBMITTED", [HPO_TASK_RUNNING] = "RUNNING",
    [HPO_TASK_STOPPING] = "STOPPING",   [HPO_TASK_STOPPED] = "STOPPED",
    [HPO_TASK_FINISHED] = "FINISHED",   [HPO_TASK_FAILED] = "FAILED",
    [HPO_TASK_UNKNOWN] = "UNKNOWN"};

hpo_task_state hpo_task_state_of(const char *word)
{
    for (int s = 0; s < HPO_TASK_UNKNOWN; s++)
        if (!strcmp(word, task_state_words[s]))
            return (hpo_task_state)s;
    return HPO_TASK_UNKNOWN;
}

const char *hpo_task_state_word(hpo_task_state s)
{
    return task_state_words[s <= HPO_TASK_UNKNOWN ? s : HPO_TASK_UNKNOWN];
}
