/*
 * tests/unit/store/test_record_states.c - every state's word round-trips
 * through its enum, words differ within an enum, and an unknown word (or
 * a word in the wrong case) is refused with a message naming it.
 */
#include <string.h>

#include "check.h"
#include "store/record_states.h"

/* Each value's text parses back to the value, and no two share a word. */
#define CHECK_ROUND_TRIP(type, name, count)                                        \
    for (int v = 0; v < (count); v++) {                                            \
        type back;                                                                 \
        loom_error *e = name##_parse(name##_text((type)v), &back);                  \
        CHECK_MSG(!e && (int)back == v, #name " %d (%s)", v, name##_text((type)v)); \
        loom_err_free(e);                                                          \
        for (int w = 0; w < v; w++)                                                \
            CHECK(strcmp(name##_text((type)v), name##_text((type)w)) != 0);          \
    }

/* text is refused, with a message that names it. */
#define CHECK_REFUSED(type, name, text)                                            \
    do {                                                                           \
        type out;                                                                  \
        loom_error *e = name##_parse(text, &out);                                  \
        CHECK(e && loom_err_code(e) == LOOM_E_INVALID);                            \
        CHECK(e && strstr(loom_err_message(e), "\"" text "\""));                   \
        loom_err_free(e);                                                          \
    } while (0)

int main(void)
{
    CHECK_ROUND_TRIP(exec_state, exec_state, EXEC_STATE_COUNT);
    CHECK_ROUND_TRIP(hpo_task_state, hpo_task_state, HPO_TASK_STATE_COUNT);
    CHECK_ROUND_TRIP(hpo_exp_state, hpo_exp_state, HPO_EXP_STATE_COUNT);
    CHECK_ROUND_TRIP(model_state, model_state, MODEL_STATE_COUNT);
    CHECK_ROUND_TRIP(device_kind, device_kind, DEVICE_KIND_COUNT);

    /* the words the database has always held */
    CHECK_STR_EQ(exec_state_text(EXEC_STATE_RECOVERING), "RECOVERING");
    CHECK_STR_EQ(hpo_task_state_text(HPO_TASK_STOPPING), "STOPPING");
    CHECK_STR_EQ(hpo_exp_state_text(HPO_EXP_NOTRUN), "NOTRUN");
    CHECK_STR_EQ(model_state_text(MODEL_STARTING), "starting");
    CHECK_STR_EQ(device_kind_text(DEVICE_KIND_GPU), "gpu");

    CHECK_REFUSED(exec_state, exec_state, "DONE");
    CHECK_REFUSED(exec_state, exec_state, "running");
    CHECK_REFUSED(hpo_task_state, hpo_task_state, "NOTRUN");
    CHECK_REFUSED(hpo_exp_state, hpo_exp_state, "STOPPING");
    CHECK_REFUSED(model_state, model_state, "STARTED");
    CHECK_REFUSED(device_kind, device_kind, "tpu");
    CHECK_REFUSED(exec_state, exec_state, "");

    /* the refusal lists what is known */
    device_kind k;
    loom_error *e = device_kind_parse("tpu", &k);
    CHECK(e && strstr(loom_err_message(e), "expected cpu or gpu"));
    loom_err_free(e);

    CHECK(exec_state_is_final(EXEC_STATE_KILLED));
    CHECK(!exec_state_is_final(EXEC_STATE_RECOVERING));
    CHECK(hpo_exp_state_is_open(HPO_EXP_NOTRUN));
    CHECK(!hpo_exp_state_is_open(HPO_EXP_STOPPED));
    return CHECK_DONE();
}
