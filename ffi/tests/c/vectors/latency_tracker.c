/* latency_tracker.json: a guards_latency_tracker. A quantile outside 0..=1 (or NaN),
 * which core answers with no value, is refused by the C API with INVALID_ARGUMENT:
 * replied as no value, as NO_DATA is. */
#include "vectors.h"

static guards_latency_tracker *tracker;

int run_latency_tracker(driver *d) {
  if (is_op(d, "new")) {
    guards_latency_tracker_config cfg;
    must(guards_latency_tracker_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_tracker(&c, "config.", &cfg);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_latency_tracker_new(&cfg, &tracker);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_latency_tracker_free(tracker);
    tracker = NULL;
    return submit(d);
  }
  uint64_t now = u64_or(d, "now", 0);
  uint64_t x = 0;
  guards_result rc;
  if (is_op(d, "record")) {
    rc = guards_latency_tracker_record(tracker, now, u64_arg(d, "latency"));
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "count")) {
    rc = guards_latency_tracker_count(tracker, now, &x);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", x);
    return submit(d);
  }
  if (is_op(d, "quantile") || is_op(d, "propose_timeout")) {
    rc = is_op(d, "quantile") ? guards_latency_tracker_quantile(tracker, now, f64_arg(d, "q"), &x)
                              : guards_latency_tracker_propose_timeout(tracker, now, &x);
    if (rc == GUARDS_RESULT_NO_DATA || (rc == GUARDS_RESULT_INVALID_ARGUMENT && is_op(d, "quantile")))
      result_null(d, "");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_u64(d, "", x);
    return submit(d);
  }
  if (is_op(d, "false_timeout_rate")) {
    double r = 0;
    rc = guards_latency_tracker_false_timeout_rate(tracker, now, u64_arg(d, "timeout"), &r);
    if (rc == GUARDS_RESULT_NO_DATA) result_null(d, "");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_f64(d, "", r);
    return submit(d);
  }
  if (is_op(d, "summary")) {
    guards_latency_summary s;
    rc = guards_latency_tracker_summary(tracker, now, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "count", s.count);
    result_u64(d, "p50", s.p50_ns);
    result_u64(d, "p95", s.p95_ns);
    result_u64(d, "p99", s.p99_ns);
    result_u64(d, "p999", s.p999_ns);
    result_u64(d, "max", s.max_ns);
    return submit(d);
  }
  if (is_op(d, "stats")) {
    guards_latency_tracker_stats s;
    rc = guards_latency_tracker_get_stats(tracker, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "recorded", s.recorded);
    result_u64(d, "saturated", s.saturated);
    result_u64(d, "stale", s.stale);
    return submit(d);
  }
  return unsupported(d, "an op the C latency tracker does not have");
}
