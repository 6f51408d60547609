/*
 * The C vector driver: replays every file of tests/vectors through the C API
 * (guards.h), with libguards' shared interpreter (guards_vectors_*) doing everything
 * but the calls: reading the files, repeat/expect, held permits, config rejections,
 * comparison and the report. Results must equal core's (ffi/tests/vectors).
 *
 * Each guard is one block, <guard>.c (vectors.h): an entry in GUARDS below and its
 * run_<guard> function (build from the config.* arguments on "new", free on "free", run
 * the file's ops). An op the C API lacks is answered "unsupported" and reported as not
 * covered; a value the C API cannot observe is marked so and counted, never passed as
 * equal.
 *
 * Usage: vectors <tests/vectors directory or one .json file>
 * Prints the report; exits 1 if a case failed or a file is wrong.
 * Built with -std=c11 -Wall -Wextra -Werror -pedantic (make test-c-vectors).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vectors.h"

/* ------------------------------------------------------------------ arguments */

void fatal(const char *what) {
  fprintf(stderr, "vectors: %s\n", what);
  exit(2);
}

void must(guards_result rc, const char *what) {
  if (rc != GUARDS_RESULT_OK) {
    char detail[512];
    guards_last_error_detail(detail, sizeof detail);
    fprintf(stderr, "vectors: %s returned %u: %s\n", what, (unsigned)rc, detail);
    exit(2);
  }
}

bool is_op(const driver *d, const char *op) { return strcmp(d->step.op, op) == 0; }

static guards_vectors_kind kind_of(driver *d, const char *name) {
  guards_vectors_kind k = GUARDS_VECTORS_KIND_ABSENT;
  must(guards_vectors_arg_kind(d->v, name, &k), "guards_vectors_arg_kind");
  return k;
}

bool has(driver *d, const char *name) { return kind_of(d, name) != GUARDS_VECTORS_KIND_ABSENT; }

bool is_null(driver *d, const char *name) { return kind_of(d, name) == GUARDS_VECTORS_KIND_NULL; }

uint64_t u64_arg(driver *d, const char *name) {
  uint64_t x = 0;
  must(guards_vectors_arg_u64(d->v, name, &x), name);
  return x;
}

uint64_t u64_or(driver *d, const char *name, uint64_t dflt) {
  return has(d, name) ? u64_arg(d, name) : dflt;
}

int64_t i64_arg(driver *d, const char *name) {
  int64_t x = 0;
  must(guards_vectors_arg_i64(d->v, name, &x), name);
  return x;
}

double f64_arg(driver *d, const char *name) {
  double x = 0;
  must(guards_vectors_arg_f64(d->v, name, &x), name);
  return x;
}

bool bool_arg(driver *d, const char *name) {
  bool x = false;
  must(guards_vectors_arg_bool(d->v, name, &x), name);
  return x;
}

const char *str_arg(driver *d, const char *name, size_t *len) {
  const char *s = NULL;
  size_t n = 0;
  must(guards_vectors_arg_str(d->v, name, &s, &n), name);
  if (len) *len = n;
  return s;
}

int index_of(const char *s, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return (int)i;
  return -1;
}

int name_arg(driver *d, const char *name, const char *const *names, size_t n) {
  return index_of(str_arg(d, name, NULL), names, n);
}

const char *path(const char *fmt, ...) {
  static char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

const char *config_kind(guards_result rc) {
  switch (rc) {
  case GUARDS_RESULT_CONFIG_NOT_FINITE: return "not_finite";
  case GUARDS_RESULT_CONFIG_NEGATIVE: return "negative";
  case GUARDS_RESULT_CONFIG_ZERO: return "zero";
  case GUARDS_RESULT_CONFIG_OUT_OF_RANGE: return "out_of_range";
  case GUARDS_RESULT_CONFIG_INCONSISTENT: return "inconsistent";
  default: return NULL;
  }
}

const char *config_field(void) {
  static char field[128];
  char detail[512];
  guards_last_error_detail(detail, sizeof detail);
  field[0] = 0;
  const char *start = strstr(detail, "invalid `");
  if (!start) return field;
  start += strlen("invalid `");
  const char *end = strchr(start, '`');
  if (!end || (size_t)(end - start) >= sizeof field) return field;
  memcpy(field, start, (size_t)(end - start));
  field[end - start] = 0;
  return field;
}

/* ------------------------------------------------------------------ held permits */

static held_item *slot_for_hold(driver *d) {
  uint64_t h = u64_arg(d, "hold");
  if (h >= d->cap) {
    size_t cap = d->cap ? d->cap : 16;
    while (cap <= h) cap *= 2;
    held_item *items = realloc(d->items, cap * sizeof *items);
    if (!items) fatal("out of memory");
    memset(items + d->cap, 0, (cap - d->cap) * sizeof *items);
    d->items = items;
    d->cap = cap;
  }
  d->items[h].held = true;
  return &d->items[h];
}

void hold_permit(driver *d, guards_permit p) {
  if (has(d, "hold")) slot_for_hold(d)->permit = p;
}

void hold_receipt(driver *d, guards_retry_receipt r) {
  if (has(d, "hold")) slot_for_hold(d)->receipt = r;
}

held_item *peek(driver *d, const char *arg) {
  uint64_t h = u64_arg(d, arg);
  if (h >= d->cap || !d->items[h].held)
    fatal("the interpreter named a permit this driver does not hold");
  return &d->items[h];
}

held_item take(driver *d, const char *arg) {
  held_item *it = peek(d, arg);
  it->held = false;
  return *it;
}

void forget_permits(driver *d) {
  if (d->items) memset(d->items, 0, d->cap * sizeof *d->items);
}

/* ------------------------------------------------------------------ answers */

int submit(driver *d) {
  must(guards_vectors_submit(d->v), "guards_vectors_submit");
  return 0;
}

int submit_failure(driver *d, guards_result rc) {
  must(guards_vectors_submit_failure(d->v, rc), "guards_vectors_submit_failure");
  return 0;
}

int unsupported(driver *d, const char *why) {
  must(guards_vectors_submit_unsupported(d->v, why), "guards_vectors_submit_unsupported");
  return 0;
}

int unobservable(driver *d) {
  result_unobservable(d, "");
  return submit(d);
}

void result_u64(driver *d, const char *p, uint64_t x) {
  must(guards_vectors_result_u64(d->v, p, x), "result_u64");
}
void result_i64(driver *d, const char *p, int64_t x) {
  must(guards_vectors_result_i64(d->v, p, x), "result_i64");
}
void result_f64(driver *d, const char *p, double x) {
  must(guards_vectors_result_f64(d->v, p, x), "result_f64");
}
void result_bool(driver *d, const char *p, bool x) {
  must(guards_vectors_result_bool(d->v, p, x), "result_bool");
}
void result_str(driver *d, const char *p, const char *s) {
  must(guards_vectors_result_str(d->v, p, s), "result_str");
}
void result_null(driver *d, const char *p) {
  must(guards_vectors_result_null(d->v, p), "result_null");
}
void result_empty_list(driver *d, const char *p) {
  must(guards_vectors_result_empty_list(d->v, p), "result_empty_list");
}
void result_unobservable(driver *d, const char *p) {
  must(guards_vectors_result_unobservable(d->v, p), "result_unobservable");
}

/* ------------------------------------------------------------------ configs */

void cfg_u64(config_reader *c, const char *name, uint64_t *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  c->rc = guards_vectors_arg_u64(c->d->v, name, field);
  c->used++;
}

void cfg_u32(config_reader *c, const char *name, uint32_t *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  uint64_t x = 0;
  c->rc = guards_vectors_arg_u64(c->d->v, name, &x);
  c->used++;
  if (c->rc != GUARDS_RESULT_OK) return;
  /* Wider than the C field: the C API cannot take it (the case is not covered). */
  if (x > UINT32_MAX) c->used--;
  else *field = (uint32_t)x;
}

void cfg_f64(config_reader *c, const char *name, double *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  c->rc = guards_vectors_arg_f64(c->d->v, name, field);
  c->used++;
}

void cfg_bool(config_reader *c, const char *name, bool *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  c->rc = guards_vectors_arg_bool(c->d->v, name, field);
  c->used++;
}

void cfg_enum(config_reader *c, const char *name, const char *const *names, size_t n,
              uint32_t *field) {
  if (c->rc != GUARDS_RESULT_OK || !has(c->d, name)) return;
  const char *s = NULL;
  size_t len = 0;
  c->rc = guards_vectors_arg_str(c->d->v, name, &s, &len);
  c->used++;
  if (c->rc != GUARDS_RESULT_OK) return;
  int i = index_of(s, names, n);
  *field = i < 0 ? UINT32_MAX : (uint32_t)i; /* refused by the C API as INVALID_ENUM */
}

bool cfg_all_read(config_reader *c) {
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

const char *const OUTCOME_NAMES[10] = {
    "success",   "timeout",    "connection_error", "other_transient", "throttled",
    "overloaded", "permanent", "rejected",         "ignored",         "cancelled"};
const char *const GIVE_UP_NAMES[12] = {
    "succeeded",        "permanent",          "overloaded",           "not_retryable",
    "attempts_exhausted", "not_idempotent",   "retry_after_too_long", "deadline_exceeded",
    "budget_exhausted", "rejected",           "ignored",              "cancelled"};
const char *const RETRY_CAUSE_NAMES[4] = {"timeout", "transient", "throttled", "hedge"};
const char *const BUDGET_MODE_NAMES[4] = {"token_bucket", "grpc", "aws", "windowed"};
const char *const JITTER_NAMES[4] = {"none", "full", "equal", "decorrelated"};
const char *const IDEMPOTENCY_NAMES[3] = {"idempotent", "keyed_side_effect",
                                          "unkeyed_side_effect"};

#define FIELD(prefix, name) path("%s%s", prefix, name)

void cfg_retry_budget(config_reader *c, const char *p, guards_retry_budget_config *cfg) {
  cfg_enum(c, FIELD(p, "mode"), BUDGET_MODE_NAMES, 4, &cfg->mode);
  switch (cfg->mode) {
  case GUARDS_RETRY_BUDGET_MODE_TOKEN_BUCKET:
    cfg_f64(c, FIELD(p, "capacity"), &cfg->token_bucket.capacity);
    cfg_f64(c, FIELD(p, "ratio"), &cfg->token_bucket.ratio);
    break;
  case GUARDS_RETRY_BUDGET_MODE_GRPC:
    cfg_f64(c, FIELD(p, "max_tokens"), &cfg->grpc.max_tokens);
    cfg_f64(c, FIELD(p, "token_ratio"), &cfg->grpc.token_ratio);
    break;
  case GUARDS_RETRY_BUDGET_MODE_AWS:
    cfg_u64(c, FIELD(p, "capacity"), &cfg->aws.capacity);
    cfg_u64(c, FIELD(p, "transient_cost"), &cfg->aws.transient_cost);
    cfg_u64(c, FIELD(p, "timeout_cost"), &cfg->aws.timeout_cost);
    cfg_u64(c, FIELD(p, "throttled_cost"), &cfg->aws.throttled_cost);
    cfg_u64(c, FIELD(p, "hedge_cost"), &cfg->aws.hedge_cost);
    cfg_u64(c, FIELD(p, "success_increment"), &cfg->aws.success_increment);
    break;
  case GUARDS_RETRY_BUDGET_MODE_WINDOWED:
    cfg_u64(c, FIELD(p, "ttl"), &cfg->windowed.ttl_ns);
    cfg_f64(c, FIELD(p, "min_retries_per_sec"), &cfg->windowed.min_retries_per_sec);
    cfg_f64(c, FIELD(p, "percent_can_retry"), &cfg->windowed.percent_can_retry);
    break;
  default:
    break;
  }
}

void cfg_backoff(config_reader *c, const char *p, guards_backoff_config *cfg) {
  cfg_u64(c, FIELD(p, "base"), &cfg->base_ns);
  cfg_u64(c, FIELD(p, "cap"), &cfg->cap_ns);
  cfg_f64(c, FIELD(p, "multiplier"), &cfg->multiplier);
  cfg_enum(c, FIELD(p, "jitter"), JITTER_NAMES, 4, &cfg->jitter);
}

void cfg_limit(config_reader *c, const char *p, guards_limit_config *cfg) {
  static const char *const algorithms[] = {"fixed", "aimd", "vegas", "gradient"};
  cfg_enum(c, FIELD(p, "algorithm"), algorithms, 4, &cfg->algorithm);
  switch (cfg->algorithm) {
  case GUARDS_LIMIT_ALGORITHM_FIXED:
    cfg_u64(c, FIELD(p, "limit"), &cfg->fixed);
    break;
  case GUARDS_LIMIT_ALGORITHM_AIMD:
    cfg_u64(c, FIELD(p, "initial_limit"), &cfg->aimd.initial_limit);
    cfg_u64(c, FIELD(p, "min_limit"), &cfg->aimd.min_limit);
    cfg_u64(c, FIELD(p, "max_limit"), &cfg->aimd.max_limit);
    cfg_f64(c, FIELD(p, "backoff_ratio"), &cfg->aimd.backoff_ratio);
    cfg_u64(c, FIELD(p, "interval"), &cfg->aimd.interval_ns);
    cfg_u64(c, FIELD(p, "latency_target"), &cfg->aimd.latency_target_ns);
    break;
  case GUARDS_LIMIT_ALGORITHM_VEGAS:
    cfg_u64(c, FIELD(p, "initial_limit"), &cfg->vegas.initial_limit);
    cfg_u64(c, FIELD(p, "min_limit"), &cfg->vegas.min_limit);
    cfg_u64(c, FIELD(p, "max_limit"), &cfg->vegas.max_limit);
    cfg_f64(c, FIELD(p, "smoothing"), &cfg->vegas.smoothing);
    cfg_f64(c, FIELD(p, "alpha"), &cfg->vegas.alpha);
    cfg_f64(c, FIELD(p, "beta"), &cfg->vegas.beta);
    cfg_f64(c, FIELD(p, "threshold"), &cfg->vegas.threshold);
    cfg_u64(c, FIELD(p, "probe_multiplier"), &cfg->vegas.probe_multiplier);
    cfg_f64(c, FIELD(p, "probe_jitter"), &cfg->vegas.probe_jitter);
    cfg_u64(c, FIELD(p, "probe_seed"), &cfg->vegas.probe_seed);
    break;
  case GUARDS_LIMIT_ALGORITHM_GRADIENT:
    cfg_u64(c, FIELD(p, "initial_limit"), &cfg->gradient.initial_limit);
    cfg_u64(c, FIELD(p, "min_limit"), &cfg->gradient.min_limit);
    cfg_u64(c, FIELD(p, "max_limit"), &cfg->gradient.max_limit);
    cfg_f64(c, FIELD(p, "smoothing"), &cfg->gradient.smoothing);
    cfg_f64(c, FIELD(p, "queue_size"), &cfg->gradient.queue_size);
    cfg_u64(c, FIELD(p, "long_window"), &cfg->gradient.long_window);
    cfg_u64(c, FIELD(p, "warmup_samples"), &cfg->gradient.warmup_samples);
    break;
  default:
    break;
  }
}

void cfg_tracker(config_reader *c, const char *p, guards_latency_tracker_config *cfg) {
  cfg_u64(c, FIELD(p, "window"), &cfg->window_ns);
  cfg_f64(c, FIELD(p, "timeout_quantile"), &cfg->timeout_quantile);
  cfg_f64(c, FIELD(p, "timeout_factor"), &cfg->timeout_factor);
  cfg_u64(c, FIELD(p, "min_samples"), &cfg->min_samples);
}

/* ------------------------------------------------------------------ the guards */

static const struct {
  const char *guard;
  int (*run)(driver *);
} GUARDS[] = {
    {"adaptive_throttle", run_adaptive_throttle},
    {"admission", run_admission},
    {"backoff", run_backoff},
    {"brownout", run_brownout},
    {"bulkhead", run_bulkhead},
    {"circuit_breaker", run_circuit_breaker},
    {"deadline", run_deadline},
    {"hedging", run_hedging},
    {"http", run_http},
    {"latency_tracker", run_latency_tracker},
    {"limit", run_limit},
    {"limiter", run_limiter},
    {"outcome", run_outcome},
    {"queue_discipline", run_queue_discipline},
    {"retry_budget", run_retry_budget},
    {"retry_driver", run_retry_driver},
    {"retry_policy", run_retry_policy},
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
  free(d.items);
  return s.ok ? 0 : 1;
}
