/* Backoff with jitter, and the stable offset of periodic work. */
#include "test.h"

static guards_backoff *backoff_with(uint32_t jitter) {
  guards_backoff_config c;
  CHECK_RC(guards_backoff_config_default(&c), GUARDS_RESULT_OK);
  c.jitter = jitter;
  guards_backoff *b = NULL;
  CHECK_RC(guards_backoff_new(&c, &b), GUARDS_RESULT_OK);
  return b;
}

static void test_ceiling_and_jitter(void) {
  guards_backoff *b = backoff_with(GUARDS_JITTER_NONE);
  uint64_t v = 0;
  /* min(cap, base * 2^n): 25 ms doubling, capped at 20 s from retry 10 on. */
  for (uint32_t n = 0; n < 40; n++) {
    uint64_t want = n < 10 ? (25 * MS) << n : 20 * S;
    CHECK_RC(guards_backoff_ceiling(b, n, &v), GUARDS_RESULT_OK);
    CHECK(v == want);
    CHECK_RC(guards_backoff_delay(b, n, 0, &v), GUARDS_RESULT_OK);
    CHECK(v == want);
  }
  CHECK_RC(guards_backoff_ceiling(b, UINT32_MAX, &v), GUARDS_RESULT_OK);
  CHECK(v == 20 * S);
  guards_backoff_free(b);

  /* Full jitter: uniform in 0..=ceiling, so the extreme random words give the ends. */
  b = backoff_with(GUARDS_JITTER_FULL);
  CHECK_RC(guards_backoff_delay_from_bits(b, 2, 0, 0, &v), GUARDS_RESULT_OK);
  CHECK(v == 0);
  CHECK_RC(guards_backoff_delay_from_bits(b, 2, 0, UINT64_MAX, &v), GUARDS_RESULT_OK);
  CHECK(v == 100 * MS);
  for (int i = 0; i < 1000; i++) {
    CHECK_RC(guards_backoff_delay(b, 3, 0, &v), GUARDS_RESULT_OK);
    CHECK(v <= 200 * MS);
  }
  CHECK_RC(guards_backoff_max_delay(b, 3, &v), GUARDS_RESULT_OK);
  CHECK(v == 200 * MS);
  guards_backoff_free(b);

  /* Equal jitter: uniform in ceiling/2..=ceiling. */
  b = backoff_with(GUARDS_JITTER_EQUAL);
  CHECK_RC(guards_backoff_delay_from_bits(b, 2, 0, 0, &v), GUARDS_RESULT_OK);
  CHECK(v == 50 * MS);
  CHECK_RC(guards_backoff_delay_from_bits(b, 2, 0, UINT64_MAX, &v), GUARDS_RESULT_OK);
  CHECK(v == 100 * MS);
  guards_backoff_free(b);

  /* Decorrelated: uniform in base..=3 * max(prev, base), capped. */
  b = backoff_with(GUARDS_JITTER_DECORRELATED);
  CHECK_RC(guards_backoff_delay_from_bits(b, 0, 0, 0, &v), GUARDS_RESULT_OK);
  CHECK(v == 25 * MS);
  CHECK_RC(guards_backoff_delay_from_bits(b, 0, 0, UINT64_MAX, &v), GUARDS_RESULT_OK);
  CHECK(v == 75 * MS);
  CHECK_RC(guards_backoff_delay_from_bits(b, 5, 10 * S, UINT64_MAX, &v), GUARDS_RESULT_OK);
  CHECK(v == 20 * S);
  guards_backoff_free(b);
}

static void test_same_seed_same_waits(void) {
  guards_backoff *a = backoff_with(GUARDS_JITTER_FULL), *b = backoff_with(GUARDS_JITTER_FULL);
  CHECK_RC(guards_backoff_reseed(a, 42), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_reseed(b, 42), GUARDS_RESULT_OK);
  uint64_t x, y, first = 0;
  for (uint32_t n = 0; n < 100; n++) {
    CHECK_RC(guards_backoff_delay(a, n % 12, 0, &x), GUARDS_RESULT_OK);
    CHECK_RC(guards_backoff_delay(b, n % 12, 0, &y), GUARDS_RESULT_OK);
    CHECK(x == y);
    if (n == 0) first = x;
  }
  CHECK_RC(guards_backoff_reseed(a, 42), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_delay(a, 0, 0, &x), GUARDS_RESULT_OK);
  CHECK(x == first);
  guards_backoff_config c;
  CHECK_RC(guards_backoff_get_config(a, &c), GUARDS_RESULT_OK);
  CHECK(c.base_ns == 25 * MS && c.jitter == GUARDS_JITTER_FULL);
  guards_backoff_free(a);
  guards_backoff_free(b);
}

static void test_stable_offset(void) {
  uint64_t v = 0;
  /* fnv1a64("") = 0xcbf29ce484222325 = 14695981039346656037; mod 1000 = 37. */
  CHECK_RC(guards_stable_offset("", 0, 1000, &v), GUARDS_RESULT_OK);
  CHECK(v == 37);
  CHECK_RC(guards_stable_offset("x", 1, 0, &v), GUARDS_RESULT_OK);
  CHECK(v == 0);
  CHECK_RC(guards_next_stable_run("", 0, 1000, 1500, &v), GUARDS_RESULT_OK);
  CHECK(v == 2037);
  CHECK_RC(guards_next_stable_run("", 0, 1000, 1037, &v), GUARDS_RESULT_OK);
  CHECK(v == 1037);
  CHECK_RC(guards_next_stable_run("", 0, 0, 1500, &v), GUARDS_RESULT_OK);
  CHECK(v == 1500);
  CHECK_RC(guards_stable_offset(NULL, 5, 1000, &v), GUARDS_RESULT_NULL_ARGUMENT);
}

/* A drawn word, recorded, replays the wait a delay with the same generator makes. */
static void test_next_u64_replays(void) {
  guards_backoff_config c;
  guards_backoff_config_default(&c);
  c.jitter = GUARDS_JITTER_FULL;
  guards_backoff *a = NULL, *b = NULL;
  CHECK_RC(guards_backoff_new(&c, &a), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_new(&c, &b), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_reseed(a, 0), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_reseed(b, 0), GUARDS_RESULT_OK);
  uint64_t w = 0, replayed = 0, drawn = 0;
  CHECK_RC(guards_backoff_next_u64(a, &w), GUARDS_RESULT_OK);
  CHECK(w == 0xe220a8397b1dcdafull); /* SplitMix64's first word for seed 0 */
  CHECK_RC(guards_backoff_delay_from_bits(a, 2, 0, w, &replayed), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_delay(b, 2, 0, &drawn), GUARDS_RESULT_OK);
  CHECK_EQ_U64(replayed, drawn);
  /* Both generators moved on by one word. */
  uint64_t wa = 0, wb = 0;
  CHECK_RC(guards_backoff_next_u64(a, &wa), GUARDS_RESULT_OK);
  CHECK_RC(guards_backoff_next_u64(b, &wb), GUARDS_RESULT_OK);
  CHECK(wa == wb && wa != w);
  CHECK_RC(guards_backoff_next_u64(NULL, &w), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_backoff_next_u64(a, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_backoff_free(a);
  guards_backoff_free(b);
}

void backoff_tests(void) {
  run("backoff_next_u64_replays", test_next_u64_replays);
  run("backoff_ceiling_and_jitter", test_ceiling_and_jitter);
  run("backoff_same_seed_same_waits", test_same_seed_same_waits);
  run("backoff_stable_offset", test_stable_offset);
}
