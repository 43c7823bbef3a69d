/*
 * fuzz_model_profile.c - libFuzzer target for a model service's profile,
 * the body of PUT /dlim/v1/model/{name}/appprofile and `loom model
 * updateprofile -f`. An accepted profile keeps WMLA's rules (kernel_min > 0,
 * kernel_max -1 or >= kernel_min, positive intervals and batch size, a
 * timeout of -1 or more than 0, gpu one of no/shared/exclusive); a refused
 * one says why.
 */
#include "infer/model_spec.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    cJSON *json = cJSON_Parse(text);
    if (json) {
        model_profile p;
        memset(&p, 0, sizeof p);
        loom_error *e = model_profile_parse(json, "profile.json", &p);
        if (e) {
            if (!loom_err_message(e)[0])
                abort();
            loom_err_free(e);
        } else {
            /* kernel_min 0 scales to zero; kernel_max is then at least 1 */
            if (p.kernel_min < 0 || p.kernel_max == 0 ||
                (p.kernel_max != -1 && p.kernel_max < p.kernel_min) ||
                !(p.delay_release_s > 0) || !(p.schedule_interval_s > 0) || p.batch_size < 1 ||
                !(p.execution_timeout_s == -1 || p.execution_timeout_s > 0) ||
                (strcmp(p.gpu, "no") && strcmp(p.gpu, "shared") && strcmp(p.gpu, "exclusive")) ||
                p.nenv < 0 || p.nenv > MODEL_ENV_MAX)
                abort();
        }
        cJSON_Delete(json);
    }
    free(text);
    return 0;
}
