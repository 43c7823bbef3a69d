/*
 * loom/loom.h - the whole plugin SDK. A plugin includes this header, defines
 * one loom_module and exports loom_module_entry(); it links nothing of the
 * host.
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
