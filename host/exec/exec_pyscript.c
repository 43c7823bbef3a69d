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
#include "util/user_tree.h"

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

/* A fresh file `rel` of the exec folder (an old one, or a link the job
 * left, removed first), open for the reader's output. */
static loom_error *fresh_output(const char *result_dir, const char *rel, int *fd)
{
    loom_error *e = utree_unlink_in(result_dir, rel);
    int root = -1;
    if (!e)
        e = utree_root(result_dir, &root);
    if (!e)
        e = utree_create(root, rel, 0644, fd);
    if (root >= 0)
        close(root);
    return e;
}

/* Runs the settings reader, its output in the exec folder's out_rel (and
 * out_rel.err) made through util/user_tree: on a restart the folder is the
 * job's. On success *parsed is what it printed. */
static loom_error *read_settings(const char *fw_name, const char *script, const dlicmd *d,
                                 const char *result_dir, const char *out_rel, cJSON **parsed)
{
    char installed[PATH_MAX], reader[PATH_MAX + 48], err_rel[PATH_MAX + 8];
    job_sandbox_install_dir(installed, sizeof installed);
    snprintf(reader, sizeof reader, "%s/libs/edt_script_settings.py", installed);
    if (access(reader, R_OK) != 0)
        return loom_err(LOOM_E_UNAVAILABLE, "%s: loom's installed files lack %s", fw_name, reader);
    snprintf(err_rel, sizeof err_rel, "%s.err", out_rel);
    int out_fd = -1, err_fd = -1;
    loom_error *e = fresh_output(result_dir, out_rel, &out_fd);
    if (!e)
        e = fresh_output(result_dir, err_rel, &err_fd);
    if (e) {
        if (out_fd >= 0)
            close(out_fd);
        return loom_err_wrap(e, "%s: the settings reader's output", fw_name);
    }
    char found[PATH_MAX];
    const char *python = probe_python(found, sizeof found);
    int argc = 0;
    char **argv = calloc((size_t)d->arg_count + 6, sizeof *argv);
    if (!argv) {
        close(out_fd);
        close(err_fd);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    argv[argc++] = (char *)python;
    argv[argc++] = "-I";
    argv[argc++] = reader;
    argv[argc++] = (char *)script;
    for (int i = 0; i < d->arg_count; i++)
        argv[argc++] = d->args[i];
    char path_kv[JOB_ENV_PATH_MAX + 8];
    snprintf(path_kv, sizeof path_kv, "PATH=%s", job_env_path());
    char *envp[] = {"LC_ALL=C.UTF-8", path_kv, NULL};
    spawn_spec spec = {.argv = argv, .envp = envp, .stdout_fd = out_fd, .stderr_fd = err_fd,
                       .pgid = -1};
    pid_t pid = -1;
    e = spawn_process(&spec, &pid);
    free(argv);
    close(out_fd);
    close(err_fd);
    if (e)
        return loom_err(LOOM_E_UNAVAILABLE, "%s needs Python 3 to read the script's settings: %s",
                        fw_name, loom_err_message(e));
    int status = wait_exit(pid);
    char *out = NULL, *why = NULL;
    loom_err_free(utree_read_file_in(result_dir, out_rel, 1u << 20, &out, NULL));
    loom_err_free(utree_read_file_in(result_dir, err_rel, 1u << 16, &why, NULL));
    loom_err_free(utree_unlink_in(result_dir, err_rel));
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
    static const char spec_rel[] = "log/driver/model-main.json";
    snprintf(spec_path, len, "%s/%s", rec->result_dir, spec_rel);
    cJSON *parsed = NULL;
    loom_error *e = utree_mkdirs_in(rec->result_dir, "log/driver", 0755);
    if (!e)
        e = read_settings(fw->name, script, d, rec->result_dir, spec_rel, &parsed);
    if (e)
        return e;
    cJSON *py = cJSON_AddObjectToObject(parsed, "pytorch");
    cJSON_AddStringToObject(py, "script", d->model_main);
    cJSON *args = cJSON_AddArrayToObject(py, "args");
    for (int i = 0; i < d->arg_count; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(d->args[i]));
    char *text = cJSON_Print(parsed);
    e = text ? utree_write_file_in(rec->result_dir, spec_rel, text, strlen(text), 0644)
             : loom_err(LOOM_E_INTERNAL, "out of memory");
    free(text);
    if (e) {
        cJSON_Delete(parsed);
        return loom_err_wrap(e, "%s: cannot write the training spec", fw->name);
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
