/*
 * One guarded no-op from C on a guard in a shared region beside the same on a private
 * guard, in one run (make bench-region), for every kind with C verbs: the bulkhead, the
 * circuit breaker, keyed breakers, the limiter and admission (acquire + report, the
 * region's permits recorded with their owner), the retry budget (deposit + withdraw +
 * report of the receipt), the adaptive throttle (try_acquire + report) and the latency
 * tracker (one record). Rounds alternate between the private and the shared guard so that
 * both see the same machine; the best round of each is reported in ns per operation, and
 * the ratio region / private; one thread, then two threads on one guard. A benchmark, not
 * a test: it asserts nothing about speed.
 *
 * usage: shared_bench [operations per round] [rounds] [kind]   (kind: one row's name, e.g.
 * bulkhead; default every kind)
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guards.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile guards_result sink;

/* ---- private guards: each loop is one kind's operation, n times ---- */

static void bulkhead_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_bulkhead_try_acquire(g, &p);
    sink = guards_bulkhead_release(g, p);
  }
}

static void breaker_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_circuit_breaker_try_acquire(g, 1000, &p);
    sink = guards_circuit_breaker_report(g, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

static void keyed_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_keyed_breakers_try_acquire(g, 42, 1000, &p);
    sink = guards_keyed_breakers_report(g, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

static void limiter_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_limiter_try_acquire(g, 1000, 1, &p);
    sink = guards_limiter_report(g, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

static void admission_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_admission_try_acquire(g, 1000, 1, &p);
    sink = guards_admission_report(g, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

static void budget_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_retry_receipt r;
    sink = guards_retry_budget_deposit(g, 1000);
    if (guards_retry_budget_withdraw(g, 1000, GUARDS_RETRY_CAUSE_TRANSIENT, &r) == GUARDS_RESULT_OK)
      sink = guards_retry_budget_report(g, 1000, GUARDS_OUTCOME_SUCCESS, &r);
  }
}

static void throttle_private(void *g, long n) {
  for (long i = 0; i < n; i++) {
    sink = guards_adaptive_throttle_try_acquire(g, 1000);
    sink = guards_adaptive_throttle_report(g, 1000, GUARDS_OUTCOME_SUCCESS);
  }
}

static void tracker_private(void *g, long n) {
  for (long i = 0; i < n; i++) sink = guards_latency_tracker_record(g, 1000, 5000000);
}

/* ---- the same on region guards ---- */

static void permits_region(void *g, long n, uint64_t key) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_region_try_acquire(g, key, 1000, &p);
    sink = guards_region_report(g, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

/* One loop per kind under its own name, so that a profile tells the guards apart. */
static void bulkhead_region(void *g, long n) { permits_region(g, n, 0); }
static void breaker_region(void *g, long n) { permits_region(g, n, 0); }
static void keyed_region(void *g, long n) { permits_region(g, n, 42); }
static void limiter_region(void *g, long n) { permits_region(g, n, 1); }
static void admission_region(void *g, long n) { permits_region(g, n, 1); }

static void budget_region(void *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_retry_receipt r;
    sink = guards_region_retry_budget_deposit(g, 1000);
    if (guards_region_retry_budget_withdraw(g, 1000, GUARDS_RETRY_CAUSE_TRANSIENT, &r) == GUARDS_RESULT_OK)
      sink = guards_region_retry_budget_report(g, 1000, GUARDS_OUTCOME_SUCCESS, &r);
  }
}

static void throttle_region(void *g, long n) {
  for (long i = 0; i < n; i++) {
    sink = guards_region_adaptive_throttle_try_acquire(g, 1000);
    sink = guards_region_adaptive_throttle_report(g, 1000, GUARDS_OUTCOME_SUCCESS);
  }
}

static void tracker_region(void *g, long n) {
  for (long i = 0; i < n; i++) sink = guards_region_latency_tracker_record(g, 1000, 5000000);
}

/* ---- two threads on one guard: each runs `ops` operations; the time is the slower one's */

struct job {
  void (*loop)(void *, long);
  void *guard;
  long ops;
};

static void *work(void *arg) {
  struct job *j = arg;
  j->loop(j->guard, j->ops);
  return NULL;
}

static void two_threads(void (*loop)(void *, long), void *guard, long ops) {
  struct job j = {loop, guard, ops};
  pthread_t t;
  pthread_create(&t, NULL, work, &j);
  work(&j);
  pthread_join(t, NULL);
}

struct bench_case {
  const char *name;
  void (*private_loop)(void *, long);
  void (*region_loop)(void *, long);
  void *private_guard;
  void *region_guard;
  double best[4]; /* private 1t, region 1t, private 2t, region 2t */
};

static void round_of(double *best, long ops, void (*loop)(void *, long), void *g, int threads) {
  uint64_t t0 = now_ns();
  if (threads == 1) loop(g, ops);
  else two_threads(loop, g, ops);
  double ns = (double)(now_ns() - t0) / (double)ops;
  if (ns < *best) *best = ns;
}

static int failed(const char *what) {
  char why[256];
  guards_last_error_detail(why, sizeof why);
  fprintf(stderr, "setup failed: %s: %s\n", what, why);
  return 1;
}

int main(int argc, char **argv) {
  long ops = argc > 1 ? atol(argv[1]) : 1000000;
  int rounds = argc > 2 ? atoi(argv[2]) : 15;
  const char *only = argc > 3 ? argv[3] : NULL;
  if (ops <= 0 || rounds <= 0) {
    fprintf(stderr, "usage: %s [operations per round] [rounds] [kind]\n", argv[0]);
    return 2;
  }
  char name[64];
  snprintf(name, sizeof name, "guards-c-bench-%d", (int)getpid());
  guards_region *r = NULL;
  if (guards_region_open(name, NULL, &r)) return failed("region");

  guards_bulkhead_config bc;
  guards_bulkhead_config_default(&bc);
  bc.max_concurrent = 64;
  guards_circuit_breaker_config cc;
  guards_circuit_breaker_config_default(&cc);
  guards_keyed_breakers_config kc;
  guards_keyed_breakers_config_default(&kc);
  guards_limiter_config lc;
  guards_limiter_config_default(&lc);
  lc.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  lc.limit.fixed = 64;
  guards_admission_config ac;
  guards_admission_config_default(&ac);
  guards_retry_budget_config rc;
  guards_retry_budget_config_default(&rc);
  rc.token_bucket.ratio = 1.0; /* every first attempt pays for one retry */
  guards_adaptive_throttle_config tc;
  guards_adaptive_throttle_config_default(&tc);
  guards_latency_tracker_config lt;
  guards_latency_tracker_config_default(&lt);

  struct bench_case cases[] = {
      {"bulkhead", bulkhead_private, bulkhead_region, NULL, NULL, {0}},
      {"breaker", breaker_private, breaker_region, NULL, NULL, {0}},
      {"keyed breakers", keyed_private, keyed_region, NULL, NULL, {0}},
      {"limiter", limiter_private, limiter_region, NULL, NULL, {0}},
      {"admission", admission_private, admission_region, NULL, NULL, {0}},
      {"retry budget", budget_private, budget_region, NULL, NULL, {0}},
      {"adaptive throttle", throttle_private, throttle_region, NULL, NULL, {0}},
      {"latency tracker", tracker_private, tracker_region, NULL, NULL, {0}},
  };
  enum { N = sizeof cases / sizeof cases[0] };
  guards_bulkhead *hb = NULL;
  guards_circuit_breaker *hc = NULL;
  guards_keyed_breakers *hk = NULL;
  guards_limiter *hl = NULL;
  guards_admission *ha = NULL;
  guards_retry_budget *hr = NULL;
  guards_adaptive_throttle *ht = NULL;
  guards_latency_tracker *htr = NULL;
  guards_region_guard *g[N] = {NULL};
  if (guards_bulkhead_new(&bc, &hb) || guards_region_bulkhead(r, "b", &bc, &g[0])) return failed("bulkhead");
  if (guards_circuit_breaker_new(&cc, &hc) || guards_region_circuit_breaker(r, "c", &cc, &g[1]))
    return failed("breaker");
  if (guards_keyed_breakers_new(&kc, &hk) || guards_region_keyed_breakers(r, "k", &kc, &g[2]))
    return failed("keyed breakers");
  if (guards_limiter_new(&lc, &hl) || guards_region_limiter(r, "l", &lc, &g[3])) return failed("limiter");
  if (guards_admission_new(&ac, &ha) || guards_region_admission(r, "a", &ac, &g[4]))
    return failed("admission");
  if (guards_retry_budget_new(&rc, &hr) || guards_region_retry_budget(r, "r", &rc, &g[5]))
    return failed("retry budget");
  if (guards_adaptive_throttle_new(&tc, &ht) || guards_region_adaptive_throttle(r, "t", &tc, &g[6]))
    return failed("adaptive throttle");
  if (guards_latency_tracker_new(&lt, &htr) || guards_region_latency_tracker(r, "lt", &lt, &g[7]))
    return failed("latency tracker");
  void *priv[N] = {hb, hc, hk, hl, ha, hr, ht, htr};
  int chosen = 0;
  for (int i = 0; i < N; i++) chosen += !only || strcmp(only, cases[i].name) == 0;
  if (!chosen) {
    fprintf(stderr, "no kind named \"%s\"\n", only);
    return 2;
  }
  for (int i = 0; i < N; i++) {
    cases[i].private_guard = priv[i];
    cases[i].region_guard = g[i];
    for (int k = 0; k < 4; k++) cases[i].best[k] = 1e9;
    /* Fill the breakers' windows, and warm up. */
    cases[i].private_loop(priv[i], 1000);
    cases[i].region_loop(g[i], 1000);
  }
  for (int k = 0; k < rounds; k++) {
    for (int i = 0; i < N; i++) {
      struct bench_case *c = &cases[i];
      if (only && strcmp(only, c->name) != 0) continue;
      round_of(&c->best[0], ops, c->private_loop, c->private_guard, 1);
      round_of(&c->best[1], ops, c->region_loop, c->region_guard, 1);
      round_of(&c->best[2], ops, c->private_loop, c->private_guard, 2);
      round_of(&c->best[3], ops, c->region_loop, c->region_guard, 2);
    }
  }
  printf("C, best of %d alternating rounds of %ld (ns per operation, per thread):\n", rounds, ops);
  printf("  %-18s %9s %9s %6s | %9s %9s %6s\n", "guard", "private", "region", "ratio", "private2t",
         "region2t", "ratio");
  for (int i = 0; i < N; i++) {
    double *b = cases[i].best;
    if (only && strcmp(only, cases[i].name) != 0) continue;
    printf("  %-18s %9.1f %9.1f %6.2f | %9.1f %9.1f %6.2f\n", cases[i].name, b[0], b[1], b[1] / b[0],
           b[2], b[3], b[3] / b[2]);
  }
  for (int i = 0; i < N; i++) guards_region_guard_free(g[i]);
  guards_bulkhead_free(hb);
  guards_circuit_breaker_free(hc);
  guards_keyed_breakers_free(hk);
  guards_limiter_free(hl);
  guards_admission_free(ha);
  guards_retry_budget_free(hr);
  guards_adaptive_throttle_free(ht);
  guards_latency_tracker_free(htr);
  guards_region_close(r);
  guards_region_remove(name);
  return 0;
}
