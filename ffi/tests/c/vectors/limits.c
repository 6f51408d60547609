/* limiter.json, admission.json and limit.json: a guards_limiter / guards_admission /
 * guards_limit; permits (tickets) held by handle. `on_success` / `on_dropped` /
 * `on_ignore` are the permit's report with outcome success / overloaded / ignored. */
#include <string.h>

#include "vectors.h"

static guards_limiter *limiter;
static guards_admission *admission;
static guards_limit *limit;
static uint64_t last_now; /* the case's latest `now`, for a report that gives none */

/* ------------------------------------------------------------------ shared */

static void result_by_priority(driver *d, const char *name, const uint64_t *v) {
  for (size_t i = 0; i < 8; i++) result_u64(d, path("%s[%zu]", name, i), v[i]);
}

static int give_back(driver *d) {
  guards_permit p = take(d, "permit").permit;
  uint32_t outcome = is_op(d, "on_success")   ? GUARDS_OUTCOME_SUCCESS
                     : is_op(d, "on_dropped") ? GUARDS_OUTCOME_OVERLOADED
                                              : GUARDS_OUTCOME_IGNORED;
  uint64_t now = has(d, "now") ? u64_arg(d, "now") : last_now;
  guards_result rc = limiter ? guards_limiter_report(limiter, p, outcome, now)
                             : guards_admission_report(admission, p, outcome, now);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  return submit(d);
}

static uint64_t retry_after(uint64_t retry_at, uint64_t now) {
  return retry_at > now ? retry_at - now : 0;
}

/* ------------------------------------------------------------------ limiter */

static int build_limiter(driver *d) {
  guards_limiter_config cfg;
  must(guards_limiter_config_default(&cfg), "config_default");
  config_reader c = {d, GUARDS_RESULT_OK, 0};
  cfg_limit(&c, "config.limit.", &cfg.limit);
  cfg_u64(&c, "config.window", &cfg.window_ns);
  cfg_u64(&c, "config.min_window_samples", &cfg.min_window_samples);
  cfg_u64(&c, "config.min_retry_after", &cfg.min_retry_after_ns);
  cfg_u64(&c, "config.max_retry_after", &cfg.max_retry_after_ns);
  for (size_t i = 0; i < 8; i++) {
    cfg_f64(&c, path("config.partitions[%zu].share", i), &cfg.partitions[i].share);
    cfg_u64(&c, path("config.partitions[%zu].max_in_flight", i), &cfg.partitions[i].max_in_flight);
  }
  if (!cfg_all_read(&c)) return 0;
  if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
  guards_result rc = guards_limiter_new(&cfg, &limiter);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  last_now = 0;
  return submit(d);
}

static void free_all(driver *d) {
  guards_limiter_free(limiter);
  limiter = NULL;
  guards_admission_free(admission);
  admission = NULL;
  guards_limit_free(limit);
  limit = NULL;
  forget_permits(d);
}

int run_limiter(driver *d) {
  if (is_op(d, "new")) return build_limiter(d);
  if (is_op(d, "free")) {
    free_all(d);
    return submit(d);
  }
  if (has(d, "now")) last_now = u64_arg(d, "now");
  guards_limiter_stats s;
  guards_result rc;
  if (is_op(d, "try_acquire")) {
    guards_permit p;
    uint64_t now = u64_arg(d, "now");
    rc = guards_limiter_try_acquire(limiter, now, (uint32_t)u64_arg(d, "priority"), &p);
    if (rc == GUARDS_RESULT_OK) {
      result_bool(d, "admitted", true);
      /* The permit does not carry them: in flight is read right after (one thread). */
      must(guards_limiter_get_stats(limiter, &s), "guards_limiter_get_stats");
      result_u64(d, "in_flight", s.in_flight);
      uint64_t threshold = 0;
      must(guards_limiter_threshold(limiter, (uint32_t)u64_arg(d, "priority"), &threshold),
           "guards_limiter_threshold");
      result_u64(d, "threshold", threshold);
      hold_permit(d, p);
      return submit(d);
    }
    const char *reason = rc == GUARDS_RESULT_LIMITER_LIMIT_REACHED   ? "limit_reached"
                         : rc == GUARDS_RESULT_LIMITER_PARTITION_CAP ? "partition_cap"
                         : rc == GUARDS_RESULT_LIMITER_RESERVED ? "reserved_for_higher_priority"
                                                                : NULL;
    if (!reason) return submit_failure(d, rc);
    guards_rejection r;
    must(guards_last_rejection(&r), "guards_last_rejection");
    result_bool(d, "admitted", false);
    result_str(d, "reason", reason);
    result_u64(d, "retry_after", retry_after(r.retry_at_ns, now));
    result_u64(d, "threshold", r.limit);
    result_u64(d, "in_flight", r.in_flight);
    return submit(d);
  }
  if (is_op(d, "on_success") || is_op(d, "on_dropped") || is_op(d, "on_ignore"))
    return give_back(d);
  rc = guards_limiter_get_stats(limiter, &s);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  if (is_op(d, "limit")) {
    result_u64(d, "", s.limit);
    return submit(d);
  }
  if (is_op(d, "in_flight")) {
    result_u64(d, "", s.in_flight);
    return submit(d);
  }
  if (is_op(d, "stats")) {
    result_u64(d, "acquired", s.acquired);
    result_u64(d, "rejected_limit_reached", s.rejected_limit_reached);
    result_u64(d, "rejected_partition_cap", s.rejected_partition_cap);
    result_u64(d, "rejected_reserved", s.rejected_reserved);
    result_by_priority(d, "rejected_by_priority", s.rejected_by_priority);
    result_u64(d, "succeeded", s.succeeded);
    result_u64(d, "dropped", s.dropped);
    result_u64(d, "ignored", s.ignored);
    result_u64(d, "windows", s.windows);
    result_u64(d, "limit_changes", s.limit_changes);
    result_u64(d, "folds_skipped", s.folds_skipped);
    result_u64(d, "limit", s.limit);
    result_u64(d, "in_flight", s.in_flight);
    return submit(d);
  }
  uint64_t x = 0;
  if (is_op(d, "threshold")) {
    rc = guards_limiter_threshold(limiter, (uint32_t)u64_arg(d, "priority"), &x);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", x);
    return submit(d);
  }
  if (is_op(d, "retry_after")) {
    rc = guards_limiter_retry_after(limiter, &x);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", x);
    return submit(d);
  }
  return unsupported(d, "an op the C limiter does not have");
}

/* ------------------------------------------------------------------ admission */

int run_admission(driver *d) {
  if (is_op(d, "new")) {
    guards_admission_config cfg;
    must(guards_admission_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_limit(&c, "config.limit.", &cfg.limit);
    for (size_t i = 0; i < 8; i++) {
      cfg_u64(&c, path("config.limits[%zu]", i), &cfg.limits[i]);
      cfg_f64(&c, path("config.shares[%zu]", i), &cfg.shares[i]);
    }
    cfg_u64(&c, "config.window", &cfg.window_ns);
    cfg_u64(&c, "config.min_window_samples", &cfg.min_window_samples);
    cfg_u64(&c, "config.min_retry_after", &cfg.min_retry_after_ns);
    cfg_u64(&c, "config.max_retry_after", &cfg.max_retry_after_ns);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_admission_new(&cfg, &admission);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    last_now = 0;
    return submit(d);
  }
  if (is_op(d, "free")) {
    free_all(d);
    return submit(d);
  }
  if (has(d, "now")) last_now = u64_arg(d, "now");
  guards_admission_stats s;
  guards_result rc;
  if (is_op(d, "try_acquire")) {
    guards_permit p;
    uint64_t now = u64_arg(d, "now");
    rc = guards_admission_try_acquire(admission, now, (uint32_t)u64_arg(d, "priority"), &p);
    if (rc == GUARDS_RESULT_OK) {
      result_bool(d, "admitted", true);
      /* The permit does not carry it: read right after (one thread). */
      must(guards_admission_get_stats(admission, &s), "guards_admission_get_stats");
      result_u64(d, "in_flight", s.in_flight);
      hold_permit(d, p);
      return submit(d);
    }
    const char *reason = rc == GUARDS_RESULT_ADMISSION_LIMIT_REACHED ? "limit_reached"
                         : rc == GUARDS_RESULT_ADMISSION_OVERLOADED  ? "overloaded"
                                                                     : NULL;
    if (!reason) return submit_failure(d, rc);
    guards_rejection r;
    must(guards_last_rejection(&r), "guards_last_rejection");
    result_bool(d, "admitted", false);
    result_str(d, "reason", reason);
    result_u64(d, "retry_after", retry_after(r.retry_at_ns, now));
    result_u64(d, "retry_after_secs", guards_retry_after_secs(r.retry_at_ns, now));
    result_u64(d, "in_flight", r.in_flight);
    result_u64(d, "threshold", r.limit);
    return submit(d);
  }
  if (is_op(d, "on_success") || is_op(d, "on_dropped") || is_op(d, "on_ignore"))
    return give_back(d);
  rc = guards_admission_get_stats(admission, &s);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  if (is_op(d, "limit")) {
    result_u64(d, "", s.limit);
    return submit(d);
  }
  if (is_op(d, "in_flight")) {
    result_u64(d, "", s.in_flight);
    return submit(d);
  }
  if (is_op(d, "stats")) {
    result_u64(d, "admitted", s.admitted);
    result_u64(d, "refused_limit_reached", s.refused_limit_reached);
    result_u64(d, "refused_overloaded", s.refused_overloaded);
    result_by_priority(d, "refused_by_priority", s.refused_by_priority);
    result_u64(d, "succeeded", s.succeeded);
    result_u64(d, "dropped", s.dropped);
    result_u64(d, "ignored", s.ignored);
    result_u64(d, "in_flight", s.in_flight);
    result_u64(d, "limit", s.limit);
    return submit(d);
  }
  if (is_op(d, "threshold")) {
    uint64_t x = 0;
    rc = guards_admission_threshold(admission, (uint32_t)u64_arg(d, "priority"), &x);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", x);
    return submit(d);
  }
  return unsupported(d, "an op the C admission door does not have");
}

/* ------------------------------------------------------------------ limit */

int run_limit(driver *d) {
  if (is_op(d, "new")) {
    guards_limiter_config defaults;
    must(guards_limiter_config_default(&defaults), "config_default");
    guards_limit_config cfg = defaults.limit; /* every sub-config at its defaults */
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_limit(&c, "config.", &cfg);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_limit_new(&cfg, &limit);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    free_all(d);
    return submit(d);
  }
  guards_result rc;
  uint64_t x = 0;
  double f = 0;
  if (is_op(d, "update")) {
    rc = guards_limit_update(limit, u64_arg(d, "now"), u64_arg(d, "rtt"), u64_arg(d, "in_flight"),
                             bool_arg(d, "dropped"), &x);
  } else if (is_op(d, "limit")) {
    rc = guards_limit_get_limit(limit, &x);
  } else if (is_op(d, "min_rtt")) {
    rc = guards_limit_min_rtt(limit, &x);
  } else if (is_op(d, "estimate") || is_op(d, "long_rtt")) {
    rc = is_op(d, "estimate") ? guards_limit_estimate(limit, &f) : guards_limit_long_rtt(limit, &f);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_f64(d, "", f);
    return submit(d);
  } else {
    return unsupported(d, "an op the C limit does not have");
  }
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  result_u64(d, "", x);
  return submit(d);
}
