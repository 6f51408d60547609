/* The circuit breaker through the C API: Basketly's C6 (the last 20 calls, 50 %, open 5 s, 3
 * probes with a 100 ms timeout), the call contract's outcomes, take-once permits. */
#include "test.h"

guards_circuit_breaker *breaker_with(uint64_t window, uint64_t probes);

guards_circuit_breaker *breaker_with(uint64_t window, uint64_t probes) {
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker *b = NULL;
  CHECK_RC(guards_circuit_breaker_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.window_size = window;
  cfg.minimum_calls = window; /* rates judged over a full window */
  cfg.half_open_probes = probes;
  cfg.probe_timeout_ns = 100 * MS;
  CHECK_RC(guards_circuit_breaker_new(&cfg, &b), GUARDS_RESULT_OK);
  CHECK(b != NULL);
  return b;
}

/* Basketly's C6: a count window of 20 that spells out its 20 calls (the automatic minimum is 10),
 * 3 probes of 100 ms. */
static guards_circuit_breaker *c6_breaker(void) {
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker *b = NULL;
  CHECK_RC(guards_circuit_breaker_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.window_size = 20;
  cfg.minimum_calls = 20;
  cfg.half_open_probes = 3;
  cfg.probe_timeout_ns = 100 * MS;
  CHECK_RC(guards_circuit_breaker_new(&cfg, &b), GUARDS_RESULT_OK);
  CHECK(b != NULL);
  return b;
}

/* One call through `b` at `t` that ends with `outcome`. */
static void call(guards_circuit_breaker *b, uint64_t t, uint32_t outcome) {
  guards_permit p;
  CHECK_RC(guards_circuit_breaker_try_acquire(b, t, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_report(b, p, outcome, t), GUARDS_RESULT_OK);
}

static guards_breaker_state state(guards_circuit_breaker *b, uint64_t t) {
  guards_breaker_state st = 99;
  CHECK_RC(guards_circuit_breaker_state(b, t, &st), GUARDS_RESULT_OK);
  return st;
}

static void test_defaults(void) {
  guards_circuit_breaker_config c;
  memset(&c, 0xAB, sizeof c);
  CHECK_RC(guards_circuit_breaker_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.window_kind == GUARDS_WINDOW_KIND_COUNT);
  CHECK(c.window_size == 100);
  CHECK(c.window_duration_ns == 10 * S);
  CHECK(c.window_buckets == 10);
  CHECK(c.failure_rate_threshold == 0.5);
  CHECK(c.slow_call_duration_ns == 60 * S);
  CHECK(c.slow_call_rate_threshold == 1.0);
  CHECK(c.minimum_calls == 0);
  CHECK(c.open_duration_ns == 5 * S);
  CHECK(c.open_duration_multiplier == 1.0);
  CHECK(c.max_open_duration_ns == 300 * S);
  CHECK(c.half_open_probes == 3);
  CHECK(c.probe_timeout_ns == 1 * S);
  CHECK(c.capacity == 0);

  guards_circuit_breaker *b = NULL;
  c.window_size = 500;
  CHECK_RC(guards_circuit_breaker_new(&c, &b), GUARDS_RESULT_OK);
  guards_circuit_breaker_config got;
  CHECK_RC(guards_circuit_breaker_get_config(b, &got), GUARDS_RESULT_OK);
  CHECK(got.window_size == 500);
  CHECK(got.capacity == 1024);
  guards_circuit_breaker_free(b);

  /* The largest window: 65536 cells, built on any thread without a big stack. */
  c.window_size = 65536;
  CHECK_RC(guards_circuit_breaker_new(&c, &b), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_get_config(b, &got), GUARDS_RESULT_OK);
  CHECK(got.capacity == 65536);
  guards_circuit_breaker_free(b);
}

static void test_c6_opens_on_the_twentieth_failure(void) {
  guards_circuit_breaker *b = c6_breaker();
  for (uint64_t i = 0; i < 19; i++) {
    call(b, S + i * MS, GUARDS_OUTCOME_TIMEOUT);
    CHECK(state(b, S + i * MS) == GUARDS_BREAKER_STATE_CLOSED);
  }
  call(b, S + 19 * MS, GUARDS_OUTCOME_TIMEOUT);
  CHECK(state(b, S + 19 * MS) == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_free(b);

  /* 10 successes, then 10 failures: 10 / 20 = 50 % is reached on the 20th outcome. */
  b = c6_breaker();
  for (uint64_t i = 0; i < 10; i++) call(b, S + i * MS, GUARDS_OUTCOME_SUCCESS);
  for (uint64_t i = 10; i < 19; i++) call(b, S + i * MS, GUARDS_OUTCOME_CONNECTION_ERROR);
  CHECK(state(b, S + 18 * MS) == GUARDS_BREAKER_STATE_CLOSED);
  call(b, S + 19 * MS, GUARDS_OUTCOME_CONNECTION_ERROR);
  CHECK(state(b, S + 19 * MS) == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_free(b);

  /* 11 successes, 9 failures: 45 % stays closed; the 21st (a failure) pushes out a success. */
  b = c6_breaker();
  for (uint64_t i = 0; i < 11; i++) call(b, S + i * MS, GUARDS_OUTCOME_SUCCESS);
  for (uint64_t i = 11; i < 20; i++) call(b, S + i * MS, GUARDS_OUTCOME_OTHER_TRANSIENT);
  CHECK(state(b, S + 19 * MS) == GUARDS_BREAKER_STATE_CLOSED);
  call(b, S + 20 * MS, GUARDS_OUTCOME_OTHER_TRANSIENT);
  CHECK(state(b, S + 20 * MS) == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_free(b);
}

static void test_lifecycle(void) {
  /* Basketly's C6: open 5 s, then 3 probes of 100 ms; three successes close it. */
  guards_circuit_breaker *b = c6_breaker();
  guards_permit p;
  uint64_t t = 1 * S;
  for (int i = 0; i < 20; i++) {
    uint64_t at = t + (uint64_t)i * MS;
    CHECK_RC(guards_circuit_breaker_try_acquire(b, at, &p), GUARDS_RESULT_OK);
    CHECK(p.is_probe == 0);
    CHECK(p.acquired_at_ns == at);
    CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_TIMEOUT, at), GUARDS_RESULT_OK);
  }
  CHECK(state(b, t + 20 * MS) == GUARDS_BREAKER_STATE_OPEN);

  guards_permit untouched;
  memset(&untouched, 0x5A, sizeof untouched);
  guards_permit before = untouched;
  CHECK_RC(guards_circuit_breaker_try_acquire(b, t + 100 * MS, &untouched),
           GUARDS_RESULT_BREAKER_OPEN);
  CHECK(memcmp(&untouched, &before, sizeof before) == 0);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_BREAKER_OPEN);
  CHECK(r.has_retry_at == 1);
  CHECK(r.retry_at_ns == t + 19 * MS + 5 * S);
  CHECK(detail_has("open"));

  /* Open period over: three probes, the fourth refused. */
  uint64_t h = t + 19 * MS + 5 * S;
  CHECK(state(b, h) == GUARDS_BREAKER_STATE_HALF_OPEN);
  guards_permit probes[3];
  for (int i = 0; i < 3; i++) {
    CHECK_RC(guards_circuit_breaker_try_acquire(b, h, &probes[i]), GUARDS_RESULT_OK);
    CHECK(probes[i].is_probe == 1);
    CHECK(probes[i].probe_timeout_ns == 100 * MS);
  }
  CHECK_RC(guards_circuit_breaker_try_acquire(b, h, &p), GUARDS_RESULT_BREAKER_HALF_OPEN_FULL);
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.retry_at_ns == h + 100 * MS);
  for (int i = 0; i < 3; i++) {
    CHECK_RC(guards_circuit_breaker_report(b, probes[i], GUARDS_OUTCOME_SUCCESS, h + MS),
             GUARDS_RESULT_OK);
  }
  CHECK(state(b, h + MS) == GUARDS_BREAKER_STATE_CLOSED);

  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.failures == 20);
  CHECK(s.closed_to_open == 1 && s.open_to_half_open == 1 && s.half_open_to_closed == 1);
  CHECK(s.probes_admitted == 3 && s.probe_successes == 3);
  CHECK(s.rejected_open == 1 && s.rejected_half_open == 1);
  uint64_t out = 99;
  CHECK_RC(guards_circuit_breaker_outstanding(b, &out), GUARDS_RESULT_OK);
  CHECK(out == 0);

  /* A failed probe re-opens it. */
  for (int i = 0; i < 20; i++) call(b, h + 2 * MS, GUARDS_OUTCOME_OVERLOADED);
  uint64_t h2 = h + 2 * MS + 5 * S;
  CHECK_RC(guards_circuit_breaker_try_acquire(b, h2, &p), GUARDS_RESULT_OK);
  CHECK(p.is_probe == 1);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_TIMEOUT, h2 + 100 * MS),
           GUARDS_RESULT_OK);
  CHECK(state(b, h2 + 100 * MS) == GUARDS_BREAKER_STATE_OPEN);
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.half_open_to_open == 1 && s.probe_failures == 1);
  guards_circuit_breaker_free(b);
}

/* The call contract (docs/outcomes.md), column "breaker: call". */
static void test_outcomes(void) {
  guards_circuit_breaker *b = breaker_with(100, 1);
  static const struct {
    uint32_t outcome;
    int failure, success, ignored;
  } cases[] = {
      {GUARDS_OUTCOME_SUCCESS, 0, 1, 0},          {GUARDS_OUTCOME_TIMEOUT, 1, 0, 0},
      {GUARDS_OUTCOME_CONNECTION_ERROR, 1, 0, 0}, {GUARDS_OUTCOME_OTHER_TRANSIENT, 1, 0, 0},
      {GUARDS_OUTCOME_THROTTLED, 1, 0, 0},        {GUARDS_OUTCOME_OVERLOADED, 1, 0, 0},
      {GUARDS_OUTCOME_PERMANENT, 0, 1, 0},        {GUARDS_OUTCOME_REJECTED, 0, 0, 1},
      {GUARDS_OUTCOME_IGNORED, 0, 0, 1},          {GUARDS_OUTCOME_CANCELLED, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    guards_circuit_breaker_stats before, after;
    guards_permit p;
    CHECK_RC(guards_circuit_breaker_get_stats(b, &before), GUARDS_RESULT_OK);
    CHECK_RC(guards_circuit_breaker_try_acquire(b, S, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_circuit_breaker_report(b, p, cases[i].outcome, S), GUARDS_RESULT_OK);
    CHECK_RC(guards_circuit_breaker_get_stats(b, &after), GUARDS_RESULT_OK);
    CHECK(after.failures - before.failures == (uint64_t)cases[i].failure);
    CHECK(after.successes - before.successes == (uint64_t)cases[i].success);
    CHECK(after.ignored - before.ignored == (uint64_t)cases[i].ignored);
  }
  guards_circuit_breaker_free(b);

  /* Column "breaker: probe": a cancelled probe is a failure, the breaker re-opens. */
  b = breaker_with(1, 1);
  guards_permit p;
  call(b, S, GUARDS_OUTCOME_TIMEOUT);
  CHECK_RC(guards_circuit_breaker_try_acquire(b, 7 * S, &p), GUARDS_RESULT_OK);
  CHECK(p.is_probe == 1);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_CANCELLED, 7 * S),
           GUARDS_RESULT_OK);
  CHECK(state(b, 7 * S) == GUARDS_BREAKER_STATE_OPEN);
  /* A rejected probe gives its slot back: the next call is a probe again. */
  CHECK_RC(guards_circuit_breaker_try_acquire(b, 13 * S, &p), GUARDS_RESULT_OK);
  CHECK(p.is_probe == 1);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_REJECTED, 13 * S),
           GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_try_acquire(b, 13 * S, &p), GUARDS_RESULT_OK);
  CHECK(p.is_probe == 1);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_PERMANENT, 13 * S),
           GUARDS_RESULT_OK);
  CHECK(state(b, 13 * S) == GUARDS_BREAKER_STATE_CLOSED);
  guards_circuit_breaker_free(b);
}

static void test_slow_calls(void) {
  /* A call of at least slow_call_duration is slow; all slow opens the breaker. */
  guards_circuit_breaker_config c;
  guards_circuit_breaker_config_default(&c);
  c.window_size = 4;
  c.slow_call_duration_ns = 50 * MS;
  c.slow_call_rate_threshold = 1.0;
  guards_circuit_breaker *b = NULL;
  CHECK_RC(guards_circuit_breaker_new(&c, &b), GUARDS_RESULT_OK);
  for (uint64_t i = 0; i < 4; i++) {
    guards_permit p;
    uint64_t t = S + i * S;
    CHECK_RC(guards_circuit_breaker_try_acquire(b, t, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_SUCCESS, t + 50 * MS),
             GUARDS_RESULT_OK);
  }
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.slow_calls == 4 && s.successes == 4 && s.failures == 0);
  CHECK(state(b, 5 * S) == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_free(b);
}

static void test_time_window(void) {
  guards_circuit_breaker_config c;
  guards_circuit_breaker_config_default(&c);
  c.window_kind = GUARDS_WINDOW_KIND_TIME;
  c.window_duration_ns = 10 * S;
  c.window_buckets = 10;
  c.minimum_calls = 4;
  guards_circuit_breaker *b = NULL;
  CHECK_RC(guards_circuit_breaker_new(&c, &b), GUARDS_RESULT_OK);
  guards_circuit_breaker_config got;
  CHECK_RC(guards_circuit_breaker_get_config(b, &got), GUARDS_RESULT_OK);
  CHECK(got.window_kind == GUARDS_WINDOW_KIND_TIME && got.capacity == 128);
  for (int i = 0; i < 3; i++) call(b, S, GUARDS_OUTCOME_TIMEOUT);
  CHECK(state(b, S) == GUARDS_BREAKER_STATE_CLOSED); /* 3 < minimum_calls */
  call(b, S, GUARDS_OUTCOME_TIMEOUT);
  CHECK(state(b, S) == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_free(b);
}

static void test_permits_are_taken_once(void) {
  guards_circuit_breaker *a = breaker_with(100, 3);
  guards_circuit_breaker *other = breaker_with(100, 3);
  guards_bulkhead_config hc;
  guards_bulkhead_config_default(&hc);
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_new(&hc, &h), GUARDS_RESULT_OK);
  guards_permit p, q;
  CHECK_RC(guards_circuit_breaker_try_acquire(a, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &q), GUARDS_RESULT_OK);

  /* An invalid outcome leaves the permit outstanding. */
  CHECK_RC(guards_circuit_breaker_report(a, p, 10, S), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_circuit_breaker_report(a, p, 256, S), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_circuit_breaker_report(a, p, UINT32_MAX, S), GUARDS_RESULT_INVALID_ENUM);
  CHECK(detail_has("outcome"));

  CHECK_RC(guards_circuit_breaker_report(other, p, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_WRONG_GUARD);
  CHECK_RC(guards_circuit_breaker_report(a, q, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_WRONG_GUARD);
  CHECK_RC(guards_bulkhead_release(h, p), GUARDS_RESULT_PERMIT_WRONG_GUARD);
  guards_permit zero;
  memset(&zero, 0, sizeof zero);
  CHECK_RC(guards_circuit_breaker_report(a, zero, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_WRONG_GUARD);
  guards_permit forged = p;
  forged.generation += 1;
  CHECK_RC(guards_circuit_breaker_report(a, forged, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_UNKNOWN);
  forged = p;
  forged.slot = 0x7fffffff;
  CHECK_RC(guards_circuit_breaker_report(a, forged, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_UNKNOWN);
  forged.slot = UINT32_MAX;
  CHECK_RC(guards_circuit_breaker_report(a, forged, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_UNKNOWN);

  CHECK_RC(guards_circuit_breaker_report(a, p, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_report(a, p, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK_RC(guards_circuit_breaker_report(a, p, GUARDS_OUTCOME_TIMEOUT, S),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  /* The slot is reused; the old permit still cannot report for the new one. */
  guards_permit p2;
  CHECK_RC(guards_circuit_breaker_try_acquire(a, S, &p2), GUARDS_RESULT_OK);
  CHECK(p2.slot == p.slot && p2.generation != p.generation);
  CHECK_RC(guards_circuit_breaker_report(a, p, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK_RC(guards_circuit_breaker_report(a, p2, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);

  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(a, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 2 && s.failures == 0);
  CHECK_RC(guards_circuit_breaker_get_stats(other, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 0 && s.failures == 0);

  CHECK_RC(guards_bulkhead_release(h, q), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_release(h, q), GUARDS_RESULT_PERMIT_ALREADY_REPORTED);

  /* Permits still out when the handle is freed are freed with it (valgrind checks). */
  CHECK_RC(guards_circuit_breaker_try_acquire(a, S, &p), GUARDS_RESULT_OK);
  guards_circuit_breaker_free(a);
  guards_circuit_breaker_free(other);
  guards_bulkhead_free(h);
}

/* What each report did, the state word and the window, through Basketly's C6 life. */
static void test_effects_status_window(void) {
  guards_circuit_breaker *b = c6_breaker();
  guards_breaker_status st;
  CHECK_RC(guards_circuit_breaker_status(b, &st), GUARDS_RESULT_OK);
  CHECK(st.state == GUARDS_BREAKER_STATE_CLOSED && st.generation == 0 && st.half_open_at_ns == 0);
  guards_permit p;
  uint32_t e = 99;
  for (uint64_t i = 0; i < 19; i++) {
    CHECK_RC(guards_circuit_breaker_try_acquire(b, S + i * MS, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_circuit_breaker_report_effect(b, p, GUARDS_OUTCOME_TIMEOUT, S + i * MS, &e), GUARDS_RESULT_OK);
    CHECK(e == GUARDS_OUTCOME_EFFECT_COUNTED);
  }
  guards_window_counts w;
  CHECK_RC(guards_circuit_breaker_window_counts(b, S + 19 * MS, &w), GUARDS_RESULT_OK);
  CHECK(w.calls == 19 && w.failures == 19 && w.slow == 0);
  /* A report the call contract ignores, and a NULL effect that leaves the permit alone. */
  CHECK_RC(guards_circuit_breaker_try_acquire(b, S + 19 * MS, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_report_effect(b, p, GUARDS_OUTCOME_TIMEOUT, S + 19 * MS, NULL),
           GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_report_effect(b, p, 42, S + 19 * MS, &e), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_circuit_breaker_report_effect(b, p, GUARDS_OUTCOME_TIMEOUT, S + 19 * MS, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_OPENED);
  CHECK_RC(guards_circuit_breaker_report_effect(b, p, GUARDS_OUTCOME_TIMEOUT, S + 19 * MS, &e),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK_RC(guards_circuit_breaker_status(b, &st), GUARDS_RESULT_OK);
  uint64_t until = st.half_open_at_ns;
  CHECK(st.state == GUARDS_BREAKER_STATE_OPEN && st.generation == 1 && st.consecutive_opens == 1);
  CHECK(until > S + 19 * MS);
  CHECK_RC(guards_circuit_breaker_window_counts(b, S + 20 * MS, &w), GUARDS_RESULT_OK);
  CHECK(w.calls == 0 && w.failures == 0); /* 0 unless closed */
  /* Three probes close it. */
  guards_permit probes[3];
  for (int i = 0; i < 3; i++) {
    CHECK_RC(guards_circuit_breaker_try_acquire(b, until, &probes[i]), GUARDS_RESULT_OK);
    CHECK(probes[i].is_probe == 1);
  }
  CHECK_RC(guards_circuit_breaker_status(b, &st), GUARDS_RESULT_OK);
  CHECK(st.state == GUARDS_BREAKER_STATE_HALF_OPEN && st.generation == 2 && st.probes_issued == 3);
  CHECK_RC(guards_circuit_breaker_report_effect(b, probes[0], GUARDS_OUTCOME_SUCCESS, until, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_PROBE_PASSED);
  CHECK_RC(guards_circuit_breaker_report_effect(b, probes[1], GUARDS_OUTCOME_IGNORED, until, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_IGNORED); /* the probe's slot is given back */
  CHECK_RC(guards_circuit_breaker_report_effect(b, probes[2], GUARDS_OUTCOME_SUCCESS, until, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_PROBE_PASSED);
  CHECK_RC(guards_circuit_breaker_status(b, &st), GUARDS_RESULT_OK);
  CHECK(st.probes_passed == 2 && st.state == GUARDS_BREAKER_STATE_HALF_OPEN);
  /* The slot given back lets one more probe through; a cancelled probe is a failure. */
  CHECK_RC(guards_circuit_breaker_try_acquire(b, until + MS, &p), GUARDS_RESULT_OK);
  CHECK(p.is_probe == 1);
  CHECK_RC(guards_circuit_breaker_report_effect(b, p, GUARDS_OUTCOME_CANCELLED, until + MS, &e), GUARDS_RESULT_OK);
  CHECK(e == GUARDS_OUTCOME_EFFECT_REOPENED);
  CHECK_RC(guards_circuit_breaker_status(b, &st), GUARDS_RESULT_OK);
  CHECK(st.state == GUARDS_BREAKER_STATE_OPEN && st.generation == 3 && st.consecutive_opens == 2);
  CHECK_RC(guards_circuit_breaker_status(NULL, &st), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_status(b, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_window_counts(NULL, 0, &w), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_report_effect(NULL, p, GUARDS_OUTCOME_SUCCESS, 0, &e), GUARDS_RESULT_NULL_ARGUMENT);
  guards_circuit_breaker_free(b);
}

/* What a `guards_circuit_breaker_call` callback saw and returns. */
struct breaker_call_ctx {
  guards_circuit_breaker *b;
  uint32_t outcome;   /* what the callback returns */
  uint64_t took_ns;   /* how long the call "took": ended_ns = started_ns + took_ns */
  int runs;
  guards_call seen;   /* the last call it was given */
  uint64_t in_flight; /* permits of `b` out while it ran (0: the call parks none) */
};

static uint32_t breaker_call_fn(void *ctx, guards_call *call) {
  struct breaker_call_ctx *c = ctx;
  c->runs++;
  c->seen = *call;
  CHECK(call->ended_ns == call->started_ns);
  call->ended_ns = call->started_ns + c->took_ns;
  CHECK_RC(guards_circuit_breaker_outstanding(c->b, &c->in_flight), GUARDS_RESULT_OK);
  return c->outcome;
}

/* guards_circuit_breaker_call: admit, run, report what the callback returned; a refusal runs
 * nothing. */
static void test_call(void) {
  guards_circuit_breaker *b = breaker_with(4, 1);
  struct breaker_call_ctx c = {b, GUARDS_OUTCOME_SUCCESS, 0, 0, {0, 0, 0, 0, 0}, 99};
  CHECK_RC(guards_circuit_breaker_call(b, S, breaker_call_fn, &c), GUARDS_RESULT_OK);
  CHECK(c.runs == 1 && c.seen.started_ns == S && c.seen.is_probe == 0);
  CHECK(c.seen.probe_timeout_ns == 0 && c.seen.reserved == 0);
  CHECK_EQ_U64(c.in_flight, 0);
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 1 && s.failures == 0 && s.slow_calls == 0);

  /* The end time the callback sets is the report's: a 60 s call is slow. */
  c.took_ns = 60 * S;
  CHECK_RC(guards_circuit_breaker_call(b, 2 * S, breaker_call_fn, &c), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 2 && s.slow_calls == 1);
  c.took_ns = 0;

  /* An outcome that is not a guards_outcome: reported as ignored, INVALID_ENUM returned. */
  c.outcome = 10;
  CHECK_RC(guards_circuit_breaker_call(b, 3 * S, breaker_call_fn, &c), GUARDS_RESULT_INVALID_ENUM);
  CHECK(detail_has("outcome"));
  CHECK(c.runs == 3);
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == 2 && s.failures == 0 && s.ignored == 1);
  uint64_t out = 99;
  CHECK_RC(guards_circuit_breaker_outstanding(b, &out), GUARDS_RESULT_OK);
  CHECK_EQ_U64(out, 0);

  /* Two failures make the window of four 50 % failed and open the breaker: the next call is
   * refused and its callback never runs. */
  c.outcome = GUARDS_OUTCOME_TIMEOUT;
  CHECK_RC(guards_circuit_breaker_call(b, 4 * S, breaker_call_fn, &c), GUARDS_RESULT_OK);
  CHECK(state(b, 4 * S) == GUARDS_BREAKER_STATE_CLOSED);
  CHECK_RC(guards_circuit_breaker_call(b, 4 * S, breaker_call_fn, &c), GUARDS_RESULT_OK);
  CHECK(state(b, 4 * S) == GUARDS_BREAKER_STATE_OPEN);
  int runs = c.runs;
  CHECK_RC(guards_circuit_breaker_call(b, 4 * S, breaker_call_fn, &c), GUARDS_RESULT_BREAKER_OPEN);
  CHECK(c.runs == runs);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_BREAKER_OPEN && r.has_retry_at == 1);

  /* Past the open period the call is a probe and is told its timeout; its success closes. */
  c.outcome = GUARDS_OUTCOME_SUCCESS;
  CHECK_RC(guards_circuit_breaker_call(b, 10 * S, breaker_call_fn, &c), GUARDS_RESULT_OK);
  CHECK(c.runs == runs + 1 && c.seen.is_probe == 1 && c.seen.probe_timeout_ns == 100 * MS);
  CHECK(state(b, 10 * S) == GUARDS_BREAKER_STATE_CLOSED);

  /* Bad arguments are refused before anything is admitted. */
  CHECK_RC(guards_circuit_breaker_call(b, 11 * S, NULL, &c), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("fn"));
  CHECK_RC(guards_circuit_breaker_call(NULL, 11 * S, breaker_call_fn, &c),
           GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("breaker"));
  CHECK(c.runs == runs + 1);
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.probes_admitted == 1 && s.rejected_open == 1);
  guards_circuit_breaker_free(b);
}

void circuit_breaker_tests(void) {
  run("breaker_effects_status_window", test_effects_status_window);
  run("breaker_defaults", test_defaults);
  run("breaker_c6_opens_on_the_twentieth_failure", test_c6_opens_on_the_twentieth_failure);
  run("breaker_lifecycle", test_lifecycle);
  run("breaker_outcomes", test_outcomes);
  run("breaker_slow_calls", test_slow_calls);
  run("breaker_time_window", test_time_window);
  run("breaker_permits_are_taken_once", test_permits_are_taken_once);
  run("breaker_call", test_call);
}
