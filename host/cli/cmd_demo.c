/* cli/cmd_demo.c - `loom demo`: an embedded host with a state directory of
 * its own runs a job end to end through the same REST API and plugins a
 * user would, so a new user sees the system work with no set-up. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/routes.h"
#include "daemon/daemon.h"
#include "auth/auth.h"
#include "cli/commands.h"
#include "util/fs.h"
#include "util/log.h"

static const char demo_usage[] =
    "usage: loom demo [--home DIR] [--keep] [--epochs N]\n"
    "       loom demo --cluster [--epochs N] [--keep]\n"
    "\n"
    "Starts a host on a free loopback port with its own state directory and\n"
    "lists its built-in plugins. The state goes to --home DIR, else to\n"
    "$LOOM_HOME, and is kept; with neither, to a new temporary directory removed\n"
    "at the end. A home that a running host holds is refused. Then:\n"
    "  1. a two-worker job through the 'command' framework adapter, each worker\n"
    "     fitting a line to its share of a data set and writing WMLA's\n"
    "     val_dict_list.json;\n"
    "  2. elastic training: the native MLP 784-512-512-10 on Fashion-MNIST\n"
    "     (Debian's dataset-fashion-mnist), shrunk from 2 workers to 1 and grown\n"
    "     back while it trains, every sample used once per epoch; it prints the\n"
    "     test accuracy at the end (default 3 epochs);\n"
    "  3. serving: the trained MLP deployed as a model service (native kernel),\n"
    "     started, and a few test images classified through\n"
    "     POST /dlim/v1/inference/fmnist-mlp;\n"
    "  4. a tuning task (WMLA's hypersearch): the learning rate and hidden width\n"
    "     of a one-hidden-layer MLP on Fashion-MNIST, 4 one-epoch experiments, 2 at\n"
    "     a time, each an elastic job; it prints the best combination.\n"
    "--keep leaves the temporary state directory.\n"
    "\n"
    "--cluster (root; Debian's slurmd slurmctld slurm-client munge iproute2):\n"
    "makes a Slurm cluster of 2 nodes on this machine (share/loom/cluster/lab.sh:\n"
    "each node a network namespace with 2 CPU slots), runs a host on node1 with\n"
    "--slurm, and shows the scheduler sharing the nodes: alice's elastic MLP\n"
    "holds all 4 slots, bob's 2-worker job arrives and each gets one whole node\n"
    "(alice's shrinks in place), bob's ends and alice's grows back to 4. The\n"
    "lab is taken down at the end (--keep keeps its folder).\n";

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static const char demo_spec[] =
    "{\n"
    "  \"model\": {\"input\": [1, 28, 28], \"layers\": [\n"
    "    {\"type\": \"flatten\"},\n"
    "    {\"type\": \"dense\", \"units\": 512}, {\"type\": \"relu\"},\n"
    "    {\"type\": \"dense\", \"units\": 512}, {\"type\": \"relu\"},\n"
    "    {\"type\": \"dense\", \"units\": 10}]},\n"
    "  \"loss\": \"softmax_cross_entropy\",\n"
    "  \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9},\n"
    "  \"dataset\": {\"format\": \"idx\",\n"
    "    \"train_images\": \"" FMNIST_DIR "/train-images-idx3-ubyte.gz\",\n"
    "    \"train_labels\": \"" FMNIST_DIR "/train-labels-idx1-ubyte.gz\",\n"
    "    \"test_images\": \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\",\n"
    "    \"test_labels\": \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"},\n"
    "  \"training\": {\"batch_size\": 64, \"checkpoint_freq\": 1}\n"
    "}\n";

static cJSON *view_exec(const cli_globals *g, const char *id)
{
    char path[256];
    snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s", id);
    return cli_request(g, "GET", path, NULL);
}

static int resize_exec(const cli_globals *g, const char *id, int workers)
{
    char path[256], body[64];
    snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s" LOOM_ROUTE_RESIZE, id);
    snprintf(body, sizeof body, "{\"workers\": %d}", workers);
    printf("== loom exec resize %s --workers %d\n", id, workers);
    fflush(stdout);
    cJSON *j = cli_request(g, "POST", path, body);
    cJSON_Delete(j);
    return j ? 0 : 1;
}

/* Trains the MLP, following the driver's log, and resizes it twice while it
 * runs: to 1 worker early in the first epoch, back to 2 in the second. */
static int demo_training(const cli_globals *g, const char *home, int epochs)
{
    if (!fs_is_dir(FMNIST_DIR)) {
        printf("\n== skipping the training demo: %s is missing (apt-get install dataset-fashion-mnist)\n",
               FMNIST_DIR);
        return 0;
    }
    char dir[4200], path[4300], epochs_arg[32], id[128] = "";
    snprintf(dir, sizeof dir, "%s/fmnist-mlp", home);
    snprintf(path, sizeof path, "%s/edt.json", dir);
    loom_error *e = fs_mkdir_p(dir);
    if (!e)
        e = fs_write_file_atomic(path, demo_spec, strlen(demo_spec), 0644);
    if (e)
        return cli_fail_error(loom_err_wrap(e, "the demo model directory"));
    snprintf(epochs_arg, sizeof epochs_arg, "%d", epochs);
    printf("\n== loom exec start --exec-start edt --model-dir %s --numWorker 2 -- --epochs %d\n", dir,
           epochs);
    char *argv[] = {"--exec-start", "edt", "--model-dir", dir, "--numWorker", "2",
                    "--", "--epochs", epochs_arg, NULL};
    if (cli_exec_start_words(9, argv, g, id, sizeof id) != 0)
        return 1;
    long long offset = 0;
    int phase = 0, rc = 1;
    for (;;) {
        char logpath[512];
        snprintf(logpath, sizeof logpath,
                 LOOM_ROUTE_EXECS "/%s" LOOM_ROUTE_LOG "?worker=-1&offset=%lld", id, offset);
        size_t n = 0;
        char *text = cli_request_text(g, logpath, &n);
        if (text) {
            fwrite(text, 1, n, stdout);
            offset += (long long)n;
            free(text);
        }
        fflush(stdout);
        cJSON *v = view_exec(g, id);
        if (!v)
            return 1;
        const char *state = cli_str(v, "state");
        exec_state s;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "training");
        if (cli_reply_exec_state(v, &s) && exec_state_is_final(s) && n == 0) {
            printf("== exec %s %s%s%s\n", id, state, *cli_str(v, "message") ? ": " : "",
                   cli_str(v, "message"));
            const cJSON *tm = cJSON_GetObjectItemCaseSensitive(t, "testMetrics");
            const cJSON *eps = cJSON_GetObjectItemCaseSensitive(t, "epochsDone");
            int exact = 1;
            const cJSON *e;
            cJSON_ArrayForEach(e, eps) exact &= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "exactlyOnce"));
            if (s == EXEC_STATE_FINISHED && tm) {
                printf("\n== test accuracy %.4f (loss %.4f) after %d epoch(s); every sample used once "
                       "per epoch through both resizes: %s\n",
                       cli_num(tm, "accuracy"), cli_num(tm, "loss"), cJSON_GetArraySize(eps),
                       exact ? "yes" : "NO");
                rc = exact ? 0 : 1;
                if (rc == 0)
                    rc = cli_demo_serving(g, id, FMNIST_DIR);
            }
            cJSON_Delete(v);
            return rc;
        }
        double iteration = cli_num(t, "iteration"), epoch = cli_num(t, "epoch");
        if (phase == 0 && iteration >= 150) {
            phase = 1;
            resize_exec(g, id, 1);
        } else if (phase == 1 && epoch >= 1 && epochs > 1) {
            phase = 2;
            resize_exec(g, id, 2);
        }
        cJSON_Delete(v);
        usleep(200000);
    }
}

/* ---- step 3: tuning ------------------------------------------------------- */

/* The tuned model: "$learning_rate" and "$hidden" in edt.json stand for
 * each experiment's values (the tuner fills them from config.json). */
static const char tune_spec[] =
    "{\n"
    "  \"model\": {\"input\": [1, 28, 28], \"layers\": [\n"
    "    {\"type\": \"flatten\"},\n"
    "    {\"type\": \"dense\", \"units\": \"$hidden\"}, {\"type\": \"relu\"},\n"
    "    {\"type\": \"dense\", \"units\": 10}]},\n"
    "  \"loss\": \"softmax_cross_entropy\",\n"
    "  \"optimizer\": {\"type\": \"sgd\", \"lr\": \"$learning_rate\", \"momentum\": 0.9},\n"
    "  \"dataset\": {\"format\": \"idx\",\n"
    "    \"train_images\": \"" FMNIST_DIR "/train-images-idx3-ubyte.gz\",\n"
    "    \"train_labels\": \"" FMNIST_DIR "/train-labels-idx1-ubyte.gz\",\n"
    "    \"test_images\": \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\",\n"
    "    \"test_labels\": \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"},\n"
    "  \"training\": {\"batch_size\": 64, \"checkpoint_freq\": 0}\n"
    "}\n";

static const char tune_task[] =
    "{\"hpoName\": \"demo-fmnist-tuning\",\n"
    " \"modelSpec\": {\"args\": \"--exec-start edt --model-dir fmnist-tune --numWorker 1 -- "
    "--epochs 1\"},\n"
    " \"algoDef\": {\"algorithm\": \"Random\", \"maxJobNum\": 4, \"maxParalleJobNum\": 2,\n"
    "             \"objectiveMetric\": \"accuracy\", \"objective\": \"maximize\",\n"
    "             \"algoParams\": [{\"name\": \"RandomSeed\", \"value\": \"1\"}]},\n"
    " \"hyperParams\": [\n"
    "   {\"name\": \"learning_rate\", \"type\": \"Range\", \"dataType\": \"DOUBLE\",\n"
    "    \"minDbVal\": -3, \"maxDbVal\": -1, \"power\": \"10\"},\n"
    "   {\"name\": \"hidden\", \"type\": \"Discrete\", \"dataType\": \"INT\",\n"
    "    \"discreteIntVal\": [32, 64, 128]}]}\n";

static int demo_tuning(const cli_globals *g, const char *home)
{
    if (!fs_is_dir(FMNIST_DIR))
        return 0; /* said already by the training step */
    char dir[4200], path[4300], task[4300];
    snprintf(dir, sizeof dir, "%s/fmnist-tune", home);
    snprintf(path, sizeof path, "%s/edt.json", dir);
    snprintf(task, sizeof task, "%s/fmnist-tuning.json", home);
    loom_error *e = fs_mkdir_p(dir);
    if (!e)
        e = fs_write_file_atomic(path, tune_spec, strlen(tune_spec), 0644);
    if (!e)
        e = fs_write_file_atomic(task, tune_task, strlen(tune_task), 0644);
    if (e)
        return cli_fail_error(loom_err_wrap(e, "the tuning demo's files"));
    printf("\n== loom hpo submit %s --model-dir %s\n%s", task, dir, tune_task);
    fflush(stdout);
    char *submit_argv[] = {"submit", task, "--model-dir", dir, NULL};
    if (cmd_hpo(4, submit_argv, g) != 0)
        return 1;
    hpo_task_state state = HPO_TASK_SUBMITTED;
    int ended = 0;
    for (int i = 0; i < 1200 && !ended; i++) {
        cJSON *v = cli_request(g, "GET", LOOM_ROUTE_HPO "/demo-fmnist-tuning", NULL);
        if (!v)
            return 1;
        state = cli_reply_hpo_state(v);
        cJSON_Delete(v);
        ended = state == HPO_TASK_FINISHED || state == HPO_TASK_FAILED ||
                state == HPO_TASK_STOPPED;
        if (!ended)
            usleep(100000);
    }
    printf("\n== loom hpo view demo-fmnist-tuning\n");
    char *view_argv[] = {"view", "demo-fmnist-tuning", NULL};
    cmd_hpo(2, view_argv, g);
    if (state != HPO_TASK_FINISHED)
        return cli_fail("demo: the tuning task ended %s",
                        ended ? hpo_task_state_text(state) : "not in time");
    printf("\n== loom hpo best demo-fmnist-tuning\n");
    char *best_argv[] = {"best", "demo-fmnist-tuning", NULL};
    return cmd_hpo(2, best_argv, g);
}

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

static loom_error *write_demo_model(const char *dir)
{
    char path[4200];
    loom_error *e = fs_mkdir_p(dir);
    if (e)
        return e;
    snprintf(path, sizeof path, "%s/fit.sh", dir);
    return fs_write_file_atomic(path, demo_script, strlen(demo_script), 0755);
}

/* The demo's state directory: --home, else LOOM_HOME, else a new temporary
 * one (*temporary set). A home a running host holds is refused before
 * anything in it is touched: the demo never shares a live host's state. */
static int demo_home(const cli_globals *g, char *home, size_t len, int *temporary)
{
    const char *env = getenv("LOOM_HOME");
    const char *given = g->home ? g->home : env && *env ? env : NULL;
    *temporary = !given;
    if (given) {
        char why[5000];
        snprintf(home, len, "%s", given);
        if (loom_err_take(loomd_home_free(home), why, sizeof why) != LOOM_OK)
            return cli_fail("demo: %s (the demo never shares a running host's state: give it "
                            "another --home or LOOM_HOME, or neither for a temporary one)", why);
        loom_error *e = fs_mkdir_p(home);
        if (e)
            return cli_fail_error(loom_err_wrap(e, "demo: --home"));
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(home, len, "%s/loom-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(home))
        return cli_fail("cannot create a state directory: %s", strerror(errno));
    return 0;
}

/* A token for the embedded host's administrator through a one-off API key
 * (revoked at the end), so a kept home whose admin password nobody
 * remembers runs the demo again. */
static int demo_logon(loomd *d, char *label, size_t labellen)
{
    char key[AUTH_SECRET_MAX], token[AUTH_SECRET_MAX], err[512];
    int64_t expires = 0;
    snprintf(label, labellen, "loom-demo-%ld-%lld", (long)getpid(), (long long)time_now_ms());
    if (loom_err_take(auth_apikey_create(d->api.auth, "admin", label, key, sizeof key), err,
                      sizeof err) != LOOM_OK)
        return cli_fail("demo: cannot act as admin on %s: %s", d->api.home, err);
    if (loom_err_take(auth_logon_apikey(d->api.auth, "loom-demo", key, time_now_ms(), token,
                                        sizeof token, &expires),
                      err, sizeof err) != LOOM_OK) {
        loom_err_free(auth_apikey_revoke(d->api.auth, "admin", label));
        return cli_fail("demo: cannot log on to its own host: %s", err);
    }
    setenv("LOOM_TOKEN", token, 1);
    return 0;
}

/* `loom demo --cluster`: the lab's demo script, run with this binary. The
 * lab is shell around Slurm's own commands; the demo drives the host with
 * the CLI a user would type. */
static int demo_cluster(int argc, char **argv)
{
    char exe[PATH_MAX], script[PATH_MAX + 64];
    if (!fs_self_exe(exe, sizeof exe))
        return cli_fail("demo --cluster: cannot find the loom binary (/proc/self/exe)");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    snprintf(script, sizeof script, "%s/../share/loom/cluster/demo.sh", dir);
    if (!fs_is_file(script))
        snprintf(script, sizeof script, "%s/demo.sh", LOOM_SOURCE_CLUSTER_DIR);
    if (!fs_is_file(script))
        return cli_fail("demo --cluster: share/loom/cluster/demo.sh is not installed beside %s",
                        exe);
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args)
        return cli_fail("demo --cluster: out of memory");
    int n = 0;
    args[n++] = "bash";
    args[n++] = script;
    args[n++] = exe;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--cluster") != 0)
            args[n++] = argv[i];
    fflush(stdout);
    execv("/bin/bash", args);
    int err = errno;
    free(args);
    return cli_fail("demo --cluster: cannot run /bin/bash %s: %s", script, strerror(err));
}

int cmd_demo(int argc, char **argv, const cli_globals *g)
{
    if (cli_wants_help(argc, argv)) {
        fputs(demo_usage, stdout);
        return 0;
    }
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--cluster") == 0)
            return demo_cluster(argc, argv);
    int keep = 0, epochs = 3, temporary;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            epochs = atoi(argv[++i]);
        else
            return cli_fail("demo: unexpected \"%s\" (see loom demo --help)", argv[i]);
    }
    /* On a new home, an administrator with a password nobody needs to know. */
    char password[AUTH_PASSWORD_GEN_MAX];
    if (loom_err_take(auth_generate_password(password, sizeof password), NULL, 0) != LOOM_OK)
        return cli_fail("demo: cannot make a password for its administrator");
    char home[4096], path[4200], err[1024], label[128];
    if (demo_home(g, home, sizeof home, &temporary) != 0)
        return 1;
    keep |= !temporary;
    snprintf(path, sizeof path, "%s/loom.log", home);
    log_open(path);
    signal(SIGPIPE, SIG_IGN);

    loomd_options opt = {.home = home, .address = "127.0.0.1", .port = 0, .hysteresis = -1,
                         .admin_password = password};
    loomd *d = NULL;
    loom_err_take(loomd_start(&opt, &d), err, sizeof err);
    if (!d || demo_logon(d, label, sizeof label) != 0) {
        loomd_stop(d);
        log_close();
        if (!keep)
            loom_err_free(fs_rm_rf(home)); /* a temporary folder: best effort */
        return d ? 1 : cli_fail("demo host: %s", err);
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", loomd_port(d));
    cli_globals hg = {.host = url, .json = 0};
    printf("== loom demo: host %s on %s, state in %s\n", LOOM_VERSION, url, home);
    printf("== web console: %s/ (log on as admin%s%s)\n\n", url, temporary ? ", password " : "",
           temporary ? password : ""); /* a kept home's admin keeps its own */

    printf("== plugins (loaded through the SDK's ABI like anyone's)\n");
    char *list_argv[] = {"list", NULL};
    int rc = cmd_plugin(1, list_argv, &hg);

    char model_dir[4200], id[128] = "";
    snprintf(model_dir, sizeof model_dir, "%s/demo-model", home);
    loom_error *unwritten = rc == 0 ? write_demo_model(model_dir) : NULL;
    if (unwritten)
        rc = cli_fail_error(loom_err_wrap(unwritten, "the demo model directory"));
    if (rc == 0) {
        printf("\n== loom exec start --exec-start command --model-dir %s --model-main fit.sh "
               "--numWorker 2 --msd-env EPOCHS=5\n", model_dir);
        char *start_argv[] = {"--exec-start", "command", "--model-dir", model_dir,
                              "--model-main", "fit.sh", "--numWorker", "2",
                              "--msd-env", "EPOCHS=5", NULL};
        rc = cli_exec_start_words(10, start_argv, &hg, id, sizeof id);
    }
    if (rc == 0) {
        printf("\n== loom exec logs %s -f\n", id);
        rc = cli_exec_print_logs(&hg, id, 1, -1, "stdout");
    }
    if (rc == 0)
        rc = cli_exec_wait_id(&hg, id, 60, 1);
    if (rc == 0) {
        printf("\n== results (WMLA's val_dict_list.json per worker)\n");
        for (int w = 0; w < 2; w++) {
            snprintf(path, sizeof path, "%s/execs/%s/val_dict_list-worker%d.json", home, id, w);
            char *text;
            loom_error *e = fs_read_file(path, 1 << 20, &text, NULL);
            printf("worker %d: %s%s", w, text ? text : loom_err_message(e), text ? "" : "\n");
            loom_err_free(e);
            if (!text)
                rc = 1;
            free(text);
        }
    }
    if (rc == 0)
        rc = demo_training(&hg, home, epochs);
    if (rc == 0)
        rc = demo_tuning(&hg, home);
    loom_err_free(auth_apikey_revoke(d->api.auth, "admin", label));
    loomd_stop(d);
    log_close();
    if (!keep)
        loom_err_free(fs_rm_rf(home)); /* a temporary folder: best effort */
    else
        printf("\nstate kept in %s\n", home);
    printf("\n== demo %s\n", rc == 0 ? "finished" : "FAILED");
    return rc;
}
