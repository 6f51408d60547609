/* http.json: the HTTP functions (status to outcome, Retry-After, HTTP dates); header
 * values come as bytes, as they came off the wire. */
#include "vectors.h"

/* A delay from the C API: GUARDS_NO_RETRY_AFTER is none; UINT64_MAX - 1 is "does not
 * fit" (core saturates to 2^64 - 1 ns), which the C value cannot tell from an exact
 * 2^64 - 2 ns: unobservable. */
static void result_delay(driver *d, const char *p, uint64_t x) {
  if (x == GUARDS_NO_RETRY_AFTER) result_null(d, p);
  else if (x == UINT64_MAX - 1) result_unobservable(d, p);
  else result_u64(d, p, x);
}

int run_http(driver *d) {
  if (is_op(d, "new") || is_op(d, "free")) return submit(d);
  uint32_t outcome = 0;
  uint64_t after = 0;
  size_t len = 0;
  if (is_op(d, "outcome_of_status") || is_op(d, "classify")) {
    uint64_t status = u64_arg(d, "status");
    const char *header = NULL;
    uint64_t now = 0;
    if (is_op(d, "outcome_of_status")) {
      /* "has a readable Retry-After": give the C call one. */
      if (bool_arg(d, "has_retry_after")) {
        header = "1";
        len = 1;
      }
    } else {
      if (has(d, "retry_after")) header = str_arg(d, "retry_after", &len);
      now = u64_arg(d, "now_unix");
    }
    if (status > UINT32_MAX) return unsupported(d, "a status wider than the C argument");
    guards_result rc = guards_http_outcome((uint32_t)status, header, len, now, &outcome, &after);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    const char *name = guards_outcome_name(outcome);
    if (is_op(d, "outcome_of_status")) {
      result_str(d, "", name);
    } else {
      result_str(d, "outcome", name);
      result_delay(d, "retry_after", after);
    }
    return submit(d);
  }
  if (is_op(d, "parse_retry_after")) {
    const char *s = str_arg(d, "value", &len);
    guards_result rc = guards_http_retry_after_parse(s, len, u64_arg(d, "now_unix"), &after);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_delay(d, "", after);
    return submit(d);
  }
  if (is_op(d, "format_http_date")) {
    char buf[GUARDS_HTTP_DATE_MAX];
    guards_result rc = guards_http_date_format(u64_arg(d, "unix"), buf, sizeof buf, NULL);
    if (rc == GUARDS_RESULT_INVALID_ARGUMENT) result_null(d, "");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_str(d, "", buf);
    return submit(d);
  }
  if (is_op(d, "parse_http_date")) {
    const char *s = str_arg(d, "value", &len);
    int64_t t = 0;
    guards_result rc = guards_http_date_parse(s, len, u64_arg(d, "now_unix"), &t);
    if (rc == GUARDS_RESULT_INVALID_HEADER) result_null(d, "");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_i64(d, "", t);
    return submit(d);
  }
  return unsupported(d, "an op the C HTTP functions do not have");
}
