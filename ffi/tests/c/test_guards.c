/*
 * The C suite of libguards: the C API as a C program uses it, built with
 * -std=c11 -Wall -Wextra -Werror -pedantic and run plain, under valgrind and under
 * ASan/UBSan (make test-c). Prints "N passed, N failed" and exits non-zero on a failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "guards.h"

static atomic_int current_failed;
static int passed, failed;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
      atomic_store(&current_failed, 1);                                            \
    }                                                                              \
  } while (0)

#define CHECK_RC(expr, want)                                                       \
  do {                                                                             \
    guards_result rc_ = (expr);                                                    \
    if (rc_ != (guards_result)(want)) {                                            \
      fprintf(stderr, "%s:%d: %s returned %u (%s), expected %u\n", __FILE__,       \
              __LINE__, #expr, (unsigned)rc_, guards_result_message(rc_),          \
              (unsigned)(want));                                                   \
      atomic_store(&current_failed, 1);                                            \
    }                                                                              \
  } while (0)

static void run(const char *name, void (*fn)(void)) {
  atomic_store(&current_failed, 0);
  fn();
  if (atomic_load(&current_failed)) {
    fprintf(stderr, "FAILED %s\n", name);
    failed++;
  } else {
    printf("ok %s\n", name);
    passed++;
  }
}

static const uint64_t MS = 1000000ull;
static const uint64_t S = 1000000000ull;

/* The detail of this thread's last failure contains `needle`. */
static int detail_has(const char *needle) {
  char buf[512];
  size_t n = guards_last_error_detail(buf, sizeof buf);
  return n > 0 && strstr(buf, needle) != NULL;
}

static guards_circuit_breaker *breaker_with(uint64_t window, uint64_t probes) {
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker *b = NULL;
  CHECK_RC(guards_circuit_breaker_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.window_size = window;
  cfg.half_open_probes = probes;
  cfg.probe_timeout_ns = 100 * MS;
  CHECK_RC(guards_circuit_breaker_new(&cfg, &b), GUARDS_RESULT_OK);
  CHECK(b != NULL);
  return b;
}

static guards_bulkhead *bulkhead_with(uint64_t cap) {
  guards_bulkhead_config cfg;
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.max_concurrent = cap;
  CHECK_RC(guards_bulkhead_new(&cfg, &h), GUARDS_RESULT_OK);
  CHECK(h != NULL);
  return h;
}

static void test_messages_and_version(void) {
  CHECK(strcmp(guards_result_message(GUARDS_RESULT_OK), "ok") == 0);
  CHECK(strstr(guards_result_message(GUARDS_RESULT_BREAKER_OPEN), "open") != NULL);
  CHECK(strcmp(guards_result_message(6), "unknown result code") == 0);
  CHECK(strcmp(guards_result_message(UINT32_MAX), "unknown result code") == 0);
  CHECK(strlen(guards_version()) > 0);
}

static void test_clock_is_clock_monotonic(void) {
  for (int i = 0; i < 1000; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t g = guards_now_ns();
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t lo = (uint64_t)a.tv_sec * S + (uint64_t)a.tv_nsec;
    uint64_t hi = (uint64_t)b.tv_sec * S + (uint64_t)b.tv_nsec;
    CHECK(lo <= g && g <= hi);
  }
}

static void test_breaker_defaults(void) {
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
}

static void test_breaker_lifecycle(void) {
  /* seed C6: last 20 calls, 50 %, open 5 s, 3 probes with 100 ms. */
  guards_circuit_breaker *b = breaker_with(20, 3);
  guards_permit p;
  uint64_t t = 1 * S;
  for (int i = 0; i < 20; i++) {
    uint64_t at = t + (uint64_t)i * MS;
    CHECK_RC(guards_circuit_breaker_try_acquire(b, at, &p), GUARDS_RESULT_OK);
    CHECK(p.is_probe == 0);
    CHECK(p.acquired_at_ns == at);
    CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_TIMEOUT, at), GUARDS_RESULT_OK);
  }
  guards_breaker_state st;
  CHECK_RC(guards_circuit_breaker_state(b, t + 20 * MS, &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_OPEN);

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
  CHECK_RC(guards_circuit_breaker_state(b, h + MS, &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_CLOSED);

  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.failures == 20);
  CHECK(s.closed_to_open == 1 && s.open_to_half_open == 1 && s.half_open_to_closed == 1);
  CHECK(s.probes_admitted == 3 && s.probe_successes == 3);
  CHECK(s.rejected_open == 1 && s.rejected_half_open == 1);
  uint64_t out = 99;
  CHECK_RC(guards_circuit_breaker_outstanding(b, &out), GUARDS_RESULT_OK);
  CHECK(out == 0);
  guards_circuit_breaker_free(b);
}

static void test_outcome_mapping(void) {
  guards_circuit_breaker *b = breaker_with(100, 1);
  static const struct {
    uint32_t outcome;
    int failure, success, ignored;
  } cases[] = {
      {GUARDS_OUTCOME_SUCCESS, 0, 1, 0},         {GUARDS_OUTCOME_TIMEOUT, 1, 0, 0},
      {GUARDS_OUTCOME_CONNECTION_ERROR, 1, 0, 0}, {GUARDS_OUTCOME_OTHER_TRANSIENT, 1, 0, 0},
      {GUARDS_OUTCOME_THROTTLED, 1, 0, 0},       {GUARDS_OUTCOME_OVERLOADED, 1, 0, 0},
      {GUARDS_OUTCOME_PERMANENT, 1, 0, 0},       {GUARDS_OUTCOME_REJECTED, 0, 0, 1},
      {GUARDS_OUTCOME_IGNORED, 0, 0, 1},         {GUARDS_OUTCOME_CANCELLED, 0, 0, 1},
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

  /* A cancelled probe is a failure: the breaker re-opens. */
  b = breaker_with(1, 1);
  guards_permit p;
  CHECK_RC(guards_circuit_breaker_try_acquire(b, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_TIMEOUT, S), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_try_acquire(b, 7 * S, &p), GUARDS_RESULT_OK);
  CHECK(p.is_probe == 1);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_CANCELLED, 7 * S),
           GUARDS_RESULT_OK);
  guards_breaker_state st;
  CHECK_RC(guards_circuit_breaker_state(b, 7 * S, &st), GUARDS_RESULT_OK);
  CHECK(st == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_free(b);
}

static void test_permit_reported_twice_or_elsewhere(void) {
  guards_circuit_breaker *a = breaker_with(100, 3);
  guards_circuit_breaker *other = breaker_with(100, 3);
  guards_bulkhead *h = bulkhead_with(4);
  guards_permit p, q;
  CHECK_RC(guards_circuit_breaker_try_acquire(a, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &q), GUARDS_RESULT_OK);

  /* An invalid outcome leaves the permit outstanding. */
  CHECK_RC(guards_circuit_breaker_report(a, p, 10, S), GUARDS_RESULT_INVALID_ENUM);
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
  guards_bulkhead_stats bs;
  CHECK_RC(guards_bulkhead_get_stats(h, &bs), GUARDS_RESULT_OK);
  CHECK(bs.acquired == 1 && bs.released == 1 && bs.in_flight == 0);

  guards_circuit_breaker_free(a);
  guards_circuit_breaker_free(other);
  guards_bulkhead_free(h);
}

static void test_null_arguments(void) {
  guards_circuit_breaker *b = breaker_with(100, 3);
  guards_bulkhead *h = bulkhead_with(1);
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker_config_default(&cfg);
  guards_bulkhead_config hcfg;
  guards_bulkhead_config_default(&hcfg);
  guards_permit p;
  memset(&p, 0, sizeof p);

  CHECK_RC(guards_circuit_breaker_config_default(NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_new(NULL, &b), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("config"));
  CHECK_RC(guards_circuit_breaker_new(&cfg, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("out"));
  CHECK_RC(guards_circuit_breaker_try_acquire(NULL, S, &p), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(detail_has("breaker"));
  CHECK_RC(guards_circuit_breaker_try_acquire(b, S, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_report(NULL, p, GUARDS_OUTCOME_SUCCESS, S),
           GUARDS_RESULT_NULL_ARGUMENT);
  guards_breaker_state st;
  CHECK_RC(guards_circuit_breaker_state(NULL, S, &st), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_state(b, S, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(NULL, &s), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_get_stats(b, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_get_config(NULL, &cfg), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_circuit_breaker_outstanding(b, NULL), GUARDS_RESULT_NULL_ARGUMENT);

  CHECK_RC(guards_bulkhead_config_default(NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_new(NULL, &h), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_new(&hcfg, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_try_acquire(NULL, &p), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_try_acquire(h, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_release(NULL, p), GUARDS_RESULT_NULL_ARGUMENT);
  guards_bulkhead_stats bs;
  CHECK_RC(guards_bulkhead_get_stats(NULL, &bs), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_get_stats(h, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_last_rejection(NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(guards_last_error_detail(NULL, 0) > 0);

  /* Freeing NULL is a no-op; the handles above still work. */
  guards_circuit_breaker_free(NULL);
  guards_bulkhead_free(NULL);
  CHECK_RC(guards_circuit_breaker_try_acquire(b, S, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
  guards_circuit_breaker_free(b);
  guards_bulkhead_free(h);
}

/* `cfg` is refused with `want`, the detail names `name`, and `out` is left NULL. */
static void bad_breaker(guards_circuit_breaker_config cfg, guards_result want, const char *name) {
  guards_circuit_breaker *out = NULL;
  CHECK_RC(guards_circuit_breaker_new(&cfg, &out), want);
  CHECK(out == NULL);
  CHECK(guards_last_error_code() == want);
  if (!detail_has(name)) {
    char buf[256];
    guards_last_error_detail(buf, sizeof buf);
    fprintf(stderr, "detail \"%s\" does not name %s\n", buf, name);
    atomic_store(&current_failed, 1);
  }
}

static void test_bad_breaker_config(void) {
  guards_circuit_breaker_config d, c;
  guards_circuit_breaker_config_default(&d);
  c = d; c.failure_rate_threshold = NAN;
  bad_breaker(c, GUARDS_RESULT_CONFIG_NOT_FINITE, "failure_rate_threshold");
  c = d; c.slow_call_rate_threshold = INFINITY;
  bad_breaker(c, GUARDS_RESULT_CONFIG_NOT_FINITE, "slow_call_rate_threshold");
  c = d; c.open_duration_multiplier = -INFINITY;
  bad_breaker(c, GUARDS_RESULT_CONFIG_NOT_FINITE, "open_duration_multiplier");
  c = d; c.open_duration_multiplier = -1.0;
  bad_breaker(c, GUARDS_RESULT_CONFIG_NEGATIVE, "open_duration_multiplier");
  c = d; c.failure_rate_threshold = -0.5;
  bad_breaker(c, GUARDS_RESULT_CONFIG_NEGATIVE, "failure_rate_threshold");
  c = d; c.failure_rate_threshold = 0.0;
  bad_breaker(c, GUARDS_RESULT_CONFIG_ZERO, "failure_rate_threshold");
  c = d; c.window_size = 0;
  bad_breaker(c, GUARDS_RESULT_CONFIG_ZERO, "window_size");
  c = d; c.window_kind = GUARDS_WINDOW_KIND_TIME; c.window_buckets = 0;
  bad_breaker(c, GUARDS_RESULT_CONFIG_ZERO, "window_buckets");
  c = d; c.window_kind = GUARDS_WINDOW_KIND_TIME; c.window_duration_ns = 0;
  bad_breaker(c, GUARDS_RESULT_CONFIG_ZERO, "window_duration");
  c = d; c.window_size = UINT64_MAX;
  bad_breaker(c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "window_size");
  c = d; c.half_open_probes = 1u << 31;
  bad_breaker(c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "half_open_probes");
  c = d; c.failure_rate_threshold = 1e300;
  bad_breaker(c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "failure_rate_threshold");
  c = d; c.capacity = 65537;
  bad_breaker(c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "capacity");
  c = d; c.open_duration_ns = 400 * S;
  bad_breaker(c, GUARDS_RESULT_CONFIG_INCONSISTENT, "max_open_duration");
  c = d; c.window_kind = 2;
  bad_breaker(c, GUARDS_RESULT_INVALID_ENUM, "window_kind");
  c = d; c.window_kind = UINT32_MAX;
  bad_breaker(c, GUARDS_RESULT_INVALID_ENUM, "window_kind");
  c = d; c.probe_timeout_ns = 0;
  bad_breaker(c, GUARDS_RESULT_CONFIG_ZERO, "probe_timeout");

  guards_bulkhead_config h;
  guards_bulkhead *out = NULL;
  h.max_concurrent = 0;
  CHECK_RC(guards_bulkhead_new(&h, &out), GUARDS_RESULT_CONFIG_ZERO);
  CHECK(detail_has("max_concurrent"));
  h.max_concurrent = 1ull << 33;
  CHECK_RC(guards_bulkhead_new(&h, &out), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(out == NULL);
}

static void test_detail_truncation(void) {
  guards_bulkhead_config h = {0};
  guards_bulkhead *out = NULL;
  CHECK_RC(guards_bulkhead_new(&h, &out), GUARDS_RESULT_CONFIG_ZERO);
  char full[256], small[8];
  size_t n = guards_last_error_detail(full, sizeof full);
  CHECK(n == strlen(full));
  memset(small, 'x', sizeof small);
  CHECK(guards_last_error_detail(small, sizeof small) == n);
  CHECK(small[7] == '\0' && strlen(small) == 7 && strncmp(small, full, 7) == 0);
}

static void test_bulkhead(void) {
  guards_bulkhead *h = bulkhead_with(2);
  guards_permit a, b, c;
  CHECK_RC(guards_bulkhead_try_acquire(h, &a), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &b), GUARDS_RESULT_OK);
  memset(&c, 0x77, sizeof c);
  guards_permit before = c;
  CHECK_RC(guards_bulkhead_try_acquire(h, &c), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK(memcmp(&c, &before, sizeof c) == 0);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_BULKHEAD_FULL && r.in_flight == 2 && r.max_concurrent == 2);
  CHECK(r.has_retry_at == 0);
  CHECK_RC(guards_bulkhead_release(h, a), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_try_acquire(h, &c), GUARDS_RESULT_OK);
  guards_bulkhead_stats s;
  CHECK_RC(guards_bulkhead_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(s.acquired == 3 && s.rejected == 1 && s.in_flight == 2 && s.released == 1);
  CHECK_RC(guards_bulkhead_release(h, b), GUARDS_RESULT_OK);
  CHECK_RC(guards_bulkhead_release(h, c), GUARDS_RESULT_OK);
  /* A permit still held when the handle is freed is freed with it. */
  CHECK_RC(guards_bulkhead_try_acquire(h, &a), GUARDS_RESULT_OK);
  guards_bulkhead_free(h);
}

/* ---- threads sharing one guard ---- */

enum { THREADS = 4, ROUNDS = 5000 };

struct bulkhead_run {
  guards_bulkhead *h;
  atomic_long holders, max_holders, granted, refused, double_ok;
};

static void *bulkhead_worker(void *arg) {
  struct bulkhead_run *run = arg;
  for (int i = 0; i < ROUNDS; i++) {
    guards_permit p;
    guards_result rc = guards_bulkhead_try_acquire(run->h, &p);
    if (rc == GUARDS_RESULT_OK) {
      long now = atomic_fetch_add(&run->holders, 1) + 1;
      long seen = atomic_load(&run->max_holders);
      while (now > seen && !atomic_compare_exchange_weak(&run->max_holders, &seen, now)) {
      }
      atomic_fetch_add(&run->granted, 1);
      atomic_fetch_sub(&run->holders, 1);
      CHECK(guards_bulkhead_release(run->h, p) == GUARDS_RESULT_OK);
      if (i % 7 == 0 && guards_bulkhead_release(run->h, p) == GUARDS_RESULT_OK) {
        atomic_fetch_add(&run->double_ok, 1);
      }
    } else {
      CHECK(rc == GUARDS_RESULT_BULKHEAD_FULL);
      atomic_fetch_add(&run->refused, 1);
    }
  }
  return NULL;
}

static void test_threads_share_a_bulkhead(void) {
  struct bulkhead_run run = {.h = bulkhead_with(3)};
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, bulkhead_worker, &run);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  guards_bulkhead_stats s;
  CHECK_RC(guards_bulkhead_get_stats(run.h, &s), GUARDS_RESULT_OK);
  CHECK(atomic_load(&run.max_holders) <= 3);
  CHECK(atomic_load(&run.double_ok) == 0);
  CHECK(s.in_flight == 0);
  CHECK(s.acquired == (uint64_t)atomic_load(&run.granted));
  CHECK(s.rejected == (uint64_t)atomic_load(&run.refused));
  CHECK(s.acquired + s.rejected == (uint64_t)THREADS * ROUNDS);
  CHECK(s.released == s.acquired);
  guards_bulkhead_free(run.h);
}

struct breaker_run {
  guards_circuit_breaker *b;
  atomic_long reported, double_ok;
};

static void *breaker_worker(void *arg) {
  struct breaker_run *run = arg;
  guards_permit held[8];
  int n = 0;
  for (int i = 0; i < ROUNDS; i++) {
    uint64_t now = guards_now_ns();
    guards_permit p;
    guards_result rc = guards_circuit_breaker_try_acquire(run->b, now, &p);
    if (rc != GUARDS_RESULT_OK) {
      CHECK(rc == GUARDS_RESULT_BREAKER_OPEN || rc == GUARDS_RESULT_BREAKER_HALF_OPEN_FULL);
      continue;
    }
    held[n++] = p;
    if (n == 8 || i == ROUNDS - 1) {
      for (int k = 0; k < n; k++) {
        /* Recorded per thread: failure, success, success, ... (the fourth is ignored). */
        uint32_t outcome = (k % 4 == 0)   ? GUARDS_OUTCOME_TIMEOUT
                           : (k % 4 == 3) ? GUARDS_OUTCOME_IGNORED
                                          : GUARDS_OUTCOME_SUCCESS;
        CHECK(guards_circuit_breaker_report(run->b, held[k], outcome, guards_now_ns()) ==
              GUARDS_RESULT_OK);
        atomic_fetch_add(&run->reported, 1);
        if (guards_circuit_breaker_report(run->b, held[k], outcome, guards_now_ns()) ==
            GUARDS_RESULT_OK) {
          atomic_fetch_add(&run->double_ok, 1);
        }
      }
      n = 0;
    }
  }
  return NULL;
}

static void test_threads_share_a_breaker(void) {
  /* Each thread records failure, success, success, ...: any 30 consecutive outcomes
   * hold at most 10 + 4 failures, below the 50 % threshold, so it never opens. */
  struct breaker_run run = {.b = breaker_with(30, 3)};
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, breaker_worker, &run);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(run.b, &s), GUARDS_RESULT_OK);
  uint64_t outstanding = 1;
  CHECK_RC(guards_circuit_breaker_outstanding(run.b, &outstanding), GUARDS_RESULT_OK);
  CHECK(outstanding == 0);
  CHECK(atomic_load(&run.double_ok) == 0);
  CHECK(s.successes + s.failures + s.ignored + s.discarded + s.probe_successes +
            s.probe_failures ==
        (uint64_t)atomic_load(&run.reported));
  CHECK(s.closed_to_open == 0);
  guards_circuit_breaker_free(run.b);
}

int main(void) {
  run("messages_and_version", test_messages_and_version);
  run("clock_is_clock_monotonic", test_clock_is_clock_monotonic);
  run("breaker_defaults", test_breaker_defaults);
  run("breaker_lifecycle", test_breaker_lifecycle);
  run("outcome_mapping", test_outcome_mapping);
  run("permit_reported_twice_or_elsewhere", test_permit_reported_twice_or_elsewhere);
  run("null_arguments", test_null_arguments);
  run("bad_breaker_config", test_bad_breaker_config);
  run("detail_truncation", test_detail_truncation);
  run("bulkhead", test_bulkhead);
  run("threads_share_a_bulkhead", test_threads_share_a_bulkhead);
  run("threads_share_a_breaker", test_threads_share_a_breaker);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
