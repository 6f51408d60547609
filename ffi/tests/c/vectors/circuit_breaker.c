/* circuit_breaker.json: a guards_circuit_breaker of the file's cells, or with
 * `keyed_slots` a guards_keyed_breakers whose steps carry `key`. */
#include <stdlib.h>

#include "vectors.h"

static guards_circuit_breaker *breaker;
static guards_keyed_breakers *keyed;

static int breaker_stats(driver *d, guards_result rc, const guards_circuit_breaker_stats *s) {
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  result_u64(d, "successes", s->successes);
  result_u64(d, "failures", s->failures);
  result_u64(d, "slow_calls", s->slow_calls);
  result_u64(d, "probes_admitted", s->probes_admitted);
  result_u64(d, "probe_successes", s->probe_successes);
  result_u64(d, "probe_failures", s->probe_failures);
  result_u64(d, "ignored", s->ignored);
  result_u64(d, "discarded", s->discarded);
  result_u64(d, "rejected_open", s->rejected_open);
  result_u64(d, "rejected_half_open", s->rejected_half_open);
  result_u64(d, "closed_to_open", s->closed_to_open);
  result_u64(d, "open_to_half_open", s->open_to_half_open);
  result_u64(d, "half_open_to_closed", s->half_open_to_closed);
  result_u64(d, "half_open_to_open", s->half_open_to_open);
  return submit(d);
}

static int build(driver *d) {
  guards_keyed_breakers_config kcfg;
  must(guards_keyed_breakers_config_default(&kcfg), "config_default");
  guards_circuit_breaker_config cfg = kcfg.breaker;
  static const char *const kinds[] = {"count", "time"};
  config_reader c = {d, GUARDS_RESULT_OK, 0};
  cfg_enum(&c, "config.window_kind", kinds, 2, &cfg.window_kind);
  cfg_u64(&c, "config.window_size", &cfg.window_size);
  cfg_u64(&c, "config.window_duration", &cfg.window_duration_ns);
  cfg_u64(&c, "config.window_buckets", &cfg.window_buckets);
  cfg_f64(&c, "config.failure_rate_threshold", &cfg.failure_rate_threshold);
  cfg_u64(&c, "config.slow_call_duration", &cfg.slow_call_duration_ns);
  cfg_f64(&c, "config.slow_call_rate_threshold", &cfg.slow_call_rate_threshold);
  cfg_u64(&c, "config.minimum_calls", &cfg.minimum_calls);
  cfg_u64(&c, "config.open_duration", &cfg.open_duration_ns);
  cfg_f64(&c, "config.open_duration_multiplier", &cfg.open_duration_multiplier);
  cfg_u64(&c, "config.max_open_duration", &cfg.max_open_duration_ns);
  cfg_u64(&c, "config.half_open_probes", &cfg.half_open_probes);
  cfg_u64(&c, "config.probe_timeout", &cfg.probe_timeout_ns);
  if (!cfg_all_read(&c)) return 0;
  if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
  if (has(d, "keyed_slots")) {
    kcfg.breaker = cfg;
    kcfg.slots = u64_arg(d, "keyed_slots");
    guards_result rc = guards_keyed_breakers_new(&kcfg, &keyed);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    guards_keyed_breakers_config got;
    must(guards_keyed_breakers_get_config(keyed, &got), "get_config");
    if (got.slots != kcfg.slots) {
      guards_keyed_breakers_free(keyed);
      keyed = NULL;
      return unsupported(d, "a keyed set of exactly the file's slots: the C API rounds up");
    }
    return submit(d);
  }
  cfg.capacity = u64_arg(d, "capacity"); /* the window cells the file assumes */
  guards_result rc = guards_circuit_breaker_new(&cfg, &breaker);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  /* The C API grows the cells to fit the window: where it had to, the file's breaker
   * (whose cells refuse a larger window) cannot be built through it. */
  guards_circuit_breaker_config got;
  must(guards_circuit_breaker_get_config(breaker, &got), "get_config");
  if (got.capacity != cfg.capacity) {
    guards_circuit_breaker_free(breaker);
    breaker = NULL;
    return unsupported(d, "a breaker of fixed capacity: the C API grows the cells to fit "
                          "the window");
  }
  return submit(d);
}

int run_circuit_breaker(driver *d) {
  if (is_op(d, "new")) return build(d);
  if (is_op(d, "free")) {
    guards_circuit_breaker_free(breaker);
    breaker = NULL;
    guards_keyed_breakers_free(keyed);
    keyed = NULL;
    forget_permits(d);
    return submit(d);
  }
  uint64_t key = keyed ? u64_or(d, "key", 0) : 0;
  if (is_op(d, "try_acquire")) {
    guards_permit p;
    uint64_t now = u64_arg(d, "now");
    guards_result rc = keyed ? guards_keyed_breakers_try_acquire(keyed, key, now, &p)
                             : guards_circuit_breaker_try_acquire(breaker, now, &p);
    if (rc == GUARDS_RESULT_OK) {
      result_str(d, "admitted", p.is_probe ? "probe" : "call");
      /* The C permit carries its slot's generation, not the breaker's: the breaker's is
       * read right after (one thread). */
      guards_breaker_status st;
      must(keyed ? guards_keyed_breakers_status(keyed, key, &st)
                 : guards_circuit_breaker_status(breaker, &st),
           "status");
      result_u64(d, "generation", st.generation);
      if (p.is_probe) result_u64(d, "probe_timeout", p.probe_timeout_ns);
      hold_permit(d, p);
      return submit(d);
    }
    if (rc == GUARDS_RESULT_BREAKER_OPEN || rc == GUARDS_RESULT_BREAKER_HALF_OPEN_FULL) {
      guards_rejection r;
      must(guards_last_rejection(&r), "guards_last_rejection");
      result_str(d, "rejected", rc == GUARDS_RESULT_BREAKER_OPEN ? "open" : "half_open_full");
      result_u64(d, "retry_at", r.retry_at_ns);
      return submit(d);
    }
    return submit_failure(d, rc);
  }
  if (is_op(d, "on_success") || is_op(d, "on_failure") || is_op(d, "on_ignore")) {
    guards_permit p = take(d, "permit").permit;
    uint32_t outcome = is_op(d, "on_success")   ? GUARDS_OUTCOME_SUCCESS
                       : is_op(d, "on_failure") ? GUARDS_OUTCOME_OTHER_TRANSIENT
                                                : GUARDS_OUTCOME_IGNORED;
    uint64_t now = u64_or(d, "now", 0);
    uint32_t effect = 0;
    guards_result rc = keyed ? guards_keyed_breakers_report_effect(keyed, p, outcome, now, &effect)
                             : guards_circuit_breaker_report_effect(breaker, p, outcome, now, &effect);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (!is_op(d, "on_ignore")) {
      static const char *const effects[] = {"counted",  "opened",    "probe_passed", "closed",
                                            "reopened", "discarded", "ignored"};
      if (effect >= sizeof effects / sizeof effects[0])
        return submit_failure(d, GUARDS_RESULT_INVALID_ENUM);
      result_str(d, "", effects[effect]);
    }
    return submit(d);
  }
  if (is_op(d, "state")) {
    guards_breaker_state st;
    uint64_t now = u64_arg(d, "now");
    guards_result rc = keyed ? guards_keyed_breakers_state(keyed, key, now, &st)
                             : guards_circuit_breaker_state(breaker, now, &st);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_str(d, "", st == GUARDS_BREAKER_STATE_CLOSED ? "closed"
                      : st == GUARDS_BREAKER_STATE_OPEN ? "open"
                                                        : "half_open");
    return submit(d);
  }
  if (is_op(d, "stats")) {
    guards_circuit_breaker_stats s;
    guards_result rc = keyed ? guards_keyed_breakers_get_stats(keyed, key, &s)
                             : guards_circuit_breaker_get_stats(breaker, &s);
    return breaker_stats(d, rc, &s);
  }
  if (is_op(d, "get_or_insert")) {
    guards_result rc = guards_keyed_breakers_insert(keyed, key);
    if (rc == GUARDS_RESULT_KEYED_BREAKERS_FULL) result_str(d, "", "full");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_str(d, "", "ok");
    return submit(d);
  }
  if (is_op(d, "len")) {
    guards_keyed_breakers_set_stats s;
    guards_result rc = guards_keyed_breakers_get_set_stats(keyed, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", s.entries);
    return submit(d);
  }
  if (is_op(d, "key_of")) {
    size_t len = 0;
    const char *s = str_arg(d, "bytes", &len);
    uint64_t k = 0;
    guards_result rc = guards_key_of(s, len, &k);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", k);
    return submit(d);
  }
  if (is_op(d, "status")) {
    guards_breaker_status st;
    guards_result rc = keyed ? guards_keyed_breakers_status(keyed, key, &st)
                             : guards_circuit_breaker_status(breaker, &st);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_str(d, "state", st.state == GUARDS_BREAKER_STATE_CLOSED ? "closed"
                           : st.state == GUARDS_BREAKER_STATE_OPEN ? "open"
                                                                   : "half_open");
    result_u64(d, "generation", st.generation);
    result_u64(d, "probes_issued", st.probes_issued);
    result_u64(d, "probes_passed", st.probes_passed);
    result_u64(d, "consecutive_opens", st.consecutive_opens);
    result_u64(d, "half_open_at", st.half_open_at_ns);
    return submit(d);
  }
  if (is_op(d, "window_counts")) {
    guards_window_counts w;
    uint64_t now = u64_arg(d, "now");
    guards_result rc = keyed ? guards_keyed_breakers_window_counts(keyed, key, now, &w)
                             : guards_circuit_breaker_window_counts(breaker, now, &w);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "calls", w.calls);
    result_u64(d, "failures", w.failures);
    result_u64(d, "slow", w.slow);
    return submit(d);
  }
  return unsupported(d, "an op the C breaker does not have");
}
