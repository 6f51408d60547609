#include "vectors.h"

int run_adaptive_throttle(driver *d) { return unsupported(d, "adaptive_throttle: not yet"); }
