#include "vectors.h"

int run_http(driver *d) { return unsupported(d, "http: not yet"); }
