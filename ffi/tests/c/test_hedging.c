/* Hedging: after the tracked P95, idempotent calls only, paid by the retry budget. */
#include "test.h"

static void test_hedge_after_p95(void) {
  guards_hedging_config c;
  CHECK_RC(guards_hedging_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.delay_quantile == 0.95 && c.max_hedges == 1 && c.min_samples == 100);
  CHECK(c.min_delay_ns == 1 * MS && c.max_delay_ns == 10 * S && c.refresh_interval_ns == 100 * MS);
  guards_hedging *h = NULL;
  CHECK_RC(guards_hedging_new(&c, &h), GUARDS_RESULT_OK);
  uint64_t now = 10 * S, delay = 0;
  guards_hedge_decision d;
  CHECK_RC(guards_hedging_should_hedge(h, now, now, 0, true, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_NEVER && d.refusal == GUARDS_HEDGE_REFUSAL_NO_LATENCY_DATA);
  CHECK_RC(guards_hedging_hedge_delay(h, now, &delay), GUARDS_RESULT_NO_DATA);
  for (uint64_t i = 1; i <= 100; i++) CHECK_RC(guards_hedging_record_latency(h, now, i * MS), GUARDS_RESULT_OK);
  /* The refresh interval: the cached "no data" holds until 100 ms have passed. */
  uint64_t later = now + 100 * MS;
  CHECK_RC(guards_hedging_hedge_delay(h, later, &delay), GUARDS_RESULT_OK);
  CHECK(delay >= 94 * MS && delay <= 96 * MS);
  uint64_t started = later;
  CHECK_RC(guards_hedging_should_hedge(h, later, started, 0, true, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_WAIT_UNTIL && d.wait_until_ns == started + delay);
  CHECK_RC(guards_hedging_should_hedge(h, started + delay, started, 0, true, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_HEDGE_NOW);
  CHECK_RC(guards_hedging_should_hedge(h, started + delay, started, 1, true, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_NEVER && d.refusal == GUARDS_HEDGE_REFUSAL_LIMIT_REACHED);
  CHECK_RC(guards_hedging_should_hedge(h, started + delay, started, 0, false, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_NEVER && d.refusal == GUARDS_HEDGE_REFUSAL_NOT_IDEMPOTENT);

  /* With the budget empty no hedges go out. */
  guards_retry_budget_config bc;
  guards_retry_budget_config_default(&bc);
  bc.token_bucket.capacity = 1.0;
  bc.token_bucket.ratio = 0.0;
  guards_retry_budget *b = NULL;
  CHECK_RC(guards_retry_budget_new(&bc, &b), GUARDS_RESULT_OK);
  CHECK_RC(guards_hedging_should_hedge(h, started + delay, started, 0, true, b, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_HEDGE_NOW);
  CHECK_RC(guards_hedging_should_hedge(h, started + delay, started, 0, true, b, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_HEDGE_DECISION_KIND_NEVER && d.refusal == GUARDS_HEDGE_REFUSAL_BUDGET_EXHAUSTED);

  guards_hedging_stats s;
  CHECK_RC(guards_hedging_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(s.hedges == 2 && s.deferred == 1 && s.not_idempotent == 1 && s.limit_reached == 1);
  CHECK(s.no_latency_data == 1 && s.budget_exhausted == 1);
  /* report() records by the call contract: a fast failure is not a latency. */
  CHECK_RC(guards_hedging_report(h, later, later - 5 * MS, GUARDS_OUTCOME_CONNECTION_ERROR), GUARDS_RESULT_OK);
  CHECK_RC(guards_hedging_report(h, later, later - 5 * MS, GUARDS_OUTCOME_SUCCESS), GUARDS_RESULT_OK);
  CHECK_RC(guards_hedging_report(h, later, later, 99), GUARDS_RESULT_INVALID_ENUM);
  guards_hedging_config got;
  CHECK_RC(guards_hedging_get_config(h, &got), GUARDS_RESULT_OK);
  CHECK(got.tracker.window_ns == 10 * S);
  guards_hedging_free(h);
  guards_retry_budget_free(b);
}

void hedging_tests(void) { run("hedging_after_p95", test_hedge_after_p95); }
