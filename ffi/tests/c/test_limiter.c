/* The limiter: AIMD halving on a drop, priority partitions (caps and shares), thresholds;
 * a limit algorithm on its own (guards_limit). */
#include "test.h"

static guards_limiter *limiter_with(guards_limiter_config c) {
  guards_limiter *l = NULL;
  CHECK_RC(guards_limiter_new(&c, &l), GUARDS_RESULT_OK);
  return l;
}

static void test_defaults(void) {
  guards_limiter_config c;
  memset(&c, 0xAB, sizeof c);
  CHECK_RC(guards_limiter_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.limit.algorithm == GUARDS_LIMIT_ALGORITHM_VEGAS && c.limit.vegas.initial_limit == 20);
  CHECK(c.limit.aimd.initial_limit == 10 && c.limit.aimd.backoff_ratio == 0.5);
  CHECK(c.limit.gradient.long_window == 600 && c.limit.fixed == UINT64_MAX);
  CHECK(c.window_ns == 100 * MS && c.min_window_samples == 10);
  for (int i = 0; i < 8; i++) CHECK(c.partitions[i].share == 1.0 && c.partitions[i].max_in_flight == UINT64_MAX);
  CHECK(c.min_retry_after_ns == 1 * MS && c.max_retry_after_ns == 1 * S);
  guards_limiter *l = limiter_with(c);
  guards_limiter_stats s;
  CHECK_RC(guards_limiter_get_stats(l, &s), GUARDS_RESULT_OK);
  CHECK(s.limit == 20 && s.in_flight == 0);
  guards_limiter_free(l);
}

/* Core's example: AIMD from 2; a timeout is a drop that halves the limit. */
static void test_aimd_halves_on_a_drop(void) {
  guards_limiter_config c;
  guards_limiter_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD;
  c.limit.aimd.initial_limit = 2;
  c.min_window_samples = 1;
  guards_limiter *l = limiter_with(c);
  uint64_t t0 = 1000 * MS;
  guards_permit a, b, x;
  CHECK_RC(guards_limiter_try_acquire(l, t0, 1, &a), GUARDS_RESULT_OK);
  CHECK(a.acquired_at_ns == t0);
  CHECK_RC(guards_limiter_try_acquire(l, t0, 1, &b), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_try_acquire(l, t0, 1, &x), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.in_flight == 2 && r.limit == 2 && r.priority == 1);
  CHECK(r.has_retry_at == 1 && r.retry_at_ns == t0 + 1 * MS); /* min_retry_after, no RTT yet */
  CHECK_RC(guards_limiter_report(l, a, GUARDS_OUTCOME_TIMEOUT, t0 + 60 * MS), GUARDS_RESULT_OK);
  guards_limiter_stats s;
  CHECK_RC(guards_limiter_get_stats(l, &s), GUARDS_RESULT_OK);
  CHECK(s.limit == 1 && s.dropped == 1);
  CHECK_RC(guards_limiter_report(l, b, GUARDS_OUTCOME_SUCCESS, t0 + 70 * MS), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_report(l, b, GUARDS_OUTCOME_SUCCESS, t0 + 70 * MS),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK_RC(guards_limiter_get_stats(l, &s), GUARDS_RESULT_OK);
  CHECK(s.in_flight == 0 && s.succeeded == 1 && s.acquired == 2 && s.rejected_limit_reached == 1);
  CHECK(s.rejected_by_priority[1] == 1);
  uint64_t out = 9;
  CHECK_RC(guards_limiter_outstanding(l, &out), GUARDS_RESULT_OK);
  CHECK(out == 0);
  guards_limiter_free(l);
}

/* The limiter column of the call contract: sample, drop or nothing. */
static void test_outcomes(void) {
  guards_limiter_config c;
  guards_limiter_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  c.limit.fixed = 10;
  guards_limiter *l = limiter_with(c);
  static const struct {
    uint32_t outcome;
    int success, dropped, ignored;
  } cases[] = {
      {GUARDS_OUTCOME_SUCCESS, 1, 0, 0},          {GUARDS_OUTCOME_TIMEOUT, 0, 1, 0},
      {GUARDS_OUTCOME_CONNECTION_ERROR, 0, 0, 1}, {GUARDS_OUTCOME_OTHER_TRANSIENT, 0, 0, 1},
      {GUARDS_OUTCOME_THROTTLED, 0, 1, 0},        {GUARDS_OUTCOME_OVERLOADED, 0, 1, 0},
      {GUARDS_OUTCOME_PERMANENT, 0, 0, 1},        {GUARDS_OUTCOME_REJECTED, 0, 0, 1},
      {GUARDS_OUTCOME_IGNORED, 0, 0, 1},          {GUARDS_OUTCOME_CANCELLED, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    guards_limiter_stats a, b;
    guards_permit p;
    CHECK_RC(guards_limiter_get_stats(l, &a), GUARDS_RESULT_OK);
    CHECK_RC(guards_limiter_try_acquire(l, S, 0, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_limiter_report(l, p, cases[i].outcome, S + MS), GUARDS_RESULT_OK);
    CHECK_RC(guards_limiter_get_stats(l, &b), GUARDS_RESULT_OK);
    CHECK(b.succeeded - a.succeeded == (uint64_t)cases[i].success);
    CHECK(b.dropped - a.dropped == (uint64_t)cases[i].dropped);
    CHECK(b.ignored - a.ignored == (uint64_t)cases[i].ignored);
    CHECK(b.in_flight == 0);
  }
  guards_limiter_free(l);
}

static void test_partitions(void) {
  /* Basketly's C5 on a limiter: a fixed 80, views (priority 3) capped at 64. */
  guards_limiter_config c;
  guards_limiter_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  c.limit.fixed = 80;
  for (int i = 1; i < 8; i++) c.partitions[i].max_in_flight = 64;
  guards_limiter *l = limiter_with(c);
  guards_permit held[80];
  int n = 0;
  for (; n < 64; n++) CHECK_RC(guards_limiter_try_acquire(l, S, 3, &held[n]), GUARDS_RESULT_OK);
  guards_permit p;
  CHECK_RC(guards_limiter_try_acquire(l, S, 3, &p), GUARDS_RESULT_LIMITER_PARTITION_CAP);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.limit == 64 && r.priority == 3 && r.in_flight == 64);
  for (; n < 80; n++) CHECK_RC(guards_limiter_try_acquire(l, S, 0, &held[n]), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_try_acquire(l, S, 0, &p), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  for (int i = 0; i < 80; i++) CHECK_RC(guards_limiter_report(l, held[i], GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
  guards_limiter_free(l);

  /* Shares: priorities 1.. may fill half of a fixed 10; the rest is kept for 0. */
  guards_limiter_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  c.limit.fixed = 10;
  for (int i = 1; i < 8; i++) c.partitions[i].share = 0.5;
  l = limiter_with(c);
  for (n = 0; n < 5; n++) CHECK_RC(guards_limiter_try_acquire(l, S, 2, &held[n]), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_try_acquire(l, S, 2, &p), GUARDS_RESULT_LIMITER_RESERVED);
  CHECK_RC(guards_limiter_try_acquire(l, S, 0, &held[n++]), GUARDS_RESULT_OK);
  guards_limiter_stats s;
  CHECK_RC(guards_limiter_get_stats(l, &s), GUARDS_RESULT_OK);
  CHECK(s.rejected_reserved == 1 && s.in_flight == 6);
  for (int i = 0; i < n; i++) CHECK_RC(guards_limiter_report(l, held[i], GUARDS_OUTCOME_IGNORED, S), GUARDS_RESULT_OK);
  guards_limiter_config got;
  CHECK_RC(guards_limiter_get_config(l, &got), GUARDS_RESULT_OK);
  CHECK(got.limit.algorithm == GUARDS_LIMIT_ALGORITHM_FIXED && got.limit.fixed == 10);
  CHECK(got.partitions[3].share == 0.5);
  guards_limiter_free(l);
}

static void test_vegas_and_gradient_build(void) {
  guards_limiter_config c;
  guards_limiter_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_GRADIENT;
  c.limit.gradient.initial_limit = 7;
  guards_limiter *l = limiter_with(c);
  guards_limiter_stats s;
  CHECK_RC(guards_limiter_get_stats(l, &s), GUARDS_RESULT_OK);
  CHECK(s.limit == 7);
  guards_limiter_free(l);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_VEGAS;
  c.limit.vegas.initial_limit = 9;
  l = limiter_with(c);
  CHECK_RC(guards_limiter_get_stats(l, &s), GUARDS_RESULT_OK);
  CHECK(s.limit == 9);
  guards_limiter_free(l);
}

/* The threshold each priority is held to, and the retry-after hint a refusal would carry. */
static void test_threshold_and_retry_after(void) {
  guards_limiter_config c;
  guards_limiter_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  c.limit.fixed = 10;
  for (int i = 1; i < 8; i++) c.partitions[i].share = 0.5; /* at most a higher level's */
  for (int i = 2; i < 8; i++) c.partitions[i].max_in_flight = 3;
  guards_limiter *l = limiter_with(c);
  uint64_t t = 0;
  CHECK_RC(guards_limiter_threshold(l, 0, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, 10);
  CHECK_RC(guards_limiter_threshold(l, 1, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, 5);
  CHECK_RC(guards_limiter_threshold(l, 2, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, 3);
  t = 77;
  CHECK_RC(guards_limiter_threshold(l, 8, &t), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(t == 77 && detail_has("priority"));
  CHECK_RC(guards_limiter_threshold(NULL, 0, &t), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limiter_threshold(l, 0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  /* No RTT seen yet: the smallest hint. */
  uint64_t r = 0;
  CHECK_RC(guards_limiter_retry_after(l, &r), GUARDS_RESULT_OK);
  CHECK_EQ_U64(r, c.min_retry_after_ns);
  /* A refusal carries the same hint. */
  guards_permit p[5], x;
  for (int i = 0; i < 5; i++) CHECK_RC(guards_limiter_try_acquire(l, S, 1, &p[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_try_acquire(l, S, 1, &x), GUARDS_RESULT_LIMITER_RESERVED);
  guards_rejection rej;
  CHECK_RC(guards_last_rejection(&rej), GUARDS_RESULT_OK);
  CHECK_EQ_U64(rej.retry_at_ns, S + r);
  CHECK_EQ_U64(rej.limit, 5);
  for (int i = 0; i < 5; i++) CHECK_RC(guards_limiter_report(l, p[i], GUARDS_OUTCOME_SUCCESS, S + 2 * MS), GUARDS_RESULT_OK);
  CHECK_RC(guards_limiter_retry_after(NULL, &r), GUARDS_RESULT_NULL_ARGUMENT);
  guards_limiter_free(l);
}

/* A limit algorithm on its own, fed one sample at a time. */
static void test_limit_on_its_own(void) {
  guards_limiter_config d;
  guards_limiter_config_default(&d);
  guards_limit_config c = d.limit;
  c.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD;
  c.aimd.initial_limit = 10;
  guards_limit *l = NULL;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_OK);
  uint64_t n = 0;
  CHECK_RC(guards_limit_get_limit(l, &n), GUARDS_RESULT_OK);
  CHECK_EQ_U64(n, 10);
  /* A drop halves it (backoff_ratio 0.5). */
  CHECK_RC(guards_limit_update(l, S, 5 * MS, 10, true, &n), GUARDS_RESULT_OK);
  CHECK_EQ_U64(n, 5);
  CHECK_RC(guards_limit_get_limit(l, &n), GUARDS_RESULT_OK);
  CHECK_EQ_U64(n, 5);
  /* Vegas and Gradient2 figures are not AIMD's. */
  double f = 42;
  CHECK_RC(guards_limit_estimate(l, &f), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(f == 42 && detail_has("Vegas"));
  CHECK_RC(guards_limit_min_rtt(l, &n), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_limit_long_rtt(l, &f), GUARDS_RESULT_INVALID_ARGUMENT);
  guards_limit_config got;
  CHECK_RC(guards_limit_get_config(l, &got), GUARDS_RESULT_OK);
  CHECK(got.algorithm == GUARDS_LIMIT_ALGORITHM_AIMD && got.aimd.initial_limit == 10);
  guards_limit_free(l);

  /* Vegas: no minimum RTT before a sample, then the smallest seen. */
  c = d.limit;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_OK);
  CHECK_RC(guards_limit_min_rtt(l, &n), GUARDS_RESULT_OK);
  CHECK_EQ_U64(n, 0);
  CHECK_RC(guards_limit_update(l, S, 7 * MS, 1, false, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_limit_min_rtt(l, &n), GUARDS_RESULT_OK);
  CHECK_EQ_U64(n, 7 * MS);
  CHECK_RC(guards_limit_estimate(l, &f), GUARDS_RESULT_OK);
  CHECK(f >= 1);
  guards_limit_free(l);

  /* Gradient2: the long-term average starts at the first RTT. */
  c.algorithm = GUARDS_LIMIT_ALGORITHM_GRADIENT;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_OK);
  CHECK_RC(guards_limit_update(l, S, 4 * MS, 1, false, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_limit_long_rtt(l, &f), GUARDS_RESULT_OK);
  CHECK(f == 4.0 * MS);
  guards_limit_free(l);

  /* A fixed limit ignores samples. */
  c.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  c.fixed = 3;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_OK);
  CHECK_RC(guards_limit_update(l, S, 4 * MS, 3, true, &n), GUARDS_RESULT_OK);
  CHECK_EQ_U64(n, 3);
  guards_limit_free(l);

  /* Bad input: every error typed, nothing built. */
  l = NULL;
  c = d.limit;
  c.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD;
  c.aimd.backoff_ratio = 1.5;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(l == NULL && detail_has("backoff_ratio"));
  c.aimd.backoff_ratio = NAN;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_CONFIG_NOT_FINITE);
  c = d.limit;
  c.algorithm = 9;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_INVALID_ENUM);
  CHECK(l == NULL && detail_has("algorithm"));
  c.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  c.fixed = 0;
  CHECK_RC(guards_limit_new(&c, &l), GUARDS_RESULT_CONFIG_ZERO);
  CHECK_RC(guards_limit_new(NULL, &l), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limit_new(&d.limit, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limit_update(NULL, S, MS, 1, false, &n), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limit_get_limit(NULL, &n), GUARDS_RESULT_NULL_ARGUMENT);
  guards_limit_free(NULL);
}

void limiter_tests(void) {
  run("limiter_defaults", test_defaults);
  run("limiter_aimd_halves_on_a_drop", test_aimd_halves_on_a_drop);
  run("limiter_outcomes", test_outcomes);
  run("limiter_partitions", test_partitions);
  run("limiter_vegas_and_gradient_build", test_vegas_and_gradient_build);
  run("limiter_threshold_and_retry_after", test_threshold_and_retry_after);
  run("limit_on_its_own", test_limit_on_its_own);
}
