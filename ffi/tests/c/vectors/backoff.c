#include "vectors.h"

int run_backoff(driver *d) { return unsupported(d, "backoff: not yet"); }
