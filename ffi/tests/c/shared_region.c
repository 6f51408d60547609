/*
 * Host-wide guards from C: processes made with fork() share a region's bulkhead and
 * breaker (invariants checked in every child and by the parent), kill -9 of a holder then
 * reclaim, mismatches, a second independent region, guards in caller memory shared across
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
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
