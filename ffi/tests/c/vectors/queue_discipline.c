#include "vectors.h"

int run_queue_discipline(driver *d) { return unsupported(d, "queue_discipline: not yet"); }
