/* cli/cmd_model.c - `loom model ...`, dlim's model commands (deploy, list,
 * view, start, stop, viewprofile, updateprofile, undeploy, infer) over the
 * REST API, `loom model check DIR` (a model directory checked here, its
 * kernel loaded, without a host), and `loom kernel run` (hidden): the
 * process a kernel instance runs in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/routes.h"
#include "daemon/daemon.h"
#include "cli/commands.h"
#include "infer/kernel_server.h"
#include "infer/model_spec.h"
#include "plugin/dtype_names.h"
#include "util/fs.h"
#include "util/supervise.h"
#include "util/tarball.h"

#define BODY_FILE_MAX ((size_t)64 << 20)

static const char model_usage[] =
    "usage: loom model deploy -p DIR [--profile FILE]\n"
    "       loom model deploy --from-exec ID [--name NAME] [--profile FILE]\n"
    "       loom model list\n"
    "       loom model view NAME [-s [-a]]\n"
    "       loom model start NAME [--wait [SECONDS]]\n"
    "       loom model stop NAME [-f]\n"
    "       loom model viewprofile NAME -j\n"
    "       loom model updateprofile NAME -f FILE\n"
    "       loom model undeploy NAME [-f]\n"
    "       loom model infer NAME -d JSON|@FILE\n"
    "       loom model check DIR\n"
    "\n"
    "deploy        uploads the model directory DIR (model.json, its kernel and\n"
    "              weights) to the host; --profile gives its profile.json;\n"
    "              --from-exec serves what a native training exec wrote\n"
    "              (RESULT_DIR/model/) with the native kernel\n"
    "view          the model; -s adds its service's state (kernels, requests),\n"
    "              -a everything, the profile included\n"
    "start         returns at once with the model's state (starting, and why\n"
    "              while its kernel waits for a device); --wait blocks until it\n"
    "              serves (exit 0), fails to start (1) or SECONDS pass (3)\n"
    "stop          serves what is queued first; -f fails it at once\n"
    "viewprofile   prints the profile as JSON (-j)\n"
    "updateprofile replaces the profile (the model must be stopped)\n"
    "undeploy      removes the model; -f stops it first when it is started\n"
    "infer         sends one request (JSON, or @FILE) and prints the answer\n"
    "check         checks DIR here, without a host: model.json and its files,\n"
    "              then loads the kernel and creates one instance; a runtime\n"
    "              naming a registered kernel asks the host (--host URL, or the\n"
    "              one logged on to) whether it holds that kernel\n";

static char *model_path(const char *name, const char *tail)
{
    char *esc = cli_curl_escape_path(name);
    if (!esc)
        return NULL;
    size_t n = strlen(LOOM_ROUTE_MODELS) + strlen(esc) + strlen(tail) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", LOOM_ROUTE_MODELS, esc, tail);
    free(esc);
    return p;
}

static void print_model(const cJSON *m, int status, int all)
{
    printf("Name:     %s\nOwner:    %s\nTag:      %s\nRuntime:  %s\nState:    %s\n",
           cli_str(m, "name"), cli_str(m, "owner"), cli_str(m, "tag"), cli_str(m, "runtime"),
           cli_str(m, "state"));
    if (*cli_str(m, "pendingReason"))
        printf("Waiting:  %s\n", cli_str(m, "pendingReason"));
    else if (!strcmp(cli_str(m, "state"), "failed") && !status)
        printf("Failure:  %s\n", cli_str(m, "lastError"));
    if (status) {
        const cJSON *k = cJSON_GetObjectItem(m, "kernels");
        const cJSON *r = cJSON_GetObjectItem(m, "requests");
        printf("Kernels:  %d running, %d wanted, %d busy, %d restarts\n",
               (int)cli_num(k, "running"), (int)cli_num(k, "target"), (int)cli_num(k, "busy"),
               (int)cli_num(k, "restarts"));
        printf("Requests: %.0f served, %.0f failed, %.0f queued\n", cli_num(r, "served"),
               cli_num(r, "failed"), cli_num(r, "queued"));
        if (*cli_str(m, "lastError"))
            printf("Last error: %s\n", cli_str(m, "lastError"));
    }
    if (all) {
        char *model = cJSON_Print(cJSON_GetObjectItem(m, "model"));
        char *profile = cJSON_Print(cJSON_GetObjectItem(m, "profile"));
        printf("model.json:\n%s\nprofile:\n%s\n", model ? model : "", profile ? profile : "");
        free(model);
        free(profile);
    }
}

static int print_reply(cJSON *j, const cli_globals *g, int status, int all)
{
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else
        print_model(j, status, all);
    cJSON_Delete(j);
    return 0;
}

/* --from-exec: the host builds the model directory from the exec's result. */
static int deploy_from_exec(const char *exec_id, const char *name, const char *profile_file,
                            const cli_globals *g)
{
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "fromExec", exec_id);
    if (name)
        cJSON_AddStringToObject(body, "name", name);
    if (profile_file) {
        char *text;
        loom_error *e = fs_read_file(profile_file, MODEL_JSON_MAX, &text, NULL);
        cJSON *p = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (e) {
            cJSON_Delete(body);
            return cli_fail_error(loom_err_wrap(e, "model deploy: --profile"));
        }
        if (!p) {
            cJSON_Delete(body);
            return cli_fail("model deploy: --profile %s: cannot read it as JSON", profile_file);
        }
        cJSON_AddItemToObject(body, "profile", p);
    }
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    cJSON *j = cli_request(g, "POST", LOOM_ROUTE_MODELS, text);
    free(text);
    if (j && !g->json)
        printf("model %s deployed from exec %s\n", cli_str(j, "name"), exec_id);
    else if (j)
        cli_print_json(j);
    cJSON_Delete(j);
    return j ? 0 : 1;
}

static int model_deploy(int argc, char **argv, const cli_globals *g)
{
    const char *dir = NULL, *profile_file = NULL, *exec_id = NULL, *name = NULL;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--path")) && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
            profile_file = argv[++i];
        else if (!strcmp(argv[i], "--from-exec") && i + 1 < argc)
            exec_id = argv[++i];
        else if (!strcmp(argv[i], "--name") && i + 1 < argc)
            name = argv[++i];
        else
            return cli_fail("model deploy: unexpected \"%s\" (expected -p DIR, or --from-exec "
                            "ID [--name NAME], and [--profile FILE])", argv[i]);
    }
    if (exec_id && !dir)
        return deploy_from_exec(exec_id, name, profile_file, g);
    if (!dir || exec_id)
        return cli_fail("model deploy: give either -p DIR (the model directory) or --from-exec "
                        "ID (a finished training exec)");
    model_spec spec;
    char err[1024];
    if (loom_err_take(model_spec_read(dir, &spec, NULL), err, sizeof err))
        return cli_fail("model deploy: %s", err);
    char *profile = NULL;
    loom_error *unread = profile_file ? fs_read_file(profile_file, MODEL_JSON_MAX, &profile, NULL)
                                      : NULL;
    if (unread)
        return cli_fail_error(loom_err_wrap(unread, "model deploy: --profile"));
    char *archive = NULL;
    size_t len = 0;
    if (loom_err_take(tarball_pack_dir(dir, &archive, &len), err, sizeof err)) {
        free(profile);
        return cli_fail("model deploy: -p %s: %s", dir, err);
    }
    client_part parts[2] = {
        {.name = "file", .filename = "model.tar", .data = archive, .len = len},
        {.name = "profile", .value = profile},
    };
    cJSON *j = cli_upload(g, LOOM_ROUTE_MODELS, parts, profile ? 2 : 1);
    free(archive);
    free(profile);
    if (j && !g->json)
        printf("model %s deployed\n", cli_str(j, "name"));
    else if (j)
        cli_print_json(j);
    cJSON_Delete(j);
    return j ? 0 : 1;
}

static int model_list(const cli_globals *g)
{
    cJSON *a = cli_request(g, "GET", LOOM_ROUTE_MODELS, NULL);
    if (!a)
        return 1;
    if (g->json) {
        cli_print_json(a);
    } else {
        const char *headers[] = {"NAME", "TAG", "RUNTIME", "STATE", "KERNELS", "OWNER"};
        cli_table *t = cli_table_new(6, headers);
        const cJSON *m;
        cJSON_ArrayForEach(m, a) {
            char kernels[16];
            snprintf(kernels, sizeof kernels, "%d",
                     (int)cli_num(cJSON_GetObjectItem(m, "kernels"), "running"));
            const char *cells[] = {cli_str(m, "name"), cli_str(m, "tag"), cli_str(m, "runtime"),
                                   cli_str(m, "state"), kernels, cli_str(m, "owner")};
            cli_table_add(t, cells);
        }
        cli_table_print(t);
        cli_table_free(t);
    }
    cJSON_Delete(a);
    return 0;
}

/* A call on one model: METHOD PATH/{name}TAIL with an optional body. */
static cJSON *on_model(const cli_globals *g, const char *method, const char *name,
                       const char *tail, const char *body)
{
    char *path = model_path(name, tail);
    if (!path) {
        cli_fail("out of memory");
        return NULL;
    }
    cJSON *j = cli_request(g, method, path, body);
    free(path);
    return j;
}

static int has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], flag))
            return 1;
    return 0;
}

/* The value after `flag`, or NULL. */
static const char *flag_value(int argc, char **argv, const char *flag)
{
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], flag))
            return argv[i + 1];
    return NULL;
}

static int model_infer(const char *name, int argc, char **argv, const cli_globals *g)
{
    const char *data = flag_value(argc, argv, "-d");
    if (!data)
        return cli_fail("model infer: -d JSON (or -d @FILE) is required");
    char *owned = NULL;
    if (data[0] == '@') {
        loom_error *e = fs_read_file(data + 1, BODY_FILE_MAX, &owned, NULL);
        if (e)
            return cli_fail_error(loom_err_wrap(e, "model infer: -d"));
        data = owned;
    }
    char *esc = cli_curl_escape_path(name);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LOOM_ROUTE_INFERENCE, esc ? esc : "");
    free(esc);
    client c;
    cli_client(g, &c);
    client_reply reply = {0};
    char err[512];
    loom_error *e = cli_client_call(&c, "POST", path, data, &reply);
    free(owned);
    if (e)
        return cli_fail_error(e);
    if (reply.status < 200 || reply.status >= 300) {
        cli_client_reply_error(&reply, err, sizeof err);
        cli_client_reply_free(&reply);
        return cli_fail("%s", err);
    }
    fwrite(reply.body ? reply.body : "", 1, reply.len, stdout);
    if (reply.len && reply.body[reply.len - 1] != '\n')
        putchar('\n');
    cli_client_reply_free(&reply);
    return 0;
}

/* A registered kernel lives with a host: this asks the host the CLI talks
 * to (--host, LOOM_HOST, or the one logged on to) whether it holds one of
 * that name, which is what deploy resolves. */
static int check_registered(const model_spec *spec, const cli_globals *g)
{
    char *esc = cli_curl_escape_path(spec->kernel_name);
    char path[512];
    snprintf(path, sizeof path, "%s/kernel/%s", LOOM_ROUTE_PLUGINS, esc ? esc : "");
    free(esc);
    cJSON *k = cli_request(g, "GET", path, NULL);
    if (!k)
        return cli_fail("model %s refused: model.json: runtime \"%s\" names a kernel "
                        "registered with a host, and the host asked (--host URL, LOOM_HOST, or "
                        "the one logged on to) has none it can show (above)", spec->name,
                        spec->kernel_name);
    if (g->json)
        printf("{\"name\":\"%s\",\"runtime\":\"%s\",\"registered\":true,\"ok\":true}\n",
               spec->name, spec->kernel_name);
    else
        printf("model %s: runtime %s, a kernel registered with the host (%s %s, version %s): "
               "ok; the host loads it at start\n", spec->name, spec->kernel_name,
               cli_str(k, "format"), cli_str(k, "origin"), cli_str(k, "version"));
    cJSON_Delete(k);
    return 0;
}

/* "x FP64 [-1], idx INT32 [2,-1]": declared tensors, for model check. */
static void tensors_text(const model_tensor *t, int n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) {
        at += (size_t)snprintf(buf + at, len - at, "%s%s %s [", i ? ", " : "", t[i].name,
                               dtype_name(t[i].dtype));
        for (uint32_t k = 0; k < t[i].ndim && at < len; k++)
            at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? "," : "",
                                   (long long)t[i].shape[k]);
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "]");
    }
}

static int model_check(const char *dir, const cli_globals *g)
{
    model_spec spec;
    char err[1024];
    if (loom_err_take(model_spec_read(dir, &spec, NULL), err, sizeof err))
        return cli_fail("model refused: %s", err);
    if (spec.runtime == MODEL_RUNTIME_REGISTERED)
        return check_registered(&spec, g);
    char native[PATH_MAX + 16];
    if (spec.runtime == MODEL_RUNTIME_NATIVE) { /* the trainer's own kernel */
        char plugins[PATH_MAX];
        loomd_default_plugin_dir(plugins, sizeof plugins);
        snprintf(native, sizeof native, "%s/native.so", plugins);
        snprintf(spec.kernel_path, sizeof spec.kernel_path, "%s", native);
    }
    kernel_server_spec ks = {.model_dir = dir, .runtime = spec.runtime,
                             .kernel_path = spec.kernel_path[0] ? spec.kernel_path : NULL,
                             .weight_path = spec.weight_path[0] ? spec.weight_path : NULL,
                             .device_kind = LOOM_DEVICE_CPU};
    if (loom_err_take(kernel_server_check(&ks), err, sizeof err))
        return cli_fail("model refused: %s", err);
    const char *protocol = spec.protocol == MODEL_PROTOCOL_V2 ? "v2" : "raw";
    if (g->json) {
        printf("{\"name\":\"%s\",\"runtime\":\"%s\",\"protocol\":\"%s\",\"ok\":true}\n",
               spec.name, model_runtime_name(spec.runtime), protocol);
        return 0;
    }
    printf("model %s: runtime %s, kernel loaded and an instance created: ok\n", spec.name,
           model_runtime_name(spec.runtime));
    char in[1024], out[1024];
    tensors_text(spec.inputs, spec.ninputs, in, sizeof in);
    tensors_text(spec.outputs, spec.noutputs, out, sizeof out);
    if (spec.protocol == MODEL_PROTOCOL_V2)
        printf("requests: Open Inference Protocol v2, decoded by the host; inputs %s; outputs "
               "%s\n", in, spec.noutputs ? out : "(not declared)");
    else
        printf("requests: raw (the kernel gets the body as the client sent it)\n");
    return 0;
}

static int model_profile_update(const char *name, int argc, char **argv, const cli_globals *g)
{
    const char *file = flag_value(argc, argv, "-f");
    if (!file)
        return cli_fail("model updateprofile: -f profile.json is required");
    char *text;
    loom_error *e = fs_read_file(file, MODEL_JSON_MAX, &text, NULL);
    if (e)
        return cli_fail_error(loom_err_wrap(e, "model updateprofile: -f"));
    cJSON *j = on_model(g, "PUT", name, LOOM_ROUTE_APPPROFILE, text);
    free(text);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else
        printf("model %s: profile updated\n", name);
    cJSON_Delete(j);
    return 0;
}

enum { START_SERVED = 0, START_FAILED = 1, START_TIMEOUT = 3 };

/* One line on a model's state, with why it waits or how it failed. */
static void print_state(const char *name, const cJSON *m)
{
    const char *why = *cli_str(m, "pendingReason") ? cli_str(m, "pendingReason")
                      : !strcmp(cli_str(m, "state"), "failed") ? cli_str(m, "lastError")
                                                               : "";
    printf("model %s: %s%s%s%s\n", name, cli_str(m, "state"), *why ? " (" : "", why,
           *why ? ")" : "");
}

/* `--wait [SECONDS]`: polls the model until it serves, fails to start or
 * the time passes (0: no bound). */
int cli_model_wait_started(const char *name, double timeout, const cli_globals *g)
{
    int64_t until = time_mono_ms() + (int64_t)(timeout * 1000);
    for (;;) {
        cJSON *m = on_model(g, "GET", name, "", NULL);
        if (!m)
            return START_FAILED;
        const char *state = cli_str(m, "state");
        int rc = !strcmp(state, "started") ? START_SERVED
                 : !strcmp(state, "starting") ? -1
                                              : START_FAILED;
        if (rc < 0 && timeout > 0 && time_mono_ms() >= until)
            rc = START_TIMEOUT;
        if (rc >= 0) {
            if (g->json)
                cli_print_json(m);
            else
                print_state(name, m);
            if (rc == START_TIMEOUT)
                cli_fail("model start: model %s did not serve within %g s", name, timeout);
        }
        cJSON_Delete(m);
        if (rc >= 0)
            return rc;
        usleep(200000);
    }
}

/* `loom model start NAME [--wait [SECONDS]]`. */
static int model_start(const char *name, int argc, char **argv, const cli_globals *g)
{
    int wait = 0;
    double timeout = 0;
    for (int i = 0; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--wait") && !wait) {
            wait = 1;
            if (i + 1 < argc && (timeout = strtod(argv[i + 1], &end)) >= 0 && *end == 0 &&
                end != argv[i + 1])
                i++;
            else
                timeout = 0;
        } else {
            return cli_fail("model start: unexpected \"%s\" (usage: loom model start NAME "
                            "[--wait [SECONDS]])", argv[i]);
        }
    }
    cJSON *j = on_model(g, "POST", name, LOOM_ROUTE_OP_START, "{}");
    if (!j)
        return 1;
    if (!wait) {
        if (g->json)
            cli_print_json(j);
        else
            print_state(name, j);
    }
    cJSON_Delete(j);
    return wait ? cli_model_wait_started(name, timeout, g) : 0;
}

static int model_simple(const char *verb, const char *name, int argc, char **argv,
                        const cli_globals *g)
{
    int force = has_flag(argc, argv, "-f");
    cJSON *j = NULL;
    if (!strcmp(verb, "view"))
        return print_reply(on_model(g, "GET", name, "", NULL), g,
                           has_flag(argc, argv, "-s") || has_flag(argc, argv, "-a"),
                           has_flag(argc, argv, "-a"));
    if (!strcmp(verb, "stop"))
        j = on_model(g, "POST", name, force ? LOOM_ROUTE_OP_STOP "?force=true" : LOOM_ROUTE_OP_STOP,
                     "{}");
    else if (!strcmp(verb, "undeploy"))
        j = on_model(g, "DELETE", name, force ? "?force=true" : "", NULL);
    else if (!strcmp(verb, "viewprofile")) {
        j = on_model(g, "GET", name, LOOM_ROUTE_APPPROFILE, NULL);
        if (j) {
            char *text = cJSON_Print(j);
            puts(text ? text : "");
            free(text);
            cJSON_Delete(j);
        }
        return j ? 0 : 1;
    } else
        return cli_fail("model: unknown verb \"%s\" (see loom model --help)", verb);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else
        printf("model %s: %s\n", name, cli_str(j, "state"));
    cJSON_Delete(j);
    return 0;
}

int cmd_model(int argc, char **argv, const cli_globals *g)
{
    int rc = cli_verb_usage(argc, argv, model_usage);
    if (rc >= 0)
        return rc;
    const char *verb = argv[0];
    if (!strcmp(verb, "deploy"))
        return model_deploy(argc - 1, argv + 1, g);
    if (!strcmp(verb, "list"))
        return model_list(g);
    if (argc < 2)
        return cli_fail("model %s: NAME%s is required", verb,
                        !strcmp(verb, "check") ? " (the model directory)" : "");
    if (!strcmp(verb, "check"))
        return model_check(argv[1], g);
    if (!strcmp(verb, "infer"))
        return model_infer(argv[1], argc - 2, argv + 2, g);
    if (!strcmp(verb, "updateprofile"))
        return model_profile_update(argv[1], argc - 2, argv + 2, g);
    if (!strcmp(verb, "start"))
        return model_start(argv[1], argc - 2, argv + 2, g);
    return model_simple(verb, argv[1], argc - 2, argv + 2, g);
}

/* `loom kernel run --dir D --runtime R [--kernel F] [--weights F]
 *  --device-kind K --device-index I [--env NAME=VALUE]...` */
int cmd_kernel_run(int argc, char **argv)
{
    kernel_server_spec s = {.device_kind = LOOM_DEVICE_CPU};
    const char *runtime = NULL;
    for (int i = 0; i + 1 < argc; i += 2) {
        const char *flag = argv[i], *value = argv[i + 1];
        if (!strcmp(flag, "--dir"))
            s.model_dir = value;
        else if (!strcmp(flag, "--runtime"))
            runtime = value;
        else if (!strcmp(flag, "--kernel"))
            s.kernel_path = value;
        else if (!strcmp(flag, "--weights"))
            s.weight_path = value;
        else if (!strcmp(flag, "--device-kind"))
            s.device_kind = atoi(value);
        else if (!strcmp(flag, "--device-index"))
            s.device_index = atoi(value);
        else if (!strcmp(flag, "--env") && strchr(value, '=')) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(strchr(value, '=') - value), value);
            setenv(name, strchr(value, '=') + 1, 1);
        } else {
            fprintf(stderr, "loom kernel run: unknown flag %s\n", flag);
            return 2;
        }
    }
    s.runtime = MODEL_RUNTIME_SO;
    while (runtime && strcmp(model_runtime_name(s.runtime), runtime) != 0 &&
           s.runtime <= MODEL_RUNTIME_NATIVE)
        s.runtime++;
    if (!s.model_dir || !runtime || s.runtime > MODEL_RUNTIME_NATIVE) {
        fputs("loom kernel run: --dir and --runtime (so, lua, ffi) are required (the host runs "
              "this)\n", stderr);
        return 2;
    }
    if (supervise_limit_self((uint64_t)4 << 30, 0) != 0) {
        perror("loom kernel run: setrlimit");
        return 1;
    }
    return kernel_server_run(SUPERVISE_CHILD_FD, &s);
}
