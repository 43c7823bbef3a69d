/* Reaches train from sched by a relative path: check-layers must refuse it. */
#include "../train/coordinator.h"
#include "sched_internal.h"
