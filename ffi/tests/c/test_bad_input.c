/* Bad input for every guard: NULL handles and outputs, misaligned handles, NaN / infinite /
 * negative / zero / huge config values, enum numbers out of range. Each gets its code and a
 * detail naming the argument or field; outputs are left untouched; nothing crashes. */
#include "test.h"

/* `call` returns `code` and the detail names `name`. */
#define EXPECT(call, code, name)                                                   \
  do {                                                                             \
    CHECK_RC(call, code);                                                          \
    if (!detail_has(name)) atomic_store(&current_failed, 1);                       \
  } while (0)

#define EXPECT_NULL(call, name) EXPECT(call, GUARDS_RESULT_NULL_ARGUMENT, name)

/* A pointer to a handle one byte off its allocation: refused as misaligned. */
#define MISALIGNED(type, h) ((type *)(void *)((char *)(void *)(h) + 1))

/* `new(&cfg, &out)` is refused with `code` naming `field`, and `out` stays NULL. */
#define EXPECT_BAD_CONFIG(new_fn, type, cfg, code, field)                          \
  do {                                                                             \
    type *out_ = NULL;                                                             \
    EXPECT(new_fn(&(cfg), &out_), code, field);                                    \
    CHECK(out_ == NULL);                                                           \
    CHECK(guards_last_error_code() == (code));                                     \
  } while (0)

/* A callback for `_call`s that must be refused before it could run. */
static uint32_t never_called(void *ctx, guards_call *call) {
  (void)ctx;
  (void)call;
  atomic_store(&current_failed, 1);
  return GUARDS_OUTCOME_SUCCESS;
}

static void test_breaker(void) {
  guards_circuit_breaker_config d, c;
  guards_circuit_breaker_config_default(&d);
  guards_circuit_breaker *b = NULL;
  CHECK_RC(guards_circuit_breaker_new(&d, &b), GUARDS_RESULT_OK);
  guards_permit p;
  memset(&p, 0, sizeof p);
  guards_breaker_state st;
  guards_circuit_breaker_stats s;
  EXPECT_NULL(guards_circuit_breaker_config_default(NULL), "out");
  EXPECT_NULL(guards_circuit_breaker_new(NULL, &b), "config");
  EXPECT_NULL(guards_circuit_breaker_new(&d, NULL), "out");
  EXPECT_NULL(guards_circuit_breaker_try_acquire(NULL, S, &p), "breaker");
  EXPECT_NULL(guards_circuit_breaker_try_acquire(b, S, NULL), "out");
  EXPECT_NULL(guards_circuit_breaker_report(NULL, p, GUARDS_OUTCOME_SUCCESS, S), "breaker");
  EXPECT_NULL(guards_circuit_breaker_state(NULL, S, &st), "breaker");
  EXPECT_NULL(guards_circuit_breaker_state(b, S, NULL), "out");
  EXPECT_NULL(guards_circuit_breaker_get_stats(NULL, &s), "breaker");
  EXPECT_NULL(guards_circuit_breaker_get_stats(b, NULL), "out");
  EXPECT_NULL(guards_circuit_breaker_get_config(NULL, &c), "breaker");
  EXPECT_NULL(guards_circuit_breaker_outstanding(b, NULL), "out");
  EXPECT(guards_circuit_breaker_try_acquire(MISALIGNED(guards_circuit_breaker, b), S, &p),
         GUARDS_RESULT_INVALID_ARGUMENT, "aligned");
  EXPECT_NULL(guards_circuit_breaker_call(NULL, S, never_called, NULL), "breaker");
  EXPECT_NULL(guards_circuit_breaker_call(b, S, NULL, NULL), "fn");
  EXPECT(guards_circuit_breaker_call(MISALIGNED(guards_circuit_breaker, b), S, never_called, NULL),
         GUARDS_RESULT_INVALID_ARGUMENT, "aligned");

  c = d; c.failure_rate_threshold = NAN;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "failure_rate_threshold");
  c = d; c.slow_call_rate_threshold = INFINITY;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "slow_call_rate_threshold");
  c = d; c.open_duration_multiplier = -INFINITY;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "open_duration_multiplier");
  c = d; c.open_duration_multiplier = -1.0;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_NEGATIVE, "open_duration_multiplier");
  c = d; c.failure_rate_threshold = -0.5;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_NEGATIVE, "failure_rate_threshold");
  c = d; c.failure_rate_threshold = 0.0;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_ZERO, "failure_rate_threshold");
  c = d; c.failure_rate_threshold = 1e300;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "failure_rate_threshold");
  c = d; c.window_size = 0;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_ZERO, "window_size");
  c = d; c.window_size = UINT64_MAX;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "window_size");
  c = d; c.window_kind = GUARDS_WINDOW_KIND_TIME; c.window_buckets = 0;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_ZERO, "window_buckets");
  c = d; c.window_kind = GUARDS_WINDOW_KIND_TIME; c.window_duration_ns = 0;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_ZERO, "window_duration");
  c = d; c.half_open_probes = 1u << 31;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "half_open_probes");
  c = d; c.capacity = 65537;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "capacity");
  c = d; c.open_duration_ns = 400 * S;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "max_open_duration");
  c = d; c.probe_timeout_ns = 0;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_CONFIG_ZERO, "probe_timeout");
  c = d; c.window_kind = 2;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_INVALID_ENUM, "window_kind");
  c = d; c.window_kind = UINT32_MAX;
  EXPECT_BAD_CONFIG(guards_circuit_breaker_new, guards_circuit_breaker, c, GUARDS_RESULT_INVALID_ENUM, "window_kind");
  EXPECT(guards_circuit_breaker_report(b, p, 10, S), GUARDS_RESULT_INVALID_ENUM, "outcome");
  guards_circuit_breaker_free(NULL);
  guards_circuit_breaker_free(b);
}

static void test_keyed(void) {
  guards_keyed_breakers_config d, c;
  guards_keyed_breakers_config_default(&d);
  guards_keyed_breakers *k = NULL;
  CHECK_RC(guards_keyed_breakers_new(&d, &k), GUARDS_RESULT_OK);
  guards_permit p;
  memset(&p, 0, sizeof p);
  guards_breaker_state st;
  guards_circuit_breaker_stats s;
  guards_keyed_breakers_set_stats ss;
  uint64_t u;
  EXPECT_NULL(guards_keyed_breakers_config_default(NULL), "out");
  EXPECT_NULL(guards_keyed_breakers_new(NULL, &k), "config");
  EXPECT_NULL(guards_keyed_breakers_new(&d, NULL), "out");
  EXPECT_NULL(guards_keyed_breakers_try_acquire(NULL, 1, S, &p), "keyed_breakers");
  EXPECT_NULL(guards_keyed_breakers_try_acquire(k, 1, S, NULL), "out");
  EXPECT_NULL(guards_keyed_breakers_report(NULL, p, 0, S), "keyed_breakers");
  EXPECT_NULL(guards_keyed_breakers_state(NULL, 1, S, &st), "keyed_breakers");
  EXPECT_NULL(guards_keyed_breakers_state(k, 1, S, NULL), "out");
  EXPECT_NULL(guards_keyed_breakers_get_stats(k, 1, NULL), "out");
  EXPECT_NULL(guards_keyed_breakers_get_set_stats(NULL, &ss), "keyed_breakers");
  EXPECT_NULL(guards_keyed_breakers_get_config(k, NULL), "out");
  EXPECT_NULL(guards_keyed_breakers_outstanding(NULL, &u), "keyed_breakers");
  (void)s;
  c = d; c.slots = 0;
  EXPECT_BAD_CONFIG(guards_keyed_breakers_new, guards_keyed_breakers, c, GUARDS_RESULT_CONFIG_ZERO, "slots");
  c = d; c.slots = 257;
  EXPECT_BAD_CONFIG(guards_keyed_breakers_new, guards_keyed_breakers, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "slots");
  c = d; c.breaker.capacity = 129;
  EXPECT_BAD_CONFIG(guards_keyed_breakers_new, guards_keyed_breakers, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "breaker.capacity");
  c = d; c.breaker.window_size = 129; /* does not fit the 128 cells of a keyed breaker */
  EXPECT_BAD_CONFIG(guards_keyed_breakers_new, guards_keyed_breakers, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "window_size");
  c = d; c.breaker.failure_rate_threshold = NAN;
  EXPECT_BAD_CONFIG(guards_keyed_breakers_new, guards_keyed_breakers, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "failure_rate_threshold");
  c = d; c.breaker.window_kind = 7;
  EXPECT_BAD_CONFIG(guards_keyed_breakers_new, guards_keyed_breakers, c, GUARDS_RESULT_INVALID_ENUM, "window_kind");
  guards_keyed_breakers_free(k);
}

static void test_bulkhead(void) {
  guards_bulkhead_config c;
  guards_bulkhead_config_default(&c);
  guards_bulkhead *h = NULL;
  CHECK_RC(guards_bulkhead_new(&c, &h), GUARDS_RESULT_OK);
  guards_permit p;
  memset(&p, 0, sizeof p);
  guards_bulkhead_stats s;
  EXPECT_NULL(guards_bulkhead_config_default(NULL), "out");
  EXPECT_NULL(guards_bulkhead_new(NULL, &h), "config");
  EXPECT_NULL(guards_bulkhead_new(&c, NULL), "out");
  EXPECT_NULL(guards_bulkhead_try_acquire(NULL, &p), "bulkhead");
  EXPECT_NULL(guards_bulkhead_try_acquire(h, NULL), "out");
  EXPECT_NULL(guards_bulkhead_release(NULL, p), "bulkhead");
  EXPECT_NULL(guards_bulkhead_report(NULL, p, 0), "bulkhead");
  EXPECT_NULL(guards_bulkhead_get_stats(NULL, &s), "bulkhead");
  EXPECT_NULL(guards_bulkhead_get_stats(h, NULL), "out");
  EXPECT_NULL(guards_bulkhead_get_config(h, NULL), "out");
  EXPECT(guards_bulkhead_release(h, p), GUARDS_RESULT_PERMIT_WRONG_GUARD, "another guard");
  EXPECT_NULL(guards_bulkhead_call(NULL, never_called, NULL), "bulkhead");
  EXPECT_NULL(guards_bulkhead_call(h, NULL, NULL), "fn");
  EXPECT(guards_bulkhead_call(MISALIGNED(guards_bulkhead, h), never_called, NULL),
         GUARDS_RESULT_INVALID_ARGUMENT, "aligned");
  CHECK_RC(guards_bulkhead_get_stats(h, &s), GUARDS_RESULT_OK);
  CHECK(s.acquired == 0 && s.in_flight == 0);
  guards_bulkhead_config bad = {0};
  EXPECT_BAD_CONFIG(guards_bulkhead_new, guards_bulkhead, bad, GUARDS_RESULT_CONFIG_ZERO, "max_concurrent");
  bad.max_concurrent = 1ull << 33;
  EXPECT_BAD_CONFIG(guards_bulkhead_new, guards_bulkhead, bad, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "max_concurrent");
  guards_bulkhead_free(NULL);
  guards_bulkhead_free(h);
}

static void test_retry_budget(void) {
  guards_retry_budget_config d, c;
  guards_retry_budget_config_default(&d);
  guards_retry_budget *b = NULL;
  CHECK_RC(guards_retry_budget_new(&d, &b), GUARDS_RESULT_OK);
  guards_retry_receipt r;
  memset(&r, 0, sizeof r);
  int64_t t;
  guards_retry_budget_stats s;
  EXPECT_NULL(guards_retry_budget_config_default(NULL), "out");
  EXPECT_NULL(guards_retry_budget_new(NULL, &b), "config");
  EXPECT_NULL(guards_retry_budget_new(&d, NULL), "out");
  EXPECT_NULL(guards_retry_budget_deposit(NULL, S), "budget");
  EXPECT_NULL(guards_retry_budget_withdraw(NULL, S, 0, &r), "budget");
  EXPECT_NULL(guards_retry_budget_withdraw(b, S, 0, NULL), "out");
  EXPECT_NULL(guards_retry_budget_report(NULL, S, 0, NULL), "budget");
  EXPECT_NULL(guards_retry_budget_tokens_micros(b, S, NULL), "out");
  EXPECT_NULL(guards_retry_budget_get_stats(NULL, &s), "budget");
  EXPECT_NULL(guards_retry_budget_get_config(b, NULL), "out");
  EXPECT(guards_retry_budget_withdraw(b, S, 4, &r), GUARDS_RESULT_INVALID_ENUM, "cause");
  EXPECT(guards_retry_budget_withdraw(b, S, UINT32_MAX, &r), GUARDS_RESULT_INVALID_ENUM, "cause");
  EXPECT(guards_retry_budget_report(b, S, 0, &r), GUARDS_RESULT_PERMIT_WRONG_GUARD, "another guard");
  (void)t;
  c = d; c.mode = 4;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_INVALID_ENUM, "mode");
  c = d; c.token_bucket.capacity = NAN;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "capacity");
  c = d; c.token_bucket.capacity = INFINITY;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "capacity");
  c = d; c.token_bucket.capacity = 0.5;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "capacity");
  c = d; c.token_bucket.ratio = -1.0;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_NEGATIVE, "ratio");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_GRPC; c.grpc.max_tokens = 0.0;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_ZERO, "max_tokens");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_GRPC; c.grpc.token_ratio = 1e9;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "token_ratio");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_AWS; c.aws.capacity = 0;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_ZERO, "capacity");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_AWS; c.aws.timeout_cost = 501;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "timeout_cost");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_AWS; c.aws.capacity = UINT64_MAX;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "capacity");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_WINDOWED; c.windowed.ttl_ns = 0;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_ZERO, "ttl");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_WINDOWED; c.windowed.ttl_ns = 61 * S;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "ttl");
  c = d; c.mode = GUARDS_RETRY_BUDGET_MODE_WINDOWED; c.windowed.percent_can_retry = NAN;
  EXPECT_BAD_CONFIG(guards_retry_budget_new, guards_retry_budget, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "percent_can_retry");
  /* The modes not chosen are not validated. */
  c = d; c.grpc.max_tokens = NAN; c.windowed.ttl_ns = 0;
  guards_retry_budget *ok = NULL;
  CHECK_RC(guards_retry_budget_new(&c, &ok), GUARDS_RESULT_OK);
  guards_retry_budget_free(ok);
  guards_retry_budget_free(b);
}

static void test_retry_policy_driver_backoff(void) {
  guards_retry_policy_config d, c;
  guards_retry_policy_config_default(&d);
  guards_retry_policy *p = NULL;
  CHECK_RC(guards_retry_policy_new(&d, &p), GUARDS_RESULT_OK);
  guards_retry_context ctx;
  guards_retry_context_default(&ctx);
  guards_retry_decision dec;
  guards_retry_policy_stats s;
  EXPECT_NULL(guards_retry_policy_config_default(NULL), "out");
  EXPECT_NULL(guards_retry_context_default(NULL), "out");
  EXPECT_NULL(guards_retry_policy_new(NULL, &p), "config");
  EXPECT_NULL(guards_retry_policy_decide(NULL, S, &ctx, NULL, &dec), "policy");
  EXPECT_NULL(guards_retry_policy_decide(p, S, NULL, NULL, &dec), "ctx");
  EXPECT_NULL(guards_retry_policy_decide(p, S, &ctx, NULL, NULL), "out");
  EXPECT_NULL(guards_retry_policy_reseed(NULL, 1), "policy");
  EXPECT_NULL(guards_retry_policy_get_stats(p, NULL), "out");
  EXPECT_NULL(guards_retry_policy_get_config(NULL, &c), "policy");
  (void)s;
  guards_retry_context bad = ctx;
  bad.outcome = 10;
  EXPECT(guards_retry_policy_decide(p, S, &bad, NULL, &dec), GUARDS_RESULT_INVALID_ENUM, "outcome");
  bad = ctx;
  bad.idempotency = 3;
  EXPECT(guards_retry_policy_decide(p, S, &bad, NULL, &dec), GUARDS_RESULT_INVALID_ENUM, "idempotency");
  c = d; c.max_attempts = 0;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_CONFIG_ZERO, "max_attempts");
  c = d; c.max_attempts = 101;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "max_attempts");
  c = d; c.max_retry_after_ns = 86401 * S;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "max_retry_after");
  c = d; c.unkeyed_side_effects = 2;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_INVALID_ENUM, "unkeyed_side_effects");
  c = d; c.unkeyed_side_effects = GUARDS_UNKEYED_SIDE_EFFECTS_RETRY_THROTTLED; c.retry_throttled = false;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "unkeyed_side_effects");
  c = d; c.backoff.base_ns = 0;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_CONFIG_ZERO, "backoff.base");
  c = d; c.backoff.multiplier = NAN;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "backoff.multiplier");
  c = d; c.backoff.jitter = 4;
  EXPECT_BAD_CONFIG(guards_retry_policy_new, guards_retry_policy, c, GUARDS_RESULT_INVALID_ENUM, "backoff.jitter");
  guards_retry_policy_free(p);

  guards_retry_driver_config dd, dc;
  guards_retry_driver_config_default(&dd);
  guards_retry_driver *drv = NULL;
  CHECK_RC(guards_retry_driver_new(&dd, &drv), GUARDS_RESULT_OK);
  guards_retry_step st;
  guards_retry_driver_state ds;
  EXPECT_NULL(guards_retry_driver_config_default(NULL), "out");
  EXPECT_NULL(guards_retry_driver_new(NULL, &drv), "config");
  EXPECT_NULL(guards_retry_driver_start(NULL, S, NULL, &st), "driver");
  EXPECT_NULL(guards_retry_driver_start(drv, S, NULL, NULL), "out");
  EXPECT_NULL(guards_retry_driver_resume(NULL, S, &st), "driver");
  EXPECT_NULL(guards_retry_driver_cancel(drv, NULL), "out");
  EXPECT_NULL(guards_retry_driver_reset(drv, NULL), "config");
  EXPECT_NULL(guards_retry_driver_reset(NULL, &dd), "driver");
  EXPECT_NULL(guards_retry_driver_get_state(NULL, &ds), "driver");
  dc = dd; dc.idempotency = 3;
  EXPECT_BAD_CONFIG(guards_retry_driver_new, guards_retry_driver, dc, GUARDS_RESULT_INVALID_ENUM, "idempotency");
  dc = dd; dc.attempt.margin_ns = dc.attempt.attempt_timeout_ns;
  EXPECT_BAD_CONFIG(guards_retry_driver_new, guards_retry_driver, dc, GUARDS_RESULT_CONFIG_INCONSISTENT, "margin");
  dc = dd; dc.attempt.attempt_timeout_ns = UINT64_MAX;
  EXPECT_BAD_CONFIG(guards_retry_driver_new, guards_retry_driver, dc, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "attempt_timeout");
  /* A refused reset leaves the driver as it was. */
  CHECK_RC(guards_retry_driver_reset(drv, &dc), GUARDS_RESULT_CONFIG_OUT_OF_RANGE);
  CHECK_RC(guards_retry_driver_start(drv, S, NULL, &st), GUARDS_RESULT_OK);
  CHECK(st.kind == GUARDS_RETRY_STEP_KIND_ATTEMPT && st.budget_ns == 59 * MS);
  guards_retry_driver_free(drv);

  guards_backoff_config bd, bc;
  guards_backoff_config_default(&bd);
  guards_backoff *bo = NULL;
  CHECK_RC(guards_backoff_new(&bd, &bo), GUARDS_RESULT_OK);
  uint64_t v;
  EXPECT_NULL(guards_backoff_new(NULL, &bo), "config");
  EXPECT_NULL(guards_backoff_delay(NULL, 0, 0, &v), "backoff");
  EXPECT_NULL(guards_backoff_delay(bo, 0, 0, NULL), "out");
  EXPECT_NULL(guards_backoff_ceiling(NULL, 0, &v), "backoff");
  EXPECT_NULL(guards_backoff_reseed(NULL, 1), "backoff");
  bc = bd; bc.base_ns = 0;
  EXPECT_BAD_CONFIG(guards_backoff_new, guards_backoff, bc, GUARDS_RESULT_CONFIG_ZERO, "base");
  bc = bd; bc.cap_ns = bc.base_ns - 1;
  EXPECT_BAD_CONFIG(guards_backoff_new, guards_backoff, bc, GUARDS_RESULT_CONFIG_INCONSISTENT, "cap");
  bc = bd; bc.multiplier = 0.5;
  EXPECT_BAD_CONFIG(guards_backoff_new, guards_backoff, bc, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "multiplier");
  bc = bd; bc.multiplier = -INFINITY;
  EXPECT_BAD_CONFIG(guards_backoff_new, guards_backoff, bc, GUARDS_RESULT_CONFIG_NOT_FINITE, "multiplier");
  bc = bd; bc.jitter = 9;
  EXPECT_BAD_CONFIG(guards_backoff_new, guards_backoff, bc, GUARDS_RESULT_INVALID_ENUM, "jitter");
  guards_backoff_free(bo);
}

static void test_limiter_admission(void) {
  guards_limiter_config d, c;
  guards_limiter_config_default(&d);
  guards_limiter *l = NULL;
  CHECK_RC(guards_limiter_new(&d, &l), GUARDS_RESULT_OK);
  guards_permit p;
  memset(&p, 0, sizeof p);
  guards_limiter_stats s;
  EXPECT_NULL(guards_limiter_config_default(NULL), "out");
  EXPECT_NULL(guards_limiter_new(NULL, &l), "config");
  EXPECT_NULL(guards_limiter_try_acquire(NULL, S, 0, &p), "limiter");
  EXPECT_NULL(guards_limiter_try_acquire(l, S, 0, NULL), "out");
  EXPECT_NULL(guards_limiter_report(NULL, p, 0, S), "limiter");
  EXPECT_NULL(guards_limiter_get_stats(NULL, &s), "limiter");
  EXPECT_NULL(guards_limiter_get_config(l, NULL), "out");
  EXPECT(guards_limiter_try_acquire(l, S, 8, &p), GUARDS_RESULT_INVALID_ARGUMENT, "priority");
  EXPECT(guards_limiter_try_acquire(l, S, UINT32_MAX, &p), GUARDS_RESULT_INVALID_ARGUMENT, "priority");
  c = d; c.limit.algorithm = 4;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_INVALID_ENUM, "limit.algorithm");
  c = d; c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED; c.limit.fixed = 0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_ZERO, "limit");
  c = d; c.window_ns = 0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_ZERO, "window");
  c = d; c.partitions[1].share = 0.0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_ZERO, "partitions[1].share");
  c = d; c.partitions[0].share = NAN;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "partitions[0].share");
  c = d; c.partitions[1].share = 0.5;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "partitions[2].share");
  c = d; c.partitions[4].max_in_flight = 0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_ZERO, "partitions[4].max_in_flight");
  c = d; c.min_retry_after_ns = 2 * S;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "max_retry_after");
  c = d; c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD; c.limit.aimd.backoff_ratio = 1.0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "backoff_ratio");
  c = d; c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD; c.limit.aimd.interval_ns = 0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_ZERO, "interval");
  c = d; c.limit.vegas.smoothing = -INFINITY;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_NOT_FINITE, "smoothing");
  c = d; c.limit.vegas.max_limit = 2000000;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "max_limit");
  c = d; c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_GRADIENT; c.limit.gradient.long_window = 0;
  EXPECT_BAD_CONFIG(guards_limiter_new, guards_limiter, c, GUARDS_RESULT_CONFIG_ZERO, "long_window");
  guards_limiter_free(l);

  guards_admission_config ad, ac;
  guards_admission_config_default(&ad);
  guards_admission *a = NULL;
  CHECK_RC(guards_admission_new(&ad, &a), GUARDS_RESULT_OK);
  guards_admission_stats as;
  EXPECT_NULL(guards_admission_new(NULL, &a), "config");
  EXPECT_NULL(guards_admission_try_acquire(NULL, S, 0, &p), "admission");
  EXPECT_NULL(guards_admission_try_acquire(a, S, 0, NULL), "out");
  EXPECT_NULL(guards_admission_report(NULL, p, 0, S), "admission");
  EXPECT_NULL(guards_admission_get_stats(NULL, &as), "admission");
  EXPECT(guards_admission_try_acquire(a, S, 9, &p), GUARDS_RESULT_INVALID_ARGUMENT, "priority");
  ac = ad; ac.limits[0] = 0;
  EXPECT_BAD_CONFIG(guards_admission_new, guards_admission, ac, GUARDS_RESULT_CONFIG_ZERO, "limits[0]");
  ac = ad; ac.limits[3] = 65;
  EXPECT_BAD_CONFIG(guards_admission_new, guards_admission, ac, GUARDS_RESULT_CONFIG_INCONSISTENT, "limits[3]");
  ac = ad; ac.shares[0] = INFINITY;
  EXPECT_BAD_CONFIG(guards_admission_new, guards_admission, ac, GUARDS_RESULT_CONFIG_NOT_FINITE, "shares[0]");
  ac = ad; ac.shares[5] = -1.0;
  EXPECT_BAD_CONFIG(guards_admission_new, guards_admission, ac, GUARDS_RESULT_CONFIG_NEGATIVE, "shares[5]");
  ac = ad; ac.limit.algorithm = 99;
  EXPECT_BAD_CONFIG(guards_admission_new, guards_admission, ac, GUARDS_RESULT_INVALID_ENUM, "limit.algorithm");
  guards_admission_free(a);
}

static void test_queue(void) {
  guards_queue_discipline_config d, c;
  guards_queue_discipline_config_default(&d);
  guards_queue_discipline *q = NULL;
  CHECK_RC(guards_queue_discipline_new(&d, &q), GUARDS_RESULT_OK);
  guards_dequeued dq;
  guards_waiter w;
  guards_queue_discipline_state st;
  guards_dropped dropped[1];
  size_t n;
  uint32_t u;
  EXPECT_NULL(guards_queue_discipline_new(NULL, &q), "config");
  EXPECT_NULL(guards_queue_discipline_push(NULL, S, 1, 0, GUARDS_NO_DEADLINE), "queue");
  EXPECT_NULL(guards_queue_discipline_pop(NULL, S, &dq), "queue");
  EXPECT_NULL(guards_queue_discipline_pop(q, S, NULL), "out");
  EXPECT_NULL(guards_queue_discipline_expire(q, S, NULL), "out");
  EXPECT_NULL(guards_queue_discipline_remove(NULL, 1, &w), "queue");
  EXPECT_NULL(guards_queue_discipline_dropped(q, dropped, 1, NULL), "n");
  EXPECT_NULL(guards_queue_discipline_get_state(NULL, S, &st), "queue");
  EXPECT_NULL(guards_queue_discipline_get_stats(q, NULL), "out");
  (void)u; (void)n;
  c = d; c.capacity = 0;
  EXPECT_BAD_CONFIG(guards_queue_discipline_new, guards_queue_discipline, c, GUARDS_RESULT_CONFIG_ZERO, "capacity");
  c = d; c.capacity = 65537;
  EXPECT_BAD_CONFIG(guards_queue_discipline_new, guards_queue_discipline, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "capacity");
  c = d; c.target_ns = c.interval_ns + 1;
  EXPECT_BAD_CONFIG(guards_queue_discipline_new, guards_queue_discipline, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "target");
  c = d; c.interval_ns = UINT64_MAX;
  EXPECT_BAD_CONFIG(guards_queue_discipline_new, guards_queue_discipline, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "interval");
  guards_queue_discipline_free(q);
}

static void test_tracker_hedging_throttle(void) {
  guards_latency_tracker_config td, tc;
  guards_latency_tracker_config_default(&td);
  guards_latency_tracker *t = NULL;
  CHECK_RC(guards_latency_tracker_new(&td, &t), GUARDS_RESULT_OK);
  uint64_t v;
  double f;
  guards_latency_summary sum;
  EXPECT_NULL(guards_latency_tracker_new(NULL, &t), "config");
  EXPECT_NULL(guards_latency_tracker_record(NULL, S, 1), "tracker");
  EXPECT_NULL(guards_latency_tracker_report(NULL, S, 0, 0), "tracker");
  EXPECT_NULL(guards_latency_tracker_quantile(t, S, 0.5, NULL), "out");
  EXPECT_NULL(guards_latency_tracker_summary(NULL, S, &sum), "tracker");
  EXPECT_NULL(guards_latency_tracker_propose_timeout(t, S, NULL), "out");
  EXPECT_NULL(guards_latency_tracker_false_timeout_rate(NULL, S, 1, &f), "tracker");
  EXPECT_NULL(guards_latency_tracker_count(t, S, NULL), "out");
  EXPECT(guards_latency_tracker_quantile(t, S, INFINITY, &v), GUARDS_RESULT_INVALID_ARGUMENT, "q");
  tc = td; tc.window_ns = 0;
  EXPECT_BAD_CONFIG(guards_latency_tracker_new, guards_latency_tracker, tc, GUARDS_RESULT_CONFIG_ZERO, "window");
  tc = td; tc.window_ns = MS;
  EXPECT_BAD_CONFIG(guards_latency_tracker_new, guards_latency_tracker, tc, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "window");
  tc = td; tc.timeout_quantile = NAN;
  EXPECT_BAD_CONFIG(guards_latency_tracker_new, guards_latency_tracker, tc, GUARDS_RESULT_CONFIG_NOT_FINITE, "timeout_quantile");
  tc = td; tc.timeout_factor = 0.5;
  EXPECT_BAD_CONFIG(guards_latency_tracker_new, guards_latency_tracker, tc, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "timeout_factor");
  tc = td; tc.min_samples = 0;
  EXPECT_BAD_CONFIG(guards_latency_tracker_new, guards_latency_tracker, tc, GUARDS_RESULT_CONFIG_ZERO, "min_samples");
  guards_latency_tracker_free(t);

  guards_hedging_config hd, hc;
  guards_hedging_config_default(&hd);
  guards_hedging *h = NULL;
  CHECK_RC(guards_hedging_new(&hd, &h), GUARDS_RESULT_OK);
  guards_hedge_decision dec;
  EXPECT_NULL(guards_hedging_new(NULL, &h), "config");
  EXPECT_NULL(guards_hedging_should_hedge(NULL, S, S, 0, true, NULL, &dec), "hedging");
  EXPECT_NULL(guards_hedging_should_hedge(h, S, S, 0, true, NULL, NULL), "out");
  EXPECT_NULL(guards_hedging_record_latency(NULL, S, 1), "hedging");
  EXPECT_NULL(guards_hedging_hedge_delay(h, S, NULL), "out");
  hc = hd; hc.delay_quantile = 0.0;
  EXPECT_BAD_CONFIG(guards_hedging_new, guards_hedging, hc, GUARDS_RESULT_CONFIG_ZERO, "delay_quantile");
  hc = hd; hc.max_delay_ns = hc.min_delay_ns - 1;
  EXPECT_BAD_CONFIG(guards_hedging_new, guards_hedging, hc, GUARDS_RESULT_CONFIG_INCONSISTENT, "max_delay");
  hc = hd; hc.max_hedges = 17;
  EXPECT_BAD_CONFIG(guards_hedging_new, guards_hedging, hc, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "max_hedges");
  hc = hd; hc.tracker.window_ns = 0;
  EXPECT_BAD_CONFIG(guards_hedging_new, guards_hedging, hc, GUARDS_RESULT_CONFIG_ZERO, "tracker.window");
  guards_hedging_free(h);

  guards_adaptive_throttle_config ad, ac;
  guards_adaptive_throttle_config_default(&ad);
  guards_adaptive_throttle *th = NULL;
  CHECK_RC(guards_adaptive_throttle_new(&ad, &th), GUARDS_RESULT_OK);
  guards_throttle_window w;
  EXPECT_NULL(guards_adaptive_throttle_new(NULL, &th), "config");
  EXPECT_NULL(guards_adaptive_throttle_try_acquire(NULL, S), "throttle");
  EXPECT_NULL(guards_adaptive_throttle_report(NULL, S, 0), "throttle");
  EXPECT_NULL(guards_adaptive_throttle_reject_probability(th, S, NULL), "out");
  EXPECT_NULL(guards_adaptive_throttle_window(NULL, S, &w), "throttle");
  EXPECT(guards_adaptive_throttle_report(th, S, 10), GUARDS_RESULT_INVALID_ENUM, "outcome");
  ac = ad; ac.window_ns = 0;
  EXPECT_BAD_CONFIG(guards_adaptive_throttle_new, guards_adaptive_throttle, ac, GUARDS_RESULT_CONFIG_ZERO, "window");
  ac = ad; ac.k = NAN;
  EXPECT_BAD_CONFIG(guards_adaptive_throttle_new, guards_adaptive_throttle, ac, GUARDS_RESULT_CONFIG_NOT_FINITE, "k");
  ac = ad; ac.aggression = 0.5;
  EXPECT_BAD_CONFIG(guards_adaptive_throttle_new, guards_adaptive_throttle, ac, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "aggression");
  ac = ad; ac.max_reject_probability = 1.5;
  EXPECT_BAD_CONFIG(guards_adaptive_throttle_new, guards_adaptive_throttle, ac, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "max_reject_probability");
  ac = ad; ac.min_requests = UINT64_MAX;
  EXPECT_BAD_CONFIG(guards_adaptive_throttle_new, guards_adaptive_throttle, ac, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "min_requests");
  guards_adaptive_throttle_free(th);
}

static void test_brownout(void) {
  guards_brownout_config d, c;
  guards_brownout_config_default(&d);
  guards_brownout *b = NULL;
  CHECK_RC(guards_brownout_new(&d, &b), GUARDS_RESULT_OK);
  uint32_t dec;
  guards_brownout_stats s;
  EXPECT_NULL(guards_brownout_new(NULL, &b), "config");
  EXPECT_NULL(guards_brownout_on_refusal(NULL, 0, &dec), "brownout");
  EXPECT_NULL(guards_brownout_on_refusal(b, 0, NULL), "out");
  EXPECT_NULL(guards_brownout_report(b, 0, NULL), "out");
  EXPECT_NULL(guards_brownout_on_full(NULL), "brownout");
  EXPECT_NULL(guards_brownout_get_stats(NULL, &s), "brownout");
  EXPECT(guards_brownout_report(b, 10, &dec), GUARDS_RESULT_INVALID_ENUM, "outcome");
  EXPECT(guards_brownout_on_refusal(b, UINT32_MAX, &dec), GUARDS_RESULT_INVALID_ENUM, "kind");
  c = d; c.fallback_on = 0x80;
  EXPECT_BAD_CONFIG(guards_brownout_new, guards_brownout, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "fallback_on");
  c = d; c.fallback_on = 0x101; /* would be a valid 0x01 if truncated to a byte */
  EXPECT_BAD_CONFIG(guards_brownout_new, guards_brownout, c, GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "fallback_on");
  c = d; c.optional = true; c.fallback_on = 0;
  EXPECT_BAD_CONFIG(guards_brownout_new, guards_brownout, c, GUARDS_RESULT_CONFIG_INCONSISTENT, "fallback_on");

  guards_brownout_table *t = NULL;
  guards_brownout_operation op = {.key = 1, .config = d};
  EXPECT_NULL(guards_brownout_table_new(NULL, 1, &t), "ops");
  EXPECT_NULL(guards_brownout_table_new(&op, 1, NULL), "out");
  EXPECT(guards_brownout_table_new(&op, 1025, &t), GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "n");
  CHECK(t == NULL);
  op.config.fallback_on = 0x200;
  EXPECT(guards_brownout_table_new(&op, 1, &t), GUARDS_RESULT_CONFIG_OUT_OF_RANGE, "fallback_on");
  CHECK(t == NULL);
  EXPECT_NULL(guards_brownout_table_on_refusal(NULL, 1, 0, &dec), "table");
  EXPECT_NULL(guards_brownout_table_totals(NULL, &s), "table");
  guards_brownout_free(b);
}

void bad_input_tests(void) {
  run("bad_input_breaker", test_breaker);
  run("bad_input_keyed_breakers", test_keyed);
  run("bad_input_bulkhead", test_bulkhead);
  run("bad_input_retry_budget", test_retry_budget);
  run("bad_input_retry_policy_driver_backoff", test_retry_policy_driver_backoff);
  run("bad_input_limiter_admission", test_limiter_admission);
  run("bad_input_queue_discipline", test_queue);
  run("bad_input_tracker_hedging_throttle", test_tracker_hedging_throttle);
  run("bad_input_brownout", test_brownout);
}
