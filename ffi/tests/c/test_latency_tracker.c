/* The latency tracker: percentiles within 1/64, proposed timeouts, the call contract. */
#include "test.h"

static guards_latency_tracker *tracker_with(uint64_t min_samples) {
  guards_latency_tracker_config c;
  CHECK_RC(guards_latency_tracker_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.window_ns == 10 * S && c.timeout_quantile == 0.999 && c.timeout_factor == 2.0);
  CHECK(c.min_samples == 1000);
  c.min_samples = min_samples;
  guards_latency_tracker *t = NULL;
  CHECK_RC(guards_latency_tracker_new(&c, &t), GUARDS_RESULT_OK);
  return t;
}

/* |got - want| <= want / 64: the tracker's documented relative error. */
static int within(uint64_t got, uint64_t want) {
  uint64_t d = got > want ? got - want : want - got;
  return d * 64 <= want;
}

static void test_percentiles(void) {
  guards_latency_tracker *t = tracker_with(100);
  uint64_t now = 10 * S, v = 0;
  CHECK_RC(guards_latency_tracker_quantile(t, now, 0.5, &v), GUARDS_RESULT_NO_DATA);
  CHECK_RC(guards_latency_tracker_propose_timeout(t, now, &v), GUARDS_RESULT_NO_DATA);
  for (uint64_t i = 1; i <= 100; i++) CHECK_RC(guards_latency_tracker_record(t, now, i * MS), GUARDS_RESULT_OK);
  CHECK_RC(guards_latency_tracker_count(t, now, &v), GUARDS_RESULT_OK);
  CHECK(v == 100);
  CHECK_RC(guards_latency_tracker_quantile(t, now, 0.95, &v), GUARDS_RESULT_OK);
  CHECK(within(v, 95 * MS));
  CHECK_RC(guards_latency_tracker_quantile(t, now, 0.5, &v), GUARDS_RESULT_OK);
  CHECK(within(v, 50 * MS));
  guards_latency_summary s;
  CHECK_RC(guards_latency_tracker_summary(t, now, &s), GUARDS_RESULT_OK);
  CHECK(s.count == 100 && within(s.p50_ns, 50 * MS) && within(s.p99_ns, 99 * MS));
  CHECK(within(s.max_ns, 100 * MS));
  /* The proposal is timeout_factor (2) times the P99.9 the tracker reads. */
  uint64_t p999 = 0;
  CHECK_RC(guards_latency_tracker_quantile(t, now, 0.999, &p999), GUARDS_RESULT_OK);
  CHECK_RC(guards_latency_tracker_propose_timeout(t, now, &v), GUARDS_RESULT_OK);
  CHECK(v == 2 * p999);
  /* 51..100 ms are above a 50 ms timeout; the 50 ms sample counts by its bucket's midpoint. */
  double rate = -1;
  CHECK_RC(guards_latency_tracker_false_timeout_rate(t, now, 50 * MS, &rate), GUARDS_RESULT_OK);
  CHECK(rate == 0.50 || rate == 0.51);
  CHECK_RC(guards_latency_tracker_quantile(t, now, NAN, &v), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_latency_tracker_quantile(t, now, 1.5, &v), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_latency_tracker_quantile(t, now, -0.1, &v), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("quantile"));
  /* A whole window later the samples have aged out. */
  CHECK_RC(guards_latency_tracker_count(t, now + 70 * S, &v), GUARDS_RESULT_OK);
  CHECK(v == 0);
  guards_latency_tracker_free(t);
}

/* The latency column of the call contract. */
static void test_outcomes(void) {
  guards_latency_tracker *t = tracker_with(1);
  static const struct {
    uint32_t outcome;
    int recorded;
  } cases[] = {
      {GUARDS_OUTCOME_SUCCESS, 1},          {GUARDS_OUTCOME_TIMEOUT, 1},
      {GUARDS_OUTCOME_CONNECTION_ERROR, 0}, {GUARDS_OUTCOME_OTHER_TRANSIENT, 0},
      {GUARDS_OUTCOME_THROTTLED, 0},        {GUARDS_OUTCOME_OVERLOADED, 0},
      {GUARDS_OUTCOME_PERMANENT, 1},        {GUARDS_OUTCOME_REJECTED, 0},
      {GUARDS_OUTCOME_IGNORED, 0},          {GUARDS_OUTCOME_CANCELLED, 1},
  };
  uint64_t before = 0, after = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK_RC(guards_latency_tracker_count(t, 2 * S, &before), GUARDS_RESULT_OK);
    CHECK_RC(guards_latency_tracker_report(t, 2 * S, 2 * S - 30 * MS, cases[i].outcome), GUARDS_RESULT_OK);
    CHECK_RC(guards_latency_tracker_count(t, 2 * S, &after), GUARDS_RESULT_OK);
    CHECK(after - before == (uint64_t)cases[i].recorded);
  }
  uint64_t q = 0;
  CHECK_RC(guards_latency_tracker_quantile(t, 2 * S, 1.0, &q), GUARDS_RESULT_OK);
  CHECK(within(q, 30 * MS));
  guards_latency_tracker_stats s;
  CHECK_RC(guards_latency_tracker_get_stats(t, &s), GUARDS_RESULT_OK);
  CHECK(s.recorded == 4 && s.saturated == 0 && s.stale == 0);
  CHECK_RC(guards_latency_tracker_report(t, 2 * S, 0, 10), GUARDS_RESULT_INVALID_ENUM);
  guards_latency_tracker_config c;
  CHECK_RC(guards_latency_tracker_get_config(t, &c), GUARDS_RESULT_OK);
  CHECK(c.min_samples == 1);
  guards_latency_tracker_free(t);
}

void latency_tracker_tests(void) {
  run("latency_tracker_percentiles", test_percentiles);
  run("latency_tracker_outcomes", test_outcomes);
}
