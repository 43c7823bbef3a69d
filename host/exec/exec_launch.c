/* exec/exec_launch.c - launch-style execs: the framework adapter's plan
 * (argv, env, cwd per worker) and starting those processes in one process
 * group, each with the job's environment and its own log files. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "sched/node_numbers.h"
#include "plugin/launch_remote.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/user_tree.h"

char **strings_copy(const char *const *src, uint32_t n)
{
    char **out = calloc((size_t)n + 1, sizeof *out);
    for (uint32_t i = 0; out && i < n; i++)
        out[i] = strdup(src[i] ? src[i] : "");
    return out;
}

void strings_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static loom_error *plan_add_worker(const loom_launch_sink *sink, const char *const *argv,
                                   uint32_t argc, const char *const *env, uint32_t envc,
                                   const char *cwd)
{
    launch_plan *p = (launch_plan *)sink;
    if (argc == 0 || !argv || !argv[0] || !*argv[0])
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "worker %d: empty argv", p->count);
    for (uint32_t i = 0; i < envc; i++)
        if (!env[i] || !strchr(env[i], '=') || env[i][0] == '=')
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "worker %d: environment entry \"%s\" is not KEY=VALUE", p->count,
                            env[i] ? env[i] : "(null)");
    planned_worker *grown = realloc(p->workers, (size_t)(p->count + 1) * sizeof *grown);
    if (!grown)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    p->workers = grown;
    planned_worker *w = &p->workers[p->count++];
    w->argv = strings_copy(argv, argc);
    w->env = strings_copy(env, envc);
    w->cwd = cwd ? strdup(cwd) : NULL;
    return NULL;
}

void launch_plan_init(launch_plan *p)
{
    memset(p, 0, sizeof *p);
    p->sink.struct_size = sizeof p->sink;
    p->sink.add_worker = plan_add_worker;
    p->sink.host_data = p;
}

void launch_plan_free(launch_plan *p)
{
    for (int i = 0; i < p->count; i++) {
        strings_free(p->workers[i].argv);
        strings_free(p->workers[i].env);
        free(p->workers[i].cwd);
    }
    free(p->workers);
    p->workers = NULL;
    p->count = 0;
}

loom_error *launch_plan_make(running_exec *r, const char *const *worker_nodes)
{
    const launch_inputs *in = &r->launch_in;
    uint32_t nenv = 0;
    while (r->msd_env && r->msd_env[nenv])
        nenv++;
    loom_launch_request req = {
        .struct_size = sizeof req,
        .num_workers = in->num_workers,
        .worker_device_num = in->worker_device_num,
        .master_port = in->master_port,
        .exec_id = r->rec.id,
        .code_dir = r->code_dir,
        .model_main = in->model_main,
        .data_dir = r->data_dir,
        .result_dir = r->rec.result_dir,
        .log_dir = r->log_dir,
        .device_type = in->device_type,
        .master_addr = worker_nodes ? worker_nodes[0] : "127.0.0.1",
        .args = (const char *const *)in->args,
        .arg_count = in->nargs,
        .msd_env_count = nenv,
        .msd_env = (const char *const *)r->msd_env,
        .worker_nodes = worker_nodes,
    };
    launch_plan_free(&r->plan);
    launch_plan_init(&r->plan);
    /* The adapter's code runs in a plugin-host child, never here. */
    char binary[PATH_MAX], output[PATH_MAX + 32];
    fs_self_exe(binary, sizeof binary);
    snprintf(output, sizeof output, "%s/plan-launch.log", r->log_dir);
    launch_remote_spec spec = {.binary = binary, .plugin_path = in->fw_path, .name = in->fw_name,
                               .output = output, .owner = r->rec.user,
                               .owner_id = r->rec.user_id, .exec_dir = r->rec.result_dir};
    return launch_plan_remote(&spec, &req, &r->plan.sink);
}

/* The Python a launch-style job runs where its plan says plain `python3`:
 * the job's own (--msd-env PYTHON=PATH), else the host's (loom serve
 * --python), else NULL: the first python3 on the job's PATH. */
static const char *job_python(char *const *msd_env)
{
    const char *chosen = job_env_get(msd_env, "PYTHON");
    const char *host = getenv("LOOM_PYTHON");
    return chosen && *chosen ? chosen : host && *host ? host : NULL;
}

/* Puts the job's Python in place of `python3` and says which one runs: in
 * the worker's log, and in RESULT_DIR/log/python, which `loom exec view`
 * shows. */
static void use_job_python(char **argv, const char *python, char *const *envp, int root,
                           const char *log_rel)
{
    if (!argv || !argv[0] || strcmp(argv[0], "python3"))
        return;
    char shown[PATH_MAX + 32], found[PATH_MAX] = "";
    if (python)
        snprintf(shown, sizeof shown, "%s", python);
    else {
        /* Found here, so what runs is what is shown, confined or not. */
        job_env_which(envp, "python3", found, sizeof found);
        snprintf(shown, sizeof shown, "python3 on PATH (%s)", found[0] ? found : "not found");
    }
    char *chosen = strdup(python ? python : found);
    if (chosen && *chosen) {
        free(argv[0]);
        argv[0] = chosen;
    } else
        free(chosen);
    /* Through util/user_tree: the exec folder is the job's. */
    char line[PATH_MAX + 64];
    int n = snprintf(line, sizeof line, "loom: python is %s\n", shown), fd = -1;
    loom_error *e = utree_open_append(root, log_rel, 0644, &fd);
    if (!e && fd_write_all(fd, line, (size_t)n) != 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: %s", log_rel, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (!e)
        e = utree_write_file(root, "log/python", shown, strlen(shown), 0644);
    if (e)
        log_warn("cannot record the job's Python: %s", loom_err_message(e));
    loom_err_free(e);
}

static void close_pipe(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Worker i's CUDA_VISIBLE_DEVICES: its share of the exec's GPUs (their
 * ordinals on their node); none on CPU. */
static void visible_devices(const running_exec *r, int i, const int32_t *device_index, int ndev,
                            char *out, size_t len)
{
    int k = r->worker_device_num;
    int used = snprintf(out, len, "CUDA_VISIBLE_DEVICES=");
    if (r->gpu && device_index)
        for (int d = i * k; d < (i + 1) * k && d < ndev; d++)
            used += snprintf(out + used, len - (size_t)used, "%s%d", d > i * k ? "," : "",
                             node_device_ordinal(device_index[d]));
}

loom_error *launch_start(exec_service *es, running_exec *r, const int32_t *device_index,
                         int ndev)
{
    /* The jobs' FABRIC_HOME is loom's installed files, not the host's home. */
    store_exec *rec = &r->rec;
    int on_nodes = 0; /* its devices are on Slurm nodes (exec_nodes.c) */
    loom_error *err = exec_nodes_place(es, r, ndev, &on_nodes);
    if (err)
        return err;
    r->nworkers = r->plan.count;
    r->workers = calloc((size_t)r->nworkers, sizeof *r->workers);
    if (!r->workers)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    char job_env[7][PATH_MAX + 32];
    snprintf(job_env[0], sizeof job_env[0], "DATA_DIR=%s", r->data_dir);
    snprintf(job_env[1], sizeof job_env[1], "RESULT_DIR=%s", rec->result_dir);
    snprintf(job_env[2], sizeof job_env[2], "LOG_DIR=%s", r->log_dir);
    snprintf(job_env[3], sizeof job_env[3], "DLI_EXECID=%s", rec->id);
    char installed[PATH_MAX]; /* loom's files, never the state home */
    job_sandbox_install_dir(installed, sizeof installed);
    snprintf(job_env[4], sizeof job_env[4], "FABRIC_HOME=%s", installed);
    snprintf(job_env[6], sizeof job_env[6], "TRAINING_ID=%s", rec->id); /* WMLA's name for it */
    char kind[sizeof rec->id + 8];
    snprintf(kind, sizeof kind, "exec-%s", rec->id);
    exec_job_limits_for(es, &r->rec, ndev, &r->limits);
    proc_group_limits cg = {.max_procs = r->limits.max_procs,
                            .max_memory_bytes = r->limits.max_memory_bytes};
    /* The exec folder is the job's to change: its logs are made and opened
     * beneath it, never by path. */
    int root = -1;
    err = utree_root(rec->result_dir, &root);
    if (!err)
        err = proc_group_create(&r->group, kind, &cg);
    rec->pgid = 0;
    for (int i = 0; i < r->nworkers && !err; i++) {
        char wdir[32], out_path[48], err_path[48];
        snprintf(wdir, sizeof wdir, "log/worker-%d", i);
        err = utree_mkdirs(root, wdir, 0755);
        if (err)
            break;
        snprintf(out_path, sizeof out_path, "%s/stdout", wdir);
        snprintf(err_path, sizeof err_path, "%s/stderr", wdir);
        /* GPU workers see their share of the exec's devices; CPU workers
         * see none. */
        visible_devices(r, i, device_index, ndev, job_env[5], sizeof job_env[5]);
        char *job[8] = {job_env[0], job_env[1], job_env[2], job_env[3],
                        job_env[4], job_env[5], job_env[6], NULL};
        char *const *const layers[3] = {job, r->msd_env, r->plan.workers[i].env};
        char **envp = job_env_build(rec->result_dir, layers, 3);
        use_job_python(r->plan.workers[i].argv, job_python(r->msd_env), envp, root, err_path);
        /* Output goes through the host's log pump, which bounds it. */
        int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
        if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
            err = loom_err(LOOM_E_INTERNAL, "cannot make the workers' log pipes: %s",
                           strerror(errno));
            close_pipe(out_pipe);
            job_env_free(envp);
            break;
        }
        spawn_spec spec = {
            .argv = r->plan.workers[i].argv,
            .envp = envp,
            .cwd = r->plan.workers[i].cwd ? r->plan.workers[i].cwd : r->code_dir,
            .stdout_fd = out_pipe[1],
            .stderr_fd = err_pipe[1],
            .pgid = rec->pgid, /* the first worker leads the group */
            .group = &r->group,
            .max_file_bytes = r->limits.max_disk_bytes,
        };
        job_sandbox_held held = {.env_fd = -1};
        job_sandbox_job box = {.user = rec->user, .user_id = rec->user_id, .exec_dir = rec->result_dir, .data_dir = r->data_dir};
        pid_t pid = -1;
        if (!envp)
            err = loom_err(LOOM_E_INTERNAL, "out of memory");
        else if (on_nodes) /* srun, which runs it on its node as the user's account */
            err = exec_nodes_spawn(r, i, envp, spec.cwd, &box, &spec, &pid);
        else if (!(err = job_sandbox_confine_spec(&box, &spec, &held)))
            err = spawn_process(&spec, &pid);
        job_sandbox_release(&held);
        job_env_free(envp);
        close(out_pipe[1]);
        close(err_pipe[1]);
        if (err) {
            close(out_pipe[0]);
            close(err_pipe[0]);
            break;
        }
        loom_error *lost = log_pump_add(es->logs, out_pipe[0], root, out_path);
        if (!lost)
            lost = log_pump_add(es->logs, err_pipe[0], root, err_path);
        else
            close(err_pipe[0]);
        if (lost) { /* the worker runs on; its output has nowhere to go */
            log_warn("exec %s: worker %d: %s", rec->id, i, loom_err_message(lost));
            loom_err_free(lost);
        }
        if (rec->pgid == 0)
            rec->pgid = pid;
        r->workers[i].pid = pid;
    }
    if (root >= 0)
        close(root);
    if (!err)
        return NULL;
    /* Stop the workers already started. */
    if (rec->pgid > 0)
        kill(-rec->pgid, SIGKILL);
    proc_group_kill(&r->group, 0);
    for (int i = 0; i < r->nworkers; i++)
        if (r->workers[i].pid > 0)
            waitpid(r->workers[i].pid, NULL, 0);
    proc_group_destroy(&r->group);
    rec->pgid = 0;
    free(r->workers);
    r->workers = NULL;
    r->nworkers = 0;
    return err;
}
