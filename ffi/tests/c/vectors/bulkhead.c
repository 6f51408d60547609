/* bulkhead.json: a guards_bulkhead; permits held by handle. */
#include "vectors.h"

static guards_bulkhead *bulkhead;

int run_bulkhead(driver *d) {
  if (is_op(d, "new")) {
    guards_bulkhead_config cfg;
    must(guards_bulkhead_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_u64(&c, "config.max_concurrent", &cfg.max_concurrent);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_bulkhead_new(&cfg, &bulkhead);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_bulkhead_free(bulkhead);
    bulkhead = NULL;
    forget_permits(d);
    return submit(d);
  }
  if (is_op(d, "try_acquire")) {
    guards_permit p;
    guards_result rc = guards_bulkhead_try_acquire(bulkhead, &p);
    if (rc == GUARDS_RESULT_OK) {
      result_bool(d, "acquired", true);
      hold_permit(d, p);
      return submit(d);
    }
    if (rc == GUARDS_RESULT_BULKHEAD_FULL) {
      guards_rejection r;
      must(guards_last_rejection(&r), "guards_last_rejection");
      result_bool(d, "acquired", false);
      result_u64(d, "in_flight", r.in_flight);
      result_u64(d, "max_concurrent", r.limit);
      return submit(d);
    }
    return submit_failure(d, rc);
  }
  if (is_op(d, "release")) {
    guards_result rc = guards_bulkhead_release(bulkhead, take(d, "permit").permit);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "in_flight") || is_op(d, "stats") || is_op(d, "available")) {
    guards_bulkhead_stats s;
    guards_result rc = guards_bulkhead_get_stats(bulkhead, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (is_op(d, "in_flight")) {
      result_u64(d, "", s.in_flight);
    } else if (is_op(d, "available")) {
      guards_bulkhead_config cfg;
      rc = guards_bulkhead_get_config(bulkhead, &cfg);
      if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
      result_u64(d, "", cfg.max_concurrent - s.in_flight);
    } else {
      result_u64(d, "acquired", s.acquired);
      result_u64(d, "rejected", s.rejected);
      result_u64(d, "released", s.released);
      result_u64(d, "in_flight", s.in_flight);
    }
    return submit(d);
  }
  if (is_op(d, "from_littles_law")) {
    guards_bulkhead_config cfg;
    guards_result rc = guards_bulkhead_config_from_littles_law(
        f64_arg(d, "rate_per_sec"), u64_arg(d, "p99"), f64_arg(d, "headroom"), &cfg);
    if (rc == GUARDS_RESULT_OK) {
      result_u64(d, "max_concurrent", cfg.max_concurrent);
    } else {
      const char *kind = config_kind(rc);
      if (!kind) return submit_failure(d, rc);
      result_str(d, "error.field", config_field());
      result_str(d, "error.kind", kind);
    }
    return submit(d);
  }
  return unsupported(d, "an op the C bulkhead does not have");
}
