/* util/job_env.c - see job_env.h. */
#include "util/job_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define JOB_ENV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JOB_ENV_SANITIZED 1
#endif
#endif

const char *job_env_path(void)
{
    const char *configured = getenv("LOOM_JOB_PATH");
    loom_error *invalid = configured ? job_env_path_valid(configured) : NULL;
    loom_err_free(invalid); /* loom serve refused it already */
    return configured && !invalid ? configured : JOB_ENV_PATH;
}

loom_error *job_env_path_valid(const char *dirs)
{
    if (strlen(dirs) > JOB_ENV_PATH_MAX)
        return loom_err(LOOM_E_LIMIT, "more than %d bytes", JOB_ENV_PATH_MAX);
    for (const char *p = dirs;; p++) {
        size_t n = strcspn(p, ":");
        if (n == 0 || *p != '/')
            return loom_err(LOOM_E_INVALID, "expected absolute folders separated by ':', got "
                            "\"%.*s\"", (int)n, p);
        p += n;
        if (!*p)
            return NULL;
    }
}

void job_env_free(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}

/* Sets kv (KEY=VALUE) in out[0..*n), replacing an earlier KEY. */
static int put(char **out, size_t *n, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return 0; /* not KEY=VALUE: the planners refuse these earlier */
    size_t klen = (size_t)(eq - kv), j = 0;
    while (j < *n && !(strncmp(out[j], kv, klen) == 0 && out[j][klen] == '='))
        j++;
    char *copy = strdup(kv);
    if (!copy)
        return -1;
    if (j < *n)
        free(out[j]);
    out[j < *n ? j : (*n)++] = copy;
    return 0;
}

char **job_env_build(const char *home, char *const *const layers[], int nlayers)
{
    size_t cap = 8;
    for (int l = 0; l < nlayers; l++)
        for (char *const *e = layers[l]; e && *e; e++)
            cap++;
    char **out = calloc(cap + 1, sizeof *out);
    if (!out)
        return NULL;
    size_t n = 0;
    int bad = 0;
#ifdef JOB_ENV_SANITIZED
    static const char *const sanitizer[] = {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"};
    for (size_t i = 0; i < sizeof sanitizer / sizeof *sanitizer && !bad; i++) {
        const char *v = getenv(sanitizer[i]);
        char kv[1024];
        if (v && snprintf(kv, sizeof kv, "%s=%s", sanitizer[i], v) < (int)sizeof kv)
            bad = put(out, &n, kv) != 0;
    }
#endif
    char home_kv[4200], path_kv[JOB_ENV_PATH_MAX + 8];
    snprintf(home_kv, sizeof home_kv, "HOME=%s", home ? home : "/");
    snprintf(path_kv, sizeof path_kv, "PATH=%s", job_env_path());
    const char *base[] = {path_kv, "LANG=" JOB_ENV_LANG, home_kv};
    for (size_t i = 0; i < sizeof base / sizeof *base && !bad; i++)
        bad = put(out, &n, base[i]) != 0;
    for (int l = 0; l < nlayers && !bad; l++)
        for (char *const *e = layers[l]; e && *e && !bad; e++)
            bad = put(out, &n, *e) != 0;
    if (bad) {
        job_env_free(out);
        return NULL;
    }
    return out;
}

const char *job_env_get(char *const *env, const char *key)
{
    size_t klen = strlen(key);
    const char *found = NULL;
    for (char *const *e = env; e && *e; e++)
        if (strncmp(*e, key, klen) == 0 && (*e)[klen] == '=')
            found = *e + klen + 1;
    return found;
}

void job_env_which(char *const *env, const char *name, char *out, size_t len)
{
    const char *path = job_env_get(env, "PATH");
    out[0] = '\0';
    while (path && *path) {
        size_t n = strcspn(path, ":");
        char candidate[4096];
        if (n > 0 && n + strlen(name) + 2 <= sizeof candidate) {
            snprintf(candidate, sizeof candidate, "%.*s/%s", (int)n, path, name);
            if (access(candidate, X_OK) == 0) {
                snprintf(out, len, "%s", candidate);
                return;
            }
        }
        path += n + (path[n] == ':');
    }
}

int job_env_to_fd(char *const *env)
{
    int fd = memfd_create("loom-job-env", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (char *const *e = env; e && *e; e++) {
        const char *p = *e;
        size_t left = strlen(p) + 1; /* with its NUL */
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int saved = errno ? errno : EIO;
                close(fd);
                errno = saved;
                return -1;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    return fd;
}

int job_env_from_fd(int fd, char **block, char ***env)
{
    *block = NULL;
    *env = NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (len == cap) {
            if (cap >= JOB_ENV_MAX_BYTES) {
                free(buf);
                errno = E2BIG;
                return -1;
            }
            cap *= 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown)
                break;
            buf = grown;
        }
        ssize_t r = pread(fd, buf + len, cap - len, (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int saved = errno;
            free(buf);
            errno = saved;
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    buf[len] = '\0';
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += buf[i] == '\0';
    char **out = calloc(count + 2, sizeof *out);
    if (!out) {
        free(buf);
        errno = ENOMEM;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        if (buf[i] && strchr(buf + i, '='))
            out[k++] = buf + i;
    *block = buf;
    *env = out;
    return 0;
}
