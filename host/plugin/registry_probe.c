/* plugin/registry_probe.c - see registry_probe.h. */
#include "plugin/registry_probe.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <loom/framework.h>

#include "plugin/registry.h"
#include "util/fs.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"

/* ---- the child's side ---------------------------------------------------- */

char *registry_probe_describe(const char *path)
{
    cJSON *o = cJSON_CreateObject();
    registry *r = registry_create();
    loom_error *e = r ? registry_load(r, path, "user", NULL, -1, 0)
                      : loom_err(LOOM_E_INTERNAL, "out of memory");
    if (e) {
        cJSON_AddBoolToObject(o, "ok", 0);
        cJSON_AddNumberToObject(o, "code", loom_err_code(e));
        cJSON_AddStringToObject(o, "error", loom_err_message(e));
        loom_err_free(e);
    } else {
        cJSON_AddBoolToObject(o, "ok", 1);
        size_t n = registry_list(r, -1, NULL, 0);
        registry_entry *all = calloc(n ? n : 1, sizeof *all);
        n = all ? registry_list(r, -1, all, n) : 0;
        cJSON *list = cJSON_AddArrayToObject(o, "registrations");
        for (size_t i = 0; i < n; i++) {
            cJSON *one = cJSON_CreateObject();
            cJSON_AddNumberToObject(one, "kind", all[i].kind);
            cJSON_AddStringToObject(one, "name", all[i].name);
            cJSON_AddStringToObject(one, "version", all[i].version);
            cJSON_AddStringToObject(one, "description", all[i].description);
            cJSON_AddNumberToObject(one, "style", all[i].style);
            cJSON_AddItemToArray(list, one);
        }
        /* One file, one ABI: every registration of it carries the same. */
        cJSON_AddNumberToObject(o, "abiMajor", n ? all[0].abi_major : 0);
        cJSON_AddNumberToObject(o, "abiMinor", n ? all[0].abi_minor : 0);
        free(all);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    registry_destroy(r);
    return text;
}

/* ---- the host's side ----------------------------------------------------- */

void registry_probe_free(probe_result *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free((char *)p->regs[i].name);
        free((char *)p->regs[i].version);
        free((char *)p->regs[i].description);
    }
    free(p->regs);
    free(p);
}

/* Reads the child's stdout until EOF, the limit or the deadline. */
static loom_error *read_answer(int fd, pid_t pid, char **out)
{
    char *buf = malloc(REGISTRY_PROBE_MAX_OUTPUT + 1);
    size_t len = 0;
    int64_t deadline = time_mono_ms() + REGISTRY_PROBE_DEADLINE_MS;
    loom_error *e = buf ? NULL : loom_err(LOOM_E_INTERNAL, "out of memory");
    while (!e) {
        int64_t left = deadline - time_mono_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            kill(pid, SIGKILL);
            e = loom_err(LOOM_E_INVALID, "loading it took over %d ms: its probe process was killed",
                         REGISTRY_PROBE_DEADLINE_MS);
            break;
        }
        ssize_t n = read(fd, buf + len, REGISTRY_PROBE_MAX_OUTPUT - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == REGISTRY_PROBE_MAX_OUTPUT) {
            kill(pid, SIGKILL);
            e = loom_err(LOOM_E_INVALID, "its probe printed more than %u bytes",
                         REGISTRY_PROBE_MAX_OUTPUT);
        }
    }
    if (e) {
        free(buf);
        return e;
    }
    buf[len] = 0;
    *out = buf;
    return NULL;
}

/* What the child printed, turned into registrations. */
static loom_error *parse_answer(const char *text, probe_result **out)
{
    cJSON *o = cJSON_Parse(text);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
    if (!cJSON_IsBool(ok)) {
        cJSON_Delete(o);
        return loom_err(LOOM_E_INVALID, "its probe gave no description (it printed on stdout "
                                        "while loading, or did not finish)");
    }
    if (cJSON_IsFalse(ok)) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "code");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "error");
        loom_error *e = loom_err(cJSON_IsNumber(code) && code->valueint > 0 ? code->valueint
                                                                           : LOOM_E_INVALID,
                                 "%s", cJSON_IsString(why) ? why->valuestring : "it failed to load");
        cJSON_Delete(o);
        return e;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "registrations");
    probe_result *p = calloc(1, sizeof *p);
    int n = cJSON_GetArraySize(list);
    if (!p || !(p->regs = calloc(n > 0 ? (size_t)n : 1, sizeof *p->regs))) {
        free(p);
        cJSON_Delete(o);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    const cJSON *major = cJSON_GetObjectItemCaseSensitive(o, "abiMajor");
    const cJSON *minor = cJSON_GetObjectItemCaseSensitive(o, "abiMinor");
    p->abi_major = cJSON_IsNumber(major) ? (unsigned)major->valueint : 0;
    p->abi_minor = cJSON_IsNumber(minor) ? (unsigned)minor->valueint : 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(item, "kind");
        const cJSON *style = cJSON_GetObjectItemCaseSensitive(item, "style");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "name"));
        const char *version = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "version"));
        const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "description"));
        if (!cJSON_IsNumber(kind) || kind->valueint < 0 || kind->valueint >= LOOM_KIND_COUNT || !name)
            continue;
        loom_registration *r = &p->regs[p->count++];
        r->kind = (loom_kind)kind->valueint;
        r->name = strdup(name);
        r->version = strdup(version ? version : "");
        r->description = strdup(desc ? desc : "");
        r->style = cJSON_IsNumber(style) ? style->valueint : 0;
        if (!r->name || !r->version || !r->description) {
            registry_probe_free(p);
            cJSON_Delete(o);
            return loom_err(LOOM_E_INTERNAL, "out of memory");
        }
    }
    cJSON_Delete(o);
    *out = p;
    return NULL;
}

loom_error *registry_probe_run(const char *binary, const char *path, probe_result **out)
{
    *out = NULL;
    /* The file serves no one user yet: it loads under the plugin account
     * (when the host has accounts), confined like a job, from a job's
     * clean environment. Made before the fork, which then only execs. */
    const char *argv[] = {binary, "plugin-host", "--describe", "--path", path, NULL};
    const char *reads[] = {path, NULL};
    job_sandbox_job job = {.read = reads};
    char **confined = NULL, **envp = job_env_build("/", NULL, 0);
    loom_error *wrap = envp ? job_sandbox_wrap(&job, (char *const *)argv, &confined)
                            : loom_err(LOOM_E_INTERNAL, "out of memory");
    int fds[2] = {-1, -1};
    if (!wrap && pipe2(fds, O_CLOEXEC) != 0)
        wrap = loom_err(LOOM_E_INTERNAL, "pipe: %s", strerror(errno));
    if (wrap) {
        job_sandbox_argv_free(confined);
        job_env_free(envp);
        return wrap;
    }
    char *const *run = confined ? confined : (char *const *)argv;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        job_sandbox_argv_free(confined);
        job_env_free(envp);
        return loom_err(LOOM_E_INTERNAL, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* The description goes to fd 3: what the plugin prints while
         * loading cannot pass for it. */
        if (dup2(fds[1], REGISTRY_PROBE_FD) < 0)
            _exit(127);
        execve(run[0], run, envp);
        _exit(127);
    }
    job_sandbox_argv_free(confined);
    job_env_free(envp);
    close(fds[1]);
    char *text = NULL;
    loom_error *e = read_answer(fds[0], pid, &text);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!e && WIFSIGNALED(status))
        e = loom_err(LOOM_E_INVALID, "loading it killed its probe process (signal %d, %s)",
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (!e && WIFEXITED(status) && WEXITSTATUS(status) != 0 && !strchr(text, '{'))
        e = loom_err(LOOM_E_INVALID, "loading it failed: its probe process exited with status %d",
                     WEXITSTATUS(status));
    if (!e)
        e = parse_answer(text, out);
    free(text);
    return e;
}
