/* adaptive_throttle.json: a guards_adaptive_throttle drawing from its own generator (its
 * config's `seed`). `on_accepted` / `on_rejected_by_backend` are its report with outcome
 * success / overloaded. */
#include "vectors.h"

static guards_adaptive_throttle *throttle;

int run_adaptive_throttle(driver *d) {
  if (is_op(d, "new")) {
    guards_adaptive_throttle_config cfg;
    must(guards_adaptive_throttle_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_u64(&c, "config.window", &cfg.window_ns);
    cfg_f64(&c, "config.k", &cfg.k);
    cfg_f64(&c, "config.aggression", &cfg.aggression);
    cfg_f64(&c, "config.max_reject_probability", &cfg.max_reject_probability);
    cfg_u64(&c, "config.min_requests", &cfg.min_requests);
    cfg_bool(&c, "config.count_rejected", &cfg.count_rejected);
    cfg_u64(&c, "config.seed", &cfg.seed);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_adaptive_throttle_new(&cfg, &throttle);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_adaptive_throttle_free(throttle);
    throttle = NULL;
    return submit(d);
  }
  uint64_t now = u64_or(d, "now", 0);
  guards_result rc;
  if (is_op(d, "should_reject")) {
    rc = guards_adaptive_throttle_try_acquire(throttle, now);
    if (rc == GUARDS_RESULT_THROTTLED) result_bool(d, "", true);
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_bool(d, "", false);
    return submit(d);
  }
  if (is_op(d, "on_accepted") || is_op(d, "on_rejected_by_backend")) {
    rc = guards_adaptive_throttle_report(
        throttle, now, is_op(d, "on_accepted") ? GUARDS_OUTCOME_SUCCESS : GUARDS_OUTCOME_OVERLOADED);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "reject_probability")) {
    double p = 0;
    rc = guards_adaptive_throttle_reject_probability(throttle, now, &p);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_f64(d, "", p);
    return submit(d);
  }
  if (is_op(d, "window")) {
    guards_throttle_window w;
    rc = guards_adaptive_throttle_window(throttle, now, &w);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "requests", w.requests);
    result_u64(d, "accepts", w.accepts);
    return submit(d);
  }
  if (is_op(d, "stats")) {
    guards_adaptive_throttle_stats s;
    rc = guards_adaptive_throttle_get_stats(throttle, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "admitted", s.admitted);
    result_u64(d, "throttled", s.throttled);
    result_u64(d, "accepted", s.accepted);
    result_u64(d, "rejected_by_backend", s.rejected_by_backend);
    result_u64(d, "stale", s.stale);
    return submit(d);
  }
  return unsupported(d, "an op the C adaptive throttle does not have");
}
