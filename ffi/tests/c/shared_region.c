/*
 * Host-wide guards from C: processes made with fork() share a region's bulkhead,
 * breaker, retry budget, limiter and admission door (invariants checked in every child
 * and by the parent), kill -9 of a holder then reclaim, mismatches, a second independent region, guards in caller memory shared across
 * fork, and bad input. Built with -std=c11 -Wall -Wextra -Werror -pedantic and run plain,
 * under valgrind (children too) and under ASan/UBSan (make test-c-region).
 * Prints "N passed, N failed" and exits non-zero on a failure.
 */
#define _DEFAULT_SOURCE

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guards.h"

static int passed, failed, current_failed;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "[%d] %s:%d: check failed: %s\n", (int)getpid(), __FILE__,   \
              __LINE__, #cond);                                                    \
      current_failed = 1;                                                          \
    }                                                                              \
  } while (0)

#define CHECK_RC(expr, want)                                                       \
  do {                                                                             \
    guards_result rc_ = (expr);                                                    \
    if (rc_ != (guards_result)(want)) {                                            \
      char why_[256];                                                              \
      guards_last_error_detail(why_, sizeof why_);                                 \
      fprintf(stderr, "[%d] %s:%d: %s returned %u (%s), expected %u\n",            \
              (int)getpid(), __FILE__, __LINE__, #expr, (unsigned)rc_, why_,        \
              (unsigned)(want));                                                   \
      current_failed = 1;                                                          \
    }                                                                              \
  } while (0)

static void run(const char *name, void (*fn)(void)) {
  current_failed = 0;
  fn();
  if (current_failed) {
    fprintf(stderr, "FAILED %s\n", name);
    failed++;
  } else {
    printf("ok %s\n", name);
    passed++;
  }
}

static const uint64_t MS = 1000000ull;

/* The detail of this thread's last failure contains `needle`. */
static int detail_has(const char *needle) {
  char buf[512];
  size_t n = guards_last_error_detail(buf, sizeof buf);
  return n > 0 && strstr(buf, needle) != NULL;
}

/* A fresh region path for one test (removed by the test). */
static void region_path(char *buf, size_t len, const char *tag) {
  static int n;
  snprintf(buf, len, "/tmp/guards-c-%s-%d-%d", tag, (int)getpid(), n++);
  (void)guards_region_remove(buf);
}

static guards_region *open_region(const char *path, uint64_t reclaim_interval_ns) {
  guards_region_options o;
  guards_region *r = NULL;
  CHECK_RC(guards_region_options_default(&o), GUARDS_RESULT_OK);
  o.reclaim_interval_ns = reclaim_interval_ns;
  CHECK_RC(guards_region_open(path, &o, &r), GUARDS_RESULT_OK);
  return r;
}

static guards_region_guard *bulkhead_in(guards_region *r, const char *name, uint64_t cap) {
  guards_bulkhead_config cfg;
  guards_region_guard *g = NULL;
  CHECK_RC(guards_bulkhead_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.max_concurrent = cap;
  CHECK_RC(guards_region_bulkhead(r, name, &cfg, &g), GUARDS_RESULT_OK);
  return g;
}

static guards_circuit_breaker_config slow_reopening_breaker(void) {
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker_config_default(&cfg);
  cfg.window_size = 20;
  cfg.minimum_calls = 10;
  cfg.open_duration_ns = 60000 * MS; /* stays open for the test */
  cfg.max_open_duration_ns = 60000 * MS;
  return cfg;
}

/* Memory every process made by fork() after this call shares. */
static void *shared_memory(size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Wait for every child; count those that did not exit 0. */
static int wait_all(const pid_t *kids, int n) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    int status = 0;
    if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d ended with status %d\n", (int)kids[i], status);
      bad++;
    }
  }
  return bad;
}

static void test_options_and_bad_input(void) {
  guards_region_options o;
  CHECK_RC(guards_region_options_default(&o), GUARDS_RESULT_OK);
  CHECK(o.max_guards == 64 && o.permit_slots == 4096 && o.data_bytes == (16u << 20));
  CHECK(o.wait_timeout_ns == 5000 * MS && o.reclaim_interval_ns == 10 * MS);
  CHECK(o.mode == 0600 && o.create == 1);
  char path[128];
  region_path(path, sizeof path, "bad");
  guards_region *r = NULL;
  CHECK_RC(guards_region_open(NULL, NULL, &r), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_open("", NULL, &r), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_region_open(path, NULL, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_region_options bad = o;
  bad.max_guards = 0;
  CHECK_RC(guards_region_open(path, &bad, &r), GUARDS_RESULT_CONFIG_ZERO);
  CHECK(detail_has("max_guards"));
  bad = o;
  bad.create = 2;
  CHECK_RC(guards_region_open(path, &bad, &r), GUARDS_RESULT_INVALID_ARGUMENT);
  bad = o;
  bad.create = 0;
  CHECK_RC(guards_region_open(path, &bad, &r), GUARDS_RESULT_GUARD_NOT_FOUND);
  CHECK(r == NULL);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    for (int i = 0; i < 8192; i++) fputc('z', f);
    fclose(f);
  }
  CHECK_RC(guards_region_open(path, NULL, &r), GUARDS_RESULT_REGION_INVALID);
  CHECK(detail_has("not a guards region"));
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_GUARD_NOT_FOUND);

  r = open_region(path, 10 * MS);
  guards_region_guard *g = NULL;
  guards_bulkhead_config bc = {.max_concurrent = 2};
  CHECK_RC(guards_region_bulkhead(NULL, "x", &bc, &g), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_bulkhead(r, NULL, &bc, &g), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_bulkhead(r, "x", NULL, &g), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_bulkhead(r, "", &bc, &g), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_region_bulkhead(r, "\xff\xfe", &bc, &g), GUARDS_RESULT_INVALID_ARGUMENT);
  char long_name[80];
  memset(long_name, 'n', 65);
  long_name[65] = 0;
  CHECK_RC(guards_region_bulkhead(r, long_name, &bc, &g), GUARDS_RESULT_INVALID_ARGUMENT);
  bc.max_concurrent = 0;
  CHECK_RC(guards_region_bulkhead(r, "x", &bc, &g), GUARDS_RESULT_CONFIG_ZERO);
  CHECK(detail_has("max_concurrent"));
  guards_circuit_breaker_config cc = slow_reopening_breaker();
  cc.window_kind = 7;
  CHECK_RC(guards_region_circuit_breaker(r, "b", &cc, &g), GUARDS_RESULT_INVALID_ENUM);
  cc = slow_reopening_breaker();
  cc.failure_rate_threshold = 0.0 / 0.0;
  CHECK_RC(guards_region_circuit_breaker(r, "b", &cc, &g), GUARDS_RESULT_CONFIG_NOT_FINITE);
  CHECK(g == NULL);
  uint64_t n = 0;
  CHECK_RC(guards_region_reclaim(NULL, 0, &n), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_reclaim(r, 0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_region_stats st;
  CHECK_RC(guards_region_get_stats(r, &st), GUARDS_RESULT_OK);
  CHECK(st.guards == 0 && st.max_guards == 64);
  guards_permit p;
  CHECK_RC(guards_region_try_acquire(NULL, 0, 0, &p), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_report(NULL, p, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_NULL_ARGUMENT);
  guards_region_close(NULL);
  guards_region_guard_free(NULL);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

static void test_permits_go_back_once(void) {
  char path[128];
  region_path(path, sizeof path, "once");
  guards_region *r = open_region(path, 10 * MS);
  guards_region_guard *a = bulkhead_in(r, "a", 1);
  guards_region_guard *b = bulkhead_in(r, "b", 1);
  guards_permit p, q;
  CHECK_RC(guards_region_try_acquire(a, 1, 0, &p), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_region_try_acquire(a, 0, 0, &p), GUARDS_RESULT_OK);
  memset(&q, 0x5a, sizeof q);
  guards_permit before = q;
  CHECK_RC(guards_region_try_acquire(a, 0, 0, &q), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK(memcmp(&q, &before, sizeof q) == 0); /* untouched on error */
  guards_rejection rej;
  CHECK_RC(guards_last_rejection(&rej), GUARDS_RESULT_OK);
  CHECK(rej.code == GUARDS_RESULT_BULKHEAD_FULL && rej.in_flight == 1 && rej.limit == 1);
  CHECK_RC(guards_region_report(a, p, 99, 0), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_region_report(b, p, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_PERMIT_WRONG_GUARD);
  guards_permit zero;
  memset(&zero, 0, sizeof zero);
  CHECK_RC(guards_region_report(a, zero, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_PERMIT_WRONG_GUARD);
  guards_region_guard_info info;
  CHECK_RC(guards_region_guard_get_info(a, &info), GUARDS_RESULT_OK);
  CHECK(info.kind == GUARDS_KIND_BULKHEAD && info.capacity == 0 && info.permits_held == 1);
  CHECK_RC(guards_region_report(a, p, GUARDS_OUTCOME_TIMEOUT, 0), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(a, p, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  guards_bulkhead_stats st;
  CHECK_RC(guards_region_bulkhead_get_stats(a, &st), GUARDS_RESULT_OK);
  CHECK(st.acquired == 1 && st.rejected == 1 && st.released == 1 && st.in_flight == 0);
  guards_circuit_breaker_stats bst;
  CHECK_RC(guards_region_circuit_breaker_get_stats(a, &bst), GUARDS_RESULT_INVALID_ARGUMENT);
  guards_region_guard_free(a);
  guards_region_guard_free(b);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

static void test_mismatch_and_attach(void) {
  char path[128];
  region_path(path, sizeof path, "mismatch");
  guards_region *r = open_region(path, 10 * MS);
  guards_region_guard *x = bulkhead_in(r, "x", 4);
  guards_region_guard *g = NULL;
  guards_bulkhead_config five = {.max_concurrent = 5};
  CHECK_RC(guards_region_bulkhead(r, "x", &five, &g), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(detail_has("config"));
  guards_circuit_breaker_config cc = slow_reopening_breaker();
  CHECK_RC(guards_region_circuit_breaker(r, "x", &cc, &g), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(detail_has("it is a bulkhead, not a circuit_breaker"));
  CHECK_RC(guards_region_circuit_breaker(r, "y", &cc, &g), GUARDS_RESULT_OK);
  guards_region_guard_free(g);
  cc.capacity = 1024;
  CHECK_RC(guards_region_circuit_breaker(r, "y", &cc, &g), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(detail_has("capacity"));
  CHECK_RC(guards_region_attach(r, "missing", &g), GUARDS_RESULT_GUARD_NOT_FOUND);
  CHECK_RC(guards_region_attach(r, "x", &g), GUARDS_RESULT_OK);
  guards_region_guard_info info;
  CHECK_RC(guards_region_guard_get_info(g, &info), GUARDS_RESULT_OK);
  CHECK(info.kind == GUARDS_KIND_BULKHEAD);
  /* Another handle of the same guard: its state is the same. */
  guards_permit p;
  CHECK_RC(guards_region_try_acquire(x, 0, 0, &p), GUARDS_RESULT_OK);
  guards_bulkhead_stats st;
  CHECK_RC(guards_region_bulkhead_get_stats(g, &st), GUARDS_RESULT_OK);
  CHECK(st.in_flight == 1);
  CHECK_RC(guards_region_report(x, p, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_OK);
  guards_region_guard_free(g);
  guards_region_guard_free(x);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

static void test_a_second_region_is_independent(void) {
  char p1[128], p2[128];
  region_path(p1, sizeof p1, "one");
  region_path(p2, sizeof p2, "two");
  guards_region *r1 = open_region(p1, 10 * MS), *r2 = open_region(p2, 10 * MS);
  guards_region_guard *a = bulkhead_in(r1, "stock", 1), *b = bulkhead_in(r2, "stock", 1);
  guards_permit pa, pb;
  CHECK_RC(guards_region_try_acquire(a, 0, 0, &pa), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_try_acquire(b, 0, 0, &pb), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_try_acquire(a, 0, 0, &pa), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK_RC(guards_region_report(a, pa, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(b, pb, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_OK);
  guards_region_guard_free(a);
  guards_region_guard_free(b);
  guards_region_close(r1);
  guards_region_close(r2);
  CHECK_RC(guards_region_remove(p1), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_remove(p2), GUARDS_RESULT_OK);
}

/* What the bulkhead children tell the parent. */
struct tally {
  atomic_int inside;    /* holders right now, all processes */
  atomic_int worst;     /* the most holders ever seen */
  atomic_long acquired; /* permits granted */
  atomic_long refused;  /* refusals */
  atomic_int go;        /* start together */
};

enum { WORKERS = 4, OPS = 2000, CAP = 3 };

static int bulkhead_child(const char *path, struct tally *t) {
  guards_region *r = open_region(path, 10 * MS);
  guards_region_guard *g = bulkhead_in(r, "stock", CAP);
  while (!atomic_load(&t->go)) {
  }
  for (int i = 0; i < OPS; i++) {
    guards_permit p;
    guards_result rc = guards_region_try_acquire(g, 0, (uint64_t)i, &p);
    if (rc == GUARDS_RESULT_OK) {
      int now_inside = atomic_fetch_add(&t->inside, 1) + 1;
      int w = atomic_load(&t->worst);
      while (now_inside > w && !atomic_compare_exchange_weak(&t->worst, &w, now_inside)) {
      }
      atomic_fetch_add(&t->acquired, 1);
      atomic_fetch_sub(&t->inside, 1);
      CHECK_RC(guards_region_report(g, p, GUARDS_OUTCOME_SUCCESS, (uint64_t)i), GUARDS_RESULT_OK);
    } else {
      CHECK(rc == GUARDS_RESULT_BULKHEAD_FULL);
      atomic_fetch_add(&t->refused, 1);
    }
  }
  guards_region_guard_free(g);
  guards_region_close(r);
  return current_failed;
}

static void test_processes_share_a_bulkhead(void) {
  char path[128];
  region_path(path, sizeof path, "bulkhead");
  guards_region *r = open_region(path, 10 * MS);
  guards_region_guard *g = bulkhead_in(r, "stock", CAP);
  struct tally *t = shared_memory(sizeof *t);
  CHECK(t != NULL);
  if (!t) return;
  pid_t kids[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      int bad = bulkhead_child(path, t);
      guards_region_guard_free(g);
      guards_region_close(r);
      exit(bad ? 1 : 0);
    }
  }
  atomic_store(&t->go, 1);
  CHECK(wait_all(kids, WORKERS) == 0);
  CHECK(atomic_load(&t->worst) <= CAP);
  guards_bulkhead_stats st;
  CHECK_RC(guards_region_bulkhead_get_stats(g, &st), GUARDS_RESULT_OK);
  CHECK(st.acquired == (uint64_t)atomic_load(&t->acquired));
  CHECK(st.rejected == (uint64_t)atomic_load(&t->refused));
  CHECK(st.acquired + st.rejected == (uint64_t)WORKERS * OPS);
  CHECK(st.in_flight == 0 && st.released == st.acquired);
  munmap(t, sizeof *t);
  guards_region_guard_free(g);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

/* One worker's failures open the breaker for every worker. */
static void test_one_workers_failures_open_the_breaker_for_all(void) {
  char path[128];
  region_path(path, sizeof path, "breaker");
  guards_region *r = open_region(path, 10 * MS);
  guards_circuit_breaker_config cfg = slow_reopening_breaker();
  guards_region_guard *b = NULL;
  CHECK_RC(guards_region_circuit_breaker(r, "dep", &cfg, &b), GUARDS_RESULT_OK);
  pid_t failing = fork();
  if (failing == 0) {
    guards_region *cr = open_region(path, 10 * MS);
    guards_region_guard *cb = NULL;
    CHECK_RC(guards_region_circuit_breaker(cr, "dep", &cfg, &cb), GUARDS_RESULT_OK);
    for (int i = 0; i < 10; i++) {
      guards_permit p;
      uint64_t now = guards_now_ns();
      CHECK_RC(guards_region_try_acquire(cb, 0, now, &p), GUARDS_RESULT_OK);
      CHECK_RC(guards_region_report(cb, p, GUARDS_OUTCOME_CONNECTION_ERROR, now), GUARDS_RESULT_OK);
    }
    guards_region_guard_free(cb);
    guards_region_close(cr);
    guards_region_guard_free(b);
    guards_region_close(r);
    exit(current_failed);
  }
  CHECK(wait_all(&failing, 1) == 0);
  pid_t other = fork();
  if (other == 0) {
    guards_region *cr = open_region(path, 10 * MS);
    guards_region_guard *cb = NULL;
    CHECK_RC(guards_region_attach(cr, "dep", &cb), GUARDS_RESULT_OK);
    guards_permit p;
    /* This worker never called the dependency, and is refused at once. */
    CHECK_RC(guards_region_try_acquire(cb, 0, guards_now_ns(), &p), GUARDS_RESULT_BREAKER_OPEN);
    guards_rejection rej;
    CHECK_RC(guards_last_rejection(&rej), GUARDS_RESULT_OK);
    CHECK(rej.has_retry_at && rej.retry_at_ns > guards_now_ns());
    guards_region_guard_free(cb);
    guards_region_close(cr);
    guards_region_guard_free(b);
    guards_region_close(r);
    exit(current_failed);
  }
  CHECK(wait_all(&other, 1) == 0);
  guards_breaker_state s;
  CHECK_RC(guards_region_circuit_breaker_state(b, guards_now_ns(), &s), GUARDS_RESULT_OK);
  CHECK(s == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_stats st;
  CHECK_RC(guards_region_circuit_breaker_get_stats(b, &st), GUARDS_RESULT_OK);
  CHECK(st.failures == 10 && st.closed_to_open == 1 && st.rejected_open == 1);
  guards_region_guard_free(b);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

/* A child takes every slot of the bulkhead and the breaker's only probe, says so, and
 * waits to be killed. With `g` and `b` NULL it opens the region itself; otherwise it uses
 * the handles it inherited from its parent through fork() (and must record its own pid
 * with the permits, not its parent's). */
static void hold_everything(const char *path, atomic_int *ready, guards_region_guard *g,
                            guards_region_guard *b) {
  if (!g) {
    guards_region *r = open_region(path, 10 * MS);
    g = bulkhead_in(r, "stock", CAP);
    CHECK_RC(guards_region_attach(r, "probe", &b), GUARDS_RESULT_OK);
  }
  for (int i = 0; i < CAP; i++) {
    guards_permit p;
    CHECK_RC(guards_region_try_acquire(g, 0, 0, &p), GUARDS_RESULT_OK);
  }
  guards_permit probe;
  CHECK_RC(guards_region_try_acquire(b, 0, guards_now_ns(), &probe), GUARDS_RESULT_OK);
  CHECK(probe.is_probe == 1);
  atomic_store(ready, current_failed ? -1 : 1);
  for (;;) pause();
}

static pid_t start_holder(const char *path, atomic_int *ready, guards_region_guard *g,
                          guards_region_guard *b) {
  atomic_store(ready, 0);
  pid_t pid = fork();
  if (pid == 0) hold_everything(path, ready, g, b);
  while (atomic_load(ready) == 0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK(atomic_load(ready) == 1);
  return pid;
}

static void open_the_probe_breaker(guards_region *r, guards_region_guard **out) {
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker_config_default(&cfg);
  cfg.window_size = 2;
  cfg.minimum_calls = 2;
  cfg.half_open_probes = 1;
  cfg.open_duration_ns = 1 * MS;
  cfg.max_open_duration_ns = 1 * MS;
  CHECK_RC(guards_region_circuit_breaker(r, "probe", &cfg, out), GUARDS_RESULT_OK);
  for (int i = 0; i < 2; i++) {
    guards_permit p;
    uint64_t now = guards_now_ns();
    CHECK_RC(guards_region_try_acquire(*out, 0, now, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_region_report(*out, p, GUARDS_OUTCOME_TIMEOUT, now), GUARDS_RESULT_OK);
  }
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL); /* the open period ends: the holder's call is the probe */
}

static void test_kill_9_of_a_holder_then_reclaim(void) {
  char path[128];
  region_path(path, sizeof path, "kill");
  guards_region *r = open_region(path, 0); /* reclaim on every refusal */
  guards_region_guard *g = bulkhead_in(r, "stock", CAP);
  guards_region_guard *b = NULL;
  open_the_probe_breaker(r, &b);
  atomic_int *ready = shared_memory(sizeof *ready);
  CHECK(ready != NULL);
  if (!ready) return;

  /* Reclaimed on request. */
  pid_t holder = start_holder(path, ready, NULL, NULL);
  guards_permit p;
  CHECK_RC(guards_region_try_acquire(g, 0, 0, &p), GUARDS_RESULT_BULKHEAD_FULL);
  CHECK_RC(guards_region_try_acquire(b, 0, guards_now_ns(), &p), GUARDS_RESULT_BREAKER_HALF_OPEN_FULL);
  uint64_t n = 99;
  CHECK_RC(guards_region_reclaim(r, guards_now_ns(), &n), GUARDS_RESULT_OK);
  CHECK(n == 0); /* alive: nothing to take */
  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  CHECK_RC(guards_region_reclaim(r, guards_now_ns(), &n), GUARDS_RESULT_OK);
  CHECK(n == CAP + 1);
  guards_bulkhead_stats st;
  CHECK_RC(guards_region_bulkhead_get_stats(g, &st), GUARDS_RESULT_OK);
  CHECK(st.in_flight == 0 && st.released == CAP);
  guards_circuit_breaker_stats bs;
  CHECK_RC(guards_region_circuit_breaker_get_stats(b, &bs), GUARDS_RESULT_OK);
  CHECK(bs.probe_failures == 1 && bs.half_open_to_open == 1); /* a cancelled probe fails */

  /* Reclaimed by the next acquire that finds the bulkhead full; this holder uses the
   * handles it inherited through fork(). */
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
  holder = start_holder(path, ready, g, b);
  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  CHECK_RC(guards_region_try_acquire(g, 0, 0, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(g, p, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_OK);
  guards_region_stats rs;
  CHECK_RC(guards_region_get_stats(r, &rs), GUARDS_RESULT_OK);
  CHECK(rs.reclaimed_permits == 2 * (CAP + 1) && rs.permits_held == 0);
  munmap(ready, sizeof *ready);
  guards_region_guard_free(g);
  guards_region_guard_free(b);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

static void test_processes_racing_to_create_a_region(void) {
  char path[128];
  region_path(path, sizeof path, "race");
  atomic_int *go = shared_memory(sizeof *go);
  CHECK(go != NULL);
  if (!go) return;
  pid_t kids[6];
  for (int i = 0; i < 6; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      while (!atomic_load(go)) {
      }
      guards_region *r = open_region(path, 10 * MS);
      guards_region_guard *g = bulkhead_in(r, "a", CAP);
      guards_circuit_breaker_config cfg = slow_reopening_breaker();
      guards_region_guard *b = NULL;
      CHECK_RC(guards_region_circuit_breaker(r, "b", &cfg, &b), GUARDS_RESULT_OK);
      guards_region_guard_free(g);
      guards_region_guard_free(b);
      guards_region_close(r);
      exit(current_failed);
    }
  }
  atomic_store(go, 1);
  CHECK(wait_all(kids, 6) == 0);
  guards_region *r = open_region(path, 10 * MS);
  guards_region_stats st;
  CHECK_RC(guards_region_get_stats(r, &st), GUARDS_RESULT_OK);
  CHECK(st.guards == 2);
  guards_region_close(r);
  munmap(go, sizeof *go);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

static void test_guards_in_caller_memory_across_fork(void) {
  guards_bulkhead_config bc = {.max_concurrent = CAP};
  size_t len = 0;
  CHECK_RC(guards_bulkhead_size(&bc, &len), GUARDS_RESULT_OK);
  CHECK(len >= 256 && guards_bulkhead_align() == 128);
  bc.max_concurrent = 0;
  CHECK_RC(guards_bulkhead_size(&bc, &len), GUARDS_RESULT_CONFIG_ZERO);
  bc.max_concurrent = CAP;
  unsigned char *mem = shared_memory(len + 256);
  CHECK(mem != NULL);
  if (!mem) return;
  guards_region_guard *g = NULL;
  CHECK_RC(guards_bulkhead_attach(mem, len, &g), GUARDS_RESULT_GUARD_NOT_FOUND);
  CHECK_RC(guards_bulkhead_init_in(mem + 64, len, &bc), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_bulkhead_init_in(mem, len - 1, &bc), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_bulkhead_init_in(NULL, len, &bc), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_bulkhead_init_in(mem, len, &bc), GUARDS_RESULT_OK);
  CHECK_RC(guards_circuit_breaker_attach(mem, len, &g), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(detail_has("it is a bulkhead, not a circuit_breaker"));
  CHECK_RC(guards_bulkhead_attach(mem, len, &g), GUARDS_RESULT_OK);
  struct tally *t = shared_memory(sizeof *t);
  CHECK(t != NULL);
  if (!t) return;
  pid_t kids[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      guards_region_guard *mine = NULL;
      CHECK_RC(guards_bulkhead_attach(mem, len, &mine), GUARDS_RESULT_OK);
      while (!atomic_load(&t->go)) {
      }
      for (int k = 0; k < OPS; k++) {
        guards_permit p;
        if (guards_region_try_acquire(mine, 0, 0, &p) == GUARDS_RESULT_OK) {
          int inside = atomic_fetch_add(&t->inside, 1) + 1;
          CHECK(inside <= CAP);
          atomic_fetch_add(&t->acquired, 1);
          atomic_fetch_sub(&t->inside, 1);
          CHECK_RC(guards_region_report(mine, p, GUARDS_OUTCOME_SUCCESS, 0), GUARDS_RESULT_OK);
        }
      }
      guards_region_guard_free(mine);
      guards_region_guard_free(g);
      exit(current_failed);
    }
  }
  atomic_store(&t->go, 1);
  CHECK(wait_all(kids, WORKERS) == 0);
  guards_bulkhead_stats st;
  CHECK_RC(guards_region_bulkhead_get_stats(g, &st), GUARDS_RESULT_OK);
  CHECK(st.acquired == (uint64_t)atomic_load(&t->acquired) && st.in_flight == 0);
  CHECK(st.acquired + st.rejected == (uint64_t)WORKERS * OPS);
  guards_region_guard_free(g);

  /* A breaker of 1024 cells needs more memory than one of 128. */
  guards_circuit_breaker_config cc;
  guards_circuit_breaker_config_default(&cc);
  size_t small = 0, big = 0;
  CHECK_RC(guards_circuit_breaker_size(&cc, &small), GUARDS_RESULT_OK);
  cc.capacity = 1024;
  CHECK_RC(guards_circuit_breaker_size(&cc, &big), GUARDS_RESULT_OK);
  CHECK(big > small && guards_circuit_breaker_align() == 128);
  unsigned char *bm = shared_memory(big);
  CHECK(bm != NULL);
  if (bm) {
    CHECK_RC(guards_circuit_breaker_init_in(bm, big, &cc), GUARDS_RESULT_OK);
    guards_region_guard *b = NULL;
    CHECK_RC(guards_circuit_breaker_attach(bm, big, &b), GUARDS_RESULT_OK);
    guards_region_guard_info info;
    CHECK_RC(guards_region_guard_get_info(b, &info), GUARDS_RESULT_OK);
    CHECK(info.kind == GUARDS_KIND_CIRCUIT_BREAKER && info.capacity == 1024);
    guards_breaker_state s;
    CHECK_RC(guards_region_circuit_breaker_state(b, 0, &s), GUARDS_RESULT_OK);
    CHECK(s == GUARDS_BREAKER_STATE_CLOSED);
    guards_region_guard_free(b);
    munmap(bm, big);
  }
  munmap(t, sizeof *t);
  munmap(mem, len + 256);
}

/* ---- Every other kind: a retry budget, a limiter, admission, keyed breakers, and the
 * kinds without permits, in a region and in caller memory. */

static guards_region_guard *budget_in(guards_region *r, const char *name, double capacity) {
  guards_retry_budget_config cfg;
  guards_region_guard *g = NULL;
  CHECK_RC(guards_retry_budget_config_default(&cfg), GUARDS_RESULT_OK);
  cfg.mode = GUARDS_RETRY_BUDGET_MODE_TOKEN_BUCKET;
  cfg.token_bucket.capacity = capacity;
  cfg.token_bucket.ratio = 0.1;
  CHECK_RC(guards_region_retry_budget(r, name, &cfg, &g), GUARDS_RESULT_OK);
  return g;
}

static guards_limiter_config fixed_limiter(uint64_t limit) {
  guards_limiter_config cfg;
  guards_limiter_config_default(&cfg);
  cfg.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  cfg.limit.fixed = limit;
  return cfg;
}

static guards_admission_config fixed_door(uint64_t limit) {
  guards_admission_config cfg;
  guards_admission_config_default(&cfg);
  for (int i = 0; i < 8; i++) cfg.limits[i] = limit;
  return cfg;
}

enum { BUDGET_CAP = 10 };

/* N processes × M attempts on one retry budget: every process sees the balance within
 * [0, capacity], and the host total of retries granted is what the capacity and the
 * deposits of every process paid for. */
static int budget_child(const char *path, struct tally *t) {
  guards_region *r = open_region(path, 10 * MS);
  guards_region_guard *g = budget_in(r, "retries", BUDGET_CAP);
  while (!atomic_load(&t->go)) {
  }
  for (int i = 0; i < OPS; i++) {
    CHECK_RC(guards_region_retry_budget_deposit(g, 0), GUARDS_RESULT_OK);
    guards_retry_receipt rc;
    guards_result res = guards_region_retry_budget_withdraw(g, 0, GUARDS_RETRY_CAUSE_TRANSIENT, &rc);
    if (res == GUARDS_RESULT_OK) {
      atomic_fetch_add(&t->acquired, 1);
      CHECK(rc.cost_micros == 1000000);
      CHECK_RC(guards_region_retry_budget_report(g, 0, GUARDS_OUTCOME_SUCCESS, &rc), GUARDS_RESULT_OK);
      CHECK_RC(guards_region_retry_budget_report(g, 0, GUARDS_OUTCOME_SUCCESS, &rc),
               GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
    } else {
      CHECK(res == GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED);
      atomic_fetch_add(&t->refused, 1);
    }
    int64_t micros = -1;
    CHECK_RC(guards_region_retry_budget_tokens_micros(g, 0, &micros), GUARDS_RESULT_OK);
    CHECK(micros >= 0 && micros <= (int64_t)BUDGET_CAP * 1000000);
  }
  guards_region_guard_free(g);
  guards_region_close(r);
  return current_failed;
}

static void test_processes_share_a_retry_budget(void) {
  char path[128];
  region_path(path, sizeof path, "budget");
  guards_region *r = open_region(path, 10 * MS);
  guards_region_guard *g = budget_in(r, "retries", BUDGET_CAP);
  struct tally *t = shared_memory(sizeof *t);
  CHECK(t != NULL);
  if (!t) return;
  pid_t kids[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      int bad = budget_child(path, t);
      guards_region_guard_free(g);
      guards_region_close(r);
      exit(bad ? 1 : 0);
    }
  }
  atomic_store(&t->go, 1);
  CHECK(wait_all(kids, WORKERS) == 0);
  guards_retry_budget_stats st;
  CHECK_RC(guards_region_retry_budget_get_stats(g, &st), GUARDS_RESULT_OK);
  CHECK(st.deposits == (uint64_t)WORKERS * OPS);
  CHECK(st.withdrawals == (uint64_t)atomic_load(&t->acquired));
  CHECK(st.refusals == (uint64_t)atomic_load(&t->refused));
  /* 10 tokens to start, 0.1 per first attempt, 1 per retry: at most 10 + 800 retries. */
  CHECK(st.withdrawals <= BUDGET_CAP + (uint64_t)WORKERS * OPS / 10);
  CHECK(st.withdrawals >= (uint64_t)WORKERS * OPS / 10 - 1);
  int64_t micros = -1;
  CHECK_RC(guards_region_retry_budget_tokens_micros(g, 0, &micros), GUARDS_RESULT_OK);
  CHECK(micros >= 0 && micros <= (int64_t)BUDGET_CAP * 1000000);
  /* A receipt is reported through the handle that withdrew it; misuse is refused. */
  guards_retry_receipt rc;
  CHECK_RC(guards_region_retry_budget_withdraw(g, 0, 99, &rc), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_region_retry_budget_withdraw(g, 0, GUARDS_RETRY_CAUSE_TIMEOUT, NULL),
           GUARDS_RESULT_NULL_ARGUMENT);
  guards_permit p;
  CHECK_RC(guards_region_try_acquire(g, 0, 0, &p), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("permits"));
  munmap(t, sizeof *t);
  guards_region_guard_free(g);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

enum { LIMIT = 3 };

/* A child hammering the shared limiter and the shared admission door: the host's calls
 * inside each never exceed its limit (t[0] limiter, t[1] admission). */
static int limit_child(const char *path, struct tally *t) {
  guards_region *r = open_region(path, 10 * MS);
  guards_limiter_config lc = fixed_limiter(LIMIT);
  guards_admission_config ac = fixed_door(LIMIT);
  guards_region_guard *g[2] = {NULL, NULL};
  CHECK_RC(guards_region_limiter(r, "db", &lc, &g[0]), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_admission(r, "door", &ac, &g[1]), GUARDS_RESULT_OK);
  while (!atomic_load(&t[0].go)) {
  }
  for (int i = 0; i < OPS; i++) {
    int k = i & 1;
    guards_permit p;
    guards_result rc = guards_region_try_acquire(g[k], (uint64_t)(i % 8), (uint64_t)i * MS, &p);
    if (rc == GUARDS_RESULT_OK) {
      int now_inside = atomic_fetch_add(&t[k].inside, 1) + 1;
      int w = atomic_load(&t[k].worst);
      while (now_inside > w && !atomic_compare_exchange_weak(&t[k].worst, &w, now_inside)) {
      }
      atomic_fetch_add(&t[k].acquired, 1);
      atomic_fetch_sub(&t[k].inside, 1);
      CHECK_RC(guards_region_report(g[k], p, GUARDS_OUTCOME_SUCCESS, (uint64_t)i * MS + 1),
               GUARDS_RESULT_OK);
    } else {
      CHECK(rc == (k == 0 ? GUARDS_RESULT_LIMITER_LIMIT_REACHED : GUARDS_RESULT_ADMISSION_LIMIT_REACHED));
      atomic_fetch_add(&t[k].refused, 1);
    }
  }
  guards_region_guard_free(g[0]);
  guards_region_guard_free(g[1]);
  guards_region_close(r);
  return current_failed;
}

static void test_processes_share_a_limiter_and_admission(void) {
  char path[128];
  region_path(path, sizeof path, "limit");
  guards_region *r = open_region(path, 10 * MS);
  guards_limiter_config lc = fixed_limiter(LIMIT);
  guards_admission_config ac = fixed_door(LIMIT);
  guards_region_guard *l = NULL, *a = NULL;
  CHECK_RC(guards_region_limiter(r, "db", &lc, &l), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_admission(r, "door", &ac, &a), GUARDS_RESULT_OK);
  struct tally *t = shared_memory(2 * sizeof *t);
  CHECK(t != NULL);
  if (!t) return;
  pid_t kids[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      int bad = limit_child(path, t);
      guards_region_guard_free(l);
      guards_region_guard_free(a);
      guards_region_close(r);
      exit(bad ? 1 : 0);
    }
  }
  atomic_store(&t[0].go, 1);
  CHECK(wait_all(kids, WORKERS) == 0);
  CHECK(atomic_load(&t[0].worst) <= LIMIT && atomic_load(&t[1].worst) <= LIMIT);
  CHECK(atomic_load(&t[0].worst) >= 1 && atomic_load(&t[1].worst) >= 1);
  guards_limiter_stats ls;
  CHECK_RC(guards_region_limiter_get_stats(l, &ls), GUARDS_RESULT_OK);
  CHECK(ls.acquired == (uint64_t)atomic_load(&t[0].acquired));
  CHECK(ls.rejected_limit_reached == (uint64_t)atomic_load(&t[0].refused));
  CHECK(ls.in_flight == 0 && ls.succeeded == ls.acquired);
  guards_admission_stats as;
  CHECK_RC(guards_region_admission_get_stats(a, &as), GUARDS_RESULT_OK);
  CHECK(as.admitted == (uint64_t)atomic_load(&t[1].acquired));
  CHECK(as.refused_limit_reached + as.refused_overloaded == (uint64_t)atomic_load(&t[1].refused));
  CHECK(as.in_flight == 0 && as.succeeded == as.admitted);
  CHECK(as.admitted + ls.acquired + as.refused_limit_reached + ls.rejected_limit_reached ==
        (uint64_t)WORKERS * OPS);
  /* A priority beyond 7 is refused, nothing taken. */
  guards_permit p;
  CHECK_RC(guards_region_try_acquire(l, 8, 0, &p), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("priority"));
  CHECK_RC(guards_region_try_acquire(a, UINT64_MAX, 0, &p), GUARDS_RESULT_INVALID_ARGUMENT);
  guards_region_guard_info info;
  CHECK_RC(guards_region_guard_get_info(l, &info), GUARDS_RESULT_OK);
  CHECK(info.kind == GUARDS_KIND_LIMITER && info.permits_held == 0);
  munmap(t, 2 * sizeof *t);
  guards_region_guard_free(l);
  guards_region_guard_free(a);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

/* kill -9 of a process holding every place of a shared limiter and admission door: the
 * places come back by reclaim, and the next acquire succeeds. */
static void test_kill_9_of_a_limiter_holder_then_reclaim(void) {
  char path[128];
  region_path(path, sizeof path, "killlim");
  guards_region *r = open_region(path, 0);
  guards_limiter_config lc = fixed_limiter(LIMIT);
  guards_admission_config ac = fixed_door(LIMIT);
  guards_region_guard *l = NULL, *a = NULL;
  CHECK_RC(guards_region_limiter(r, "db", &lc, &l), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_admission(r, "door", &ac, &a), GUARDS_RESULT_OK);
  atomic_int *ready = shared_memory(sizeof *ready);
  CHECK(ready != NULL);
  if (!ready) return;
  atomic_store(ready, 0);
  pid_t holder = fork();
  if (holder == 0) {
    for (int i = 0; i < LIMIT; i++) {
      guards_permit p;
      CHECK_RC(guards_region_try_acquire(l, 2, 0, &p), GUARDS_RESULT_OK);
      CHECK_RC(guards_region_try_acquire(a, 5, 0, &p), GUARDS_RESULT_OK);
    }
    atomic_store(ready, current_failed ? -1 : 1);
    for (;;) pause();
  }
  while (atomic_load(ready) == 0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK(atomic_load(ready) == 1);
  guards_permit p;
  CHECK_RC(guards_region_try_acquire(l, 0, 0, &p), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  guards_region_guard_info info;
  CHECK_RC(guards_region_guard_get_info(a, &info), GUARDS_RESULT_OK);
  CHECK(info.permits_held == LIMIT);
  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  /* The next acquire finds the limiter full and reclaims the dead holder's permits. */
  CHECK_RC(guards_region_try_acquire(l, 0, 1, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(l, p, GUARDS_OUTCOME_SUCCESS, 2), GUARDS_RESULT_OK);
  guards_limiter_stats ls;
  CHECK_RC(guards_region_limiter_get_stats(l, &ls), GUARDS_RESULT_OK);
  CHECK(ls.in_flight == 0 && ls.ignored == LIMIT);
  guards_admission_stats as;
  CHECK_RC(guards_region_admission_get_stats(a, &as), GUARDS_RESULT_OK);
  CHECK(as.in_flight == 0 && as.ignored == LIMIT);
  guards_region_stats rs;
  CHECK_RC(guards_region_get_stats(r, &rs), GUARDS_RESULT_OK);
  CHECK(rs.reclaimed_permits == 2 * LIMIT && rs.permits_held == 0);
  munmap(ready, sizeof *ready);
  guards_region_guard_free(l);
  guards_region_guard_free(a);
  guards_region_close(r);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
}

/* Another config, another kind, bad configs; a second region of the same names. */
static void test_every_kind_mismatch_and_regions_apart(void) {
  char path[128], other[128];
  region_path(path, sizeof path, "kinds");
  region_path(other, sizeof other, "kinds2");
  guards_region *r = open_region(path, 10 * MS);
  guards_region *r2 = open_region(other, 10 * MS);
  guards_limiter_config lc = fixed_limiter(1);
  guards_region_guard *l = NULL, *l2 = NULL, *x = NULL;
  CHECK_RC(guards_region_limiter(r, "db", &lc, &l), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_limiter(r2, "db", &lc, &l2), GUARDS_RESULT_OK);
  guards_permit p, p2;
  CHECK_RC(guards_region_try_acquire(l, 0, 0, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_try_acquire(l, 0, 0, &p2), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  CHECK_RC(guards_region_try_acquire(l2, 0, 0, &p2), GUARDS_RESULT_OK); /* its own limit */
  CHECK_RC(guards_region_report(l, p2, GUARDS_OUTCOME_SUCCESS, 1), GUARDS_RESULT_PERMIT_WRONG_GUARD);
  CHECK_RC(guards_region_report(l2, p2, GUARDS_OUTCOME_SUCCESS, 1), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(l, p, GUARDS_OUTCOME_SUCCESS, 1), GUARDS_RESULT_OK);

  /* Bad handles and outputs; an invalid outcome leaves the permit held. */
  const guards_region_guard *crooked = (const guards_region_guard *)((const char *)l + 1);
  CHECK_RC(guards_region_try_acquire(crooked, 0, 0, &p), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("aligned"));
  CHECK_RC(guards_region_try_acquire(l, 0, 0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_try_acquire(l, 0, 0, (guards_permit *)((char *)&p + 1)),
           GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_region_try_acquire(l, 0, 0, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(l, p, 77, 1), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_region_try_acquire(l, 0, 0, &p2), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  CHECK_RC(guards_region_report(l, p, GUARDS_OUTCOME_SUCCESS, 1), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_retry_budget_deposit(NULL, 0), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_retry_budget_deposit(l, 0), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("a retry budget"));
  CHECK_RC(guards_region_latency_tracker_record(crooked, 0, 1), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_region_adaptive_throttle_report(l, 0, GUARDS_OUTCOME_SUCCESS),
           GUARDS_RESULT_INVALID_ARGUMENT);

  guards_limiter_config lc2 = fixed_limiter(2);
  CHECK_RC(guards_region_limiter(r, "db", &lc2, &x), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(detail_has("config"));
  guards_admission_config ac = fixed_door(2);
  CHECK_RC(guards_region_admission(r, "db", &ac, &x), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(detail_has("kind"));
  guards_retry_budget_config bc;
  guards_retry_budget_config_default(&bc);
  bc.mode = 9;
  CHECK_RC(guards_region_retry_budget(r, "b", &bc, &x), GUARDS_RESULT_INVALID_ENUM);
  lc.limit.fixed = 0;
  CHECK_RC(guards_region_limiter(r, "zero", &lc, &x), GUARDS_RESULT_CONFIG_ZERO);
  CHECK_RC(guards_region_limiter(r, "db", NULL, &x), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_limiter(r, NULL, &lc2, &x), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_limiter(NULL, "db", &lc2, &x), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_region_limiter(r, "db", &lc2, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(x == NULL);

  /* Keyed breakers: one breaker per key, shared. */
  guards_keyed_breakers_config kc;
  guards_keyed_breakers_config_default(&kc);
  kc.breaker.window_size = 4;
  kc.breaker.minimum_calls = 4;
  kc.slots = 10;
  guards_region_guard *k = NULL, *k2 = NULL;
  CHECK_RC(guards_region_keyed_breakers(r, "routes", &kc, &k), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_attach(r, "routes", &k2), GUARDS_RESULT_OK);
  guards_region_guard_info info;
  CHECK_RC(guards_region_guard_get_info(k2, &info), GUARDS_RESULT_OK);
  CHECK(info.kind == GUARDS_KIND_KEYED_BREAKERS && info.capacity == 16);
  uint64_t key = 0;
  CHECK_RC(guards_key_of("stock.view", 10, &key), GUARDS_RESULT_OK);
  guards_breaker_state s;
  CHECK_RC(guards_region_keyed_breakers_state(k, key, 0, &s), GUARDS_RESULT_NOT_FOUND);
  for (int i = 0; i < 4; i++) {
    CHECK_RC(guards_region_try_acquire(k, key, (uint64_t)i, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_region_report(k2, p, GUARDS_OUTCOME_TIMEOUT, (uint64_t)i), GUARDS_RESULT_OK);
  }
  CHECK_RC(guards_region_keyed_breakers_state(k2, key, 5, &s), GUARDS_RESULT_OK);
  CHECK(s == GUARDS_BREAKER_STATE_OPEN);
  guards_circuit_breaker_stats ks;
  CHECK_RC(guards_region_keyed_breakers_get_stats(k, key, &ks), GUARDS_RESULT_OK);
  CHECK(ks.failures == 4 && ks.closed_to_open == 1);
  CHECK_RC(guards_region_keyed_breakers_get_stats(k, key ^ 1, &ks), GUARDS_RESULT_NOT_FOUND);
  CHECK_RC(guards_region_keyed_breakers_get_stats(l, key, &ks), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_region_try_acquire(k2, key, 5, &p), GUARDS_RESULT_BREAKER_OPEN);
  CHECK_RC(guards_region_try_acquire(k2, key + 1, 5, &p), GUARDS_RESULT_OK); /* another key */
  CHECK_RC(guards_region_report(k, p, GUARDS_OUTCOME_SUCCESS, 6), GUARDS_RESULT_OK);
  /* Another process's failures on another key open that key's breaker here too. */
  uint64_t other_key = key + 2;
  pid_t kid = fork();
  if (kid == 0) {
    guards_region *cr = open_region(path, 10 * MS);
    guards_region_guard *ck = NULL;
    CHECK_RC(guards_region_attach(cr, "routes", &ck), GUARDS_RESULT_OK);
    for (int i = 0; i < 4; i++) {
      guards_permit cp;
      CHECK_RC(guards_region_try_acquire(ck, other_key, 10, &cp), GUARDS_RESULT_OK);
      CHECK_RC(guards_region_report(ck, cp, GUARDS_OUTCOME_CONNECTION_ERROR, 10), GUARDS_RESULT_OK);
    }
    guards_region_guard_free(ck);
    guards_region_close(cr);
    guards_region_guard *inherited[] = {l, l2, k, k2};
    for (size_t i = 0; i < sizeof inherited / sizeof inherited[0]; i++) guards_region_guard_free(inherited[i]);
    guards_region_close(r);
    guards_region_close(r2);
    exit(current_failed);
  }
  CHECK(wait_all(&kid, 1) == 0);
  CHECK_RC(guards_region_keyed_breakers_state(k, other_key, 11, &s), GUARDS_RESULT_OK);
  CHECK(s == GUARDS_BREAKER_STATE_OPEN);
  CHECK_RC(guards_region_try_acquire(k, other_key, 11, &p), GUARDS_RESULT_BREAKER_OPEN);

  /* A retry receipt goes back through the handle that withdrew it, once. */
  guards_region_guard *b1 = budget_in(r, "retries", 10), *b2 = NULL;
  CHECK_RC(guards_region_attach(r, "retries", &b2), GUARDS_RESULT_OK);
  guards_retry_receipt rr;
  CHECK_RC(guards_region_retry_budget_withdraw(b1, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &rr), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_retry_budget_report(b2, 0, GUARDS_OUTCOME_SUCCESS, &rr),
           GUARDS_RESULT_PERMIT_WRONG_GUARD);
  CHECK_RC(guards_region_retry_budget_report(b1, 0, GUARDS_OUTCOME_SUCCESS, &rr), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_retry_budget_report(b1, 0, GUARDS_OUTCOME_SUCCESS, &rr),
           GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  int64_t left = 0;
  CHECK_RC(guards_region_retry_budget_tokens_micros(b2, 0, &left), GUARDS_RESULT_OK);
  CHECK(left == 9 * 1000000); /* one budget: the withdrawal through b1 shows through b2 */
  guards_region_guard_free(b1);
  guards_region_guard_free(b2);

  kc.slots = 0;
  CHECK_RC(guards_region_keyed_breakers(r, "none", &kc, &x), GUARDS_RESULT_CONFIG_ZERO);
  kc.slots = 16;
  kc.breaker.capacity = 1024;
  CHECK_RC(guards_region_keyed_breakers(r, "big", &kc, &x), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK(detail_has("breaker.capacity"));
  CHECK_RC(guards_region_limiter_get_stats(k, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_limiter_stats ls;
  CHECK_RC(guards_region_limiter_get_stats(k, &ls), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("a limiter"));

  /* The kinds without permits: shared counters, through every handle. */
  guards_adaptive_throttle_config tc;
  guards_adaptive_throttle_config_default(&tc);
  guards_region_guard *th = NULL;
  CHECK_RC(guards_region_adaptive_throttle(r, "throttle", &tc, &th), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_adaptive_throttle_try_acquire(th, 1), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_adaptive_throttle_report(th, 2, GUARDS_OUTCOME_SUCCESS), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_adaptive_throttle_report(th, 2, 999), GUARDS_RESULT_INVALID_ENUM);
  guards_adaptive_throttle_stats ts;
  CHECK_RC(guards_region_adaptive_throttle_get_stats(th, &ts), GUARDS_RESULT_OK);
  CHECK(ts.admitted == 1 && ts.accepted == 1);

  guards_latency_tracker_config lt;
  guards_latency_tracker_config_default(&lt);
  guards_region_guard *tr = NULL;
  CHECK_RC(guards_region_latency_tracker(r, "lat", &lt, &tr), GUARDS_RESULT_OK);
  uint64_t q = 0;
  CHECK_RC(guards_region_latency_tracker_quantile(tr, 1, 0.5, &q), GUARDS_RESULT_NO_DATA);
  for (uint64_t i = 1; i <= 100; i++) {
    CHECK_RC(guards_region_latency_tracker_record(tr, 1, i * MS), GUARDS_RESULT_OK);
  }
  CHECK_RC(guards_region_latency_tracker_quantile(tr, 1, 0.5, &q), GUARDS_RESULT_OK);
  CHECK(q >= 45 * MS && q <= 55 * MS);
  CHECK_RC(guards_region_latency_tracker_quantile(tr, 1, 1.5, &q), GUARDS_RESULT_INVALID_ARGUMENT);
  guards_latency_tracker_stats lts;
  CHECK_RC(guards_region_latency_tracker_get_stats(tr, &lts), GUARDS_RESULT_OK);
  CHECK(lts.recorded == 100);

  guards_hedging_config hc;
  guards_hedging_config_default(&hc);
  hc.min_samples = 10;
  guards_region_guard *h = NULL;
  CHECK_RC(guards_region_hedging(r, "hedge", &hc, &h), GUARDS_RESULT_OK);
  uint64_t d = 0;
  for (uint64_t i = 1; i <= 100; i++) {
    CHECK_RC(guards_region_hedging_record_latency(h, 1, i * MS), GUARDS_RESULT_OK);
  }
  CHECK_RC(guards_region_hedging_hedge_delay(h, 1, &d), GUARDS_RESULT_OK);
  CHECK(d > 0);
  guards_hedging_stats hs;
  CHECK_RC(guards_region_hedging_get_stats(h, &hs), GUARDS_RESULT_OK);

  guards_brownout_config boc;
  guards_brownout_config_default(&boc);
  boc.optional = true;
  guards_region_guard *bo = NULL;
  CHECK_RC(guards_region_brownout(r, "recs", &boc, &bo), GUARDS_RESULT_OK);
  uint32_t dec = 99;
  CHECK_RC(guards_region_brownout_on_refusal(bo, GUARDS_REFUSAL_KIND_BREAKER_OPEN, &dec), GUARDS_RESULT_OK);
  CHECK(dec == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
  CHECK_RC(guards_region_brownout_on_full(bo), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_brownout_report(bo, GUARDS_OUTCOME_SUCCESS, &dec), GUARDS_RESULT_OK);
  guards_brownout_stats bs;
  CHECK_RC(guards_region_brownout_get_stats(bo, &bs), GUARDS_RESULT_OK);
  CHECK(bs.degraded == 1 && bs.full >= 1);
  CHECK_RC(guards_region_brownout_on_refusal(bo, 999, &dec), GUARDS_RESULT_INVALID_ENUM);

  guards_region_stats rs;
  CHECK_RC(guards_region_get_stats(r, &rs), GUARDS_RESULT_OK);
  CHECK(rs.guards == 7 && rs.permits_held == 0);

  guards_region_guard *all[] = {l, l2, k, k2, th, tr, h, bo};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) guards_region_guard_free(all[i]);
  guards_region_close(r);
  guards_region_close(r2);
  CHECK_RC(guards_region_remove(path), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_remove(other), GUARDS_RESULT_OK);
}

/* Every kind in caller memory: size, alignment, bad memory, build, attach, use. */
static void test_every_kind_in_caller_memory(void) {
  unsigned char *mem = shared_memory(1u << 20);
  CHECK(mem != NULL);
  if (!mem) return;
  size_t n = 0;
  guards_region_guard *g = NULL;
  guards_permit p;

  guards_limiter_config lc = fixed_limiter(2);
  CHECK_RC(guards_limiter_size(&lc, &n), GUARDS_RESULT_OK);
  CHECK(n > 0 && n < (1u << 20) && guards_limiter_align() >= 8);
  CHECK_RC(guards_limiter_init_in(mem + 8, n, &lc), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_limiter_init_in(mem, n - 1, &lc), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_limiter_init_in(mem, n, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limiter_size(NULL, &n), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_limiter_init_in(mem, n, &lc), GUARDS_RESULT_OK);
  CHECK_RC(guards_admission_attach(mem, n, &g), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK_RC(guards_limiter_attach(mem, n, &g), GUARDS_RESULT_OK);
  pid_t kid = fork();
  if (kid == 0) {
    guards_region_guard *mine = NULL;
    CHECK_RC(guards_limiter_attach(mem, n, &mine), GUARDS_RESULT_OK);
    guards_permit held;
    CHECK_RC(guards_region_try_acquire(mine, 0, 0, &held), GUARDS_RESULT_OK);
    CHECK_RC(guards_region_try_acquire(mine, 0, 0, &held), GUARDS_RESULT_OK);
    guards_region_guard_free(mine);
    guards_region_guard_free(g);
    exit(current_failed); /* leaves both places held: no reclaim in caller memory */
  }
  CHECK(wait_all(&kid, 1) == 0);
  CHECK_RC(guards_region_try_acquire(g, 0, 0, &p), GUARDS_RESULT_LIMITER_LIMIT_REACHED);
  guards_limiter_stats ls;
  CHECK_RC(guards_region_limiter_get_stats(g, &ls), GUARDS_RESULT_OK);
  CHECK(ls.in_flight == 2);
  guards_region_guard_free(g);

  guards_retry_budget_config bc;
  guards_retry_budget_config_default(&bc);
  CHECK_RC(guards_retry_budget_size(&bc, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_init_in(mem, n, &bc), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_attach(mem, n, &g), GUARDS_RESULT_OK);
  guards_retry_receipt rc;
  CHECK_RC(guards_region_retry_budget_withdraw(g, 0, GUARDS_RETRY_CAUSE_TIMEOUT, &rc), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_retry_budget_report(g, 0, GUARDS_OUTCOME_SUCCESS, &rc), GUARDS_RESULT_OK);
  guards_region_guard_free(g);

  guards_admission_config ac = fixed_door(1);
  CHECK_RC(guards_admission_size(&ac, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_admission_init_in(mem, n, &ac), GUARDS_RESULT_OK);
  CHECK_RC(guards_admission_attach(mem, n, &g), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_try_acquire(g, 3, 0, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(g, p, GUARDS_OUTCOME_SUCCESS, 1), GUARDS_RESULT_OK);
  guards_region_guard_free(g);

  guards_keyed_breakers_config kc;
  guards_keyed_breakers_config_default(&kc);
  size_t small = 0;
  kc.slots = 4;
  CHECK_RC(guards_keyed_breakers_size(&kc, &small), GUARDS_RESULT_OK);
  kc.slots = 64;
  CHECK_RC(guards_keyed_breakers_size(&kc, &n), GUARDS_RESULT_OK);
  CHECK(n > small && n <= (1u << 20));
  CHECK_RC(guards_keyed_breakers_init_in(mem, n, &kc), GUARDS_RESULT_OK);
  CHECK_RC(guards_keyed_breakers_attach(mem, n, &g), GUARDS_RESULT_OK);
  guards_region_guard_info info;
  CHECK_RC(guards_region_guard_get_info(g, &info), GUARDS_RESULT_OK);
  CHECK(info.kind == GUARDS_KIND_KEYED_BREAKERS && info.capacity == 64);
  CHECK_RC(guards_region_try_acquire(g, 7, 0, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_report(g, p, GUARDS_OUTCOME_SUCCESS, 1), GUARDS_RESULT_OK);
  guards_region_guard_free(g);

  guards_adaptive_throttle_config tc;
  guards_adaptive_throttle_config_default(&tc);
  CHECK_RC(guards_adaptive_throttle_size(&tc, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_adaptive_throttle_init_in(mem, n, &tc), GUARDS_RESULT_OK);
  CHECK_RC(guards_adaptive_throttle_attach(mem, n, &g), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_adaptive_throttle_try_acquire(g, 1), GUARDS_RESULT_OK);
  guards_region_guard_free(g);

  guards_latency_tracker_config lt;
  guards_latency_tracker_config_default(&lt);
  CHECK_RC(guards_latency_tracker_size(&lt, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_latency_tracker_init_in(mem, n, &lt), GUARDS_RESULT_OK);
  CHECK_RC(guards_latency_tracker_attach(mem, n, &g), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_latency_tracker_record(g, 1, MS), GUARDS_RESULT_OK);
  guards_region_guard_free(g);

  guards_hedging_config hc;
  guards_hedging_config_default(&hc);
  CHECK_RC(guards_hedging_size(&hc, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_hedging_init_in(mem, n, &hc), GUARDS_RESULT_OK);
  CHECK_RC(guards_hedging_attach(mem, n, &g), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_hedging_record_latency(g, 1, MS), GUARDS_RESULT_OK);
  guards_region_guard_free(g);

  guards_brownout_config boc;
  guards_brownout_config_default(&boc);
  CHECK_RC(guards_brownout_size(&boc, &n), GUARDS_RESULT_OK);
  CHECK_RC(guards_brownout_init_in(mem, n, &boc), GUARDS_RESULT_OK);
  CHECK_RC(guards_brownout_attach(mem, n, &g), GUARDS_RESULT_OK);
  CHECK_RC(guards_region_brownout_on_full(g), GUARDS_RESULT_OK);
  guards_region_guard_free(g);
  g = NULL;
  CHECK_RC(guards_limiter_attach(mem, n, &g), GUARDS_RESULT_GUARD_MISMATCH);
  CHECK(g == NULL);
  CHECK(detail_has("brownout"));
  munmap(mem, 1u << 20);
}

int main(void) {
  /* Unbuffered: a child made by fork() must not print its parent's pending output. */
  setvbuf(stdout, NULL, _IONBF, 0);
  run("options_and_bad_input", test_options_and_bad_input);
  run("permits_go_back_once", test_permits_go_back_once);
  run("mismatch_and_attach", test_mismatch_and_attach);
  run("a_second_region_is_independent", test_a_second_region_is_independent);
  run("processes_share_a_bulkhead", test_processes_share_a_bulkhead);
  run("one_workers_failures_open_the_breaker_for_all",
      test_one_workers_failures_open_the_breaker_for_all);
  run("kill_9_of_a_holder_then_reclaim", test_kill_9_of_a_holder_then_reclaim);
  run("processes_racing_to_create_a_region", test_processes_racing_to_create_a_region);
  run("guards_in_caller_memory_across_fork", test_guards_in_caller_memory_across_fork);
  run("processes_share_a_retry_budget", test_processes_share_a_retry_budget);
  run("processes_share_a_limiter_and_admission", test_processes_share_a_limiter_and_admission);
  run("kill_9_of_a_limiter_holder_then_reclaim", test_kill_9_of_a_limiter_holder_then_reclaim);
  run("every_kind_mismatch_and_regions_apart", test_every_kind_mismatch_and_regions_apart);
  run("every_kind_in_caller_memory", test_every_kind_in_caller_memory);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
