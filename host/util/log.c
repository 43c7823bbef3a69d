/* util/log.c - see log.h. A mutex keeps lines whole across threads. */
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static int log_level = -1;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int log_open(const char *path)
{
    FILE *f = path ? fopen(path, "a") : NULL;
    if (path && !f)
        return -1;
    pthread_mutex_lock(&log_lock);
    if (log_file)
        fclose(log_file);
    log_file = f;
    pthread_mutex_unlock(&log_lock);
    return 0;
}

void log_close(void) { log_open(NULL); }

void log_set_level(int level) { log_level = level; }

static int effective_level(void)
{
    if (log_level < 0) {
        const char *env = getenv("LOOM_LOG_LEVEL");
        log_level = (env && strcmp(env, "debug") == 0) ? LOG_DEBUG : LOG_INFO;
    }
    return log_level;
}

void log_vmsg(int level, const char *source, const char *fmt, va_list ap)
{
    if (level < effective_level())
        return;
    if (level < LOG_DEBUG || level > LOG_ERROR)
        level = LOG_ERROR;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    pthread_mutex_lock(&log_lock);
    FILE *out = log_file ? log_file : stderr;
    fprintf(out, "%s.%03ldZ %-5s %s: ", stamp, ts.tv_nsec / 1000000L,
            level_names[level], source ? source : "host");
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    fflush(out);
    pthread_mutex_unlock(&log_lock);
}

void log_msg(int level, const char *source, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, source, fmt, ap);
    va_end(ap);
}
