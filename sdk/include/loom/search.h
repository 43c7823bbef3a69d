/*
 * loom/search.h - hyperparameter search algorithms ("loom.search/2").
 *
 * The host runs the tuning loop: it asks the algorithm for proposals, runs
 * each as an experiment, and reports the outcome back. The algorithm keeps
 * its own state and can save and restore it, so a tuning task survives a
 * host restart.
 *
 * The search space arrives typed and normalised: the host parses the task
 * (WMLA's hyperParams with its field names and string-typed numbers) and
 * hands the plugin one loom_param per hyperparameter, so an algorithm needs
 * no JSON parser. A proposal is one loom_value per parameter, in the space's
 * order.
 *
 * Where it runs: search instances run in a `loom plugin-host` child process,
 * never in the daemon; a call that crashes or passes its deadline fails the
 * tuning task with the plugin named. The host never calls one instance from
 * two threads at once.
 *
 * Where its log goes: the child's output, host->log lines included (a Lua
 * script's loom.log(level, text) calls), is appended to the task's search
 * log, HOME/hpo/TASK/search.log on the host. Its owner reads it with
 * `loom hpo logs TASK [-f]` or GET .../hypersearch/TASK/log (the last
 * 64 KiB per request; ?offset= pages). Nothing a search plugin writes
 * reaches the host's own log or the experiments' logs.
 *
 * "loom.search/1" (the space as a JSON string) is gone: nothing outside the
 * project used it.
 */
#ifndef LOOM_SEARCH_H
#define LOOM_SEARCH_H

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_search_instance loom_search_instance; /* plugin's */

typedef enum loom_param_kind {
    LOOM_PARAM_RANGE = 1,  /* WMLA "Range": an interval, maybe stepped or on a log scale */
    LOOM_PARAM_CHOICE = 2  /* WMLA "Discrete": one of a list */
} loom_param_kind;

typedef enum loom_value_type {
    LOOM_VALUE_DOUBLE = 1,
    LOOM_VALUE_INT = 2,
    LOOM_VALUE_STRING = 3
} loom_value_type;

/* One hyperparameter. The host validated it: low <= high, a choice list is
 * non-empty, a string parameter is always a choice, names are unique.
 *
 * RANGE, DOUBLE: values in [low, high]; step > 0 quantises to low + k*step.
 * RANGE, INT:    integers in [low, high] (both exact integers); step >= 1.
 * log_base > 1 (WMLA's "power"): low and high bound an exponent x and the
 * value is log_base^x (rounded for INT), so x is what an algorithm samples
 * uniformly; with a step, x is quantised. log_base == 0: linear scale.
 * CHOICE: `choice_count` values in the array of the parameter's type; the
 * other two arrays are NULL. */
typedef struct loom_param {
    uint32_t struct_size;
    int32_t kind;          /* loom_param_kind */
    int32_t type;          /* loom_value_type */
    int32_t reserved;      /* zero */
    const char *name;
    double low, high, step, log_base;
    uint32_t choice_count;
    const double *choice_doubles;
    const int64_t *choice_ints;
    const char *const *choice_strings;
} loom_param;

/* One value of one parameter: the member its type names is meaningful. */
typedef struct loom_value {
    int32_t type;          /* loom_value_type; equals the parameter's */
    int32_t reserved;      /* zero */
    double d;
    int64_t i;
    const char *s;         /* one of the parameter's choice_strings */
} loom_value;

/* One of the task's algoParams, as given (WMLA writes every value as a
 * string: "eta": "3"). */
typedef struct loom_search_option {
    const char *name;
    const char *value;
} loom_search_option;

/* Borrowed for the duration of create(): copy what you keep. */
typedef struct loom_search_config {
    uint32_t struct_size;
    int32_t maximize;          /* 1: maximise the objective, 0: minimise */
    uint32_t max_experiments;  /* maxJobNum; 0 = no limit */
    uint32_t max_parallel;     /* maxParalleJobNum */
    uint64_t seed;             /* RandomSeed, or one the host chose */
    const char *objective_metric;
    uint32_t param_count;
    const loom_param *params;
    uint32_t option_count;
    const loom_search_option *options;
    /* The task's explicit "experiments" (each param_count values in the
     * space's order), or 0 and NULL. */
    uint32_t experiment_count;
    const loom_value *const *experiments;
} loom_search_config;

typedef enum loom_experiment_status {
    LOOM_EXPERIMENT_FINISHED = 0,
    LOOM_EXPERIMENT_FAILED = 1,
    LOOM_EXPERIMENT_KILLED = 2
} loom_experiment_status;

/* A finished experiment, as observe() receives it. */
typedef struct loom_observation {
    uint32_t struct_size;
    int32_t status;            /* loom_experiment_status */
    uint64_t experiment_id;    /* as propose() returned it */
    int32_t has_objective;     /* 0: the experiment reported no objective */
    int32_t reserved;          /* zero */
    double objective;          /* raw, as the experiment reported it */
    double budget;             /* the budget it was proposed with, or 0 */
    uint32_t value_count;      /* = param_count */
    const loom_value *values;  /* its hyperparameters, in the space's order */
    uint32_t metric_count;     /* every metric of its last validation */
    const loom_metric *metrics;
} loom_observation;

/* Where proposals go. */
typedef struct loom_proposal_sink loom_proposal_sink;
struct loom_proposal_sink {
    uint32_t struct_size;
    void *host_data;
    /* Proposes one experiment: `count` (= param_count) values in the space's
     * order, each of its parameter's type and inside its domain. `budget`
     * > 0 gives the experiment a resource budget (Hyperband's
     * ResourceValue), which the host writes into config.json under the
     * task's ResourceName; 0 means none. Returns the experiment id the host
     * assigned (> 0), or 0 when the proposal was refused (a value outside
     * the space, the task's limit reached); the host logs why. The 1.0
     * shape, kept for the plugins built against it: since 1.5
     * propose_experiment says why to the plugin too.
     * [thread: only inside suggest, on its thread] [owns: values borrowed;
     * the host copies them] */
    uint64_t (*propose)(const loom_proposal_sink *sink, const loom_value *values,
                        uint32_t count, double budget);
    /* Asks the host to stop a running experiment early (Hyperband's
     * losers); its observation arrives later as KILLED. Returns 0 when it
     * was running, else an error code (1.0's shape; stop_experiment
     * follows the SDK's rule). [thread: only inside suggest or observe, on
     * its thread] */
    int32_t (*stop)(const loom_proposal_sink *sink, uint64_t experiment_id);
    /* Says the search has nothing more to propose, ever. May be called
     * again on later suggests (a restored search repeats it). [thread: only
     * inside suggest, on its thread] */
    void (*finish)(const loom_proposal_sink *sink);

    /* ABI 1.5: propose and stop under the SDK's refusal rule (loom.h);
     * present when LOOM_STRUCT_HAS(sink, loom_proposal_sink,
     * stop_experiment), and then the ones to use. propose_experiment
     * writes the assigned id (> 0) to *experiment_id and returns NULL, or
     * returns why it refused: LOOM_ERR_INVALID_ARGUMENT for a value outside
     * the space (naming the parameter), LOOM_ERR_RESOURCE_EXHAUSTED when
     * this suggest's `max` or the task's limit is used up.
     * [thread: only inside suggest, on its thread] [owns: values borrowed,
     * the host copies them; a returned error is the plugin's to free with
     * loom_host.error_free] */
    loom_error *(*propose_experiment)(const loom_proposal_sink *sink, const loom_value *values,
                                      uint32_t count, double budget, uint64_t *experiment_id);
    /* As stop, under the rule: NULL when the stop was taken. [thread: only
     * inside suggest or observe, on its thread] [owns: a returned error is
     * the plugin's to free] */
    loom_error *(*stop_experiment)(const loom_proposal_sink *sink, uint64_t experiment_id);
};

typedef struct loom_search_factory {
    uint32_t struct_size;
    uint32_t reserved; /* zero */
    /* Required. [thread: any host thread; instances are independent]
     * [owns: config borrowed for the call; *out is the plugin's until
     * destroy] */
    loom_error *(*create)(const struct loom_search_factory *self,
                          const loom_search_config *config,
                          loom_search_instance **out);
    /* Required. [thread: one at a time per instance] [owns: takes inst] */
    void (*destroy)(loom_search_instance *inst);
    /* Required. Propose at most `max` experiments now (WMLA's
     * search(number_samples, ...)); proposing none means "wait for
     * results"; finish() means exhausted. [thread: one at a time per
     * instance] [owns: sink borrowed for the call] */
    loom_error *(*suggest)(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink);
    /* Required. An experiment ended. [thread: one at a time per instance]
     * [owns: obs and everything it points at borrowed for the call] */
    loom_error *(*observe)(loom_search_instance *inst, const loom_observation *obs,
                           const loom_proposal_sink *sink);
    /* Optional pair (both or neither; NULL or past struct_size means
     * absent): the whole state as a NUL-terminated string, and back.
     * [thread: one at a time per instance] [owns: *state_out allocated with
     * loom_host.alloc, the host's afterwards; `state` borrowed] */
    loom_error *(*save_state)(loom_search_instance *inst, char **state_out);
    /* [thread: one at a time per instance] [owns: state borrowed] */
    loom_error *(*load_state)(loom_search_instance *inst, const char *state);
} loom_search_factory;

#ifdef __cplusplus
}
#endif
#endif
