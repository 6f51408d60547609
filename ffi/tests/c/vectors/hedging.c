#include "vectors.h"

int run_hedging(driver *d) { return unsupported(d, "hedging: not yet"); }
