/*
 * loom/search.h - hyperparameter search algorithms ("loom.search/1").
 *
 * The host runs the tuning loop: it asks the algorithm for proposals, runs
 * each as an experiment, and reports the outcome back. The algorithm keeps
 * its own state and can save and restore it, so a tuning task survives a
 * host restart.
 *
 * What exists today: the host loads, validates and lists search plugins
 * (`loom algorithm add`, `loom plugin check`); the tuning loop that drives
 * them is not part of this release. The contract below is the one it will
 * keep.
 *
 * Threading: search instances run inside the host process; the host never
 * calls one instance from two threads at once, but different instances may
 * be called from different threads at the same time.
 */
#ifndef LOOM_SEARCH_H
#define LOOM_SEARCH_H

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_search_instance loom_search_instance; /* plugin's */

/* Borrowed for the duration of create(). */
typedef struct loom_search_config {
    uint32_t struct_size;
    int32_t maximize;          /* 1: maximise the objective, 0: minimise */
    uint32_t max_experiments;  /* maxJobNum; 0 = no limit */
    uint32_t max_parallel;     /* maxParalleJobNum */
    uint64_t seed;             /* RandomSeed, or one the host chose */
    /* The space, as WMLA's hyperParams array validated by the host:
     * [{"name","type":"Range"|"Discrete","dataType":"DOUBLE"|"INT"|"STR",
     *   "minDbVal","maxDbVal","minIntVal","maxIntVal","step","power",
     *   "discreteDbVal"|"discreteIntVal"|"discreateStrVal"}] */
    const char *space_json;
    /* algoParams folded into one object: {"eta": "3", ...} (values as given). */
    const char *params_json;
    const char *objective_metric;
    /* Explicit experiments (grid search's "experiments" array), or NULL. */
    const char *experiments_json;
} loom_search_config;

typedef enum loom_experiment_status {
    LOOM_EXPERIMENT_FINISHED = 0,
    LOOM_EXPERIMENT_FAILED = 1,
    LOOM_EXPERIMENT_KILLED = 2
} loom_experiment_status;

/* Where proposals go. */
typedef struct loom_proposal_sink loom_proposal_sink;
struct loom_proposal_sink {
    uint32_t struct_size;
    void *host_data;
    /* Proposes one experiment. `config_json` is an object of hyperparameter
     * name -> value, the shape of WMLA's config.json, and may name the
     * budget an experiment gets (e.g. "epochs" for Hyperband). Returns the
     * experiment id the host assigned (> 0), or 0 when the proposal was
     * refused (logged by the host). [thread: only inside suggest, on its
     * thread] [owns: config_json borrowed; the host copies it] */
    uint64_t (*propose)(const loom_proposal_sink *sink, const char *config_json);
    /* Says the search has nothing more to propose, ever. May be called
     * again on later suggests (a restored search repeats it). A proposal
     * the host refused (propose returned 0) does not count as made.
     * [thread: only inside suggest, on its thread] */
    void (*finish)(const loom_proposal_sink *sink);
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
    /* Required. Propose at most `max` experiments now; proposing none means
     * "wait for results". [thread: one at a time per instance] [owns: sink
     * borrowed for the call] */
    loom_error *(*suggest)(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink);
    /* Required. An experiment ended; `metrics` holds its final objective
     * (and others). [thread: one at a time per instance] [owns: metrics
     * borrowed for the call] */
    loom_error *(*observe)(loom_search_instance *inst, uint64_t experiment_id,
                           int32_t status, const loom_metric *metrics,
                           uint32_t metric_count);
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
