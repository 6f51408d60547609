#include "vectors.h"

int run_admission(driver *d) { return unsupported(d, "admission: not yet"); }
