/* tests/plugins/trust/misbehaving_logger.c - driver loggers that misbehave
 * in log_train_metrics, one per build (LOGGER_MODE): "crash" dereferences
 * NULL, "loop" never returns, "empty" does nothing (the benchmark's
 * baseline), "snoop" tries to open the host's own files (LOOM_HOME's
 * database, log and credentials) for reading and writing and records in
 * snoop.txt what it could. Each create appends a line to creates.txt in
 * its own folder, so a test can count how often the host started it. */
#include <fcntl.h>
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODE_CRASH 1
#define MODE_LOOP 2
#define MODE_EMPTY 3
#define MODE_SNOOP 4

#if LOGGER_MODE == MODE_SNOOP
/* One line per target and access: "loom.db read denied". */
static void snoop(const char *plugin_dir)
{
    /* The home is four folders up: HOME/execs/ID/plugins/NAME (a plugin
     * gets a job's environment, not the host's LOOM_HOME). */
    char home[1024], out_path[1024];
    snprintf(home, sizeof home, "%s", plugin_dir);
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(home, '/');
        if (slash)
            *slash = 0;
    }
    snprintf(out_path, sizeof out_path, "%s/snoop.txt", plugin_dir);
    FILE *out = fopen(out_path, "w");
    if (!out)
        return;
    const char *targets[] = {"loom.db", "loom.log", "credentials", "plugins"};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", home, targets[i]);
        int r = open(path, O_RDONLY), w = open(path, O_WRONLY | O_APPEND);
        fprintf(out, "%s read %s\n%s write %s\n", targets[i], r >= 0 ? "allowed" : "denied",
                targets[i], w >= 0 ? "allowed" : "denied");
        if (r >= 0)
            close(r);
        if (w >= 0)
            close(w);
    }
    fclose(out);
}
#endif

struct loom_logger_instance {
    int unused;
};
static loom_logger_instance the_instance;

static loom_error *create(const loom_logger_factory *self, const loom_logger_config *config,
                          loom_logger_instance **out)
{
    (void)self;
    if (LOOM_STRUCT_HAS(config, loom_logger_config, plugin_dir) && config->plugin_dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/creates.txt", config->plugin_dir);
        FILE *f = fopen(path, "a");
        if (f) {
            fputs("create\n", f);
            fclose(f);
        }
#if LOGGER_MODE == MODE_SNOOP
        snoop(config->plugin_dir);
#endif
    }
    *out = &the_instance;
    return NULL;
}

static void destroy(loom_logger_instance *inst) { (void)inst; }

static loom_error *log_train_metrics(loom_logger_instance *inst, const loom_metric *metrics,
                                     uint32_t count, uint64_t iteration, uint32_t epoch,
                                     uint32_t workers)
{
    (void)inst, (void)metrics, (void)count, (void)iteration, (void)epoch, (void)workers;
#if LOGGER_MODE == MODE_CRASH
    volatile int *nowhere = NULL;
    *nowhere = 1;
#elif LOGGER_MODE == MODE_LOOP
    for (volatile unsigned long spin = 0;; spin++)
        ;
#endif
    return NULL;
}

static loom_error *on_train_end(loom_logger_instance *inst, int32_t status, const char *message)
{
    (void)inst, (void)status, (void)message;
    return NULL;
}

static const loom_logger_factory factory = {
    .struct_size = sizeof factory,
    .create = create,
    .destroy = destroy,
    .log_train_metrics = log_train_metrics,
    .on_train_end = on_train_end,
};

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_LOGGER_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = LOGGER_NAME,
    .version = "0.1.0",
    .description = "A logger that misbehaves on purpose (tests)",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}
