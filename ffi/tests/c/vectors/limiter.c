#include "vectors.h"

int run_limiter(driver *d) { return unsupported(d, "limiter: not yet"); }
