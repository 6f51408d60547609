/*
 * The C vector driver: replays every file of tests/vectors through the C API
 * (guards.h), with libguards' shared interpreter (guards_vectors_*) doing everything
 * but the calls: reading the files, repeat/expect, held permits, config rejections,
 * comparison and the report. Results must equal core's (ffi/tests/vectors).
 *
 * Each guard of the C API is one block: an entry in GUARDS below and its run_<guard>
 * function (build from the config.* arguments on "new", free on "free", run the
 * file's ops). A file whose guard the C API lacks is answered "unsupported" and
 * reported as not yet covered; a value the C API cannot observe is marked so and
 * counted, never passed as equal.
 *
 * Usage: vectors <tests/vectors directory or one .json file>
 * Prints the report; exits 1 if a case failed or a file is wrong.
 * Built with -std=c11 -Wall -Wextra -Werror -pedantic (make test-c-vectors).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guards.h"

/* ------------------------------------------------------------------ the driver */

/* The guard built by "new", and the permits it granted by handle. */
typedef struct driver {
  guards_vectors *v;
  guards_vectors_step step;
  guards_circuit_breaker *breaker;
  guards_bulkhead *bulkhead;
  guards_permit *permits; /* index = handle */
  bool *held;
  size_t cap;
} driver;

static void fatal(const char *what) {
  fprintf(stderr, "vectors: %s\n", what);
  exit(2);
}

/* Check a call the driver itself cannot get wrong (the session's own calls). */
static void must(guards_result rc, const char *what) {
  if (rc != GUARDS_RESULT_OK) {
    char detail[512];
    guards_last_error_detail(detail, sizeof detail);
    fprintf(stderr, "vectors: %s returned %u: %s\n", what, (unsigned)rc, detail);
    exit(2);
  }
}

static bool has(driver *d, const char *name) {
  guards_vectors_kind k = GUARDS_VECTORS_KIND_ABSENT;
  must(guards_vectors_arg_kind(d->v, name, &k), "guards_vectors_arg_kind");
  return k != GUARDS_VECTORS_KIND_ABSENT;
}

static uint64_t u64_arg(driver *d, const char *name) {
  uint64_t x = 0;
  must(guards_vectors_arg_u64(d->v, name, &x), name);
  return x;
}

static bool is_op(const driver *d, const char *op) { return strcmp(d->step.op, op) == 0; }

/* Keep `p` under the step's `hold` handle, if it has one. */
static void hold(driver *d, guards_permit p) {
  if (!has(d, "hold")) return;
  uint64_t h = u64_arg(d, "hold");
  if (h >= d->cap) {
    size_t cap = d->cap ? d->cap : 16;
    while (cap <= h) cap *= 2;
    guards_permit *items = realloc(d->permits, cap * sizeof *items);
    if (!items) fatal("out of memory");
    d->permits = items;
    bool *held = realloc(d->held, cap * sizeof *held);
    if (!held) fatal("out of memory");
    d->held = held;
    memset(d->held + d->cap, 0, (cap - d->cap) * sizeof *held);
    d->cap = cap;
  }
  d->permits[h] = p;
  d->held[h] = true;
}

/* The permit under the step's `permit` handle, taken out. */
static guards_permit take(driver *d) {
  uint64_t h = u64_arg(d, "permit");
  if (h >= d->cap || !d->held[h]) fatal("the interpreter named a permit this driver does not hold");
  d->held[h] = false;
  return d->permits[h];
}

static void forget_permits(driver *d) {
  if (d->held) memset(d->held, 0, d->cap * sizeof *d->held);
}

/* Submit helpers: each returns after the step is answered. */
static int submit(driver *d) {
  must(guards_vectors_submit(d->v), "guards_vectors_submit");
  return 0;
}

static int submit_failure(driver *d, guards_result rc) {
  must(guards_vectors_submit_failure(d->v, rc), "guards_vectors_submit_failure");
  return 0;
}

static int unsupported(driver *d, const char *why) {
  must(guards_vectors_submit_unsupported(d->v, why), "guards_vectors_submit_unsupported");
  return 0;
}

/* The whole result cannot be observed through the C API. */
static int unobservable(driver *d) {
  must(guards_vectors_result_unobservable(d->v, ""), "result_unobservable");
  return submit(d);
}

static void result_u64(driver *d, const char *path, uint64_t x) {
  must(guards_vectors_result_u64(d->v, path, x), "result_u64");
}

static void result_str(driver *d, const char *path, const char *s) {
  must(guards_vectors_result_str(d->v, path, s), "result_str");
}

/*
 * Config fields: every config.* argument of "new" must be one the guard's C config
 * has (a field the C struct lacks cannot be expressed: the case is not covered).
 * Each setter reads one argument if given; a value the C type cannot hold is refused
 * by the getter (CONFIG_NEGATIVE, ...) and that code is the case's config error.
 */
typedef struct config_reader {
  driver *d;
  guards_result rc; /* the first failure */
  size_t used;      /* config.* arguments read */
} config_reader;

static void cfg_u64(config_reader *c, const char *name, uint64_t *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  c->rc = guards_vectors_arg_u64(c->d->v, name, field);
  c->used++;
}

static void cfg_f64(config_reader *c, const char *name, double *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  c->rc = guards_vectors_arg_f64(c->d->v, name, field);
  c->used++;
}

/* An enum given by name, as one of `names` (its index), or `bad` for another name. */
static void cfg_enum(config_reader *c, const char *name, const char *const *names, size_t n,
                     uint32_t *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  const char *s = NULL;
  size_t len = 0;
  c->rc = guards_vectors_arg_str(c->d->v, name, &s, &len);
  c->used++;
  if (c->rc != GUARDS_RESULT_OK) return;
  *field = UINT32_MAX; /* refused by the C API as GUARDS_RESULT_INVALID_ENUM */
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) *field = (uint32_t)i;
}

/* Whether every config.* argument was read; if not, the case is answered unsupported. */
static bool cfg_all_read(config_reader *c) {
  size_t total = 0;
  for (size_t i = 0; i < c->d->step.arg_count; i++) {
    guards_vectors_arg a;
    must(guards_vectors_arg_at(c->d->v, i, &a), "guards_vectors_arg_at");
    if (strncmp(a.name, "config.", 7) == 0) total++;
  }
  if (c->rc == GUARDS_RESULT_OK && total != c->used) {
    unsupported(c->d, "a config field the C config struct does not have");
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------ circuit_breaker */

static int breaker_stats(driver *d) {
  guards_circuit_breaker_stats s;
  guards_result rc = guards_circuit_breaker_get_stats(d->breaker, &s);
  if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
  result_u64(d, "successes", s.successes);
  result_u64(d, "failures", s.failures);
  result_u64(d, "slow_calls", s.slow_calls);
  result_u64(d, "probes_admitted", s.probes_admitted);
  result_u64(d, "probe_successes", s.probe_successes);
  result_u64(d, "probe_failures", s.probe_failures);
  result_u64(d, "ignored", s.ignored);
  result_u64(d, "discarded", s.discarded);
  result_u64(d, "rejected_open", s.rejected_open);
  result_u64(d, "rejected_half_open", s.rejected_half_open);
  result_u64(d, "closed_to_open", s.closed_to_open);
  result_u64(d, "open_to_half_open", s.open_to_half_open);
  result_u64(d, "half_open_to_closed", s.half_open_to_closed);
  result_u64(d, "half_open_to_open", s.half_open_to_open);
  return submit(d);
}

static int run_circuit_breaker(driver *d) {
  if (is_op(d, "new")) {
    if (has(d, "keyed_slots")) return unsupported(d, "keyed breakers: not in the C API yet");
    guards_circuit_breaker_config cfg;
    must(guards_circuit_breaker_config_default(&cfg), "config_default");
    static const char *const kinds[] = {"count", "time"};
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_enum(&c, "config.window_kind", kinds, 2, &cfg.window_kind);
    cfg_u64(&c, "config.window_size", &cfg.window_size);
    cfg_u64(&c, "config.window_duration", &cfg.window_duration_ns);
    cfg_u64(&c, "config.window_buckets", &cfg.window_buckets);
    cfg_f64(&c, "config.failure_rate_threshold", &cfg.failure_rate_threshold);
    cfg_u64(&c, "config.slow_call_duration", &cfg.slow_call_duration_ns);
    cfg_f64(&c, "config.slow_call_rate_threshold", &cfg.slow_call_rate_threshold);
    cfg_u64(&c, "config.minimum_calls", &cfg.minimum_calls);
    cfg_u64(&c, "config.open_duration", &cfg.open_duration_ns);
    cfg_f64(&c, "config.open_duration_multiplier", &cfg.open_duration_multiplier);
    cfg_u64(&c, "config.max_open_duration", &cfg.max_open_duration_ns);
    cfg_u64(&c, "config.half_open_probes", &cfg.half_open_probes);
    cfg_u64(&c, "config.probe_timeout", &cfg.probe_timeout_ns);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    cfg.capacity = u64_arg(d, "capacity"); /* the window cells the file assumes */
    guards_result rc = guards_circuit_breaker_new(&cfg, &d->breaker);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    /* The C API grows the cells to fit the window: where it had to, the file's breaker
     * (whose cells refuse a larger window) cannot be built through it. */
    guards_circuit_breaker_config got;
    must(guards_circuit_breaker_get_config(d->breaker, &got), "get_config");
    if (got.capacity != cfg.capacity) {
      guards_circuit_breaker_free(d->breaker);
      d->breaker = NULL;
      return unsupported(d, "a breaker of fixed capacity: the C API grows the cells to fit "
                            "the window");
    }
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_circuit_breaker_free(d->breaker);
    d->breaker = NULL;
    forget_permits(d);
    return submit(d);
  }
  if (has(d, "key")) return unsupported(d, "keyed breakers: not in the C API yet");
  if (is_op(d, "try_acquire")) {
    guards_permit p;
    guards_result rc = guards_circuit_breaker_try_acquire(d->breaker, u64_arg(d, "now"), &p);
    if (rc == GUARDS_RESULT_OK) {
      result_str(d, "admitted", p.is_probe ? "probe" : "call");
      /* The C permit carries its slot's generation, not the breaker's. */
      must(guards_vectors_result_unobservable(d->v, "generation"), "unobservable");
      if (p.is_probe) result_u64(d, "probe_timeout", p.probe_timeout_ns);
      hold(d, p);
      return submit(d);
    }
    if (rc == GUARDS_RESULT_BREAKER_OPEN || rc == GUARDS_RESULT_BREAKER_HALF_OPEN_FULL) {
      guards_rejection r;
      must(guards_last_rejection(&r), "guards_last_rejection");
      result_str(d, "rejected", rc == GUARDS_RESULT_BREAKER_OPEN ? "open" : "half_open_full");
      result_u64(d, "retry_at", r.retry_at_ns);
      return submit(d);
    }
    return submit_failure(d, rc);
  }
  if (is_op(d, "on_success") || is_op(d, "on_failure") || is_op(d, "on_ignore")) {
    guards_permit p = take(d);
    uint32_t outcome = is_op(d, "on_success")   ? GUARDS_OUTCOME_SUCCESS
                       : is_op(d, "on_failure") ? GUARDS_OUTCOME_TIMEOUT
                                                : GUARDS_OUTCOME_IGNORED;
    uint64_t now = has(d, "now") ? u64_arg(d, "now") : 0;
    guards_result rc = guards_circuit_breaker_report(d->breaker, p, outcome, now);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    /* The C API reports no effect (counted, opened, ...). */
    if (is_op(d, "on_ignore")) return submit(d);
    return unobservable(d);
  }
  if (is_op(d, "state")) {
    guards_breaker_state st;
    guards_result rc = guards_circuit_breaker_state(d->breaker, u64_arg(d, "now"), &st);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    result_str(d, "", st == GUARDS_BREAKER_STATE_CLOSED ? "closed"
                      : st == GUARDS_BREAKER_STATE_OPEN ? "open"
                                                        : "half_open");
    return submit(d);
  }
  if (is_op(d, "stats")) return breaker_stats(d);
  /* status, window_counts, key_of: no C function shows them. */
  if (is_op(d, "status") || is_op(d, "window_counts") || is_op(d, "key_of"))
    return unobservable(d);
  return unsupported(d, "an op the C breaker does not have");
}

/* ------------------------------------------------------------------ bulkhead */

static int run_bulkhead(driver *d) {
  if (is_op(d, "new")) {
    guards_bulkhead_config cfg;
    must(guards_bulkhead_config_default(&cfg), "config_default");
    config_reader c = {d, GUARDS_RESULT_OK, 0};
    cfg_u64(&c, "config.max_concurrent", &cfg.max_concurrent);
    if (!cfg_all_read(&c)) return 0;
    if (c.rc != GUARDS_RESULT_OK) return submit_failure(d, c.rc);
    guards_result rc = guards_bulkhead_new(&cfg, &d->bulkhead);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "free")) {
    guards_bulkhead_free(d->bulkhead);
    d->bulkhead = NULL;
    forget_permits(d);
    return submit(d);
  }
  if (is_op(d, "try_acquire")) {
    guards_permit p;
    guards_result rc = guards_bulkhead_try_acquire(d->bulkhead, &p);
    if (rc == GUARDS_RESULT_OK) {
      must(guards_vectors_result_bool(d->v, "acquired", true), "result_bool");
      hold(d, p);
      return submit(d);
    }
    if (rc == GUARDS_RESULT_BULKHEAD_FULL) {
      guards_rejection r;
      must(guards_last_rejection(&r), "guards_last_rejection");
      must(guards_vectors_result_bool(d->v, "acquired", false), "result_bool");
      result_u64(d, "in_flight", r.in_flight);
      result_u64(d, "max_concurrent", r.limit);
      return submit(d);
    }
    return submit_failure(d, rc);
  }
  if (is_op(d, "release")) {
    guards_result rc = guards_bulkhead_release(d->bulkhead, take(d));
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    return submit(d);
  }
  if (is_op(d, "in_flight") || is_op(d, "stats")) {
    guards_bulkhead_stats s;
    guards_result rc = guards_bulkhead_get_stats(d->bulkhead, &s);
    if (rc != GUARDS_RESULT_OK) return submit_failure(d, rc);
    if (is_op(d, "in_flight")) {
      result_u64(d, "", s.in_flight);
    } else {
      result_u64(d, "acquired", s.acquired);
      result_u64(d, "rejected", s.rejected);
      result_u64(d, "released", s.released);
      result_u64(d, "in_flight", s.in_flight);
    }
    return submit(d);
  }
  /* available, from_littles_law: no C function shows them. */
  if (is_op(d, "available") || is_op(d, "from_littles_law")) return unobservable(d);
  return unsupported(d, "an op the C bulkhead does not have");
}

/* ------------------------------------------------------------------ the guards */

/* One entry per guard of the C API; every other file is answered "not in the C API". */
static const struct {
  const char *guard;
  int (*run)(driver *);
} GUARDS[] = {
    {"circuit_breaker", run_circuit_breaker},
    {"bulkhead", run_bulkhead},
};

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <tests/vectors directory or a vector file>\n", argv[0]);
    return 2;
  }
  driver d = {0};
  must(guards_vectors_open(argv[1], &d.v), "guards_vectors_open");
  char missing[128];
  for (;;) {
    must(guards_vectors_next(d.v, &d.step), "guards_vectors_next");
    if (d.step.done) break;
    int (*run)(driver *) = NULL;
    for (size_t i = 0; i < sizeof GUARDS / sizeof GUARDS[0]; i++)
      if (strcmp(GUARDS[i].guard, d.step.guard) == 0) run = GUARDS[i].run;
    if (run) {
      run(&d);
    } else {
      snprintf(missing, sizeof missing, "%s: not in the C API yet", d.step.guard);
      unsupported(&d, missing);
    }
  }
  size_t n = guards_vectors_report(d.v, NULL, 0);
  char *text = malloc(n + 1);
  if (!text) fatal("out of memory");
  guards_vectors_report(d.v, text, n + 1);
  fputs(text, stdout);
  free(text);
  guards_vectors_summary s;
  must(guards_vectors_get_summary(d.v, &s), "guards_vectors_get_summary");
  printf("C API: %llu of %llu cases run and passed (%llu of them with values the C API "
         "cannot show), %llu not covered, %llu failed\n",
         (unsigned long long)s.passed, (unsigned long long)s.cases,
         (unsigned long long)s.partly_observed, (unsigned long long)s.not_covered,
         (unsigned long long)s.failed);
  guards_vectors_free(d.v);
  free(d.permits);
  free(d.held);
  return s.ok ? 0 : 1;
}
