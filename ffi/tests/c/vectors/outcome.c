/* outcome.json: the call contract's outcomes by number and name (guards_outcome_name,
 * guards_outcome_from_name). */
#include <string.h>

#include "vectors.h"

int run_outcome(driver *d) {
  if (is_op(d, "new") || is_op(d, "free")) return submit(d);
  if (is_op(d, "from_number")) {
    int64_t n = i64_arg(d, "number");
    const char *name = (n >= 0 && n <= UINT32_MAX) ? guards_outcome_name((uint32_t)n) : NULL;
    if (name) result_str(d, "", name);
    else result_null(d, "");
    return submit(d);
  }
  if (is_op(d, "from_name")) {
    size_t len = 0;
    const char *s = str_arg(d, "name", &len);
    uint32_t n = 0;
    guards_result rc = guards_outcome_from_name(s, len, &n);
    if (rc == GUARDS_RESULT_INVALID_ENUM) result_null(d, "");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_u64(d, "", n);
    return submit(d);
  }
  if (is_op(d, "verdicts")) {
    size_t len = 0;
    const char *s = str_arg(d, "outcome", &len);
    uint32_t n = 0;
    guards_result rc = guards_outcome_from_name(s, len, &n);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "number", n);
    /* What each guard does with the outcome is applied inside each guard's report: the C
     * API has no table of verdicts. */
    static const char *const guards[] = {"breaker_call", "breaker_probe", "bulkhead",
                                         "limiter",      "retry_budget",  "adaptive_throttle",
                                         "latency",      "retry",         "brownout"};
    for (size_t i = 0; i < sizeof guards / sizeof guards[0]; i++) result_unobservable(d, guards[i]);
    return submit(d);
  }
  return unsupported(d, "an op the C outcome functions do not have");
}
