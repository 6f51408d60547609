#include "vectors.h"

int run_limit(driver *d) { return unsupported(d, "limit: not yet"); }
