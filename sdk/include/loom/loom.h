/*
 * loom/loom.h - the whole plugin SDK. A plugin includes this header, defines
 * one loom_module and exports loom_module_entry(); it links nothing of the
 * host.
 *
 * How a call fails or refuses, one rule for every entry in either direction
 * (the plugin's factories and the host's tables and sinks): it returns
 * `loom_error *`, NULL when it did what was asked, and hands its results
 * through out-parameters. A refusal is an error with a loom_code that says
 * which kind (LOOM_ERR_INVALID_ARGUMENT for input outside what the call
 * accepts, LOOM_ERR_RESOURCE_EXHAUSTED for a limit reached, ...) and a
 * message naming what was refused. The returned error passes to the caller
 * (abi.h). Calls that cannot fail return void; lookups that may find
 * nothing return NULL without an error (get_factory, get_extension, alloc,
 * gradient_memory).
 *
 * Kept for ABI compatibility, the entries that predate the rule and whose
 * shape plugins already built depend on:
 *  - loom_proposal_sink.propose returns the experiment id, 0 when refused;
 *  - loom_proposal_sink.stop returns 0 or a loom_code.
 * Since ABI 1.5 the sink also offers propose_experiment and stop_experiment
 * under the rule (search.h); new plugins use those. The inline helpers of
 * abi.h (loom_metrics_add) cannot reach the host that makes errors, so they
 * return a loom_code, LOOM_OK when done.
 */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include "abi.h"
#include "host.h"
#include "module.h"
#include "framework.h"
#include "search.h"
#include "kernel.h"
#include "logger.h"

#endif
