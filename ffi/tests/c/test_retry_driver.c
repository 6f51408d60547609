/* The retry driver: the loop of one request, the C caller only sleeps and calls. */
#include "test.h"

static guards_retry_policy *policy(void) {
  guards_retry_policy_config c;
  guards_retry_policy_config_default(&c);
  c.backoff.base_ns = 25 * MS;
  c.backoff.jitter = GUARDS_JITTER_NONE;
  guards_retry_policy *p = NULL;
  CHECK_RC(guards_retry_policy_new(&c, &p), GUARDS_RESULT_OK);
  return p;
}

static guards_retry_driver *driver(uint64_t deadline_ns) {
  guards_retry_driver_config c;
  CHECK_RC(guards_retry_driver_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.deadline_ns == GUARDS_NO_DEADLINE && c.idempotency == GUARDS_IDEMPOTENCY_IDEMPOTENT);
  CHECK(c.attempt.attempt_timeout_ns == 60 * MS && c.attempt.margin_ns == 1 * MS);
  c.deadline_ns = deadline_ns;
  guards_retry_driver *d = NULL;
  CHECK_RC(guards_retry_driver_new(&c, &d), GUARDS_RESULT_OK);
  return d;
}

/* Core's example, step by step. */
static void test_the_loop(void) {
  guards_retry_policy *p = policy();
  guards_retry_budget_config bc;
  guards_retry_budget_config_default(&bc);
  guards_retry_budget *b = NULL;
  CHECK_RC(guards_retry_budget_new(&bc, &b), GUARDS_RESULT_OK);
  uint64_t now = 1000 * MS;
  guards_retry_driver *d = driver(now + 2000 * MS);
  guards_retry_step st;

  CHECK_RC(guards_retry_driver_start(d, now, b, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_ATTEMPT && st.attempt == 1);
  CHECK(st.budget_ns == 59 * MS && st.expires_at_ns == 1059 * MS);

  CHECK_RC(guards_retry_driver_report(d, 1059 * MS, GUARDS_OUTCOME_TIMEOUT, GUARDS_NO_RETRY_AFTER,
                                      p, b, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_WAIT);
  CHECK(st.retry_at_ns == 1084 * MS && st.retry_after_ns == 25 * MS);

  /* Woken early: wait again for the rest. */
  CHECK_RC(guards_retry_driver_resume(d, 1070 * MS, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_WAIT && st.retry_after_ns == 14 * MS);
  CHECK_RC(guards_retry_driver_resume(d, 1084 * MS, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_ATTEMPT && st.attempt == 2);

  /* "429, come back in 5 s" does not fit in the time left. */
  CHECK_RC(guards_retry_driver_report(d, 1100 * MS, GUARDS_OUTCOME_THROTTLED, 5000 * MS, p, b,
                                      &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_GIVE_UP);
  CHECK(st.give_up_reason == GUARDS_GIVE_UP_REASON_DEADLINE_EXCEEDED);
  CHECK(guards_give_up_should_propagate_as_overloaded(st.give_up_reason));

  guards_retry_driver_state s;
  CHECK_RC(guards_retry_driver_get_state(d, &s), GUARDS_RESULT_OK);
  CHECK(s.phase == GUARDS_RETRY_PHASE_GAVE_UP && s.attempts == 2 && s.retries == 1);
  CHECK(s.give_up_reason == GUARDS_GIVE_UP_REASON_DEADLINE_EXCEEDED);
  CHECK(s.has_last_outcome == 1 && s.last_outcome == GUARDS_OUTCOME_THROTTLED);
  CHECK(s.started_at_ns == 1000 * MS && s.attempt_started_at_ns == 1084 * MS);

  /* Finished: every further call is in the wrong phase and changes nothing. */
  guards_retry_step untouched;
  memset(&untouched, 0x44, sizeof untouched);
  guards_retry_step before = untouched;
  CHECK_RC(guards_retry_driver_report(d, 1200 * MS, GUARDS_OUTCOME_SUCCESS, GUARDS_NO_RETRY_AFTER,
                                      p, NULL, &untouched), GUARDS_RESULT_WRONG_PHASE);
  CHECK(detail_has("report") && detail_has("gave_up"));
  CHECK_RC(guards_retry_driver_resume(d, 1200 * MS, &untouched), GUARDS_RESULT_WRONG_PHASE);
  CHECK_RC(guards_retry_driver_cancel(d, &untouched), GUARDS_RESULT_WRONG_PHASE);
  CHECK_RC(guards_retry_driver_start(d, 1200 * MS, NULL, &untouched), GUARDS_RESULT_WRONG_PHASE);
  CHECK(memcmp(&untouched, &before, sizeof before) == 0);

  /* The token bucket got the first attempt's deposit and paid the one retry. */
  guards_retry_budget_stats bs;
  CHECK_RC(guards_retry_budget_get_stats(b, &bs), GUARDS_RESULT_OK);
  CHECK(bs.deposits == 1 && bs.withdrawals == 1);

  /* Reused for the next request: it succeeds first time. */
  guards_retry_driver_config c;
  guards_retry_driver_config_default(&c);
  CHECK_RC(guards_retry_driver_reset(d, &c), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_driver_get_state(d, &s), GUARDS_RESULT_OK);
  CHECK(s.phase == GUARDS_RETRY_PHASE_IDLE && s.attempts == 0 && s.has_last_outcome == 0);
  CHECK_RC(guards_retry_driver_start(d, 2 * S, b, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_ATTEMPT && st.budget_ns == 59 * MS);
  CHECK_RC(guards_retry_driver_report(d, 2 * S + MS, GUARDS_OUTCOME_SUCCESS, GUARDS_NO_RETRY_AFTER,
                                      p, b, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_SUCCEEDED);
  CHECK_RC(guards_retry_driver_get_state(d, &s), GUARDS_RESULT_OK);
  CHECK(s.phase == GUARDS_RETRY_PHASE_SUCCEEDED);

  guards_retry_driver_free(d);
  guards_retry_policy_free(p);
  guards_retry_budget_free(b);
}

static void test_cancel_and_expired(void) {
  guards_retry_policy *p = policy();
  guards_retry_driver *d = driver(GUARDS_NO_DEADLINE);
  guards_retry_step st;
  CHECK_RC(guards_retry_driver_report(d, S, GUARDS_OUTCOME_SUCCESS, GUARDS_NO_RETRY_AFTER, p, NULL,
                                      &st), GUARDS_RESULT_WRONG_PHASE);
  CHECK_RC(guards_retry_driver_start(d, S, NULL, &st), GUARDS_RESULT_OK);
  CHECK(st.budget_ns == 59 * MS);
  /* An invalid outcome changes nothing: the attempt is still out. */
  CHECK_RC(guards_retry_driver_report(d, S, 10, GUARDS_NO_RETRY_AFTER, p, NULL, &st),
           GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_retry_driver_report(d, S, GUARDS_OUTCOME_TIMEOUT, GUARDS_NO_RETRY_AFTER, NULL,
                                      NULL, &st), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("policy"));
  CHECK_RC(guards_retry_driver_cancel(d, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_GIVE_UP && st.give_up_reason == GUARDS_GIVE_UP_REASON_CANCELLED);
  CHECK(!guards_give_up_should_propagate_as_overloaded(st.give_up_reason));
  guards_retry_driver_free(d);

  /* A request whose deadline has passed gives up before its first attempt. */
  d = driver(S);
  CHECK_RC(guards_retry_driver_start(d, S, NULL, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_GIVE_UP &&
        st.give_up_reason == GUARDS_GIVE_UP_REASON_DEADLINE_EXCEEDED);
  guards_retry_driver_free(d);
  guards_retry_policy_free(p);
}

/* The AWS quota through the driver: a retry that succeeds is refunded. */
static void test_aws_refund_through_the_driver(void) {
  guards_retry_policy *p = policy();
  guards_retry_budget_config bc;
  guards_retry_budget_config_default(&bc);
  bc.mode = GUARDS_RETRY_BUDGET_MODE_AWS;
  guards_retry_budget *b = NULL;
  CHECK_RC(guards_retry_budget_new(&bc, &b), GUARDS_RESULT_OK);
  guards_retry_driver *d = driver(GUARDS_NO_DEADLINE);
  guards_retry_step st;
  int64_t tokens = 0;
  CHECK_RC(guards_retry_driver_start(d, S, b, &st), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_driver_report(d, S + 60 * MS, GUARDS_OUTCOME_TIMEOUT, GUARDS_NO_RETRY_AFTER,
                                      p, b, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_WAIT);
  CHECK_RC(guards_retry_budget_tokens_micros(b, S, &tokens), GUARDS_RESULT_OK);
  CHECK(tokens == 490000000); /* a timeout retry costs 10 */
  CHECK_RC(guards_retry_driver_resume(d, st.retry_at_ns, &st), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_driver_report(d, S + 200 * MS, GUARDS_OUTCOME_SUCCESS,
                                      GUARDS_NO_RETRY_AFTER, p, b, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_SUCCEEDED);
  CHECK_RC(guards_retry_budget_tokens_micros(b, S, &tokens), GUARDS_RESULT_OK);
  CHECK(tokens == 500000000);
  guards_retry_driver_free(d);
  guards_retry_policy_free(p);
  guards_retry_budget_free(b);
}

void retry_driver_tests(void) {
  run("retry_driver_the_loop", test_the_loop);
  run("retry_driver_cancel_and_expired", test_cancel_and_expired);
  run("retry_driver_aws_refund", test_aws_refund_through_the_driver);
}
