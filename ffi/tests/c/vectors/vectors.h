/*
 * The C vector driver (see main.c): the helpers every guard's block uses.
 *
 * A guard's block is one file, <guard>.c (limits.c holds the limiter, admission and
 * limit files), with `int run_<guard>(driver *d)`: build the guard from the config.*
 * arguments on "new", free it on "free", run the file's ops through guards.h and answer
 * the step (a result, a failure code, unsupported, or values marked unobservable).
 * Listed in GUARDS (main.c).
 */
#ifndef GUARDS_C_VECTORS_H
#define GUARDS_C_VECTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guards.h"

/* What a handle holds: a permit (breaker, bulkhead, limiter, admission) or a receipt. */
typedef struct held_item {
  guards_permit permit;
  guards_retry_receipt receipt;
  bool held;
} held_item;

typedef struct driver {
  guards_vectors *v;
  guards_vectors_step step;
  held_item *items; /* index = handle */
  size_t cap;
} driver;

void fatal(const char *what);
/* Check a call the driver itself cannot get wrong (the session's own calls). */
void must(guards_result rc, const char *what);

bool is_op(const driver *d, const char *op);
bool has(driver *d, const char *name);
/* Whether argument `name` is given and null. */
bool is_null(driver *d, const char *name);
uint64_t u64_arg(driver *d, const char *name);
uint64_t u64_or(driver *d, const char *name, uint64_t dflt);
int64_t i64_arg(driver *d, const char *name);
double f64_arg(driver *d, const char *name);
bool bool_arg(driver *d, const char *name);
const char *str_arg(driver *d, const char *name, size_t *len);
/* The index of string argument `name` in `names`, or -1. */
int name_arg(driver *d, const char *name, const char *const *names, size_t n);
/* The index of `s` in `names`, or -1. */
int index_of(const char *s, const char *const *names, size_t n);

/* Held permits and receipts, by the interpreter's handles. */
void hold_permit(driver *d, guards_permit p);
void hold_receipt(driver *d, guards_retry_receipt r);
held_item *peek(driver *d, const char *arg);
held_item take(driver *d, const char *arg);
void forget_permits(driver *d);

/* Answers: each returns 0 after the step is answered. */
int submit(driver *d);
int submit_failure(driver *d, guards_result rc);
int unsupported(driver *d, const char *why);
int unobservable(driver *d); /* the whole result */

void result_u64(driver *d, const char *path, uint64_t x);
void result_i64(driver *d, const char *path, int64_t x);
void result_f64(driver *d, const char *path, double x);
void result_bool(driver *d, const char *path, bool x);
void result_str(driver *d, const char *path, const char *s);
void result_null(driver *d, const char *path);
void result_empty_list(driver *d, const char *path);
void result_unobservable(driver *d, const char *path);

/* The kind name of a CONFIG_* code (NULL for another code), and the field the last
 * failure's detail names (ConfigError's "invalid `<field>`: ..."; "" if none). */
const char *config_kind(guards_result rc);
const char *config_field(void);

/* A path built with printf-style formatting (a static buffer, valid until the next call). */
const char *path(const char *fmt, ...);

/*
 * Config fields: every config.* argument of "new" must be one the guard's C config has
 * (one it lacks cannot be expressed: the case is not covered). Each reader reads one
 * argument if given; a value the C type cannot hold is refused by the getter
 * (CONFIG_NEGATIVE, ...) and that code is the case's config error.
 */
typedef struct config_reader {
  driver *d;
  guards_result rc; /* the first failure */
  size_t used;      /* config.* arguments read */
} config_reader;

void cfg_u64(config_reader *c, const char *name, uint64_t *field);
void cfg_u32(config_reader *c, const char *name, uint32_t *field);
void cfg_f64(config_reader *c, const char *name, double *field);
void cfg_bool(config_reader *c, const char *name, bool *field);
/* An enum given by name, as one of `names` (its index); UINT32_MAX for another name. */
void cfg_enum(config_reader *c, const char *name, const char *const *names, size_t n,
              uint32_t *field);
/* Whether every config.* argument was read; if not, the step is answered unsupported. */
bool cfg_all_read(config_reader *c);

/* Names shared by several blocks. */
extern const char *const OUTCOME_NAMES[10];      /* guards_outcome order */
extern const char *const GIVE_UP_NAMES[12];      /* guards_give_up_reason order */
extern const char *const RETRY_CAUSE_NAMES[4];   /* guards_retry_cause order */
extern const char *const BUDGET_MODE_NAMES[4];   /* guards_retry_budget_mode order */
extern const char *const JITTER_NAMES[4];        /* guards_jitter order */
extern const char *const IDEMPOTENCY_NAMES[3];   /* guards_idempotency order */

/* Shared readers: a retry budget config under `prefix` ("config." or "config.budget."),
 * a backoff config, a limit config, a latency tracker config. */
void cfg_retry_budget(config_reader *c, const char *prefix, guards_retry_budget_config *cfg);
void cfg_backoff(config_reader *c, const char *prefix, guards_backoff_config *cfg);
void cfg_limit(config_reader *c, const char *prefix, guards_limit_config *cfg);
void cfg_retry_policy(config_reader *c, const char *prefix, guards_retry_policy_config *cfg);
void result_policy_stats(driver *d, const guards_retry_policy_stats *s, bool all);
void cfg_tracker(config_reader *c, const char *prefix, guards_latency_tracker_config *cfg);

int run_circuit_breaker(driver *d);
int run_bulkhead(driver *d);
int run_retry_budget(driver *d);
int run_retry_policy(driver *d);
int run_retry_driver(driver *d);
int run_backoff(driver *d);
int run_deadline(driver *d);
int run_http(driver *d);
int run_outcome(driver *d);
int run_limit(driver *d);
int run_limiter(driver *d);
int run_admission(driver *d);
int run_queue_discipline(driver *d);
int run_latency_tracker(driver *d);
int run_hedging(driver *d);
int run_adaptive_throttle(driver *d);
int run_brownout(driver *d);

#endif
