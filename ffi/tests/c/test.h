/*
 * The C suite of libguards: the C API as a C program uses it. Every file is built with
 * -std=c11 -Wall -Wextra -Werror -pedantic and the suite runs plain, against the shared
 * library, under valgrind and under ASan/UBSan (make test-c). One file per guard
 * (test_<guard>.c), plus threads sharing one guard (test_threads.c) and bad input for
 * every guard (test_bad_input.c); main.c runs them all and prints "N passed, N failed".
 */
#ifndef GUARDS_TEST_H
#define GUARDS_TEST_H

#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guards.h"

/* Set by a failed check of the running test (any thread). */
extern atomic_int current_failed;

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
      char why_[256];                                                              \
      guards_last_error_detail(why_, sizeof why_);                                 \
      fprintf(stderr, "%s:%d: %s returned %u (%s), expected %u\n  last detail: %s\n", \
              __FILE__, __LINE__, #expr, (unsigned)rc_, guards_result_message(rc_),   \
              (unsigned)(want), why_);                                             \
      atomic_store(&current_failed, 1);                                            \
    }                                                                              \
  } while (0)

/* A check whose failure names a value. */
#define CHECK_EQ_U64(got, want)                                                    \
  do {                                                                             \
    uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);                          \
    if (g_ != w_) {                                                                \
      fprintf(stderr, "%s:%d: %s == %llu, expected %s == %llu\n", __FILE__, __LINE__, \
              #got, (unsigned long long)g_, #want, (unsigned long long)w_);        \
      atomic_store(&current_failed, 1);                                            \
    }                                                                              \
  } while (0)

void run(const char *name, void (*fn)(void));

/* The detail of this thread's last failure contains `needle` (reports it if not). */
int detail_has(const char *needle);

#define MS 1000000ull
#define S 1000000000ull

/* Each file's tests, run by main.c. */
void common_tests(void);
void circuit_breaker_tests(void);
void keyed_breakers_tests(void);
void bulkhead_tests(void);
void fleet_tests(void);
void retry_budget_tests(void);
void retry_policy_tests(void);
void retry_driver_tests(void);
void backoff_tests(void);
void deadline_tests(void);
void http_tests(void);
void limiter_tests(void);
void admission_tests(void);
void queue_discipline_tests(void);
void latency_tracker_tests(void);
void hedging_tests(void);
void adaptive_throttle_tests(void);
void brownout_tests(void);
void thread_tests(void);
void bad_input_tests(void);

#endif
