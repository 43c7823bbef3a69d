/* store/record_states.c - see record_states.h. */
#include "store/record_states.h"

#include <stdio.h>
#include <string.h>

/* One enum's words, indexed by its values. */
typedef struct state_words {
    const char *what; /* for messages: "exec state" */
    const char *const *words;
    int count;
} state_words;

static const char *word_of(const state_words *t, int value)
{
    return value >= 0 && value < t->count ? t->words[value] : "?";
}

static loom_error *parse_word(const state_words *t, const char *text, int *out)
{
    for (int i = 0; text && i < t->count; i++)
        if (!strcmp(text, t->words[i])) {
            *out = i;
            return NULL;
        }
    char expected[160] = "";
    size_t n = 0;
    for (int i = 0; i < t->count && n < sizeof expected; i++)
        n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s",
                              i == 0 ? "" : i == t->count - 1 ? " or " : ", ", t->words[i]);
    return loom_err(LOOM_E_INVALID, "%s \"%s\" is unknown: expected %s", t->what,
                    text ? text : "(none)", expected);
}

/* text/parse for one enum over its table. */
#define STATE_WORDS(type, name, label, ...)                                   \
    static const char *const name##_words[] = {__VA_ARGS__};                  \
    static const state_words name##_table = {                                 \
        label, name##_words, (int)(sizeof name##_words / sizeof *name##_words)}; \
    const char *name##_text(type v) { return word_of(&name##_table, (int)v); } \
    loom_error *name##_parse(const char *text, type *out)                     \
    {                                                                         \
        int v = 0;                                                            \
        loom_error *e = parse_word(&name##_table, text, &v);                  \
        if (!e)                                                               \
            *out = (type)v;                                                   \
        return e;                                                             \
    }

STATE_WORDS(exec_state, exec_state, "exec state",
            [EXEC_STATE_SUBMITTED] = "SUBMITTED", [EXEC_STATE_PENDING] = "PENDING",
            [EXEC_STATE_LAUNCHING] = "LAUNCHING", [EXEC_STATE_RUNNING] = "RUNNING",
            [EXEC_STATE_RECOVERING] = "RECOVERING", [EXEC_STATE_FINISHED] = "FINISHED",
            [EXEC_STATE_KILLED] = "KILLED", [EXEC_STATE_ERROR] = "ERROR")

STATE_WORDS(hpo_task_state, hpo_task_state, "tuning task state",
            [HPO_TASK_SUBMITTED] = "SUBMITTED", [HPO_TASK_RUNNING] = "RUNNING",
            [HPO_TASK_STOPPING] = "STOPPING", [HPO_TASK_STOPPED] = "STOPPED",
            [HPO_TASK_FINISHED] = "FINISHED", [HPO_TASK_FAILED] = "FAILED")

STATE_WORDS(hpo_exp_state, hpo_exp_state, "experiment state",
            [HPO_EXP_NOTRUN] = "NOTRUN", [HPO_EXP_SUBMITTED] = "SUBMITTED",
            [HPO_EXP_RUNNING] = "RUNNING", [HPO_EXP_FINISHED] = "FINISHED",
            [HPO_EXP_FAILED] = "FAILED", [HPO_EXP_KILLED] = "KILLED",
            [HPO_EXP_STOPPED] = "STOPPED", [HPO_EXP_ERROR] = "ERROR")

STATE_WORDS(model_state, model_state, "model state", [MODEL_STOPPED] = "stopped",
            [MODEL_STARTING] = "starting", [MODEL_STARTED] = "started",
            [MODEL_FAILED] = "failed")

STATE_WORDS(device_kind, device_kind, "device type", [DEVICE_KIND_CPU] = "cpu",
            [DEVICE_KIND_GPU] = "gpu")

bool exec_state_is_final(exec_state s)
{
    switch (s) {
    case EXEC_STATE_FINISHED:
    case EXEC_STATE_KILLED:
    case EXEC_STATE_ERROR:
        return true;
    default:
        return false;
    }
}

bool hpo_exp_state_is_open(hpo_exp_state s)
{
    switch (s) {
    case HPO_EXP_NOTRUN:
    case HPO_EXP_SUBMITTED:
    case HPO_EXP_RUNNING:
        return true;
    default:
        return false;
    }
}
