/* Several pthreads sharing one guard, with the guard's invariants checked: the bulkhead's
 * cap, the limiter's and the door's thresholds, the breaker's and the budgets' books, the
 * take-once permits (a double report never succeeds), counters that add up. The queue
 * discipline has one owner: threads share it behind a mutex, as its docs say. */
#include "test.h"

#include <pthread.h>

enum { THREADS = 4, ROUNDS = 4000 };

/* Run `fn(arg)` on THREADS threads at once and wait for them. */
static void on_threads(void *(*fn)(void *), void *arg) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, fn, arg) == 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
}

static void raise_max(atomic_long *max, long v) {
  long seen = atomic_load(max);
  while (v > seen && !atomic_compare_exchange_weak(max, &seen, v)) {
  }
}

/* ---- bulkhead: never more than the cap inside ---- */

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
      raise_max(&run->max_holders, atomic_fetch_add(&run->holders, 1) + 1);
      atomic_fetch_add(&run->granted, 1);
      atomic_fetch_sub(&run->holders, 1);
      CHECK(guards_bulkhead_report(run->h, p, GUARDS_OUTCOME_SUCCESS) == GUARDS_RESULT_OK);
      if (i % 7 == 0 && guards_bulkhead_release(run->h, p) == GUARDS_RESULT_OK)
        atomic_fetch_add(&run->double_ok, 1);
    } else {
      CHECK(rc == GUARDS_RESULT_BULKHEAD_FULL);
      atomic_fetch_add(&run->refused, 1);
    }
  }
  return NULL;
}

static void test_bulkhead(void) {
  guards_bulkhead_config c = {.max_concurrent = 3};
  struct bulkhead_run run = {0};
  CHECK_RC(guards_bulkhead_new(&c, &run.h), GUARDS_RESULT_OK);
  on_threads(bulkhead_worker, &run);
  guards_bulkhead_stats s;
  CHECK_RC(guards_bulkhead_get_stats(run.h, &s), GUARDS_RESULT_OK);
  CHECK(atomic_load(&run.max_holders) <= 3);
  CHECK(atomic_load(&run.double_ok) == 0);
  CHECK(s.in_flight == 0 && s.released == s.acquired);
  CHECK(s.acquired == (uint64_t)atomic_load(&run.granted));
  CHECK(s.rejected == (uint64_t)atomic_load(&run.refused));
  CHECK(s.acquired + s.rejected == (uint64_t)THREADS * ROUNDS);
  guards_bulkhead_free(run.h);
}

/* ---- breaker: every report counted once, it never opens below its threshold ---- */

struct breaker_run {
  guards_circuit_breaker *b;
  atomic_long reported, double_ok;
};

static void *breaker_worker(void *arg) {
  struct breaker_run *run = arg;
  guards_permit held[8];
  int n = 0;
  for (int i = 0; i < ROUNDS; i++) {
    guards_permit p;
    guards_result rc = guards_circuit_breaker_try_acquire(run->b, guards_now_ns(), &p);
    if (rc != GUARDS_RESULT_OK) {
      CHECK(rc == GUARDS_RESULT_BREAKER_OPEN || rc == GUARDS_RESULT_BREAKER_HALF_OPEN_FULL);
      continue;
    }
    held[n++] = p;
    if (n == 8 || i == ROUNDS - 1) {
      for (int k = 0; k < n; k++) {
        /* Per thread: failure, success, success, ignored (never above 50 % failures). */
        uint32_t outcome = (k % 4 == 0)   ? GUARDS_OUTCOME_TIMEOUT
                           : (k % 4 == 3) ? GUARDS_OUTCOME_IGNORED
                                          : GUARDS_OUTCOME_SUCCESS;
        CHECK(guards_circuit_breaker_report(run->b, held[k], outcome, guards_now_ns()) ==
              GUARDS_RESULT_OK);
        atomic_fetch_add(&run->reported, 1);
        if (guards_circuit_breaker_report(run->b, held[k], outcome, guards_now_ns()) ==
            GUARDS_RESULT_OK)
          atomic_fetch_add(&run->double_ok, 1);
      }
      n = 0;
    }
  }
  return NULL;
}

static void test_breaker(void) {
  /* Any 30 consecutive outcomes hold at most 10 + 4 failures: below 50 %, never opens. */
  guards_circuit_breaker_config c;
  guards_circuit_breaker_config_default(&c);
  c.window_size = 30;
  struct breaker_run run = {0};
  CHECK_RC(guards_circuit_breaker_new(&c, &run.b), GUARDS_RESULT_OK);
  on_threads(breaker_worker, &run);
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_circuit_breaker_get_stats(run.b, &s), GUARDS_RESULT_OK);
  uint64_t outstanding = 1;
  CHECK_RC(guards_circuit_breaker_outstanding(run.b, &outstanding), GUARDS_RESULT_OK);
  CHECK(outstanding == 0 && atomic_load(&run.double_ok) == 0);
  CHECK(s.successes + s.failures + s.ignored + s.discarded + s.probe_successes + s.probe_failures ==
        (uint64_t)atomic_load(&run.reported));
  CHECK(s.closed_to_open == 0);
  guards_circuit_breaker_free(run.b);
}

/* ---- keyed breakers: one shared key and one own key per thread ---- */

struct keyed_run {
  guards_keyed_breakers *k;
  atomic_int next_id;
  atomic_long on_shared;
};

static void *keyed_worker(void *arg) {
  struct keyed_run *run = arg;
  uint64_t own = 100 + (uint64_t)atomic_fetch_add(&run->next_id, 1);
  for (int i = 0; i < ROUNDS; i++) {
    uint64_t key = (i % 2) ? own : 7;
    guards_permit p;
    CHECK_RC(guards_keyed_breakers_try_acquire(run->k, key, S, &p), GUARDS_RESULT_OK);
    CHECK_RC(guards_keyed_breakers_report(run->k, p, GUARDS_OUTCOME_SUCCESS, S), GUARDS_RESULT_OK);
    if (key == 7) atomic_fetch_add(&run->on_shared, 1);
  }
  return NULL;
}

static void test_keyed(void) {
  guards_keyed_breakers_config c;
  guards_keyed_breakers_config_default(&c);
  struct keyed_run run = {0};
  CHECK_RC(guards_keyed_breakers_new(&c, &run.k), GUARDS_RESULT_OK);
  on_threads(keyed_worker, &run);
  guards_keyed_breakers_set_stats ss;
  CHECK_RC(guards_keyed_breakers_get_set_stats(run.k, &ss), GUARDS_RESULT_OK);
  CHECK(ss.entries == 1 + THREADS && ss.full == 0); /* concurrent inserts agree on a key */
  guards_circuit_breaker_stats s;
  CHECK_RC(guards_keyed_breakers_get_stats(run.k, 7, &s), GUARDS_RESULT_OK);
  CHECK(s.successes == (uint64_t)atomic_load(&run.on_shared));
  for (uint64_t own = 100; own < 100 + THREADS; own++) {
    CHECK_RC(guards_keyed_breakers_get_stats(run.k, own, &s), GUARDS_RESULT_OK);
    CHECK(s.successes == ROUNDS / 2);
  }
  guards_keyed_breakers_free(run.k);
}

/* ---- limiter and admission: never more in flight than the threshold ---- */

struct limit_run {
  guards_limiter *l;
  guards_admission *a;
  atomic_long holders, max_holders, granted, refused;
};

static void *limit_worker(void *arg) {
  struct limit_run *run = arg;
  for (int i = 0; i < ROUNDS; i++) {
    guards_permit p;
    guards_result rc = run->l ? guards_limiter_try_acquire(run->l, S, (uint32_t)(i % 8), &p)
                              : guards_admission_try_acquire(run->a, S, (uint32_t)(i % 8), &p);
    if (rc != GUARDS_RESULT_OK) {
      CHECK(rc == GUARDS_RESULT_LIMITER_LIMIT_REACHED || rc == GUARDS_RESULT_ADMISSION_LIMIT_REACHED);
      atomic_fetch_add(&run->refused, 1);
      continue;
    }
    raise_max(&run->max_holders, atomic_fetch_add(&run->holders, 1) + 1);
    atomic_fetch_add(&run->granted, 1);
    atomic_fetch_sub(&run->holders, 1);
    uint32_t outcome = i % 3 ? GUARDS_OUTCOME_SUCCESS : GUARDS_OUTCOME_PERMANENT;
    rc = run->l ? guards_limiter_report(run->l, p, outcome, S + MS)
                : guards_admission_report(run->a, p, outcome, S + MS);
    CHECK(rc == GUARDS_RESULT_OK);
  }
  return NULL;
}

static void test_limiter_and_admission(void) {
  guards_limiter_config lc;
  guards_limiter_config_default(&lc);
  lc.limit.algorithm = GUARDS_LIMIT_ALGORITHM_FIXED;
  lc.limit.fixed = 3;
  struct limit_run run = {0};
  CHECK_RC(guards_limiter_new(&lc, &run.l), GUARDS_RESULT_OK);
  on_threads(limit_worker, &run);
  guards_limiter_stats s;
  CHECK_RC(guards_limiter_get_stats(run.l, &s), GUARDS_RESULT_OK);
  CHECK(atomic_load(&run.max_holders) <= 3 && s.in_flight == 0);
  CHECK(s.acquired == (uint64_t)atomic_load(&run.granted));
  CHECK(s.rejected_limit_reached == (uint64_t)atomic_load(&run.refused));
  CHECK(s.succeeded + s.ignored == s.acquired);
  guards_limiter_free(run.l);

  guards_admission_config ac;
  guards_admission_config_default(&ac);
  for (int i = 0; i < 8; i++) ac.limits[i] = 3;
  struct limit_run door = {0};
  CHECK_RC(guards_admission_new(&ac, &door.a), GUARDS_RESULT_OK);
  on_threads(limit_worker, &door);
  guards_admission_stats as;
  CHECK_RC(guards_admission_get_stats(door.a, &as), GUARDS_RESULT_OK);
  CHECK(atomic_load(&door.max_holders) <= 3 && as.in_flight == 0);
  CHECK(as.admitted == (uint64_t)atomic_load(&door.granted));
  CHECK(as.refused_limit_reached == (uint64_t)atomic_load(&door.refused));
  guards_admission_free(door.a);
}

/* ---- retry budgets: tokens conserved, receipts refunded once ---- */

struct budget_run {
  guards_retry_budget *b;
  atomic_long withdrawn, bad_balance, double_ok;
};

static void *token_worker(void *arg) {
  struct budget_run *run = arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK(guards_retry_budget_deposit(run->b, S) == GUARDS_RESULT_OK);
    guards_retry_receipt r;
    if (guards_retry_budget_withdraw(run->b, S, GUARDS_RETRY_CAUSE_TRANSIENT, &r) == GUARDS_RESULT_OK) {
      atomic_fetch_add(&run->withdrawn, 1);
      CHECK(guards_retry_budget_report(run->b, S, GUARDS_OUTCOME_SUCCESS, &r) == GUARDS_RESULT_OK);
      if (guards_retry_budget_report(run->b, S, GUARDS_OUTCOME_SUCCESS, &r) == GUARDS_RESULT_OK)
        atomic_fetch_add(&run->double_ok, 1);
    }
    int64_t t;
    CHECK(guards_retry_budget_tokens_micros(run->b, S, &t) == GUARDS_RESULT_OK);
    if (t < 0 || t > 10000000) atomic_fetch_add(&run->bad_balance, 1);
  }
  return NULL;
}

static void *aws_worker(void *arg) {
  struct budget_run *run = arg;
  for (int i = 0; i < ROUNDS; i++) {
    guards_retry_receipt r;
    guards_result rc = guards_retry_budget_withdraw(run->b, S, GUARDS_RETRY_CAUSE_TIMEOUT, &r);
    if (rc == GUARDS_RESULT_OK) {
      atomic_fetch_add(&run->withdrawn, 1);
      CHECK(guards_retry_budget_report(run->b, S, GUARDS_OUTCOME_SUCCESS, &r) == GUARDS_RESULT_OK);
      if (guards_retry_budget_report(run->b, S, GUARDS_OUTCOME_SUCCESS, &r) == GUARDS_RESULT_OK)
        atomic_fetch_add(&run->double_ok, 1);
    }
  }
  return NULL;
}

static void test_budgets(void) {
  guards_retry_budget_config c;
  guards_retry_budget_config_default(&c);
  struct budget_run run = {0};
  CHECK_RC(guards_retry_budget_new(&c, &run.b), GUARDS_RESULT_OK);
  on_threads(token_worker, &run);
  guards_retry_budget_stats s;
  CHECK_RC(guards_retry_budget_get_stats(run.b, &s), GUARDS_RESULT_OK);
  int64_t t = 0;
  CHECK_RC(guards_retry_budget_tokens_micros(run.b, S, &t), GUARDS_RESULT_OK);
  /* Conservation: start + accepted deposits - withdrawals = balance; deposits beyond the
   * cap are lost, so withdrawals <= 10 + 0.1 deposits, and the balance is exact. */
  CHECK(atomic_load(&run.bad_balance) == 0 && atomic_load(&run.double_ok) == 0);
  CHECK(s.withdrawals == (uint64_t)atomic_load(&run.withdrawn));
  CHECK(s.deposits == (uint64_t)THREADS * ROUNDS);
  CHECK(s.withdrawals * 1000000 <= 10000000 + s.deposits * 100000);
  CHECK((uint64_t)t + s.withdrawals * 1000000 <= 10000000 + s.deposits * 100000);
  guards_retry_budget_free(run.b);

  c.mode = GUARDS_RETRY_BUDGET_MODE_AWS;
  struct budget_run aws = {0};
  CHECK_RC(guards_retry_budget_new(&c, &aws.b), GUARDS_RESULT_OK);
  on_threads(aws_worker, &aws);
  CHECK_RC(guards_retry_budget_get_stats(aws.b, &s), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_budget_tokens_micros(aws.b, S, &t), GUARDS_RESULT_OK);
  CHECK(t == 500000000); /* every retry succeeded and was refunded exactly once */
  CHECK(s.refunds == s.withdrawals && atomic_load(&aws.double_ok) == 0);
  guards_retry_budget_free(aws.b);
}

/* ---- shared read-mostly guards: counters add up ---- */

struct counting_run {
  guards_latency_tracker *t;
  guards_hedging *h;
  guards_adaptive_throttle *th;
  guards_brownout_table *table;
  guards_retry_policy *p;
  uint64_t key;
  atomic_long throttled, admitted;
};

static void *counting_worker(void *arg) {
  struct counting_run *run = arg;
  guards_retry_context ctx;
  guards_retry_context_default(&ctx);
  ctx.outcome = GUARDS_OUTCOME_TIMEOUT;
  for (int i = 0; i < ROUNDS; i++) {
    uint64_t now = 10 * S + (uint64_t)i * MS;
    CHECK(guards_latency_tracker_record(run->t, now, (uint64_t)(i % 100 + 1) * MS) == GUARDS_RESULT_OK);
    CHECK(guards_hedging_report(run->h, now, now - 5 * MS, GUARDS_OUTCOME_SUCCESS) == GUARDS_RESULT_OK);
    guards_result rc = guards_adaptive_throttle_try_acquire(run->th, now);
    if (rc == GUARDS_RESULT_OK) {
      atomic_fetch_add(&run->admitted, 1);
      CHECK(guards_adaptive_throttle_report(run->th, now, i % 2 ? GUARDS_OUTCOME_SUCCESS : GUARDS_OUTCOME_TIMEOUT) == GUARDS_RESULT_OK);
    } else {
      CHECK(rc == GUARDS_RESULT_THROTTLED);
      atomic_fetch_add(&run->throttled, 1);
    }
    uint32_t d;
    CHECK(guards_brownout_table_on_refusal(run->table, run->key, GUARDS_REFUSAL_KIND_TIMEOUT, &d) == GUARDS_RESULT_OK);
    CHECK(d == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
    guards_retry_decision rd;
    CHECK(guards_retry_policy_decide(run->p, now, &ctx, NULL, &rd) == GUARDS_RESULT_OK);
    CHECK(rd.kind == GUARDS_RETRY_DECISION_KIND_RETRY);
  }
  return NULL;
}

static void test_counters_add_up(void) {
  struct counting_run run = {0};
  guards_latency_tracker_config tc;
  guards_latency_tracker_config_default(&tc);
  tc.window_ns = 3600 * S;
  CHECK_RC(guards_latency_tracker_new(&tc, &run.t), GUARDS_RESULT_OK);
  guards_hedging_config hc;
  guards_hedging_config_default(&hc);
  hc.tracker.window_ns = 3600 * S;
  CHECK_RC(guards_hedging_new(&hc, &run.h), GUARDS_RESULT_OK);
  guards_adaptive_throttle_config ac;
  guards_adaptive_throttle_config_default(&ac);
  CHECK_RC(guards_adaptive_throttle_new(&ac, &run.th), GUARDS_RESULT_OK);
  guards_brownout_operation op;
  CHECK_RC(guards_key_of("op", 2, &op.key), GUARDS_RESULT_OK);
  guards_brownout_config_default(&op.config);
  op.config.optional = true;
  run.key = op.key;
  CHECK_RC(guards_brownout_table_new(&op, 1, &run.table), GUARDS_RESULT_OK);
  guards_retry_policy_config pc;
  guards_retry_policy_config_default(&pc);
  CHECK_RC(guards_retry_policy_new(&pc, &run.p), GUARDS_RESULT_OK);

  on_threads(counting_worker, &run);

  const uint64_t total = (uint64_t)THREADS * ROUNDS;
  uint64_t count = 0;
  CHECK_RC(guards_latency_tracker_count(run.t, 10 * S + ROUNDS * MS, &count), GUARDS_RESULT_OK);
  CHECK_EQ_U64(count, total);
  guards_latency_tracker_stats ts;
  CHECK_RC(guards_latency_tracker_get_stats(run.t, &ts), GUARDS_RESULT_OK);
  CHECK(ts.recorded == total && ts.stale == 0);
  uint64_t delay = 0;
  CHECK_RC(guards_hedging_hedge_delay(run.h, 10 * S + ROUNDS * MS, &delay), GUARDS_RESULT_OK);
  /* Every attempt took 5 ms: the P95 is 5 ms within the tracker's 1/64. */
  CHECK((delay > 5 * MS ? delay - 5 * MS : 5 * MS - delay) * 64 <= 5 * MS);
  guards_adaptive_throttle_stats as;
  CHECK_RC(guards_adaptive_throttle_get_stats(run.th, &as), GUARDS_RESULT_OK);
  CHECK(as.admitted == (uint64_t)atomic_load(&run.admitted));
  CHECK(as.throttled == (uint64_t)atomic_load(&run.throttled));
  CHECK(as.admitted + as.throttled == total);
  CHECK(as.accepted + as.rejected_by_backend == as.admitted);
  guards_brownout_stats bs;
  CHECK_RC(guards_brownout_table_totals(run.table, &bs), GUARDS_RESULT_OK);
  CHECK(bs.degraded == total);
  guards_retry_policy_stats ps;
  CHECK_RC(guards_retry_policy_get_stats(run.p, &ps), GUARDS_RESULT_OK);
  CHECK(ps.retries == total);

  guards_latency_tracker_free(run.t);
  guards_hedging_free(run.h);
  guards_adaptive_throttle_free(run.th);
  guards_brownout_table_free(run.table);
  guards_retry_policy_free(run.p);
}

/* ---- the queue discipline: one owner, shared behind a mutex ---- */

struct queue_run {
  guards_queue_discipline *q;
  pthread_mutex_t m;
  atomic_int next_id;
  atomic_long pushed, full, served, empty;
};

static void *queue_worker(void *arg) {
  struct queue_run *run = arg;
  for (int i = 0; i < ROUNDS; i++) {
    pthread_mutex_lock(&run->m);
    uint64_t now = guards_now_ns();
    if (i % 3 != 2) {
      uint64_t id = (uint64_t)atomic_fetch_add(&run->next_id, 1);
      guards_result rc = guards_queue_discipline_push(run->q, now, id, (uint32_t)(id % 8), GUARDS_NO_DEADLINE);
      CHECK(rc == GUARDS_RESULT_OK || rc == GUARDS_RESULT_QUEUE_FULL);
      atomic_fetch_add(rc == GUARDS_RESULT_OK ? &run->pushed : &run->full, 1);
    } else {
      guards_dequeued d;
      guards_result rc = guards_queue_discipline_pop(run->q, now, &d);
      CHECK(rc == GUARDS_RESULT_OK || rc == GUARDS_RESULT_EMPTY);
      atomic_fetch_add(rc == GUARDS_RESULT_OK ? &run->served : &run->empty, 1);
    }
    pthread_mutex_unlock(&run->m);
  }
  return NULL;
}

static void test_queue_behind_a_mutex(void) {
  guards_queue_discipline_config c;
  guards_queue_discipline_config_default(&c);
  c.capacity = 64;
  struct queue_run run = {0};
  pthread_mutex_init(&run.m, NULL);
  CHECK_RC(guards_queue_discipline_new(&c, &run.q), GUARDS_RESULT_OK);
  on_threads(queue_worker, &run);
  guards_queue_discipline_stats s;
  guards_queue_discipline_state st;
  CHECK_RC(guards_queue_discipline_get_stats(run.q, &s), GUARDS_RESULT_OK);
  CHECK_RC(guards_queue_discipline_get_state(run.q, guards_now_ns(), &st), GUARDS_RESULT_OK);
  CHECK(s.enqueued == (uint64_t)atomic_load(&run.pushed));
  CHECK(s.rejected_full == (uint64_t)atomic_load(&run.full));
  CHECK(s.served_fifo + s.served_lifo == (uint64_t)atomic_load(&run.served));
  CHECK(s.enqueued == s.served_fifo + s.served_lifo + s.dropped_age_limit + s.dropped_deadline +
                          s.cancelled + st.len);
  CHECK(st.len <= 64);
  guards_queue_discipline_free(run.q);
  pthread_mutex_destroy(&run.m);
}

/* ---- short-lived threads: each keeps a slot reserved and abandons it when it exits ---- */

struct churn_run {
  guards_bulkhead *h;
  atomic_long granted, refused, errors;
};

static void *churn_worker(void *arg) {
  struct churn_run *run = arg;
  for (int i = 0; i < 100; i++) {
    guards_permit p;
    guards_result rc = guards_bulkhead_try_acquire(run->h, &p);
    if (rc == GUARDS_RESULT_OK) {
      atomic_fetch_add(&run->granted, 1);
      if (guards_bulkhead_release(run->h, p) != GUARDS_RESULT_OK) atomic_fetch_add(&run->errors, 1);
    } else if (rc == GUARDS_RESULT_BULKHEAD_FULL) {
      atomic_fetch_add(&run->refused, 1);
    } else {
      atomic_fetch_add(&run->errors, 1); /* e.g. PERMIT_SLOTS_EXHAUSTED: must never happen */
    }
  }
  return NULL;
}

static void test_short_lived_threads(void) {
  /* A thread-per-connection server: 100 rounds of 4 fresh threads on one bulkhead of 2. */
  guards_bulkhead_config c = {.max_concurrent = 2};
  struct churn_run run = {0};
  CHECK_RC(guards_bulkhead_new(&c, &run.h), GUARDS_RESULT_OK);
  for (int round = 0; round < 100; round++) on_threads(churn_worker, &run);
  guards_bulkhead_stats s;
  CHECK_RC(guards_bulkhead_get_stats(run.h, &s), GUARDS_RESULT_OK);
  CHECK(atomic_load(&run.errors) == 0);
  CHECK(s.in_flight == 0 && s.acquired == (uint64_t)atomic_load(&run.granted));
  CHECK(s.acquired + s.rejected == 100ull * THREADS * 100);
  guards_bulkhead_free(run.h);
}

void thread_tests(void) {
  run("threads_share_a_bulkhead", test_bulkhead);
  run("threads_share_a_breaker", test_breaker);
  run("threads_share_keyed_breakers", test_keyed);
  run("threads_share_a_limiter_and_a_door", test_limiter_and_admission);
  run("threads_share_retry_budgets", test_budgets);
  run("threads_share_trackers_throttles_tables_policies", test_counters_add_up);
  run("threads_share_a_queue_behind_a_mutex", test_queue_behind_a_mutex);
  run("short_lived_threads_share_a_bulkhead", test_short_lived_threads);
}
