/* cli/cmd_demo.c - `loom demo`: an embedded host with a state directory of
 * its own runs a job end to end through the same REST API and plugins a
 * user would, so a new user sees the system work with no set-up. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/server.h"
#include "cli/commands.h"
#include "util/fs.h"
#include "util/log.h"

static const char demo_usage[] =
    "usage: loom demo [--home DIR] [--keep]\n"
    "\n"
    "Starts a host on a free loopback port with its own state directory (a new\n"
    "temporary one unless --home is given), lists its built-in plugins, and\n"
    "runs a two-worker job through the 'command' framework adapter: each\n"
    "worker fits a line to its share of a data set by gradient descent and\n"
    "writes WMLA's val_dict_list.json. --keep leaves the state directory.\n";

/* The demo's model directory: a plain POSIX sh + awk program, so the demo
 * needs nothing beyond the base system. */
static const char demo_script[] =
    "#!/bin/sh\n"
    "# Fits y = a*x + b by gradient descent on this worker's share of a\n"
    "# synthetic data set (y = 3x + 2 + noise) and reports the loss per epoch.\n"
    "set -e\n"
    "epochs=${EPOCHS:-5}\n"
    "echo \"worker $RANK of $WORLD_SIZE: $epochs epochs, results in $RESULT_DIR\"\n"
    "awk -v epochs=\"$epochs\" -v rank=\"$RANK\" -v world=\"$WORLD_SIZE\" \\\n"
    "    -v out=\"$RESULT_DIR/val_dict_list-worker$RANK.json\" 'BEGIN {\n"
    "  srand(7); n = 0\n"
    "  for (i = 0; i < 400; i++) { x = i / 400; y = 3 * x + 2 + (rand() - 0.5) * 0.1\n"
    "    if (i % world == rank) { xs[n] = x; ys[n] = y; n++ } }\n"
    "  a = 0; b = 0; lr = 0.5; printf \"[\" > out\n"
    "  for (e = 1; e <= epochs; e++) {\n"
    "    for (s = 0; s < 50; s++) { ga = 0; gb = 0\n"
    "      for (i = 0; i < n; i++) { r = a * xs[i] + b - ys[i]; ga += r * xs[i]; gb += r }\n"
    "      a -= lr * ga / n; b -= lr * gb / n }\n"
    "    loss = 0; for (i = 0; i < n; i++) { r = a * xs[i] + b - ys[i]; loss += r * r }\n"
    "    loss /= n\n"
    "    printf \"epoch %d: loss %.6f a %.4f b %.4f\\n\", e, loss, a, b\n"
    "    printf \"%s{\\\"step\\\": %d, \\\"loss\\\": %.6f}\", (e > 1 ? \", \" : \"\"), e, loss >> out }\n"
    "  printf \"]\\n\" >> out }'\n";

static int write_demo_model(const char *dir)
{
    char path[4200];
    if (fs_mkdir_p(dir) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/fit.sh", dir);
    return fs_write_file_atomic(path, demo_script, strlen(demo_script), 0755);
}

int cmd_demo(int argc, char **argv, const cli_globals *g)
{
    if (cli_wants_help(argc, argv)) {
        fputs(demo_usage, stdout);
        return 0;
    }
    int keep = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else
            return cli_fail("demo: unexpected \"%s\" (see loom demo --help)", argv[i]);
    }
    char home[4096];
    if (g->home) {
        snprintf(home, sizeof home, "%s", g->home);
        keep = 1;
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(home, sizeof home, "%s/loom-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(home))
            return cli_fail("cannot create a state directory: %s", strerror(errno));
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/loom.log", home);
    fs_mkdir_p(home);
    log_open(path);
    signal(SIGPIPE, SIG_IGN);

    char err[1024];
    loomd_options opt = {.home = home, .address = "127.0.0.1", .port = 0, .hysteresis = -1};
    loomd *d = loomd_start(&opt, err, sizeof err);
    if (!d)
        return cli_fail("demo host: %s", err);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", loomd_port(d));
    cli_globals hg = {.host = url, .json = 0};
    printf("== loom demo: host %s on %s, state in %s\n\n", LOOM_VERSION, url, home);

    printf("== plugins (loaded through the SDK's ABI like anyone's)\n");
    char *list_argv[] = {"list", NULL};
    int rc = cmd_plugin(1, list_argv, &hg);

    char model_dir[4200], id[128] = "";
    snprintf(model_dir, sizeof model_dir, "%s/demo-model", home);
    if (rc == 0 && write_demo_model(model_dir) != 0)
        rc = cli_fail("cannot write the demo model directory %s", model_dir);
    if (rc == 0) {
        printf("\n== loom exec start --exec-start command --model-dir %s --model-main fit.sh "
               "--numWorker 2 --msd-env EPOCHS=5\n", model_dir);
        char *start_argv[] = {"--exec-start", "command", "--model-dir", model_dir,
                              "--model-main", "fit.sh", "--numWorker", "2",
                              "--msd-env", "EPOCHS=5", NULL};
        rc = exec_start_words(10, start_argv, &hg, id, sizeof id);
    }
    if (rc == 0) {
        printf("\n== loom exec logs %s -f\n", id);
        rc = exec_print_logs(&hg, id, 1, -1, "stdout");
    }
    if (rc == 0)
        rc = exec_wait_id(&hg, id, 60, 1);
    if (rc == 0) {
        printf("\n== results (WMLA's val_dict_list.json per worker)\n");
        for (int w = 0; w < 2; w++) {
            snprintf(path, sizeof path, "%s/execs/%s/val_dict_list-worker%d.json", home, id, w);
            char *text = fs_read_file(path, 1 << 20, NULL);
            printf("worker %d: %s", w, text ? text : "(missing)\n");
            if (!text)
                rc = 1;
            free(text);
        }
    }
    loomd_stop(d);
    log_close();
    if (!keep)
        fs_rm_rf(home);
    else
        printf("\nstate kept in %s\n", home);
    printf("\n== demo %s\n", rc == 0 ? "finished" : "FAILED");
    return rc;
}
