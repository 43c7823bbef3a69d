/* exec/exec_pyscript.c - the training spec of a trainer-style exec whose
 * --model-main is a Python script (edtPyTorch's FabricModel scripts): its
 * train() settings are read from the script's syntax tree by loom's
 * libs/edt_script_settings.py, which runs none of the script, and the spec
 * names the script and its arguments for the adapter. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "util/fs.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/spawn.h"

#define PYSCRIPT_TIMEOUT_MS 30000

int pyscript_is_script(const char *model_main)
{
    size_t n = model_main ? strlen(model_main) : 0;
    return n > 3 && !strcmp(model_main + n - 3, ".py");
}

/* Waits for pid at most PYSCRIPT_TIMEOUT_MS; -1 when it had to be killed. */
static int wait_exit(pid_t pid)
{
    int status = 0;
    for (int waited = 0;; waited += 20) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        if (r < 0 && errno != EINTR)
            return 128;
        if (waited >= PYSCRIPT_TIMEOUT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The Python jobs run (loom serve --python, else the first python3 on the
 * jobs' fixed PATH): the one whose syntax the script is read with. */
static const char *probe_python(char *found, size_t len)
{
    const char *configured = getenv("LOOM_PYTHON");
    if (configured && *configured)
        return configured;
    char path_kv[JOB_ENV_PATH_MAX + 8];
    snprintf(path_kv, sizeof path_kv, "PATH=%s", job_env_path());
    char *const job_path[] = {path_kv, NULL};
    job_env_which(job_path, "python3", found, len);
    return found[0] ? found : "python3";
}

/* Runs the settings reader; on success *training is its "training" object. */
static loom_error *read_settings(const char *fw_name, const char *script, const dlicmd *d,
                                 const char *out_path, cJSON **parsed)
{
    char installed[PATH_MAX], reader[PATH_MAX + 48], err_path[PATH_MAX + 8];
    job_sandbox_install_dir(installed, sizeof installed);
    snprintf(reader, sizeof reader, "%s/libs/edt_script_settings.py", installed);
    if (access(reader, R_OK) != 0)
        return loom_err(LOOM_E_UNAVAILABLE, "%s: loom's installed files lack %s", fw_name, reader);
    snprintf(err_path, sizeof err_path, "%s.err", out_path);
    unlink(out_path);
    unlink(err_path);
    char found[PATH_MAX];
    const char *python = probe_python(found, sizeof found);
    int argc = 0;
    char **argv = calloc((size_t)d->arg_count + 6, sizeof *argv);
    if (!argv)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    argv[argc++] = (char *)python;
    argv[argc++] = "-I";
    argv[argc++] = reader;
    argv[argc++] = (char *)script;
    for (int i = 0; i < d->arg_count; i++)
        argv[argc++] = d->args[i];
    char path_kv[JOB_ENV_PATH_MAX + 8];
    snprintf(path_kv, sizeof path_kv, "PATH=%s", job_env_path());
    char *envp[] = {"LC_ALL=C.UTF-8", path_kv, NULL};
    spawn_spec spec = {.argv = argv, .envp = envp, .stdout_path = out_path,
                       .stderr_path = err_path, .pgid = -1};
    pid_t pid = -1;
    loom_error *e = spawn_process(&spec, &pid);
    free(argv);
    if (e)
        return loom_err(LOOM_E_UNAVAILABLE, "%s needs Python 3 to read the script's settings: %s",
                        fw_name, loom_err_message(e));
    int status = wait_exit(pid);
    char *out = fs_read_file(out_path, 1u << 20, NULL), *why = fs_read_file(err_path, 1u << 16, NULL);
    unlink(err_path);
    size_t n = why ? strlen(why) : 0;
    while (n && why[n - 1] == '\n')
        why[--n] = 0;
    if (status == 0 && out && (*parsed = cJSON_Parse(out)))
        e = NULL;
    else if (status < 0)
        e = loom_err(LOOM_E_DEADLINE, "%s: reading %s's settings took more than %d s", fw_name,
                     script, PYSCRIPT_TIMEOUT_MS / 1000);
    else
        e = loom_err(status == 3 ? LOOM_E_UNAVAILABLE : LOOM_E_INVALID, "%s: %s", fw_name,
                     n ? why : "the settings reader failed without a message");
    free(out);
    free(why);
    return e;
}

loom_error *pyscript_spec(const registry_entry *fw, const store_exec *rec, const dlicmd *d,
                          char *spec_path, size_t len, cJSON **spec)
{
    char script[PATH_MAX + 32];
    snprintf(script, sizeof script, "%s/_submitted_code/%s", rec->result_dir, d->model_main);
    if (access(script, R_OK) != 0)
        return loom_err(LOOM_E_INVALID, "%s: the model directory has no script \"%s\"", fw->name,
                        d->model_main);
    char folder[PATH_MAX + 32];
    snprintf(folder, sizeof folder, "%s/log/driver", rec->result_dir);
    fs_mkdir_p(folder);
    snprintf(spec_path, len, "%s/model-main.json", folder);
    cJSON *parsed = NULL;
    loom_error *e = read_settings(fw->name, script, d, spec_path, &parsed);
    if (e)
        return e;
    cJSON *py = cJSON_AddObjectToObject(parsed, "pytorch");
    cJSON_AddStringToObject(py, "script", d->model_main);
    cJSON *args = cJSON_AddArrayToObject(py, "args");
    for (int i = 0; i < d->arg_count; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(d->args[i]));
    char *text = cJSON_Print(parsed);
    int rc = text ? fs_write_file_atomic(spec_path, text, strlen(text), 0644) : -1;
    free(text);
    if (rc != 0) {
        cJSON_Delete(parsed);
        return loom_err(LOOM_E_INTERNAL, "%s: cannot write %s", fw->name, spec_path);
    }
    *spec = parsed;
    return NULL;
}

char **pyscript_job_env(char **env)
{
    size_t n = 0;
    for (char **e = env; e && *e; e++) {
        if (!strncmp(*e, "FABRIC_HOME=", 12))
            return env;
        n++;
    }
    char **out = realloc(env, (n + 2) * sizeof *out);
    if (!out)
        return env;
    char installed[PATH_MAX], kv[PATH_MAX + 16];
    job_sandbox_install_dir(installed, sizeof installed);
    snprintf(kv, sizeof kv, "FABRIC_HOME=%s", installed);
    out[n] = strdup(kv);
    out[n + 1] = NULL;
    return out;
}
