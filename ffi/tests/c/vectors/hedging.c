/* hedging.json: a guards_hedging policy. A file's scripted gate is, in the C API, the
 * budget guards_hedging_should_hedge asks last: "allow" a budget that always has a token,
 * "deny" one that never has. */
#include "vectors.h"

static guards_hedging *hedging;
static guards_retry_budget *allow_gate, *deny_gate;

static guards_retry_budget *gate(const char *name) {
  bool allow = name[0] == 'a';
  guards_retry_budget **g = allow ? &allow_gate : &deny_gate;
  if (*g) return *g;
  guards_retry_budget_config cfg;
  must(guards_retry_budget_config_default(&cfg), "config_default");
  /* The windowed budget allows min_retries_per_sec · ttl retries with no deposit. */
  cfg.mode = GUARDS_RETRY_BUDGET_MODE_WINDOWED;
  cfg.windowed.percent_can_retry = 0;
  cfg.windowed.min_retries_per_sec = allow ? 1000 : 0;
  must(guards_retry_budget_new(&cfg, g), "guards_retry_budget_new");
  return *g;
}

static const char *const REFUSALS[] = {"not_idempotent", "limit_reached", "no_latency_data",
                                       "budget_exhausted"};

int run_hedging(driver *d) {
  if (is_op(d, "new")) {
    guards_hedging_config cfg;
    must(guards_hedging_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_f64(&c, "config.delay_quantile", &cfg.delay_quantile);
    cfg_u64(&c, "config.min_delay", &cfg.min_delay_ns);
    cfg_u64(&c, "config.max_delay", &cfg.max_delay_ns);
    cfg_u32(&c, "config.max_hedges", &cfg.max_hedges);
    cfg_u64(&c, "config.min_samples", &cfg.min_samples);
    cfg_u64(&c, "config.refresh_interval", &cfg.refresh_interval_ns);
    cfg_tracker(&c, "config.tracker.", &cfg.tracker);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_hedging_new(&cfg, &hedging);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_hedging_free(hedging);
    hedging = NULL;
    guards_retry_budget_free(allow_gate);
    allow_gate = NULL;
    guards_retry_budget_free(deny_gate);
    deny_gate = NULL;
    return submit(d);
  }
  uint64_t now = u64_or(d, "now", 0);
  guards_result rc;
  if (is_op(d, "record_latency")) {
    rc = guards_hedging_record_latency(hedging, now, u64_arg(d, "latency"));
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "hedge_delay")) {
    uint64_t x = 0;
    rc = guards_hedging_hedge_delay(hedging, now, &x);
    if (rc == GUARDS_RESULT_NO_DATA) result_null(d, "");
    else if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    else result_u64(d, "", x);
    return submit(d);
  }
  if (is_op(d, "should_hedge")) {
    uint64_t sent = u64_arg(d, "hedges_sent");
    if (sent > UINT32_MAX) return unsupported(d, "hedges_sent wider than the C argument");
    guards_retry_budget *budget = has(d, "gate") ? gate(str_arg(d, "gate", NULL)) : NULL;
    guards_hedge_decision out;
    rc = guards_hedging_should_hedge(hedging, now, u64_arg(d, "request_started"), (uint32_t)sent,
                                     bool_arg(d, "idempotent"), budget, &out);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (out.kind == GUARDS_HEDGE_DECISION_KIND_HEDGE_NOW) {
      result_str(d, "decision", "hedge_now");
    } else if (out.kind == GUARDS_HEDGE_DECISION_KIND_WAIT_UNTIL) {
      result_str(d, "decision", "wait_until");
      result_u64(d, "at", out.wait_until_ns);
    } else {
      result_str(d, "decision", "never");
      result_str(d, "reason", REFUSALS[out.refusal]);
    }
    return submit(d);
  }
  if (is_op(d, "stats")) {
    guards_hedging_stats s;
    rc = guards_hedging_get_stats(hedging, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "hedges", s.hedges);
    result_u64(d, "deferred", s.deferred);
    result_u64(d, "not_idempotent", s.not_idempotent);
    result_u64(d, "limit_reached", s.limit_reached);
    result_u64(d, "no_latency_data", s.no_latency_data);
    result_u64(d, "budget_exhausted", s.budget_exhausted);
    return submit(d);
  }
  return unsupported(d, "an op the C hedging policy does not have");
}
