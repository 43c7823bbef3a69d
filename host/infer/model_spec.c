/* infer/model_spec.c - see model_spec.h. */
#include "infer/model_spec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/ffi_call.h"
#include "plugin/plugin.h"
#include "util/fs.h"
#include "util/user_tree.h"

static const char *const runtime_names[] = {"so", "lua", "ffi", "native", "registered"};

const char *model_runtime_name(model_runtime r)
{
    return (unsigned)r <= MODEL_RUNTIME_REGISTERED ? runtime_names[r] : "unknown";
}

/* A string field: NULL when absent; -1 (err set) when present but not a
 * string. */
static int string_field(const cJSON *o, const char *key, const char **out, const char *source,
                        loom_error **err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v)) {
        *err = loom_err(LOOM_E_INVALID, "%s: %s: expected a string", source, key);
        return -1;
    }
    *out = v->valuestring;
    return 0;
}

/* `rel` resolved inside `dir`, into out. A path that leaves the directory
 * is refused by its text or without following it out, so the answer is the
 * same whether or not its target exists (the host reads as root). */
static loom_error *inside_dir(const char *dir, const char *rel, const char *field, char *out,
                              size_t outlen)
{
    if (utree_resolve_named(dir, rel, 1, out, outlen) == 0)
        return NULL;
    if (errno == EXDEV)
        return loom_err(LOOM_E_INVALID,
                        "model.json: %s: \"%s\" is refused: it names a file outside the model "
                        "directory (expected a path relative to it, without \"..\")",
                        field, rel);
    if (errno == EISDIR || errno == EINVAL)
        return loom_err(LOOM_E_INVALID, "model.json: %s: \"%s\" is not a file", field, rel);
    return loom_err(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INVALID,
                    "model.json: %s: \"%s\": %s in the model directory", field, rel,
                    strerror(errno));
}

/* [{KEYNAME: "...", "value": "..."}] into env (when given) */
static loom_error *pairs(const cJSON *o, const char *field, const char *keyname,
                         const char *source, model_env *env, int *nenv)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!a || cJSON_IsNull(a))
        return NULL;
    if (!cJSON_IsArray(a))
        return loom_err(LOOM_E_INVALID, "%s: %s: expected an array of {\"%s\", \"value\"}",
                        source, field, keyname);
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, a)
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(item, keyname);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, "value");
        if (!cJSON_IsObject(item) || !cJSON_IsString(k) || !k->valuestring[0] ||
            !(cJSON_IsString(v) || cJSON_IsNumber(v)))
            return loom_err(LOOM_E_INVALID,
                            "%s: %s[%d]: expected {\"%s\": non-empty string, \"value\": string}",
                            source, field, i, keyname);
        if (env) {
            if (*nenv >= MODEL_ENV_MAX)
                return loom_err(LOOM_E_LIMIT, "%s: %s: more than %d entries", source, field,
                                MODEL_ENV_MAX);
            if (strchr(k->valuestring, '=') || strlen(k->valuestring) >= sizeof env->name)
                return loom_err(LOOM_E_INVALID, "%s: %s[%d]: name \"%s\" is not a variable name",
                                source, field, i, k->valuestring);
            if (cJSON_IsString(v) && strlen(v->valuestring) >= sizeof env->value)
                return loom_err(LOOM_E_LIMIT, "%s: %s[%d]: the value of \"%s\" is %zu bytes, "
                                "more than the limit of %zu", source, field, i, k->valuestring,
                                strlen(v->valuestring), sizeof env->value - 1);
            model_env *e = &env[(*nenv)++];
            snprintf(e->name, sizeof e->name, "%s", k->valuestring);
            if (cJSON_IsString(v))
                snprintf(e->value, sizeof e->value, "%s", v->valuestring);
            else
                snprintf(e->value, sizeof e->value, "%g", v->valuedouble);
        }
        i++;
    }
    return NULL;
}

static loom_error *check_ffi(const cJSON *root, const char *dir)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "ffi");
    if (!cJSON_IsObject(f))
        return loom_err(LOOM_E_INVALID,
                        "model.json: ffi: runtime \"ffi\" needs an object {\"library\", "
                        "\"symbol\", \"signature\", \"output_size\"}");
    loom_error *e = NULL;
    const char *library, *symbol, *signature;
    if (string_field(f, "library", &library, "model.json: ffi", &e) ||
        string_field(f, "symbol", &symbol, "model.json: ffi", &e) ||
        string_field(f, "signature", &signature, "model.json: ffi", &e))
        return e;
    if (!library || !symbol || !signature)
        return loom_err(LOOM_E_INVALID, "model.json: ffi: %s is required",
                        !library ? "library" : !symbol ? "symbol" : "signature");
    char path[PATH_MAX];
    if ((e = inside_dir(dir, library, "ffi.library", path, sizeof path)) != NULL)
        return e;
    ffi_signature sig;
    return loom_err_wrap(ffi_sig_parse(signature, &sig), "model.json: ffi.signature");
}

/* so, lua, ffi, native, or any other plugin name: a registered kernel's,
 * which only a host can resolve (infer.c). */
static loom_error *parse_runtime(const char *text, model_spec *out)
{
    for (int i = 0; i < MODEL_RUNTIME_REGISTERED; i++)
        if (text && strcmp(text, runtime_names[i]) == 0) {
            out->runtime = (model_runtime)i;
            return NULL;
        }
    if (text && loom_name_valid(text) && strcmp(text, "registered") != 0) {
        out->runtime = MODEL_RUNTIME_REGISTERED;
        snprintf(out->kernel_name, sizeof out->kernel_name, "%s", text);
        return NULL;
    }
    return loom_err(LOOM_E_INVALID,
                    "model.json: runtime: expected so, lua, ffi, native or a registered "
                    "kernel's name (1-63 of A-Z a-z 0-9 _ . -), got \"%s\"",
                    text ? text : "(missing)");
}

static loom_error *read_fields(const cJSON *root, const char *dir, model_spec *out)
{
    loom_error *e = NULL;
    const char *name, *tag, *runtime, *kernel, *weight, *schema;
    if (string_field(root, "name", &name, "model.json", &e) ||
        string_field(root, "tag", &tag, "model.json", &e) ||
        string_field(root, "runtime", &runtime, "model.json", &e) ||
        string_field(root, "kernel_path", &kernel, "model.json", &e) ||
        string_field(root, "weight_path", &weight, "model.json", &e) ||
        string_field(root, "schema_version", &schema, "model.json", &e))
        return e;
    if (!name || !loom_name_valid(name))
        return loom_err(LOOM_E_INVALID,
                        "model.json: name: expected 1-63 of A-Z a-z 0-9 _ . -, got \"%s\"",
                        name ? name : "(missing)");
    if (tag && strlen(tag) >= sizeof out->tag)
        return loom_err(LOOM_E_INVALID, "model.json: tag: %zu bytes, more than the limit of %zu",
                        strlen(tag), sizeof out->tag - 1);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->tag, sizeof out->tag, "%s", tag ? tag : "");
    if ((e = parse_runtime(runtime, out)) != NULL)
        return e;
    if (out->runtime == MODEL_RUNTIME_REGISTERED && kernel && kernel[0])
        return loom_err(LOOM_E_INVALID, "model.json: kernel_path: runtime \"%s\" names a "
                        "registered kernel, whose file the host holds: leave kernel_path out "
                        "(or say runtime \"so\" or \"lua\" to serve a kernel in the "
                        "directory)", runtime);

    if (kernel && kernel[0] &&
        (e = inside_dir(dir, kernel, "kernel_path", out->kernel_path, sizeof out->kernel_path)))
        return e;
    if ((out->runtime == MODEL_RUNTIME_SO || out->runtime == MODEL_RUNTIME_LUA) &&
        !out->kernel_path[0])
        return loom_err(LOOM_E_INVALID, "model.json: kernel_path: runtime \"%s\" needs the "
                        "kernel's file (a .%s in the model directory)", runtime,
                        out->runtime == MODEL_RUNTIME_SO ? "so" : "lua");
    if (weight && weight[0] &&
        (e = inside_dir(dir, weight, "weight_path", out->weight_path, sizeof out->weight_path)))
        return e;
    if (out->runtime == MODEL_RUNTIME_NATIVE && !out->weight_path[0])
        return loom_err(LOOM_E_INVALID, "model.json: weight_path: runtime \"native\" needs the "
                        "trained weights (model.safetensors)");
    if (out->runtime == MODEL_RUNTIME_FFI && (e = check_ffi(root, dir)) != NULL)
        return e;
    if ((e = pairs(root, "attributes", "key", "model.json", NULL, NULL)) != NULL ||
        (e = model_spec_tensors(root, out)) != NULL)
        return e;
    return pairs(root, "mk_environments", "name", "model.json", out->env, &out->nenv);
}

loom_error *model_spec_read(const char *dir, model_spec *out, char **json_out)
{
    memset(out, 0, sizeof *out);
    if (json_out)
        *json_out = NULL;
    if (!fs_is_dir(dir))
        return loom_err(LOOM_E_NOT_FOUND, "%s: not a directory", dir);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/model.json", dir);
    size_t len = 0;
    char *text;
    loom_error *unread = fs_read_file(path, MODEL_JSON_MAX, &text, &len);
    if (unread && loom_err_errno(unread) == ENOENT) {
        loom_err_free(unread);
        return loom_err(LOOM_E_NOT_FOUND, "%s: missing (every model directory holds a "
                        "model.json)", path);
    }
    if (unread) /* too large keeps its code; the rest is a bad directory */
        return loom_err_code(unread) == LOOM_E_TOO_LARGE ? unread
                                                          : loom_err_recode(unread, LOOM_E_INVALID);
    const char *where = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &where, 1);
    loom_error *e = NULL;
    if (!root || !cJSON_IsObject(root))
        e = loom_err(LOOM_E_INVALID, "%s: not a JSON object (malformed near byte %ld)", path,
                     root ? 0L : (long)(where ? where - text : 0));
    else
        e = read_fields(root, dir, out);
    cJSON_Delete(root);
    if (e || !json_out)
        free(text);
    else
        *json_out = text;
    return e;
}

/* ---- profiles ------------------------------------------------------------ */

cJSON *model_profile_default_json(const char *name)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "schema_version", "1.2");
    cJSON_AddStringToObject(p, "type", "inference");
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddNumberToObject(p, "replica", 1);
    cJSON *pol = cJSON_AddObjectToObject(p, "policy");
    cJSON_AddStringToObject(pol, "name", "capacity");
    cJSON_AddNumberToObject(pol, "schedule_interval", 3);
    cJSON_AddNumberToObject(pol, "kernel_min", 1);
    cJSON_AddNumberToObject(pol, "kernel_max", 1);
    cJSON_AddNumberToObject(pol, "kernel_delay_release_time", 60);
    cJSON_AddNumberToObject(pol, "task_execution_timeout", 60);
    cJSON_AddNumberToObject(pol, "task_batch_size", 1);
    cJSON *k = cJSON_AddObjectToObject(p, "kernel");
    cJSON_AddNumberToObject(k, "connection_timeout", 90);
    cJSON_AddStringToObject(k, "gpu", "no");
    cJSON_AddArrayToObject(k, "envs");
    return p;
}

/* A number field of `o` into *out (left as is when absent). */
static loom_error *number(const cJSON *o, const char *section, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return loom_err(LOOM_E_INVALID, "%s%s: expected a number", section, key);
    *out = v->valuedouble;
    return NULL;
}

static loom_error *rule(int ok, const char *source, const char *field, const char *expected,
                        double got)
{
    return ok ? NULL : loom_err(LOOM_E_INVALID, "%s: %s: expected %s, got %g", source, field,
                                expected, got);
}

static loom_error *read_policy(const cJSON *pol, const char *source, model_profile *p)
{
    double min = p->kernel_min, max = p->kernel_max, batch = p->batch_size;
    loom_error *e;
    if ((e = number(pol, "policy.", "kernel_min", &min)) ||
        (e = number(pol, "policy.", "kernel_max", &max)) ||
        (e = number(pol, "policy.", "kernel_delay_release_time", &p->delay_release_s)) ||
        (e = number(pol, "policy.", "schedule_interval", &p->schedule_interval_s)) ||
        (e = number(pol, "policy.", "task_execution_timeout", &p->execution_timeout_s)) ||
        (e = number(pol, "policy.", "task_batch_size", &batch)))
        return loom_err_wrap(e, "%s", source);
    /* kernel_min 0: the service holds no device while idle (scale to zero). */
    if ((e = rule(min >= 0 && min == floor(min) && min <= MODEL_KERNEL_LIMIT, source,
                  "policy.kernel_min", "a whole number from 0 to 64", min)) ||
        (e = rule(max == -1 || (max == floor(max) && max >= min && max >= 1 &&
                                max <= MODEL_KERNEL_LIMIT),
                  source, "policy.kernel_max", "-1 or a whole number from kernel_min (and 1) "
                  "to 64", max)) ||
        (e = rule(p->delay_release_s > 0, source, "policy.kernel_delay_release_time",
                  "seconds > 0", p->delay_release_s)) ||
        (e = rule(p->schedule_interval_s > 0, source, "policy.schedule_interval",
                  "seconds > 0", p->schedule_interval_s)) ||
        (e = rule(p->execution_timeout_s == -1 || p->execution_timeout_s > 0, source,
                  "policy.task_execution_timeout", "-1 (none) or seconds > 0",
                  p->execution_timeout_s)) ||
        (e = rule(batch > 0 && batch == floor(batch) && batch <= MODEL_BATCH_LIMIT, source,
                  "policy.task_batch_size", "a whole number from 1 to 1024", batch)))
        return e;
    p->kernel_min = (int)min;
    p->kernel_max = (int)max;
    p->batch_size = (int)batch;
    return NULL;
}

static loom_error *read_kernel(const cJSON *k, const char *source, model_profile *p)
{
    loom_error *e = number(k, "kernel.", "connection_timeout", &p->connection_timeout_s);
    if (e)
        return loom_err_wrap(e, "%s", source);
    if ((e = rule(p->connection_timeout_s > 0, source, "kernel.connection_timeout",
                  "seconds > 0", p->connection_timeout_s)))
        return e;
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(k, "gpu");
    if (gpu) {
        const char *g = cJSON_IsString(gpu) ? gpu->valuestring : NULL;
        if (!g || (strcmp(g, "no") && strcmp(g, "shared") && strcmp(g, "exclusive")))
            return loom_err(LOOM_E_INVALID,
                            "%s: kernel.gpu: expected \"no\", \"shared\" or \"exclusive\"", source);
        snprintf(p->gpu, sizeof p->gpu, "%s", g);
    }
    char where[64];
    snprintf(where, sizeof where, "%s: kernel", source);
    return pairs(k, "envs", "name", where, p->env, &p->nenv);
}

loom_error *model_profile_parse(const cJSON *json, const char *source, model_profile *out)
{
    *out = (model_profile){.replica = 1, .kernel_min = 1, .kernel_max = 1,
                           .delay_release_s = 60, .schedule_interval_s = 3,
                           .execution_timeout_s = 60, .batch_size = 1,
                           .connection_timeout_s = 90, .gpu = "no"};
    if (!cJSON_IsObject(json))
        return loom_err(LOOM_E_INVALID, "%s: expected a JSON object", source);
    double replica = 1;
    loom_error *e = number(json, "", "replica", &replica);
    if (e)
        return loom_err_wrap(e, "%s", source);
    if ((e = rule(replica >= 1 && replica == floor(replica) && replica <= MODEL_KERNEL_LIMIT,
                  source, "replica", "a whole number from 1 to 64", replica)))
        return e;
    out->replica = (int)replica;
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(json, "policy");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(json, "kernel");
    if (pol && !cJSON_IsObject(pol))
        return loom_err(LOOM_E_INVALID, "%s: policy: expected an object", source);
    if (k && !cJSON_IsObject(k))
        return loom_err(LOOM_E_INVALID, "%s: kernel: expected an object", source);
    if (pol && (e = read_policy(pol, source, out)))
        return e;
    if (k && (e = read_kernel(k, source, out)))
        return e;
    /* One host serves the replicas as that many groups of instances. */
    int most = out->kernel_max > 0 ? out->kernel_max : out->kernel_min;
    if (out->replica * most > MODEL_KERNEL_LIMIT)
        return loom_err(LOOM_E_INVALID, "%s: replica: %d groups of up to %d instances (policy."
                        "kernel_%s) are %d, more than the limit of %d instances", source,
                        out->replica, most, out->kernel_max > 0 ? "max" : "min",
                        out->replica * most, MODEL_KERNEL_LIMIT);
    return NULL;
}

/* ---- a partial profile merged into one ---------------------------------------- */

/* The profile's fields, WMLA's included (README: the profile), by object:
 * "" the top level. A field outside these objects is not checked. */
static const struct {
    const char *object, *fields[10];
} profile_fields[] = {
    {"", {"schema_version", "type", "name", "replica", "policy", "kernel",
          "resource_allocation"}},
    {"policy", {"name", "schedule_interval", "kernel_min", "kernel_max",
                "kernel_delay_release_time", "task_execution_timeout", "task_batch_size",
                "stream_number_per_group", "stream_discard_slow_tasks"}},
    {"kernel", {"connection_timeout", "gpu", "envs"}},
};

/* Whether `key` may appear in the object at `path` ("" or "policy"...):
 * 1 known, 0 unknown, -1 an object whose fields are not checked. */
static int known_field(const char *path, const char *key)
{
    for (size_t i = 0; i < sizeof profile_fields / sizeof profile_fields[0]; i++) {
        if (strcmp(profile_fields[i].object, path) != 0)
            continue;
        for (size_t f = 0; f < 10 && profile_fields[i].fields[f]; f++)
            if (strcmp(profile_fields[i].fields[f], key) == 0)
                return 1;
        return 0;
    }
    return -1;
}

/* Checks every field of `patch` (at `path`) before anything changes. */
static loom_error *check_patch(const cJSON *into, const cJSON *patch, const char *path,
                               const char *source)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, patch) {
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(into, f->string);
        if (!have && known_field(path, f->string) == 0)
            return loom_err(LOOM_E_INVALID, "%s: %s%s%s: not a profile field", source, path,
                            *path ? "." : "", f->string);
        if (cJSON_IsObject(f) && cJSON_IsObject(have) && !*path) {
            loom_error *e = check_patch(have, f, f->string, source);
            if (e)
                return e;
        }
    }
    return NULL;
}

static loom_error *merge_into(cJSON *into, const cJSON *patch)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, patch) {
        cJSON *have = cJSON_GetObjectItemCaseSensitive(into, f->string);
        if (cJSON_IsObject(f) && cJSON_IsObject(have)) {
            loom_error *e = merge_into(have, f);
            if (e)
                return e;
            continue;
        }
        cJSON *copy = cJSON_Duplicate(f, 1);
        if (!copy)
            return loom_err(LOOM_E_INTERNAL, "out of memory");
        if (have)
            cJSON_ReplaceItemViaPointer(into, have, copy);
        else
            cJSON_AddItemToObject(into, f->string, copy);
    }
    return NULL;
}

loom_error *model_profile_merge(cJSON *profile, const cJSON *patch, const char *source)
{
    if (!cJSON_IsObject(profile) || !cJSON_IsObject(patch))
        return loom_err(LOOM_E_INVALID, "%s: expected a JSON object", source);
    loom_error *e = check_patch(profile, patch, "", source);
    return e ? e : merge_into(profile, patch);
}
