/* Reaches train through an include root: check-layers must refuse it. */
#include <train/coordinator.h>
#include "store/../train/coordinator.h"
