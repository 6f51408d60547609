/*
 * One guarded no-op from C on a guard in a shared region beside the same on a private
 * guard, in one run (make bench-region). Rounds alternate between the two so that both see
 * the same machine; the best round of each is reported in ns per operation, and the ratio
 * region / private; one thread, then two threads on one guard. A benchmark, not a test: it asserts nothing about speed.
 *
 * usage: shared_bench [operations per round] [rounds]
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "guards.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile guards_result sink;

static void bulkhead_private(guards_bulkhead *h, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_bulkhead_try_acquire(h, &p);
    sink = guards_bulkhead_release(h, p);
  }
}

static void breaker_private(guards_circuit_breaker *b, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_circuit_breaker_try_acquire(b, 1000, &p);
    sink = guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

static void in_region(guards_region_guard *g, long n) {
  for (long i = 0; i < n; i++) {
    guards_permit p;
    sink = guards_region_try_acquire(g, 0, 1000, &p);
    sink = guards_region_report(g, p, GUARDS_OUTCOME_SUCCESS, 1000);
  }
}

/* The same loop under two names, so that a profile tells the two guards apart. */
static void bulkhead_region(guards_region_guard *g, long n) { in_region(g, n); }
static void breaker_region(guards_region_guard *g, long n) { in_region(g, n); }

/* Two threads on one guard: each runs `ops` operations; the time is the slower one's. */
struct job {
  int kind; /* 0 bulkhead private, 1 breaker private, 2 region guard */
  void *guard;
  long ops;
};

static void *work(void *arg) {
  struct job *j = arg;
  if (j->kind == 0) bulkhead_private(j->guard, j->ops);
  if (j->kind == 1) breaker_private(j->guard, j->ops);
  if (j->kind == 2) in_region(j->guard, j->ops);
  return NULL;
}

static void two_threads(int kind, void *guard, long ops) {
  struct job j = {kind, guard, ops};
  pthread_t t;
  pthread_create(&t, NULL, work, &j);
  work(&j);
  pthread_join(t, NULL);
}

#define ROUND(best, call)                                                         \
  do {                                                                            \
    uint64_t t0_ = now_ns();                                                      \
    call;                                                                         \
    double ns_ = (double)(now_ns() - t0_) / (double)ops;                          \
    if (ns_ < (best)) (best) = ns_;                                               \
  } while (0)

int main(int argc, char **argv) {
  long ops = argc > 1 ? atol(argv[1]) : 1000000;
  int rounds = argc > 2 ? atoi(argv[2]) : 15;
  if (ops <= 0 || rounds <= 0) {
    fprintf(stderr, "usage: %s [operations per round] [rounds]\n", argv[0]);
    return 2;
  }
  char name[64];
  snprintf(name, sizeof name, "guards-c-bench-%d", (int)getpid());
  guards_region *r = NULL;
  guards_bulkhead_config bc;
  guards_circuit_breaker_config cc;
  guards_bulkhead *hb = NULL;
  guards_circuit_breaker *hc = NULL;
  guards_region_guard *rb = NULL, *rc = NULL;
  guards_bulkhead_config_default(&bc);
  bc.max_concurrent = 64;
  guards_circuit_breaker_config_default(&cc);
  if (guards_region_open(name, NULL, &r) || guards_bulkhead_new(&bc, &hb) ||
      guards_circuit_breaker_new(&cc, &hc) || guards_region_bulkhead(r, "b", &bc, &rb) ||
      guards_region_circuit_breaker(r, "c", &cc, &rc)) {
    char why[256];
    guards_last_error_detail(why, sizeof why);
    fprintf(stderr, "setup failed: %s\n", why);
    return 1;
  }
  /* Fill the breakers' 100-call windows, and warm up. */
  breaker_private(hc, 1000);
  breaker_region(rc, 1000);
  bulkhead_private(hb, 1000);
  bulkhead_region(rb, 1000);
  double bp = 1e9, br = 1e9, cp = 1e9, cr = 1e9;
  double bp2 = 1e9, br2 = 1e9, cp2 = 1e9, cr2 = 1e9;
  for (int k = 0; k < rounds; k++) {
    ROUND(bp, bulkhead_private(hb, ops));
    ROUND(br, bulkhead_region(rb, ops));
    ROUND(cp, breaker_private(hc, ops));
    ROUND(cr, breaker_region(rc, ops));
    ROUND(bp2, two_threads(0, hb, ops));
    ROUND(br2, two_threads(2, rb, ops));
    ROUND(cp2, two_threads(1, hc, ops));
    ROUND(cr2, two_threads(2, rc, ops));
  }
  printf("C, best of %d alternating rounds of %ld (ns per acquire + report, per thread):\n",
         rounds, ops);
  printf("  bulkhead, 1 thread:  private %.1f  region %.1f  ratio %.2f\n", bp, br, br / bp);
  printf("  breaker,  1 thread:  private %.1f  region %.1f  ratio %.2f\n", cp, cr, cr / cp);
  printf("  bulkhead, 2 threads: private %.1f  region %.1f  ratio %.2f\n", bp2, br2, br2 / bp2);
  printf("  breaker,  2 threads: private %.1f  region %.1f  ratio %.2f\n", cp2, cr2, cr2 / cp2);
  guards_region_guard_free(rb);
  guards_region_guard_free(rc);
  guards_bulkhead_free(hb);
  guards_circuit_breaker_free(hc);
  guards_region_close(r);
  guards_region_remove(name);
  return 0;
}
