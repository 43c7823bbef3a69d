/* The search calls' wire encoding (plugin/search_wire.h) both ends share: a
 * config and an outcome come back as they went, and the space check that
 * both ends make refuses what lies outside. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plugin/search_wire.h"

static wire_reader reader_of(const wire_buf *b)
{
    /* The frame's payload, past its length. */
    return (wire_reader){.p = b->data + sizeof(uint32_t), .left = b->len - sizeof(uint32_t)};
}

/* Why search_value_fits refuses v: its error's message, "" when v fits
 * (anything but LOOM_E_INVALID shows as "wrong code"). */
static const char *refusal(const loom_param *p, const loom_value *v)
{
    static char why[256];
    loom_error *e = search_value_fits(p, v);
    int32_t code = loom_err_take(e, why, sizeof why);
    if (code != LOOM_OK && code != LOOM_E_INVALID)
        snprintf(why, sizeof why, "wrong code %d", (int)code);
    return why;
}

int main(void)
{
    static const char *const opts[] = {"adam", "sgd"};
    static const int64_t hidden[] = {128, 256, 512};
    loom_param params[3] = {
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_DOUBLE,
         .name = "lr", .low = -4, .high = -1, .log_base = 10},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE, .type = LOOM_VALUE_INT,
         .name = "hidden", .choice_count = 3, .choice_ints = hidden},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE, .type = LOOM_VALUE_STRING,
         .name = "opt", .choice_count = 2, .choice_strings = opts},
    };
    loom_value exp0[3] = {{.type = LOOM_VALUE_DOUBLE, .d = 0.001},
                          {.type = LOOM_VALUE_INT, .i = 256},
                          {.type = LOOM_VALUE_STRING, .s = "sgd"}};
    const loom_value *exps[1] = {exp0};
    loom_search_option o[1] = {{"eta", "3"}};
    loom_search_config cfg = {.struct_size = sizeof cfg, .maximize = 1, .max_experiments = 9,
                              .max_parallel = 2, .seed = 42, .objective_metric = "accuracy",
                              .param_count = 3, .params = params, .option_count = 1,
                              .options = o, .experiment_count = 1, .experiments = exps};
    wire_buf b = {0};
    wire_begin(&b);
    search_wire_put_config(&b, &cfg);
    CHECK(wire_finish(&b) == 0);
    wire_reader r = reader_of(&b);
    search_config_copy c;
    CHECK(search_wire_get_config(&r, &c) == 0 && !r.bad && r.left == 0);
    CHECK(c.cfg.maximize == 1 && c.cfg.max_experiments == 9 && c.cfg.seed == 42);
    CHECK_STR_EQ(c.cfg.objective_metric, "accuracy");
    CHECK(c.cfg.param_count == 3 && c.params[0].log_base == 10 && c.params[1].choice_ints[2] == 512);
    CHECK_STR_EQ(c.params[2].choice_strings[1], "sgd");
    CHECK_STR_EQ(c.cfg.options[0].value, "3");
    CHECK(c.cfg.experiment_count == 1 && c.cfg.experiments[0][1].i == 256);
    CHECK_STR_EQ(c.cfg.experiments[0][2].s, "sgd");
    search_config_copy_free(&c);

    /* A cut frame is malformed, never read past its end. */
    r = reader_of(&b);
    r.left -= 5;
    CHECK(search_wire_get_config(&r, &c) != 0);
    search_config_copy_free(&c);

    search_proposal p = {.id = 7, .budget = 3, .values = exp0};
    uint64_t stop = 4;
    search_outcome out = {.nproposals = 1, .proposals = &p, .nstops = 1, .stops = &stop,
                          .finished = 1};
    wire_begin(&b);
    search_wire_put_outcome(&b, &out, 3);
    CHECK(wire_finish(&b) == 0);
    r = reader_of(&b);
    search_outcome back;
    CHECK(search_wire_get_outcome(&r, 3, &back) == 0);
    CHECK(back.nproposals == 1 && back.proposals[0].id == 7 && back.proposals[0].budget == 3);
    CHECK(back.nstops == 1 && back.stops[0] == 4 && back.finished == 1 && back.refused[0] == 0);
    CHECK_STR_EQ(back.proposals[0].values[2].s, "sgd");
    search_outcome_free(&back, 3);
    wire_free(&b);

    loom_value v = {.type = LOOM_VALUE_DOUBLE, .d = 0.05};
    CHECK_STR_EQ(refusal(&params[0], &v), ""); /* 10^-4 .. 10^-1 */
    v.d = 0.5;
    CHECK_CONTAINS(refusal(&params[0], &v), "'lr': 0.5 is outside");
    v = (loom_value){.type = LOOM_VALUE_INT, .i = 300};
    CHECK_CONTAINS(refusal(&params[1], &v), "not one of its 3 values");
    v = (loom_value){.type = LOOM_VALUE_DOUBLE, .d = 256};
    CHECK_CONTAINS(refusal(&params[1], &v), "a value of type");
    v = (loom_value){.type = LOOM_VALUE_STRING, .s = "rmsprop"};
    CHECK_CONTAINS(refusal(&params[2], &v), "\"rmsprop\" is not one of its");
    v.s = "adam";
    CHECK_STR_EQ(refusal(&params[2], &v), "");
    return CHECK_DONE();
}
