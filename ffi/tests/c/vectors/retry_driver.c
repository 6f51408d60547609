#include "vectors.h"

int run_retry_driver(driver *d) { return unsupported(d, "retry_driver: not yet"); }
