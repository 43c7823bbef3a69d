/*
 * fuzz_model_json.c - libFuzzer target for the ffi kernel's model.json, the
 * file a user deploys with a model. The input is written as model.json into
 * a model directory of its own and the kernel's load_model reads it from
 * there (config->model_json NULL, as when the host passes only the
 * directory). The directory holds no library, so every input must be refused
 * with an error object carrying a code and a message: a model that loads, a
 * crash, or a leak is a finding. Valid seeds get as far as the library
 * check.
 */
#include <loom/loom.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "plugin/ffi_call.h"
#include "plugin/host_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char model_dir[4096], model_json[4096 + 16];
    if (!model_dir[0]) {
        fuzz_path(model_dir, sizeof model_dir, "%s/model", fuzz_scratch_dir());
        fuzz_make_dir(model_dir);
        fuzz_path(model_json, sizeof model_json, "%s/model.json", model_dir);
    }
    fuzz_write_file(model_json, data, size);

    const loom_kernel_factory *factory = ffi_kernel_factory();
    loom_kernel_model_config config;
    memset(&config, 0, sizeof config);
    config.struct_size = sizeof config;
    config.model_dir = model_dir;
    config.model_json = NULL;
    loom_kernel_model *model = NULL;
    loom_error *error = factory->load_model(factory, &config, &model);
    if (!error || model) {
        /* Nothing in the directory can be loaded: success is impossible. */
        if (model)
            factory->unload_model(model);
        abort();
    }
    const char *message = loom_err_message(error);
    if (loom_err_code(error) == LOOM_OK || !message || !message[0])
        abort();
    loom_err_free(error);
    return 0;
}
