/* Reaches another subsystem's internals through an include root. */
#include "sched/sched_internal.h"
