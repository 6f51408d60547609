/* retry_policy.json: a guards_retry_policy reseeded with the case's seed. A file's
 * scripted gate is, in the C API, the budget guards_retry_policy_decide asks last: an
 * "allow" gate is a budget that always has a token, a "refuse" gate one that never has. */
#include <stdio.h>

#include "vectors.h"

static guards_retry_policy *policy;
static guards_retry_budget *allow_gate, *refuse_gate;

static const char *const UNKEYED_NAMES[2] = {"never", "retry_throttled"};

void cfg_retry_policy(config_reader *c, const char *p, guards_retry_policy_config *cfg) {
  cfg_u32(c, path("%smax_attempts", p), &cfg->max_attempts);
  cfg_bool(c, path("%sretry_timeouts", p), &cfg->retry_timeouts);
  cfg_bool(c, path("%sretry_connection_errors", p), &cfg->retry_connection_errors);
  cfg_bool(c, path("%sretry_other_transient", p), &cfg->retry_other_transient);
  cfg_bool(c, path("%sretry_throttled", p), &cfg->retry_throttled);
  cfg_bool(c, path("%shonor_retry_after", p), &cfg->honor_retry_after);
  cfg_u64(c, path("%smax_retry_after", p), &cfg->max_retry_after_ns);
  cfg_u64(c, path("%smin_attempt_time", p), &cfg->min_attempt_time_ns);
  cfg_enum(c, path("%sunkeyed_side_effects", p), UNKEYED_NAMES, 2, &cfg->unkeyed_side_effects);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%sbackoff.", p);
  cfg_backoff(c, prefix, &cfg->backoff);
}

void result_policy_stats(driver *d, const guards_retry_policy_stats *s, bool all) {
  result_u64(d, "retries", s->retries);
  result_u64(d, "succeeded", s->succeeded);
  result_u64(d, "permanent", s->permanent);
  result_u64(d, "overloaded", s->overloaded);
  result_u64(d, "not_retryable", s->not_retryable);
  result_u64(d, "attempts_exhausted", s->attempts_exhausted);
  result_u64(d, "not_idempotent", s->not_idempotent);
  result_u64(d, "retry_after_too_long", s->retry_after_too_long);
  result_u64(d, "deadline_exceeded", s->deadline_exceeded);
  result_u64(d, "budget_exhausted", s->budget_exhausted);
  if (!all) return;
  result_u64(d, "rejected", s->rejected);
  result_u64(d, "ignored", s->ignored);
  result_u64(d, "cancelled", s->cancelled);
}

static void free_all(void) {
  guards_retry_policy_free(policy);
  policy = NULL;
  guards_retry_budget_free(allow_gate);
  allow_gate = NULL;
  guards_retry_budget_free(refuse_gate);
  refuse_gate = NULL;
}

static guards_retry_budget *gate(const char *name) {
  guards_retry_budget_config cfg;
  must(guards_retry_budget_config_default(&cfg), "config_default");
  bool allow = name[0] == 'a';
  guards_retry_budget **g = allow ? &allow_gate : &refuse_gate;
  if (*g) return *g;
  /* The windowed budget allows min_retries_per_sec · ttl retries with no deposit. */
  cfg.mode = GUARDS_RETRY_BUDGET_MODE_WINDOWED;
  cfg.windowed.percent_can_retry = 0;
  cfg.windowed.min_retries_per_sec = allow ? 1000 : 0;
  must(guards_retry_budget_new(&cfg, g), "guards_retry_budget_new");
  return *g;
}

int run_retry_policy(driver *d) {
  if (is_op(d, "new")) {
    guards_retry_policy_config cfg;
    must(guards_retry_policy_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_retry_policy(&c, "config.", &cfg);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_retry_policy_new(&cfg, &policy);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    must(guards_retry_policy_reseed(policy, u64_arg(d, "seed")), "guards_retry_policy_reseed");
    return submit(d);
  }
  if (is_op(d, "free")) {
    free_all();
    return submit(d);
  }
  if (is_op(d, "decide")) {
    guards_retry_context ctx;
    must(guards_retry_context_default(&ctx), "guards_retry_context_default");
    uint64_t attempts = u64_arg(d, "attempts_made");
    if (attempts > UINT32_MAX) return unsupported(d, "attempts_made wider than the C field");
    ctx.attempts_made = (uint32_t)attempts;
    int outcome = name_arg(d, "outcome", OUTCOME_NAMES, 10);
    ctx.outcome = outcome < 0 ? UINT32_MAX : (uint32_t)outcome;
    if (has(d, "idempotency")) {
      int i = name_arg(d, "idempotency", IDEMPOTENCY_NAMES, 3);
      ctx.idempotency = i < 0 ? UINT32_MAX : (uint32_t)i;
    }
    if (has(d, "retry_after")) ctx.retry_after_ns = u64_arg(d, "retry_after");
    if (has(d, "time_left") && !is_null(d, "time_left")) ctx.time_left_ns = u64_arg(d, "time_left");
    ctx.prev_delay_ns = u64_or(d, "prev_delay", 0);
    guards_retry_budget *budget = has(d, "gate") ? gate(str_arg(d, "gate", NULL)) : NULL;
    guards_retry_decision out;
    guards_result rc = guards_retry_policy_decide(policy, u64_arg(d, "now"), &ctx, budget, &out);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (out.kind == GUARDS_RETRY_DECISION_KIND_RETRY) result_u64(d, "retry", out.after_ns);
    else result_str(d, "give_up", guards_give_up_reason_name(out.give_up_reason));
    return submit(d);
  }
  if (is_op(d, "gate_calls")) {
    /* The budgets count the questions, but not when or why they were asked. */
    return unobservable(d);
  }
  if (is_op(d, "stats")) {
    guards_retry_policy_stats s;
    guards_result rc = guards_retry_policy_get_stats(policy, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_policy_stats(d, &s, false);
    return submit(d);
  }
  if (is_op(d, "rng_next_u64")) {
    uint64_t x = 0;
    guards_result rc = guards_retry_policy_next_u64(policy, &x);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", x);
    return submit(d);
  }
  if (is_op(d, "worst_case_time")) {
    uint64_t x = 0;
    guards_result rc = guards_retry_policy_worst_case_time(policy, u64_arg(d, "attempt_timeout"), &x);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "", x);
    return submit(d);
  }
  return unsupported(d, "an op the C retry policy does not have");
}
