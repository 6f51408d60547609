#include "vectors.h"

int run_brownout(driver *d) { return unsupported(d, "brownout: not yet"); }
