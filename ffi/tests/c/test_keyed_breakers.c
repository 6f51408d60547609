/* Keyed breakers: one breaker per key (Basketly's C6: the view breaker opens without
 * touching the reserve one), a set that fills up, lookups that never insert. */
#include "test.h"

static guards_keyed_breakers *set_with(uint64_t slots, uint64_t window) {
  guards_keyed_breakers_config c;
  CHECK_RC(guards_keyed_breakers_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.slots == 16 && c.breaker.window_size == 100);
  c.slots = slots;
  c.breaker.window_size = window;
  c.breaker.minimum_calls = window; /* spelled out: the automatic minimum is 10 */
  guards_keyed_breakers *k = NULL;
  CHECK_RC(guards_keyed_breakers_new(&c, &k), GUARDS_RESULT_OK);
  return k;
}

static uint64_t key(const char *name) {
  uint64_t k = 0;
  CHECK_RC(guards_key_of(name, strlen(name), &k), GUARDS_RESULT_OK);
  return k;
}

static void test_view_opens_without_touching_reserve(void) {
  guards_keyed_breakers *set = set_with(4, 20);
  uint64_t view = key("stock.view"), reserve = key("stock.reserve");
  guards_permit p;
  for (uint64_t i = 0; i < 20; i++) {
    CHECK_RC(guards_keyed_breakers_try_acquire(set, view, S + i * MS, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_keyed_breakers_report(set, p, GUARDS_OUTCOME_TIMEOUT, S + i * MS),
             GUARDS_RESULT_OK);
    CHECK_RC(guards_keyed_breakers_try_acquire(set, reserve, S + i * MS, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_keyed_breakers_report(set, p, GUARDS_OUTCOME_SUCCESS, S + i * MS),
             GUARDS_RESULT_OK);
  }
  guards_breaker_state st;
  CHECK_RC(guards_keyed_breakers_state(set, view, 2 * S, &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_OPEN);
  CHECK_RC(guards_keyed_breakers_state(set, reserve, 2 * S, &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_CLOSED);

  CHECK_RC(guards_keyed_breakers_try_acquire(set, view, 2 * S, &p), GUARDS_RESULT_BREAKER_OPEN);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.key == view && r.has_retry_at == 1 && r.retry_at_ns == S + 19 * MS + 5 * S);
  CHECK(detail_has("open"));
  CHECK_RC(guards_keyed_breakers_try_acquire(set, reserve, 2 * S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_report(set, p, GUARDS_OUTCOME_SUCCESS, 2 * S),
           GUARDS_RESULT_OK);

  guards_circuit_breaker_stats s;
  CHECK_RC(guards_keyed_breakers_get_stats(set, view, &s), GUARDS_RESULT_OK);
  CHECK(s.failures == 20 && s.successes == 0 && s.rejected_open == 1);
  CHECK_RC(guards_keyed_breakers_get_stats(set, reserve, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 21 && s.failures == 0);
  uint64_t out = 9;
  CHECK_RC(guards_keyed_breakers_outstanding(set, &out), GUARDS_RESULT_OK);
  CHECK(out == 0);
  guards_keyed_breakers_free(set);
}

static void test_set_fills_up(void) {
  guards_keyed_breakers *set = set_with(3, 8); /* rounded up to 4 slots */
  guards_keyed_breakers_config got;
  CHECK_RC(guards_keyed_breakers_get_config(set, &got), GUARDS_RESULT_OK);
  CHECK(got.slots == 4 && got.breaker.window_size == 8 && got.breaker.capacity == 128);
  guards_permit p;
  for (uint64_t k = 10; k < 14; k++) {
    CHECK_RC(guards_keyed_breakers_try_acquire(set, k, S, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_keyed_breakers_report(set, p, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
  }
  memset(&p, 0x11, sizeof p);
  guards_permit before = p;
  CHECK_RC(guards_keyed_breakers_try_acquire(set, 99, S, &p), GUARDS_RESULT_KEYED_BREAKERS_FULL);
  CHECK(memcmp(&p, &before, sizeof p) == 0);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_KEYED_BREAKERS_FULL && r.key == 99);
  CHECK(r.retry_at_ns == UINT64_MAX);
  /* Known keys still work; unknown keys are never inserted by reads. */
  CHECK_RC(guards_keyed_breakers_try_acquire(set, 12, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_report(set, p, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
  guards_breaker_state st = 77;
  CHECK_RC(guards_keyed_breakers_state(set, 99, S, &st), GUARDS_RESULT_NOT_FOUND);
  CHECK(st == 77);
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_keyed_breakers_get_stats(set, 99, &s), GUARDS_RESULT_NOT_FOUND);
  guards_keyed_breakers_set_stats ss;
  CHECK_RC(guards_keyed_breakers_get_set_stats(set, &ss), GUARDS_RESULT_OK);
  CHECK(ss.entries == 4 && ss.full == 1 && ss.slots == 4);
  guards_keyed_breakers_free(set);
}

static void test_permits_go_back_to_their_set(void) {
  guards_keyed_breakers *a = set_with(4, 20), *b = set_with(4, 20);
  guards_permit p;
  CHECK_RC(guards_keyed_breakers_try_acquire(a, 1, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_report(b, p, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_WRONG_GUARD);
  CHECK_RC(guards_keyed_breakers_report(a, p, 10, S), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_keyed_breakers_report(a, p, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_report(a, p, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_keyed_breakers_get_stats(a, 1, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 1);
  guards_keyed_breakers_free(a);
  guards_keyed_breakers_free(b);
}

/* Keys inserted without a call, until the set is full. */
static void test_insert(void) {
  guards_keyed_breakers_config c;
  guards_keyed_breakers_config_default(&c);
  c.slots = 4;
  guards_keyed_breakers *k = NULL;
  CHECK_RC(guards_keyed_breakers_new(&c, &k), GUARDS_RESULT_OK);
  for (uint64_t key = 1; key <= 4; key++) CHECK_RC(guards_keyed_breakers_insert(k, key), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_insert(k, 5), GUARDS_RESULT_KEYED_BREAKERS_FULL);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK_EQ_U64(r.key, 5);
  CHECK_RC(guards_keyed_breakers_insert(k, 3), GUARDS_RESULT_OK); /* already in */
  guards_keyed_breakers_set_stats s;
  CHECK_RC(guards_keyed_breakers_get_set_stats(k, &s), GUARDS_RESULT_OK);
  CHECK_EQ_U64(s.entries, 4);
  guards_breaker_state st;
  CHECK_RC(guards_keyed_breakers_state(k, 2, 0, &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_CLOSED);
  guards_circuit_breaker_stats bs;
  CHECK_RC(guards_keyed_breakers_get_stats(k, 2, &bs), GUARDS_RESULT_OK);
  CHECK(bs.successes == 0 && bs.failures == 0); /* inserting is no call */
  CHECK_RC(guards_keyed_breakers_insert(NULL, 1), GUARDS_RESULT_NULL_ARGUMENT);
  guards_keyed_breakers_free(k);
}

/* A key's report effects, state word and window. */
static void test_effects_status_window(void) {
  guards_keyed_breakers *k = set_with(4, 2);
  guards_breaker_status st;
  guards_window_counts w;
  CHECK_RC(guards_keyed_breakers_status(k, 9, &st), GUARDS_RESULT_NOT_FOUND); /* never inserted */
  CHECK_RC(guards_keyed_breakers_window_counts(k, 9, 0, &w), GUARDS_RESULT_NOT_FOUND);
  guards_permit p;
  uint32_t e = 99;
  CHECK_RC(guards_keyed_breakers_try_acquire(k, 9, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_report_effect(k, p, GUARDS_OUTCOME_TIMEOUT, S, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_keyed_breakers_report_effect(k, p, GUARDS_OUTCOME_TIMEOUT, S, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_COUNTED);
  CHECK_RC(guards_keyed_breakers_window_counts(k, 9, S, &w), GUARDS_RESULT_OK);
  CHECK(w.calls == 1 && w.failures == 1);
  CHECK_RC(guards_keyed_breakers_try_acquire(k, 9, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_report_effect(k, p, GUARDS_OUTCOME_TIMEOUT, S, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_OPENED);
  CHECK_RC(guards_keyed_breakers_report_effect(k, p, GUARDS_OUTCOME_TIMEOUT, S, &e),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK_RC(guards_keyed_breakers_status(k, 9, &st), GUARDS_RESULT_OK);
  CHECK(st.state == GUARDS_BREAKER_STATE_OPEN && st.generation == 1 && st.half_open_at_ns > S);
  CHECK_RC(guards_keyed_breakers_status(NULL, 9, &st), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_keyed_breakers_window_counts(k, 9, S, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_keyed_breakers_free(k);
}

void keyed_breakers_tests(void) {
  run("keyed_effects_status_window", test_effects_status_window);
  run("keyed_insert", test_insert);
  run("keyed_view_opens_without_touching_reserve", test_view_opens_without_touching_reserve);
  run("keyed_set_fills_up", test_set_fills_up);
  run("keyed_permits_go_back_to_their_set", test_permits_go_back_to_their_set);
}
