#include "vectors.h"

int run_latency_tracker(driver *d) { return unsupported(d, "latency_tracker: not yet"); }
