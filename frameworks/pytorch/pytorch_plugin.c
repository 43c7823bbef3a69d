/*
 * pytorch_plugin.c - the "edtPyTorch" framework adapter: WMLA's FabricModel
 * scripts under loom's elastic trainer. Each `loom worker` embeds CPython
 * (Debian's libpython, the interpreter that has python3-torch) and runs the
 * job's --model-main script; FabricModel.train() hands the model, datasets,
 * loss and optimizer to the Python half (runtime.py, compiled in as the
 * module `_loom`), and from then on the trainer calls in here exactly as it
 * calls the native adapter. The parameters and their `.grad` are views of
 * the two flat buffers this file owns, so the trainer's all-reduce works on
 * PyTorch's own gradients without a copy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <limits.h>
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_source.h" /* edt_runtime_source: runtime.py */

static const loom_host *g_host;
static PyObject *g_runtime; /* the `_loom` module; the interpreter lives as long as the process */

struct loom_framework_instance {
    PyObject *trainer;
    float *params, *grads;
    int grads_borrowed; /* grads is the host's memory (gradient_memory): not ours to free */
    uint64_t count; /* floats in each flat buffer */
    uint64_t train_size, test_size;
    loom_tensor_view *views;
    int32_t *roles;
    char **view_names;
    uint32_t view_count;
    char *metric_names[LOOM_MAX_METRICS]; /* names live as long as the instance */
};

/* ---- errors ---------------------------------------------------------- */

/* The exception type `name` of an imported module (sys.modules[module]),
 * or NULL: a borrowed reference, no Python error left behind. */
static PyObject *imported_type(const char *module, const char *name, PyObject **owned)
{
    PyObject *m = PyDict_GetItemString(PyImport_GetModuleDict(), module);
    *owned = m ? PyObject_GetAttrString(m, name) : NULL;
    PyErr_Clear();
    return *owned && PyExceptionClass_Check(*owned) ? *owned : NULL;
}

/* Whether the exception says memory ran out, by its type: Python's
 * MemoryError, torch.cuda.OutOfMemoryError (PyTorch 1.13 on) and
 * torch.OutOfMemoryError (2.5 on). The one exception matched by words:
 * PyTorch before 2.5 raises a failed CPU allocation as a plain
 * RuntimeError, marked only by its allocator's message. */
static int is_out_of_memory(PyObject *value)
{
    if (PyErr_GivenExceptionMatches(value, PyExc_MemoryError))
        return 1;
    static const char *const types[][2] = {{"torch.cuda", "OutOfMemoryError"},
                                           {"torch", "OutOfMemoryError"}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        PyObject *owned;
        PyObject *type = imported_type(types[i][0], types[i][1], &owned);
        int match = type && PyErr_GivenExceptionMatches(value, type);
        Py_XDECREF(owned);
        if (match)
            return 1;
    }
    if (!PyErr_GivenExceptionMatches(value, PyExc_RuntimeError))
        return 0;
    PyObject *text = PyObject_Str(value);
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    int cpu_alloc = msg && strstr(msg, "DefaultCPUAllocator: can't allocate memory") != NULL;
    Py_XDECREF(text);
    PyErr_Clear();
    return cpu_alloc;
}

/* The pending Python exception as a loom error: the adapter's own checks
 * (AdapterError) by their message, anything else with its traceback. */
static loom_error *py_fail(const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
        PyException_SetTraceback(value, tb);
    int code = LOOM_ERR_INTERNAL;
    PyObject *adapter_error = PyObject_GetAttrString(g_runtime, "AdapterError");
    PyObject *text = NULL;
    if (value && adapter_error && PyErr_GivenExceptionMatches(value, adapter_error)) {
        code = LOOM_ERR_INVALID_ARGUMENT;
        text = PyObject_Str(value);
    } else if (value) {
        if (is_out_of_memory(value))
            code = LOOM_ERR_RESOURCE_EXHAUSTED;
        text = PyObject_CallMethod(g_runtime, "format_exception", "O", value);
    }
    PyErr_Clear();
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    PyErr_Clear();
    loom_error *e = g_host->error_newf(code, "edtPyTorch: %s: %s", what,
                                       msg ? msg : "a Python error that cannot be shown");
    Py_XDECREF(text);
    Py_XDECREF(adapter_error);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return e;
}

/* A Python exception in a training call: the user's code failed, and a
 * retried round or a replacement worker would fail the same way. The
 * trainer retries a round a worker answers with an error, so the worker
 * stops instead, with the traceback as the last thing in its log: the
 * trainer ends the job after EDT_MAX_WORKER_FAILURES such deaths in a
 * row. */
#define EDT_SCRIPT_FAILED_STATUS 70

static void stop_worker(loom_error *e)
{
    fprintf(stderr, "%s\nedtPyTorch: the job's Python code failed; this worker stops (exit "
            "status %d)\n", g_host->error_message(e), EDT_SCRIPT_FAILED_STATUS);
    fflush(stdout);
    fflush(stderr);
    _exit(EDT_SCRIPT_FAILED_STATUS);
}

/* ---- the interpreter ------------------------------------------------- */

/* Starts CPython once per process and leaves the GIL released: every call
 * below takes it with PyGILState_Ensure. */
static loom_error *python_start(void)
{
    if (g_runtime)
        return NULL;
    /* Extension modules (torch's among them) find the interpreter's
     * symbols in the global namespace; this plugin was opened locally. */
    if (!dlopen(LOOM_LIBPYTHON_SONAME, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
        return g_host->error_newf(LOOM_ERR_UNAVAILABLE,
                                  "edtPyTorch: cannot make %s's symbols global: %s",
                                  LOOM_LIBPYTHON_SONAME, dlerror());
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0; /* the worker's signals stay the worker's */
    config.parse_argv = 0;
    PyStatus st = PyConfig_SetBytesString(&config, &config.program_name,
                                          LOOM_PYTHON_EXECUTABLE);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st))
        return g_host->error_newf(LOOM_ERR_UNAVAILABLE,
                                  "edtPyTorch: cannot start the embedded Python %s: %s",
                                  LOOM_PYTHON_EXECUTABLE,
                                  st.err_msg ? st.err_msg : "unknown error");
    PyObject *mod = PyImport_AddModule("_loom"); /* borrowed; now in sys.modules */
    PyObject *dict = mod ? PyModule_GetDict(mod) : NULL;
    PyObject *code = dict ? Py_CompileString(edt_runtime_source, "edtPyTorch/runtime.py",
                                             Py_file_input)
                          : NULL;
    if (dict)
        PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins());
    PyObject *done = code ? PyEval_EvalCode(code, dict, dict) : NULL;
    Py_XDECREF(code);
    if (!done) {
        PyErr_Print();
        PyEval_SaveThread();
        return g_host->error_new(LOOM_ERR_INTERNAL,
                                 "edtPyTorch: the adapter's Python half failed to load");
    }
    Py_DECREF(done);
    Py_INCREF(mod);
    g_runtime = mod;
    PyEval_SaveThread();
    return NULL;
}

/* ---- the instance ---------------------------------------------------- */

static void free_views(loom_framework_instance *inst)
{
    for (uint32_t i = 0; inst->view_names && i < inst->view_count; i++)
        free(inst->view_names[i]);
    free(inst->view_names);
    free(inst->views);
    free(inst->roles);
    inst->view_names = NULL;
    inst->views = NULL;
    inst->roles = NULL;
    inst->view_count = 0;
}

static void pytorch_destroy(loom_framework_instance *inst)
{
    if (!inst)
        return;
    if (inst->trainer) {
        PyGILState_STATE g = PyGILState_Ensure();
        PyObject *r = PyObject_CallMethod(inst->trainer, "finish", NULL);
        if (!r) {
            loom_error *e = py_fail("at the end of training");
            g_host->log(g_host, LOOM_LOG_ERROR, "%s", g_host->error_message(e));
            g_host->error_free(e);
        }
        Py_XDECREF(r);
        Py_CLEAR(inst->trainer);
        PyGILState_Release(g);
    }
    free(inst->params);
    if (!inst->grads_borrowed)
        free(inst->grads);
    free_views(inst);
    for (int i = 0; i < LOOM_MAX_METRICS; i++)
        free(inst->metric_names[i]);
    free(inst);
}

/* One state tensor from runtime.Trainer.state_views():
 * (name, address, dtype, shape, nbytes, role). */
static int take_view(loom_framework_instance *inst, uint32_t i, PyObject *item)
{
    const char *name;
    unsigned long long addr, nbytes;
    int dtype, role;
    PyObject *shape;
    if (!PyArg_ParseTuple(item, "sKiOKi", &name, &addr, &dtype, &shape, &nbytes, &role))
        return -1;
    Py_ssize_t ndim = PyList_Size(shape);
    if (ndim < 1 || ndim > LOOM_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s has %zd dimensions; loom keeps at most %d", name,
                     ndim, LOOM_MAX_DIMS);
        return -1;
    }
    loom_tensor_view *v = &inst->views[i];
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = dtype;
    v->ndim = (uint32_t)ndim;
    for (Py_ssize_t d = 0; d < ndim; d++)
        v->shape[d] = PyLong_AsLongLong(PyList_GetItem(shape, d));
    inst->view_names[i] = strdup(name);
    v->name = inst->view_names[i];
    v->data = (void *)(uintptr_t)addr;
    v->nbytes = nbytes;
    inst->roles[i] = role;
    return v->name ? 0 : -1;
}

static loom_error *collect_views(loom_framework_instance *inst)
{
    PyObject *list = PyObject_CallMethod(inst->trainer, "state_views", NULL);
    if (!list)
        return py_fail("state tensors");
    Py_ssize_t n = PyList_Size(list);
    inst->views = calloc((size_t)n + 1, sizeof *inst->views);
    inst->roles = calloc((size_t)n + 1, sizeof *inst->roles);
    inst->view_names = calloc((size_t)n + 1, sizeof *inst->view_names);
    loom_error *e = NULL;
    if (!inst->views || !inst->roles || !inst->view_names)
        e = g_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "edtPyTorch: out of memory");
    for (Py_ssize_t i = 0; !e && i < n; i++) {
        inst->view_count = (uint32_t)i + 1;
        if (take_view(inst, (uint32_t)i, PyList_GetItem(list, i)) != 0)
            e = py_fail("state tensors");
    }
    Py_DECREF(list);
    return e;
}

/* Allocates the flat buffers and makes the model's parameters and their
 * gradients views of them. The gradients go in the memory the host offers
 * when it does (ABI 1.3): PyTorch's backward then writes straight into the
 * buffer the workers all-reduce in place, and a step copies no gradient. */
static loom_error *bind_buffers(loom_framework_instance *inst, const loom_trainer_config *cfg)
{
    PyObject *count = PyObject_GetAttrString(inst->trainer, "count");
    if (!count)
        return py_fail("parameters");
    inst->count = PyLong_AsUnsignedLongLong(count);
    Py_DECREF(count);
    size_t bytes = (size_t)inst->count * sizeof(float);
    inst->params = calloc(inst->count, sizeof(float));
    if (LOOM_STRUCT_HAS(cfg, loom_trainer_config, gradient_memory_data) && cfg->gradient_memory &&
        inst->count) {
        inst->grads = cfg->gradient_memory(cfg->gradient_memory_data, (uint64_t)bytes);
        inst->grads_borrowed = inst->grads != NULL;
    }
    if (!inst->grads)
        inst->grads = calloc(inst->count, sizeof(float));
    if (!inst->params || !inst->grads)
        return g_host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED,
                                  "edtPyTorch: out of memory for %llu parameters",
                                  (unsigned long long)inst->count);
    PyObject *p = PyMemoryView_FromMemory((char *)inst->params, (Py_ssize_t)bytes, PyBUF_WRITE);
    PyObject *g = PyMemoryView_FromMemory((char *)inst->grads, (Py_ssize_t)bytes, PyBUF_WRITE);
    PyObject *r = p && g ? PyObject_CallMethod(inst->trainer, "bind", "OO", p, g) : NULL;
    Py_XDECREF(p);
    Py_XDECREF(g);
    if (!r)
        return py_fail("binding the parameters to the flat buffers");
    Py_DECREF(r);
    return NULL;
}

static loom_error *dataset_lengths(loom_framework_instance *inst)
{
    const char *attrs[2] = {"train_ds", "test_ds"};
    uint64_t *out[2] = {&inst->train_size, &inst->test_size};
    for (int i = 0; i < 2; i++) {
        PyObject *ds = PyObject_GetAttrString(inst->trainer, attrs[i]);
        Py_ssize_t n = ds ? PyObject_Length(ds) : -1;
        Py_XDECREF(ds);
        if (n < 0)
            return py_fail(i ? "len(test dataset)" : "len(training dataset)");
        *out[i] = (uint64_t)n;
    }
    return NULL;
}

/* The script and its arguments, from the spec the host made of it. */
static loom_error *read_spec(const loom_trainer_config *cfg, char *script, size_t len,
                             PyObject **args)
{
    cJSON *spec = cJSON_Parse(cfg->spec_json ? cfg->spec_json : "");
    const cJSON *py = cJSON_GetObjectItemCaseSensitive(spec, "pytorch");
    const cJSON *main = cJSON_GetObjectItemCaseSensitive(py, "script");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(py, "args"), *a;
    loom_error *e = NULL;
    if (!cJSON_IsString(main) || (list && !cJSON_IsArray(list))) {
        e = g_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                              "edtPyTorch: the spec names no script (\"pytorch\": {\"script\": "
                              "FILE, \"args\": [...]}): submit a Python --model-main");
    } else {
        snprintf(script, len, "%s/%s", cfg->code_dir, main->valuestring);
        *args = PyList_New(0);
        cJSON_ArrayForEach(a, list) {
            PyObject *s = PyUnicode_FromString(cJSON_IsString(a) ? a->valuestring : "");
            PyList_Append(*args, s);
            Py_XDECREF(s);
        }
    }
    cJSON_Delete(spec);
    return e;
}

/* A job may name an interpreter (--msd-env PYTHON=...); this adapter runs
 * only the one whose libpython it embeds. */
static loom_error *check_python(void)
{
    const char *want = getenv("PYTHON");
    if (!want || !*want)
        return NULL;
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(want, a) && realpath(LOOM_PYTHON_EXECUTABLE, b) && !strcmp(a, b))
        return NULL;
    return g_host->error_newf(LOOM_ERR_UNSUPPORTED,
                              "edtPyTorch embeds %s (the interpreter %s); the job asks for "
                              "PYTHON=%s, which it cannot run (drop PYTHON, or run the script as "
                              "a launch-style distPyTorch job)",
                              LOOM_LIBPYTHON_SONAME, LOOM_PYTHON_EXECUTABLE, want);
}

/* RESULT_DIR/log/python names the interpreter the job runs, for `loom
 * exec view` (as the host writes it for launch-style Python jobs). */
static void record_python(void)
{
    const char *result_dir = getenv("RESULT_DIR");
    if (!result_dir || !*result_dir)
        return;
    char path[PATH_MAX + 32], tmp[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/log/python", result_dir);
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    int ok = fprintf(f, "%s (embedded %s)", LOOM_PYTHON_EXECUTABLE, LOOM_LIBPYTHON_SONAME) > 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0)
        unlink(tmp);
}

/* Whether this process is a `loom worker` (argv[1] "worker"). */
static int in_loom_worker(void)
{
    char buf[512];
    FILE *f = fopen("/proc/self/cmdline", "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    size_t first = strnlen(buf, n);
    return first + 1 < n && !strcmp(buf + first + 1, "worker");
}

static loom_error *start_trainer(loom_framework_instance *inst, const loom_trainer_config *cfg)
{
    char script[PATH_MAX + 256];
    PyObject *args = NULL;
    loom_error *e = read_spec(cfg, script, sizeof script, &args);
    if (e)
        return e;
    PyObject *settings = PyObject_CallMethod(g_runtime, "run_script", "sOK", script, args,
                                             (unsigned long long)cfg->seed);
    Py_DECREF(args);
    if (!settings)
        return py_fail("the script");
    Py_DECREF(settings);
    inst->trainer = PyObject_CallMethod(g_runtime, "Trainer", "I", (unsigned)cfg->rank);
    if (!inst->trainer)
        return py_fail("FabricModel");
    if ((e = dataset_lengths(inst)) || (e = bind_buffers(inst, cfg)) || (e = collect_views(inst)))
        return e;
    return NULL;
}

static loom_error *pytorch_create(const loom_framework_factory *self,
                                  const loom_trainer_config *cfg,
                                  loom_framework_instance **out)
{
    (void)self;
    *out = NULL;
    if (!LOOM_STRUCT_HAS(cfg, loom_trainer_config, data_dir))
        return g_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                 "edtPyTorch: create: loom_trainer_config is too small");
    if (cfg->device.kind != LOOM_DEVICE_CPU)
        return g_host->error_new(LOOM_ERR_UNSUPPORTED,
                                 "edtPyTorch: this adapter trains on CPU workers only "
                                 "(--workerDeviceType cpu)");
    if (!in_loom_worker())
        return g_host->error_new(LOOM_ERR_UNSUPPORTED,
                                 "edtPyTorch: the job's Python runs only in its sandboxed "
                                 "`loom worker` processes (SYNC mode), never in the host");
    loom_error *e = check_python();
    if (!e)
        record_python();
    if (e || (e = python_start()))
        return e;
    loom_framework_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return g_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "edtPyTorch: out of memory");
    PyGILState_STATE g = PyGILState_Ensure();
    e = start_trainer(inst, cfg);
    PyGILState_Release(g);
    if (e) {
        pytorch_destroy(inst);
        return e;
    }
    g_host->log(g_host, LOOM_LOG_INFO,
                "edtPyTorch: rank %u: embedded %s (%s), %llu parameters in %u state tensors, "
                "%llu training and %llu test samples",
                (unsigned)cfg->rank, LOOM_LIBPYTHON_SONAME, LOOM_PYTHON_EXECUTABLE,
                (unsigned long long)inst->count, (unsigned)inst->view_count,
                (unsigned long long)inst->train_size, (unsigned long long)inst->test_size);
    *out = inst;
    return NULL;
}

/* ---- the trainer's calls --------------------------------------------- */

static loom_error *pytorch_dataset_size(loom_framework_instance *inst, int32_t split,
                                        uint64_t *count)
{
    if (split != LOOM_SPLIT_TRAIN && split != LOOM_SPLIT_TEST)
        return g_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                  "edtPyTorch: dataset_size: unknown split %d", (int)split);
    *count = split == LOOM_SPLIT_TRAIN ? inst->train_size : inst->test_size;
    return NULL;
}

static void set_flat_view(loom_tensor_view *v, const char *name, float *data, uint64_t count)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = LOOM_DTYPE_F32;
    v->ndim = 1;
    v->shape[0] = (int64_t)count;
    v->name = name;
    v->data = data;
    v->nbytes = count * sizeof(float);
}

static loom_error *pytorch_buffers(loom_framework_instance *inst, loom_tensor_view *params,
                                   loom_tensor_view *grads)
{
    set_flat_view(params, "params", inst->params, inst->count);
    set_flat_view(grads, "grads", inst->grads, inst->count);
    return NULL;
}

static loom_error *pytorch_zero_grad(loom_framework_instance *inst)
{
    memset(inst->grads, 0, (size_t)inst->count * sizeof(float));
    return NULL;
}

static PyObject *index_list(const uint64_t *indices, uint32_t count)
{
    PyObject *list = PyList_New(count);
    for (uint32_t i = 0; list && i < count; i++)
        PyList_SET_ITEM(list, i, PyLong_FromUnsignedLongLong(indices[i]));
    return list;
}

/* A metric name that lives as long as the instance. */
static const char *metric_name(loom_framework_instance *inst, const char *name)
{
    for (int i = 0; i < LOOM_MAX_METRICS; i++) {
        if (!inst->metric_names[i])
            inst->metric_names[i] = strdup(name);
        if (inst->metric_names[i] && !strcmp(inst->metric_names[i], name))
            return inst->metric_names[i];
    }
    return NULL;
}

/* [(name, value), ...] from the Python half into `out`. */
static loom_error *take_metrics(loom_framework_instance *inst, PyObject *list, loom_metrics *out,
                                const char *what)
{
    if (!out)
        return NULL;
    out->struct_size = sizeof *out;
    out->count = 0;
    Py_ssize_t n = PyList_Size(list);
    for (Py_ssize_t i = 0; i < n && out->count < LOOM_MAX_METRICS; i++) {
        const char *name;
        double value;
        if (!PyArg_ParseTuple(PyList_GetItem(list, i), "sd", &name, &value))
            return py_fail(what);
        const char *kept = metric_name(inst, name);
        if (kept)
            out->items[out->count++] = (loom_metric){kept, value};
    }
    return NULL;
}

static loom_error *call_with_indices(loom_framework_instance *inst, const char *method,
                                     const char *what, int split, const uint64_t *indices,
                                     uint32_t count, float scale, loom_metrics *out)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *list = index_list(indices, count);
    PyObject *r = !list ? NULL
                  : split < 0 ? PyObject_CallMethod(inst->trainer, method, "Od", list, (double)scale)
                              : PyObject_CallMethod(inst->trainer, method, "iO", split, list);
    Py_XDECREF(list);
    loom_error *e = r ? take_metrics(inst, r, out, what) : py_fail(what);
    Py_XDECREF(r);
    if (e)
        stop_worker(e);
    PyGILState_Release(g);
    return e;
}

static loom_error *pytorch_forward_backward(loom_framework_instance *inst,
                                            const uint64_t *indices, uint32_t count,
                                            float grad_scale, loom_metrics *out)
{
    return call_with_indices(inst, "forward_backward", "forward/backward", -1, indices, count,
                             grad_scale, out);
}

static loom_error *pytorch_evaluate(loom_framework_instance *inst, int32_t split,
                                    const uint64_t *indices, uint32_t count, loom_metrics *out)
{
    if (split != LOOM_SPLIT_TRAIN && split != LOOM_SPLIT_TEST)
        return g_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                  "edtPyTorch: evaluate: unknown split %d", (int)split);
    return call_with_indices(inst, "evaluate", "evaluation", split, indices, count, 0, out);
}

static loom_error *pytorch_apply(loom_framework_instance *inst, const loom_step_info *step)
{
    if (!step)
        return g_host->error_new(LOOM_ERR_INVALID_ARGUMENT, "edtPyTorch: apply: no step info");
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(inst->trainer, "apply", "IIKK", (unsigned)step->epoch,
                                      (unsigned)step->epochs,
                                      (unsigned long long)step->iteration,
                                      (unsigned long long)step->steps_per_epoch);
    loom_error *e = r ? NULL : py_fail("optimizer step or a logger callback");
    Py_XDECREF(r);
    if (e)
        stop_worker(e);
    PyGILState_Release(g);
    return e;
}

/* The job's mean metrics over every worker: the driver logger callback's,
 * in the one worker that runs it. */
static loom_error *pytorch_job_metrics(loom_framework_instance *inst, int32_t split,
                                       const loom_metrics *metrics, const loom_step_info *step,
                                       uint32_t workers)
{
    if (!metrics || !step)
        return g_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                 "edtPyTorch: job_metrics: no metrics or step info");
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *list = PyList_New(0);
    for (uint32_t i = 0; list && i < metrics->count && i < LOOM_MAX_METRICS; i++) {
        PyObject *item = Py_BuildValue("(sd)", metrics->items[i].name, metrics->items[i].value);
        if (!item || PyList_Append(list, item) != 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    PyObject *r = list ? PyObject_CallMethod(inst->trainer, "job_metrics", "iOKII", (int)split,
                                             list, (unsigned long long)step->iteration,
                                             (unsigned)step->epoch, (unsigned)workers)
                       : NULL;
    Py_XDECREF(list);
    loom_error *e = r ? NULL : py_fail("the driver logger callback");
    Py_XDECREF(r);
    if (e)
        stop_worker(e);
    PyGILState_Release(g);
    return e;
}

static loom_error *pytorch_state_tensors(loom_framework_instance *inst, loom_tensor_view *views,
                                         int32_t *roles, uint32_t capacity, uint32_t *count)
{
    *count = inst->view_count;
    for (uint32_t i = 0; i < inst->view_count && i < capacity; i++) {
        if (views)
            views[i] = inst->views[i];
        if (roles)
            roles[i] = inst->roles[i];
    }
    return NULL;
}

static const loom_framework_factory pytorch_factory = {
    .struct_size = sizeof(loom_framework_factory),
    .style = LOOM_FRAMEWORK_TRAINER,
    .create = pytorch_create,
    .destroy = pytorch_destroy,
    .dataset_size = pytorch_dataset_size,
    .buffers = pytorch_buffers,
    .zero_grad = pytorch_zero_grad,
    .forward_backward = pytorch_forward_backward,
    .apply = pytorch_apply,
    .evaluate = pytorch_evaluate,
    .state_tensors = pytorch_state_tensors,
    .job_metrics = pytorch_job_metrics,
};

static loom_error *pytorch_init(const loom_host *host)
{
    g_host = host;
    return NULL;
}

static void pytorch_deinit(void) { g_host = NULL; }

static const void *pytorch_get_factory(const char *id)
{
    return strcmp(id, LOOM_FRAMEWORK_FACTORY_ID) == 0 ? &pytorch_factory : NULL;
}

static const loom_module pytorch_module = {
    LOOM_MODULE_HEADER,
    .id = "edtPyTorch",
    .version = "0.1.0",
    .description = "WMLA FabricModel scripts under the elastic trainer (embeds "
                   LOOM_LIBPYTHON_SONAME ")",
    .init = pytorch_init,
    .deinit = pytorch_deinit,
    .get_factory = pytorch_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void) { return &pytorch_module; }
