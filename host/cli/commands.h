/* cli/commands.h - the subcommands. Each takes the words after its name
 * (global flags already removed) and returns the process exit status. */
#ifndef LOOM_CLI_COMMANDS_H
#define LOOM_CLI_COMMANDS_H

#include <stdbool.h>

#include "cli/common.h"
#include "store/record_states.h"

int cmd_serve(int argc, char **argv, const cli_globals *g);
int cmd_demo(int argc, char **argv, const cli_globals *g);
int cmd_plugin(int argc, char **argv, const cli_globals *g);
/* framework | algorithm | kernel | logger */
int cmd_kind(const char *kind, int argc, char **argv, const cli_globals *g);
int cmd_exec(int argc, char **argv, const cli_globals *g);
int cmd_hpo(int argc, char **argv, const cli_globals *g);
/* `loom algorithm add DIR`: installs a WMLA plugin optimizer folder. */
int cli_hpo_algorithm_add_dir(const char *dir, const char *name, const char *conda_home,
                          const char *conda_env, const cli_globals *g);
int cmd_login(int argc, char **argv, const cli_globals *g);
int cmd_logout(int argc, char **argv, const cli_globals *g);
int cmd_user(int argc, char **argv, const cli_globals *g);
int cmd_apikey(int argc, char **argv, const cli_globals *g);
int cmd_slots(int argc, char **argv, const cli_globals *g);
int cmd_plan(int argc, char **argv, const cli_globals *g);
int cmd_model(int argc, char **argv, const cli_globals *g);
/* Polls model NAME until it serves (0), fails to start (1) or timeout
 * seconds pass (3; 0: no bound), printing its state as it ends. */
int cli_model_wait_started(const char *name, double timeout, const cli_globals *g);
/* Hidden: `loom kernel run`, the process a kernel instance runs in. */
int cmd_kernel_run(int argc, char **argv);
/* Hidden: the confinement step the host runs every job process through. */
int cmd_confine(int argc, char **argv);
/* Hidden: the process the host runs a plugin in (plugin/plugin_proc.h). */
int cmd_plugin_host(int argc, char **argv);

/* The demo's serving step (demo_serve.c). */
int cli_demo_serving(const cli_globals *g, const char *exec_id, const char *dataset_dir);

/* Shared by exec and demo. */
int cli_exec_start_words(int argc, char **argv, const cli_globals *g, char *id, size_t idlen);
int cli_exec_wait_id(const cli_globals *g, const char *id, double timeout_s, int quiet);
int cli_exec_print_logs(const cli_globals *g, const char *id, int follow, int worker,
                    const char *stream);
/* The state in an exec's REST reply; false for a word this version does
 * not know (a newer host's), which callers wait on as not ended. */
bool cli_reply_exec_state(const cJSON *reply, exec_state *out);
/* The state in a tuning task's REST reply; a word this version does not
 * know reads as SUBMITTED (not ended). */
hpo_task_state cli_reply_hpo_state(const cJSON *reply);

#endif
