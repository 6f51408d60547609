/* The retry budget in its four modes, through one handle: Basketly's C4 (10 tokens, +0.1 per
 * first attempt), gRPC throttling, the AWS quota with refunds, the windowed budget, and
 * take-once receipts. */
#include "test.h"

static guards_retry_budget *budget_in(uint32_t mode) {
  guards_retry_budget_config c;
  CHECK_RC(guards_retry_budget_config_default(&c), GUARDS_RESULT_OK);
  c.mode = mode;
  guards_retry_budget *b = NULL;
  CHECK_RC(guards_retry_budget_new(&c, &b), GUARDS_RESULT_OK);
  return b;
}

static int64_t tokens(guards_retry_budget *b, uint64_t now) {
  int64_t t = INT64_MIN;
  CHECK_RC(guards_retry_budget_tokens_micros(b, now, &t), GUARDS_RESULT_OK);
  return t;
}

static void test_defaults(void) {
  guards_retry_budget_config c;
  memset(&c, 0xAB, sizeof c);
  CHECK_RC(guards_retry_budget_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.mode == GUARDS_RETRY_BUDGET_MODE_TOKEN_BUCKET);
  CHECK(c.token_bucket.capacity == 10.0 && c.token_bucket.ratio == 0.1);
  CHECK(c.grpc.max_tokens == 10.0 && c.grpc.token_ratio == 0.1);
  CHECK(c.aws.capacity == 500 && c.aws.transient_cost == 5 && c.aws.timeout_cost == 10);
  CHECK(c.aws.throttled_cost == 5 && c.aws.hedge_cost == 5 && c.aws.success_increment == 1);
  CHECK(c.windowed.ttl_ns == 10 * S && c.windowed.min_retries_per_sec == 10.0);
  CHECK(c.windowed.percent_can_retry == 0.2);
}

/* Basketly's C4 with every call failing: N requests, each a first attempt (deposit 0.1) then
 * up to `per_request` retries. Tokens are conserved, only the first deposit is capped,
 * and the final balance is below one token, so retries = floor(10 + 0.1 (N - 1)). */
static uint64_t c4_all_failing(uint64_t n, int per_request) {
  guards_retry_budget *b = budget_in(GUARDS_RETRY_BUDGET_MODE_TOKEN_BUCKET);
  uint64_t retries = 0;
  for (uint64_t i = 0; i < n; i++) {
    CHECK_RC(guards_retry_budget_deposit(b, S), GUARDS_RESULT_OK);
    for (int k = 0; k < per_request; k++) {
      guards_retry_receipt r;
      guards_result rc = guards_retry_budget_withdraw(b, S, GUARDS_RETRY_CAUSE_TIMEOUT, &r);
      if (rc != GUARDS_RESULT_OK) {
        CHECK(rc == GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED);
        break;
      }
      CHECK(r.cost_micros == 1000000);
      retries++;
      CHECK_RC(guards_retry_budget_report(b, S, GUARDS_OUTCOME_TIMEOUT, &r), GUARDS_RESULT_OK);
    }
  }
  guards_retry_budget_stats s;
  CHECK_RC(guards_retry_budget_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.deposits == n && s.withdrawals == retries);
  uint64_t out = 9;
  CHECK_RC(guards_retry_budget_outstanding(b, &out), GUARDS_RESULT_OK);
  CHECK(out == 0);
  guards_retry_budget_free(b);
  return retries;
}

static void test_c4_retries_are_ten_percent_plus_the_burst(void) {
  static const uint64_t ns[] = {11, 100, 1000, 2060};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    uint64_t n = ns[i];
    uint64_t expected = (10 * 1000000ull + 100000ull * (n - 1)) / 1000000ull;
    for (int per = 1; per <= 4; per *= 2) CHECK_EQ_U64(c4_all_failing(n, per), expected);
  }
  /* Basketly's 2,060 requests a second: 215 retries, about 1.1x the calls. */
  CHECK_EQ_U64(c4_all_failing(2060, 2), 215);
}

static void test_grpc_stops_at_half(void) {
  guards_retry_budget *b = budget_in(GUARDS_RETRY_BUDGET_MODE_GRPC);
  guards_retry_receipt r;
  CHECK(tokens(b, 0) == 10000000);
  for (int i = 0; i < 4; i++) CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_TIMEOUT, NULL), GUARDS_RESULT_OK);
  /* 6 tokens: above max/2, retries go (and cost nothing: failures pay). */
  CHECK_RC(guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &r), GUARDS_RESULT_OK);
  CHECK(r.cost_micros == 0);
  CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_OVERLOADED, &r), GUARDS_RESULT_OK);
  CHECK(tokens(b, 0) == 5000000);
  CHECK_RC(guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &r),
           GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED);
  CHECK(detail_has("grpc"));
  /* A permanent error, a local refusal, ignored and cancelled change nothing. */
  uint32_t nothing[] = {GUARDS_OUTCOME_PERMANENT, GUARDS_OUTCOME_REJECTED, GUARDS_OUTCOME_IGNORED,
                        GUARDS_OUTCOME_CANCELLED};
  for (int i = 0; i < 4; i++) CHECK_RC(guards_retry_budget_report(b, 0, nothing[i], NULL), GUARDS_RESULT_OK);
  CHECK(tokens(b, 0) == 5000000);
  CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_SUCCESS, NULL), GUARDS_RESULT_OK);
  CHECK(tokens(b, 0) == 5100000);
  CHECK_RC(guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TRANSIENT, &r), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_CANCELLED, &r), GUARDS_RESULT_OK);
  guards_retry_budget_stats s;
  CHECK_RC(guards_retry_budget_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.failures == 5 && s.deposits == 1 && s.withdrawals == 2 && s.refusals == 1);
  guards_retry_budget_free(b);
}

static void test_aws_refunds_successful_retries(void) {
  guards_retry_budget *b = budget_in(GUARDS_RETRY_BUDGET_MODE_AWS);
  static guards_retry_receipt held[101];
  int n = 0;
  while (n < 101 &&
         guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TRANSIENT, &held[n]) == GUARDS_RESULT_OK) {
    CHECK(held[n].cost_micros == 5000000);
    n++;
  }
  CHECK(n == 100); /* 500 tokens, 5 per transient retry */
  CHECK(guards_last_error_code() == GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED);
  /* Half succeed: their cost comes back; the others failed: nothing comes back. */
  for (int i = 0; i < 50; i++)
    CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_SUCCESS, &held[i]), GUARDS_RESULT_OK);
  for (int i = 50; i < 100; i++)
    CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_TIMEOUT, &held[i]), GUARDS_RESULT_OK);
  CHECK(tokens(b, 0) == 250000000);
  /* A receipt refunds once. */
  CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_SUCCESS, &held[0]),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK(tokens(b, 0) == 250000000);
  /* A first attempt that succeeded adds the success increment. */
  CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_SUCCESS, NULL), GUARDS_RESULT_OK);
  CHECK(tokens(b, 0) == 251000000);
  /* A timeout retry costs 10. */
  guards_retry_receipt r;
  CHECK_RC(guards_retry_budget_withdraw(b, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &r), GUARDS_RESULT_OK);
  CHECK(r.cost_micros == 10000000);
  CHECK(tokens(b, 0) == 241000000);
  CHECK_RC(guards_retry_budget_report(b, 0, GUARDS_OUTCOME_SUCCESS, &r), GUARDS_RESULT_OK);
  guards_retry_budget_stats s;
  CHECK_RC(guards_retry_budget_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.withdrawals == 101 && s.refunds == 51 && s.refusals == 1 && s.deposits == 1);
  guards_retry_budget_free(b);
}

static void test_windowed_budget(void) {
  guards_retry_budget *b = budget_in(GUARDS_RETRY_BUDGET_MODE_WINDOWED);
  /* A floor of 10 retries a second over a 10 s window: 100 tokens before any request. */
  CHECK(tokens(b, S) == 100000000);
  guards_retry_receipt r;
  for (int i = 0; i < 100; i++) {
    CHECK_RC(guards_retry_budget_withdraw(b, S, GUARDS_RETRY_CAUSE_TRANSIENT, &r), GUARDS_RESULT_OK);
    CHECK_RC(guards_retry_budget_report(b, S, GUARDS_OUTCOME_TIMEOUT, &r), GUARDS_RESULT_OK);
  }
  CHECK_RC(guards_retry_budget_withdraw(b, S, GUARDS_RETRY_CAUSE_TRANSIENT, &r),
           GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED);
  /* Five requests earn one retry (0.2 each). */
  for (int i = 0; i < 5; i++) CHECK_RC(guards_retry_budget_deposit(b, S), GUARDS_RESULT_OK);
  CHECK(tokens(b, S) == 1000000);
  CHECK_RC(guards_retry_budget_withdraw(b, S, GUARDS_RETRY_CAUSE_TRANSIENT, &r), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_report(b, S, GUARDS_OUTCOME_SUCCESS, &r), GUARDS_RESULT_OK);
  /* Two windows later every withdrawal has expired: the floor is back. */
  CHECK(tokens(b, 21 * S) == 100000000);
  CHECK_RC(guards_retry_budget_withdraw(b, 21 * S, GUARDS_RETRY_CAUSE_TRANSIENT, &r), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_report(b, 21 * S, GUARDS_OUTCOME_SUCCESS, &r), GUARDS_RESULT_OK);
  guards_retry_budget_config got;
  CHECK_RC(guards_retry_budget_get_config(b, &got), GUARDS_RESULT_OK);
  CHECK(got.mode == GUARDS_RETRY_BUDGET_MODE_WINDOWED && got.windowed.ttl_ns == 10 * S);
  guards_retry_budget_free(b);
}

static void test_receipts_are_taken_once(void) {
  guards_retry_budget *a = budget_in(GUARDS_RETRY_BUDGET_MODE_AWS);
  guards_retry_budget *other = budget_in(GUARDS_RETRY_BUDGET_MODE_AWS);
  guards_retry_receipt r;
  CHECK_RC(guards_retry_budget_withdraw(a, 0, GUARDS_RETRY_CAUSE_THROTTLED, &r), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_withdraw(a, 0, 4, &r), GUARDS_RESULT_INVALID_ENUM);
  CHECK(detail_has("cause"));
  CHECK_RC(guards_retry_budget_report(other, 0, GUARDS_OUTCOME_SUCCESS, &r),
           GUARDS_RESULT_PERMIT_WRONG_GUARD);
  CHECK(tokens(other, 0) == 500000000); /* not refunded into the wrong budget */
  guards_retry_receipt forged = r;
  forged.generation += 1;
  CHECK_RC(guards_retry_budget_report(a, 0, GUARDS_OUTCOME_SUCCESS, &forged),
           GUARDS_RESULT_PERMIT_UNKNOWN);
  forged = r;
  forged.cost_micros = 400000000; /* the cost refunded is the budget's, not the caller's */
  CHECK_RC(guards_retry_budget_report(a, 0, 77, &r), GUARDS_RESULT_INVALID_ENUM);
  uint64_t out = 0;
  CHECK_RC(guards_retry_budget_outstanding(a, &out), GUARDS_RESULT_OK);
  CHECK(out == 1);
  CHECK_RC(guards_retry_budget_report(a, 0, GUARDS_OUTCOME_SUCCESS, &forged), GUARDS_RESULT_OK);
  CHECK(tokens(a, 0) == 500000000);
  CHECK_RC(guards_retry_budget_report(a, 0, GUARDS_OUTCOME_SUCCESS, &r),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  /* A receipt still held when the budget is freed is freed with it. */
  CHECK_RC(guards_retry_budget_withdraw(a, 0, GUARDS_RETRY_CAUSE_HEDGE, &r), GUARDS_RESULT_OK);
  guards_retry_budget_free(a);
  guards_retry_budget_free(other);
}

void retry_budget_tests(void) {
  run("retry_budget_defaults", test_defaults);
  run("retry_budget_c4_ten_percent_plus_the_burst", test_c4_retries_are_ten_percent_plus_the_burst);
  run("retry_budget_grpc_stops_at_half", test_grpc_stops_at_half);
  run("retry_budget_aws_refunds_successful_retries", test_aws_refunds_successful_retries);
  run("retry_budget_windowed", test_windowed_budget);
  run("retry_budget_receipts_are_taken_once", test_receipts_are_taken_once);
}
