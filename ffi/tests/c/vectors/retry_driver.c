/* retry_driver.json: a guards_retry_driver with its guards_retry_policy (reseeded with the
 * case's seed) and optional guards_retry_budget, both passed to its calls. */
#include <string.h>

#include "vectors.h"

static guards_retry_driver *rd;
static guards_retry_policy *policy;
static guards_retry_budget *budget;

static const char *const PHASES[] = {"idle", "attempting", "waiting", "succeeded", "gave_up"};

static bool any_arg(driver *d, const char *prefix) {
  size_t n = strlen(prefix);
  for (size_t i = 0; i < d->step.arg_count; i++) {
    guards_vectors_arg a;
    must(guards_vectors_arg_at(d->v, i, &a), "guards_vectors_arg_at");
    if (strncmp(a.name, prefix, n) == 0) return true;
  }
  return false;
}

static void free_all(void) {
  guards_retry_driver_free(rd);
  rd = NULL;
  guards_retry_policy_free(policy);
  policy = NULL;
  guards_retry_budget_free(budget);
  budget = NULL;
}

static int build(driver *d) {
  guards_retry_policy_config pcfg;
  must(guards_retry_policy_config_default(&pcfg), "config_default");
  guards_retry_budget_config bcfg;
  must(guards_retry_budget_config_default(&bcfg), "config_default");
  guards_retry_driver_config cfg;
  must(guards_retry_driver_config_default(&cfg), "config_default");
  config_reader c = {d, GUARDS_RESULT_OK, 0};
  cfg_retry_policy(&c, "config.policy.", &pcfg);
  bool with_budget = any_arg(d, "config.budget.");
  if (with_budget) cfg_retry_budget(&c, "config.budget.", &bcfg);
  cfg_u64(&c, "config.deadline", &cfg.deadline_ns);
  cfg_u64(&c, "config.attempt_timeout", &cfg.attempt.attempt_timeout_ns);
  cfg_u64(&c, "config.margin", &cfg.attempt.margin_ns);
  cfg_enum(&c, "config.idempotency", IDEMPOTENCY_NAMES, 3, &cfg.idempotency);
  if (!cfg_all_read(&c)) return 0;
  if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
  guards_result rc = guards_retry_policy_new(&pcfg, &policy);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  must(guards_retry_policy_reseed(policy, u64_arg(d, "seed")), "guards_retry_policy_reseed");
  if (with_budget) rc = guards_retry_budget_new(&bcfg, &budget);
  if (rc == GUARDS_RESULT_OK) rc = guards_retry_driver_new(&cfg, &rd);
  if (rc != GUARDS_RESULT_OK) {
    /* A refused `new` gets no `free`. */
    free_all();
    return submit_failure(d, rc);
  }
  return submit(d);
}

/* A step as the file spells it (a call in the wrong phase: its error). */
static int step(driver *d, guards_result rc, const guards_retry_step *s, uint32_t phase_before) {
  if (rc == GUARDS_RESULT_WRONG_PHASE) {
    result_str(d, "error.call", d->step.op);
    result_str(d, "error.phase", PHASES[phase_before]);
    return submit(d);
  }
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  switch (s->kind) {
  case GUARDS_RETRY_STEP_KIND_ATTEMPT:
    result_u64(d, "attempt.number", s->attempt);
    result_u64(d, "attempt.budget", s->budget_ns);
    if (s->expires_at_ns == GUARDS_NO_DEADLINE) result_null(d, "attempt.expires_at");
    else result_u64(d, "attempt.expires_at", s->expires_at_ns);
    break;
  case GUARDS_RETRY_STEP_KIND_WAIT:
    result_u64(d, "wait.retry_at", s->retry_at_ns);
    result_u64(d, "wait.retry_after", s->retry_after_ns);
    break;
  case GUARDS_RETRY_STEP_KIND_SUCCEEDED:
    result_str(d, "", "succeeded");
    break;
  default:
    result_str(d, "give_up", guards_give_up_reason_name(s->give_up_reason));
  }
  return submit(d);
}

int run_retry_driver(driver *d) {
  if (is_op(d, "new")) return build(d);
  if (is_op(d, "free")) {
    free_all();
    return submit(d);
  }
  guards_retry_driver_state st;
  must(guards_retry_driver_get_state(rd, &st), "guards_retry_driver_get_state");
  guards_retry_step s;
  memset(&s, 0, sizeof s);
  if (is_op(d, "start"))
    return step(d, guards_retry_driver_start(rd, u64_arg(d, "now"), budget, &s), &s, st.phase);
  if (is_op(d, "resume"))
    return step(d, guards_retry_driver_resume(rd, u64_arg(d, "now"), &s), &s, st.phase);
  if (is_op(d, "cancel")) return step(d, guards_retry_driver_cancel(rd, &s), &s, st.phase);
  if (is_op(d, "report")) {
    int outcome = name_arg(d, "outcome", OUTCOME_NAMES, 10);
    uint64_t after = u64_or(d, "retry_after", GUARDS_NO_RETRY_AFTER);
    guards_result rc =
        guards_retry_driver_report(rd, u64_arg(d, "now"), outcome < 0 ? UINT32_MAX : (uint32_t)outcome,
                                   after, policy, budget, &s);
    return step(d, rc, &s, st.phase);
  }
  if (is_op(d, "state")) {
    result_str(d, "phase", PHASES[st.phase]);
    result_u64(d, "attempts", st.attempts);
    result_u64(d, "retries", st.retries);
    if (st.phase == GUARDS_RETRY_PHASE_GAVE_UP)
      result_str(d, "give_up", guards_give_up_reason_name(st.give_up_reason));
    else result_null(d, "give_up");
    if (st.has_last_outcome) result_str(d, "last_outcome", guards_outcome_name(st.last_outcome));
    else result_null(d, "last_outcome");
    return submit(d);
  }
  if (is_op(d, "policy_stats")) {
    guards_retry_policy_stats ps;
    guards_result rc = guards_retry_policy_get_stats(policy, &ps);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_policy_stats(d, &ps, true);
    return submit(d);
  }
  if (is_op(d, "budget")) {
    if (!budget) return unsupported(d, "the case has no budget");
    int64_t micros = 0;
    guards_result rc = guards_retry_budget_tokens_micros(budget, u64_or(d, "now", 0), &micros);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    guards_retry_budget_stats bs;
    rc = guards_retry_budget_get_stats(budget, &bs);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_i64(d, "tokens_micros", micros);
    result_u64(d, "deposits", bs.deposits);
    result_u64(d, "withdrawals", bs.withdrawals);
    result_u64(d, "refusals", bs.refusals);
    result_u64(d, "refunds", bs.refunds);
    result_u64(d, "failures", bs.failures);
    return submit(d);
  }
  return unsupported(d, "an op the C retry driver does not have");
}
