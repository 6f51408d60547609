#include "vectors.h"

int run_deadline(driver *d) { return unsupported(d, "deadline: not yet"); }
