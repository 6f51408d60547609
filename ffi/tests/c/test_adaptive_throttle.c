/* The adaptive throttle: the SRE book's rejection probability, counted requests. */
#include "test.h"

static void test_probability_follows_accepts(void) {
  guards_adaptive_throttle_config c;
  CHECK_RC(guards_adaptive_throttle_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.window_ns == 120 * S && c.k == 2.0 && c.aggression == 1.0);
  CHECK(c.max_reject_probability == 1.0 && c.min_requests == 0 && c.count_rejected && c.seed == 0);
  guards_adaptive_throttle *t = NULL;
  CHECK_RC(guards_adaptive_throttle_new(&c, &t), GUARDS_RESULT_OK);
  uint64_t now = 10 * S;
  /* Nine requests of which the backend accepts four: the probability before each one is
   * (i - 2 min(i, 4)) / (i + 1) <= 0 for i <= 8, so none is rejected. */
  for (int i = 0; i < 9; i++) {
    CHECK_RC(guards_adaptive_throttle_try_acquire(t, now), GUARDS_RESULT_OK);
    if (i < 4) CHECK_RC(guards_adaptive_throttle_report(t, now, GUARDS_OUTCOME_SUCCESS), GUARDS_RESULT_OK);
    else if (i < 6) CHECK_RC(guards_adaptive_throttle_report(t, now, GUARDS_OUTCOME_OVERLOADED), GUARDS_RESULT_OK);
    else CHECK_RC(guards_adaptive_throttle_report(t, now, GUARDS_OUTCOME_REJECTED), GUARDS_RESULT_OK);
  }
  guards_throttle_window w;
  CHECK_RC(guards_adaptive_throttle_window(t, now, &w), GUARDS_RESULT_OK);
  CHECK(w.requests == 9 && w.accepts == 4);
  /* p = (requests - k accepts) / (requests + 1) = (9 - 8) / 10. */
  double p = -1;
  CHECK_RC(guards_adaptive_throttle_reject_probability(t, now, &p), GUARDS_RESULT_OK);
  CHECK(p == (9.0 - 2.0 * 4.0) / 10.0);
  guards_adaptive_throttle_stats s;
  CHECK_RC(guards_adaptive_throttle_get_stats(t, &s), GUARDS_RESULT_OK);
  CHECK(s.admitted == 9 && s.accepted == 4 && s.rejected_by_backend == 2 && s.throttled == 0);
  guards_adaptive_throttle_free(t);

  /* A backend that accepts nothing: the throttle sheds locally, and every decision is
   * counted as admitted or throttled. */
  CHECK_RC(guards_adaptive_throttle_new(&c, &t), GUARDS_RESULT_OK);
  int throttled = 0;
  for (int i = 0; i < 1000; i++) {
    guards_result rc = guards_adaptive_throttle_try_acquire(t, now);
    if (rc == GUARDS_RESULT_THROTTLED) {
      throttled++;
    } else {
      CHECK(rc == GUARDS_RESULT_OK);
      CHECK_RC(guards_adaptive_throttle_report(t, now, GUARDS_OUTCOME_TIMEOUT), GUARDS_RESULT_OK);
    }
  }
  CHECK(throttled > 900);
  CHECK(detail_has("probability"));
  CHECK_RC(guards_adaptive_throttle_get_stats(t, &s), GUARDS_RESULT_OK);
  CHECK(s.throttled == (uint64_t)throttled && s.admitted + s.throttled == 1000);
  CHECK(s.rejected_by_backend == s.admitted);
  guards_adaptive_throttle_config got;
  CHECK_RC(guards_adaptive_throttle_get_config(t, &got), GUARDS_RESULT_OK);
  CHECK(got.k == 2.0);
  guards_adaptive_throttle_free(t);
}

void adaptive_throttle_tests(void) {
  run("adaptive_throttle_probability_follows_accepts", test_probability_follows_accepts);
}
