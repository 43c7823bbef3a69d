/*
 * tests/unit/exec/test_dlicmd_wmla.c - WMLA's dlicmd flags and framework
 * names as loom reads them: each mapped to loom's meaning or accepted
 * with a warning, bad values refused naming the flag, a data_path that
 * leaves the data store refused, a truly unknown flag still refused.
 */
#include <string.h>

#include "check.h"
#include "exec/dlicmd.h"

/* The error's code for parsing `args` (LOOM_OK when it parsed), its
 * message in msg. */
static int parse(const char *args, dlicmd *d, char *msg, size_t len)
{
    msg[0] = 0;
    return loom_err_take(dlicmd_parse(args, d), msg, len);
}

static int has_warning(const dlicmd *d, const char *needle)
{
    for (int i = 0; i < d->warning_count; i++)
        if (strstr(d->warnings[i], needle))
            return 1;
    return 0;
}

static int has_env(const dlicmd *d, const char *pair)
{
    for (int i = 0; i < d->msd_env_count; i++)
        if (strcmp(d->msd_env[i], pair) == 0)
            return 1;
    return 0;
}

int main(void)
{
    dlicmd d;
    char msg[1024];

    /* A notebook's submission, every WMLA flag at once. */
    CHECK(parse("--exec-start PyTorch --model-dir mnist --model-main main.py --numWorker 1 "
                "--gpuPerWorker 2 --cs-datastore-meta type=fs,data_path=mnist/train "
                "--python-version 3.6 --conda-env-name dlipy3 --debug-level DEBUG "
                "-- --epochs 2",
                &d, msg, sizeof msg) == LOOM_OK);
    CHECK_STR_EQ(d.data_path, "mnist/train");
    CHECK(d.worker_device_num == 2);
    CHECK(d.gpu_per_worker == 2);
    CHECK_STR_EQ(d.python_version, "3.6");
    CHECK_STR_EQ(d.conda_env, "dlipy3");
    CHECK_STR_EQ(d.debug_level, "debug");
    CHECK(has_env(&d, "DEBUG_LEVEL=debug"));
    CHECK(has_warning(&d, "--python-version 3.6"));
    CHECK(has_warning(&d, "--conda-env-name dlipy3"));
    CHECK(d.arg_count == 2);
    dlicmd_free(&d);

    /* --gpuPerWorker 0, as a notebook on a CPU cluster sends it: a CPU job,
     * one device per worker. */
    CHECK(parse("--exec-start PyTorch --model-main main.py --numWorker 2 --gpuPerWorker 0", &d,
                msg, sizeof msg) == LOOM_OK);
    CHECK(d.device_type == DEVICE_KIND_CPU);
    CHECK(d.worker_device_num == 1);
    CHECK(d.num_worker == 2);
    dlicmd_free(&d);

    /* type=fs alone is fine; DATA_DIR stays the default. */
    CHECK(parse("--exec-start command --cs-datastore-meta type=fs -- true", &d, msg, sizeof msg) ==
          LOOM_OK);
    CHECK(d.data_path == NULL);
    dlicmd_free(&d);

    /* maxWorkers is elastic training's ceiling; a smaller numWorker warns. */
    CHECK(parse("--exec-start edt --edt-options maxWorkers=4", &d, msg, sizeof msg) == LOOM_OK);
    CHECK(d.num_worker == 4 && d.num_worker_given);
    dlicmd_free(&d);
    CHECK(parse("--exec-start edt --numWorker 2 --edt-options maxWorkers=4", &d, msg,
                sizeof msg) == LOOM_OK);
    CHECK(d.num_worker == 4);
    CHECK(has_warning(&d, "up to maxWorkers=4"));
    dlicmd_free(&d);

    /* Refusals name the flag and what was expected. */
    CHECK(parse("--exec-start command --cs-datastore-meta type=fs,data_path=../etc", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "data_path \"../etc\" leaves the data store");
    CHECK(parse("--exec-start command --cs-datastore-meta type=fs,data_path=a/../../b", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK(parse("--exec-start command --cs-datastore-meta type=fs,data_path=/etc", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK(parse("--exec-start command --cs-datastore-meta type=s3", &d, msg, sizeof msg) ==
          LOOM_E_UNSUPPORTED);
    CHECK_CONTAINS(msg, "type=s3");
    CHECK(parse("--exec-start command --cs-datastore-meta type=fs,bucket=x", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "unknown key \"bucket\"");
    CHECK(parse("--exec-start command --cs-datastore-meta fs", &d, msg, sizeof msg) ==
          LOOM_E_INVALID);
    CHECK(parse("--exec-start command --cs-datastore-meta type=fs,data_path=x --data-dir /x", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "give one");
    CHECK(parse("--exec-start edt --edt-options maxWorkers=0", &d, msg, sizeof msg) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "maxWorkers");
    CHECK(parse("--exec-start edt --numWorker 8 --edt-options maxWorkers=4", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK(parse("--exec-start edt --edt-options minWorkers=1", &d, msg, sizeof msg) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "unknown key \"minWorkers\"");
    CHECK(parse("--exec-start command --gpuPerWorker 65", &d, msg, sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "from 0 to 64");
    CHECK(parse("--exec-start command --gpuPerWorker 0 --workerDeviceType gpu", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "--gpuPerWorker 0");
    CHECK(parse("--exec-start command --workerDeviceType tpu", &d, msg, sizeof msg) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "--workerDeviceType: device type \"tpu\" is unknown: expected cpu or gpu");
    CHECK(parse("--exec-start command --workerDeviceType gpu --workerDeviceType cpu", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "--workerDeviceType given twice");
    CHECK(parse("--exec-start command --gpuPerWorker 2 --workerDeviceNum 3", &d, msg,
                sizeof msg) == LOOM_E_INVALID);
    CHECK(parse("--exec-start command --python-version three", &d, msg, sizeof msg) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "expected X.Y");
    CHECK(parse("--exec-start command --debug-level loud", &d, msg, sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "--debug-level");
    /* A truly unknown flag is still refused by name, the known ones listed. */
    CHECK(parse("--exec-start command --no-such-flag 1", &d, msg, sizeof msg) == LOOM_E_INVALID);
    CHECK_CONTAINS(msg, "unknown flag --no-such-flag");
    CHECK_CONTAINS(msg, "--cs-datastore-meta");

    /* WMLA's framework names, in any case. */
    int wmla = 0;
    CHECK_STR_EQ(dlicmd_framework_name("PyTorch", &wmla), "python");
    CHECK(wmla == 1);
    CHECK_STR_EQ(dlicmd_framework_name("pytorch", NULL), "python");
    CHECK_STR_EQ(dlicmd_framework_name("tensorflow", NULL), "python");
    CHECK_STR_EQ(dlicmd_framework_name("TensorFlow", NULL), "python");
    CHECK_STR_EQ(dlicmd_framework_name("edtPyTorch", NULL), "edtPyTorch");
    CHECK_STR_EQ(dlicmd_framework_name("command", &wmla), "command");
    CHECK(wmla == 0);
    return CHECK_DONE();
}
