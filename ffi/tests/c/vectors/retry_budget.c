/* retry_budget.json: a guards_retry_budget in the file's mode; receipts held by handle.
 * `on_success` / `on_failure` are the budget's report with outcome success /
 * other_transient; `allow_retry` is a withdrawal whose receipt is dropped. */
#include "vectors.h"

static guards_retry_budget *budget;

int run_retry_budget(driver *d) {
  if (is_op(d, "new")) {
    guards_retry_budget_config cfg;
    must(guards_retry_budget_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_retry_budget(&c, "config.", &cfg);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_retry_budget_new(&cfg, &budget);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_retry_budget_free(budget);
    budget = NULL;
    forget_permits(d);
    return submit(d);
  }
  uint64_t now = u64_or(d, "now", 0);
  if (is_op(d, "deposit")) {
    guards_result rc = guards_retry_budget_deposit(budget, now);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "withdraw") || is_op(d, "allow_retry")) {
    int cause = name_arg(d, "cause", RETRY_CAUSE_NAMES, 4);
    guards_retry_receipt r;
    guards_result rc = guards_retry_budget_withdraw(budget, now, (uint32_t)cause, &r);
    if (rc == GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED) {
      result_bool(d, "", false);
      return submit(d);
    }
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (is_op(d, "withdraw")) hold_receipt(d, r);
    result_bool(d, "", true);
    return submit(d);
  }
  if (is_op(d, "on_success") || is_op(d, "on_failure")) {
    guards_retry_receipt r;
    bool with = is_op(d, "on_success") && has(d, "permit");
    if (with) r = take(d, "permit").receipt;
    guards_result rc = guards_retry_budget_report(
        budget, now, is_op(d, "on_success") ? GUARDS_OUTCOME_SUCCESS : GUARDS_OUTCOME_OTHER_TRANSIENT,
        with ? &r : NULL);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "tokens_micros") || is_op(d, "tokens")) {
    int64_t micros = 0;
    guards_result rc = guards_retry_budget_tokens_micros(budget, now, &micros);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    /* core's tokens() is tokens_micros as f64 / 10^6: the same IEEE division. */
    if (is_op(d, "tokens")) result_f64(d, "", (double)micros / 1e6);
    else result_i64(d, "", micros);
    return submit(d);
  }
  if (is_op(d, "receipt_cost_micros")) {
    result_u64(d, "", peek(d, "permit")->receipt.cost_micros);
    return submit(d);
  }
  if (is_op(d, "stats")) {
    guards_retry_budget_stats s;
    guards_result rc = guards_retry_budget_get_stats(budget, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_u64(d, "deposits", s.deposits);
    result_u64(d, "withdrawals", s.withdrawals);
    result_u64(d, "refusals", s.refusals);
    result_u64(d, "refunds", s.refunds);
    result_u64(d, "failures", s.failures);
    return submit(d);
  }
  return unsupported(d, "an op the C retry budget does not have");
}
