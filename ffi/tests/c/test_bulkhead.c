/* The bulkhead: Basketly's C7 (12 calls in flight per instance), release and report. */
#include "test.h"

static void test_c7_twelve_in_flight(void) {
  guards_bulkhead_config cfg;
  memset(&cfg, 0xAB, sizeof cfg);
  CHECK_RC(guards_bulkhead_config_default(&cfg), GUARDS_RESULT_OK);
  CHECK(cfg.max_concurrent == 12);
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_new(&cfg, &h), GUARDS_RESULT_OK);
  guards_permit held[12], extra;
  for (int i = 0; i < 12; i++) CHECK_RC(guards_bulkhead_try_acquire(h, &held[i]), GUARDS_RESULT_OK);
  memset(&extra, 0x77, sizeof extra);
  guards_permit before = extra;
  CHECK_RC(guards_bulkhead_try_acquire(h, &extra), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK(memcmp(&extra, &before, sizeof extra) == 0);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_BULKHEAD_FULL && r.in_flight == 12 && r.limit == 12);
  CHECK(r.has_retry_at == 0);
  CHECK(detail_has("12 of 12"));

  /* Any outcome releases the slot (the call contract's bulkhead column). */
  CHECK_RC(guards_bulkhead_report(h, held[0], GUARDS_OUTCOME_TIMEOUT), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_report(h, held[1], GUARDS_OUTCOME_REJECTED), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_report(h, held[2], 10), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_bulkhead_release(h, held[2]), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_report(h, held[2], GUARDS_OUTCOME_SUCCESS),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  guards_bulkhead_stats s;
  CHECK_RC(guards_bulkhead_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(s.acquired == 12 && s.rejected == 1 && s.in_flight == 9 && s.released == 3);
  for (int i = 3; i < 12; i++) CHECK_RC(guards_bulkhead_release(h, held[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(s.in_flight == 0 && s.released == 12);
  guards_bulkhead_config got;
  CHECK_RC(guards_bulkhead_get_config(h, &got), GUARDS_RESULT_OK);
  CHECK(got.max_concurrent == 12);
  /* A permit still held when the handle is freed is freed with it. */
  CHECK_RC(guards_bulkhead_try_acquire(h, &extra), GUARDS_RESULT_OK);
  guards_bulkhead_free(h);
}

/* Sizing by Little's law: Basketly's C7: 315 calls/s × 18.7 ms × 2 = 11.78, rounded up. */
static void test_littles_law(void) {
  guards_bulkhead_config c = {0};
  CHECK_RC(guards_bulkhead_config_from_littles_law(315.0, 18700000, 2.0, &c), GUARDS_RESULT_OK);
  CHECK_EQ_U64(c.max_concurrent, 12);
  CHECK_RC(guards_bulkhead_config_from_littles_law(1000.0, 1 * S, 1.5, &c), GUARDS_RESULT_OK);
  CHECK_EQ_U64(c.max_concurrent, 1500); /* exactly whole: not rounded further */
  c.max_concurrent = 7;
  CHECK_RC(guards_bulkhead_config_from_littles_law(0.0, 1, 1.0, &c), GUARDS_RESULT_CONFIG_ZERO);
  CHECK(c.max_concurrent == 7 && detail_has("rate_per_sec"));
  CHECK_RC(guards_bulkhead_config_from_littles_law(NAN, 1, 1.0, &c), GUARDS_RESULT_CONFIG_NOT_FINITE);
  CHECK_RC(guards_bulkhead_config_from_littles_law(1.0, 0, 1.0, &c), GUARDS_RESULT_CONFIG_ZERO);
  CHECK(detail_has("p99"));
  CHECK_RC(guards_bulkhead_config_from_littles_law(1.0, 1, 0.5, &c), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(detail_has("headroom"));
  CHECK_RC(guards_bulkhead_config_from_littles_law(1e9, 3600 * S, 100.0, &c),
           GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(detail_has("max_concurrent"));
  CHECK_RC(guards_bulkhead_config_from_littles_law(1.0, 1, 1.0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  /* The result builds a bulkhead. */
  CHECK_RC(guards_bulkhead_config_from_littles_law(315.0, 18700000, 2.0, &c), GUARDS_RESULT_OK);
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_new(&c, &h), GUARDS_RESULT_OK);
  guards_bulkhead_free(h);
}

/* What a `guards_bulkhead_call` callback saw and returns. */
struct bulkhead_call_ctx {
  guards_bulkhead *h;
  uint32_t outcome;
  int runs;
  uint64_t in_flight; /* the bulkhead's in-flight count while it ran */
  guards_call seen;
};

static uint32_t bulkhead_call_fn(void *ctx, guards_call *call) {
  struct bulkhead_call_ctx *c = ctx;
  guards_bulkhead_stats s;
  c->runs++;
  c->seen = *call;
  CHECK_RC(guards_bulkhead_get_stats(c->h, &s), GUARDS_RESULT_OK);
  c->in_flight = s.in_flight;
  return c->outcome;
}

/* guards_bulkhead_call: the callback runs in a slot, given back when it returns; a full
 * bulkhead runs nothing. */
static void test_call(void) {
  guards_bulkhead_config cfg = {2};
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_new(&cfg, &h), GUARDS_RESULT_OK);
  struct bulkhead_call_ctx c = {h, GUARDS_OUTCOME_SUCCESS, 0, 99, {1, 1, 1, 1, 1}};
  CHECK_RC(guards_bulkhead_call(h, bulkhead_call_fn, &c), GUARDS_RESULT_OK);
  CHECK(c.runs == 1 && c.in_flight == 1);
  CHECK(c.seen.started_ns == 0 && c.seen.ended_ns == 0 && c.seen.is_probe == 0);
  /* Any outcome gives the slot back; one that is not a guards_outcome is INVALID_ENUM. */
  c.outcome = GUARDS_OUTCOME_TIMEOUT;
  CHECK_RC(guards_bulkhead_call(h, bulkhead_call_fn, &c), GUARDS_RESULT_OK);
  c.outcome = UINT32_MAX;
  CHECK_RC(guards_bulkhead_call(h, bulkhead_call_fn, &c), GUARDS_RESULT_INVALID_ENUM);
  CHECK(detail_has("outcome"));
  guards_bulkhead_stats s;
  CHECK_RC(guards_bulkhead_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(c.runs == 3 && s.acquired == 3 && s.released == 3 && s.in_flight == 0);

  /* Full: refused, the callback does not run. */
  guards_permit a, b;
  CHECK_RC(guards_bulkhead_try_acquire(h, &a), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &b), GUARDS_RESULT_OK);
  c.outcome = GUARDS_OUTCOME_SUCCESS;
  CHECK_RC(guards_bulkhead_call(h, bulkhead_call_fn, &c), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK(c.runs == 3);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_BULKHEAD_FULL && r.in_flight == 2 && r.limit == 2);
  CHECK_RC(guards_bulkhead_release(h, a), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_call(h, bulkhead_call_fn, &c), GUARDS_RESULT_OK);
  CHECK(c.runs == 4 && c.in_flight == 2);

  /* Bad arguments are refused before a slot is taken. */
  CHECK_RC(guards_bulkhead_call(h, NULL, &c), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("fn"));
  CHECK_RC(guards_bulkhead_call(NULL, bulkhead_call_fn, &c), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("bulkhead"));
  CHECK(c.runs == 4);
  CHECK_RC(guards_bulkhead_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(s.acquired == 6 && s.rejected == 1 && s.in_flight == 1);
  CHECK_RC(guards_bulkhead_release(h, b), GUARDS_RESULT_OK);
  guards_bulkhead_free(h);
}

void bulkhead_tests(void) {
  run("bulkhead_c7_twelve_in_flight", test_c7_twelve_in_flight);
  run("bulkhead_littles_law", test_littles_law);
  run("bulkhead_call", test_call);
}
