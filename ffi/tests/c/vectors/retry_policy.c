#include "vectors.h"

int run_retry_policy(driver *d) { return unsupported(d, "retry_policy: not yet"); }
