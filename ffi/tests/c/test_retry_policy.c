/* The retry policy's decision, rule by rule (core's order), with its own generator. */
#include "test.h"

static guards_retry_policy *policy_with(uint32_t max_attempts, uint32_t jitter) {
  guards_retry_policy_config c;
  CHECK_RC(guards_retry_policy_config_default(&c), GUARDS_RESULT_OK);
  c.max_attempts = max_attempts;
  c.backoff.base_ns = 25 * MS;
  c.backoff.jitter = jitter;
  guards_retry_policy *p = NULL;
  CHECK_RC(guards_retry_policy_new(&c, &p), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_policy_reseed(p, 1), GUARDS_RESULT_OK);
  return p;
}

static guards_retry_context ctx_of(uint32_t attempts, uint32_t outcome) {
  guards_retry_context c;
  memset(&c, 0xEE, sizeof c);
  CHECK_RC(guards_retry_context_default(&c), GUARDS_RESULT_OK);
  c.attempts_made = attempts;
  c.outcome = outcome;
  return c;
}

static guards_retry_decision decide(guards_retry_policy *p, guards_retry_context c,
                                    guards_retry_budget *gate) {
  guards_retry_decision d;
  memset(&d, 0xEE, sizeof d);
  CHECK_RC(guards_retry_policy_decide(p, S, &c, gate, &d), GUARDS_RESULT_OK);
  return d;
}

static void test_defaults(void) {
  guards_retry_policy_config c;
  CHECK_RC(guards_retry_policy_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.max_attempts == 3 && c.retry_timeouts && c.retry_connection_errors);
  CHECK(c.retry_other_transient && c.retry_throttled && c.honor_retry_after);
  CHECK(c.max_retry_after_ns == 20 * S && c.min_attempt_time_ns == 1 * MS);
  CHECK(c.unkeyed_side_effects == GUARDS_UNKEYED_SIDE_EFFECTS_NEVER);
  CHECK(c.backoff.base_ns == 25 * MS && c.backoff.cap_ns == 20 * S);
  CHECK(c.backoff.multiplier == 2.0 && c.backoff.jitter == GUARDS_JITTER_FULL);
  guards_retry_context x;
  CHECK_RC(guards_retry_context_default(&x), GUARDS_RESULT_OK);
  CHECK(x.attempts_made == 1 && x.retry_after_ns == GUARDS_NO_RETRY_AFTER);
  CHECK(x.time_left_ns == GUARDS_NO_DEADLINE && x.prev_delay_ns == 0);
  CHECK(x.idempotency == GUARDS_IDEMPOTENCY_IDEMPOTENT);
}

/* Core's example: Basketly's shop-api calling stock (C3), 2 attempts, full jitter. */
static void test_seed_c3(void) {
  guards_retry_policy *p = policy_with(2, GUARDS_JITTER_FULL);
  guards_retry_context first = ctx_of(1, GUARDS_OUTCOME_TIMEOUT);
  first.idempotency = GUARDS_IDEMPOTENCY_KEYED_SIDE_EFFECT;
  first.time_left_ns = 1900 * MS;
  guards_retry_decision d = decide(p, first, NULL);
  CHECK(d.kind == GUARDS_RETRY_DECISION_KIND_RETRY && d.after_ns <= 25 * MS);
  CHECK(d.give_up_reason == 0);

  guards_retry_context second = ctx_of(2, GUARDS_OUTCOME_TIMEOUT);
  second.prev_delay_ns = d.after_ns;
  d = decide(p, second, NULL);
  CHECK(d.kind == GUARDS_RETRY_DECISION_KIND_GIVE_UP);
  CHECK(d.give_up_reason == GUARDS_GIVE_UP_REASON_ATTEMPTS_EXHAUSTED && d.after_ns == 0);

  d = decide(p, ctx_of(1, GUARDS_OUTCOME_OVERLOADED), NULL);
  CHECK(d.give_up_reason == GUARDS_GIVE_UP_REASON_OVERLOADED);
  guards_retry_context unkeyed = ctx_of(1, GUARDS_OUTCOME_TIMEOUT);
  unkeyed.idempotency = GUARDS_IDEMPOTENCY_UNKEYED_SIDE_EFFECT;
  d = decide(p, unkeyed, NULL);
  CHECK(d.give_up_reason == GUARDS_GIVE_UP_REASON_NOT_IDEMPOTENT);

  guards_retry_policy_stats s;
  CHECK_RC(guards_retry_policy_get_stats(p, &s), GUARDS_RESULT_OK);
  CHECK(s.retries == 1 && s.attempts_exhausted == 1 && s.overloaded == 1 && s.not_idempotent == 1);
  guards_retry_policy_free(p);
}

/* The retry policy column of the call contract. */
static void test_outcome_classes(void) {
  guards_retry_policy *p = policy_with(3, GUARDS_JITTER_NONE);
  static const struct {
    uint32_t outcome, retry, reason;
  } cases[] = {
      {GUARDS_OUTCOME_SUCCESS, 0, GUARDS_GIVE_UP_REASON_SUCCEEDED},
      {GUARDS_OUTCOME_TIMEOUT, 1, 0},
      {GUARDS_OUTCOME_CONNECTION_ERROR, 1, 0},
      {GUARDS_OUTCOME_OTHER_TRANSIENT, 1, 0},
      {GUARDS_OUTCOME_THROTTLED, 1, 0},
      {GUARDS_OUTCOME_OVERLOADED, 0, GUARDS_GIVE_UP_REASON_OVERLOADED},
      {GUARDS_OUTCOME_PERMANENT, 0, GUARDS_GIVE_UP_REASON_PERMANENT},
      {GUARDS_OUTCOME_REJECTED, 0, GUARDS_GIVE_UP_REASON_REJECTED},
      {GUARDS_OUTCOME_IGNORED, 0, GUARDS_GIVE_UP_REASON_IGNORED},
      {GUARDS_OUTCOME_CANCELLED, 0, GUARDS_GIVE_UP_REASON_CANCELLED},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    guards_retry_decision d = decide(p, ctx_of(1, cases[i].outcome), NULL);
    if (cases[i].retry) {
      CHECK(d.kind == GUARDS_RETRY_DECISION_KIND_RETRY && d.after_ns == 25 * MS);
    } else {
      CHECK(d.kind == GUARDS_RETRY_DECISION_KIND_GIVE_UP && d.give_up_reason == cases[i].reason);
    }
  }
  guards_retry_policy_free(p);

  /* A class switched off is not retryable. */
  guards_retry_policy_config c;
  guards_retry_policy_config_default(&c);
  c.retry_timeouts = false;
  CHECK_RC(guards_retry_policy_new(&c, &p), GUARDS_RESULT_OK);
  CHECK(decide(p, ctx_of(1, GUARDS_OUTCOME_TIMEOUT), NULL).give_up_reason ==
        GUARDS_GIVE_UP_REASON_NOT_RETRYABLE);
  guards_retry_policy_free(p);
}

static void test_waits_and_deadline(void) {
  guards_retry_policy *p = policy_with(5, GUARDS_JITTER_NONE);
  /* Backoff without jitter: 25, 50, 100 ms for retries 0, 1, 2. */
  for (uint32_t a = 1; a <= 3; a++) {
    guards_retry_decision d = decide(p, ctx_of(a, GUARDS_OUTCOME_TIMEOUT), NULL);
    CHECK(d.after_ns == (25 * MS) << (a - 1));
  }
  /* Retry-After: waited when longer than the backoff, never shortened. */
  guards_retry_context t = ctx_of(1, GUARDS_OUTCOME_THROTTLED);
  t.retry_after_ns = 2 * S;
  CHECK(decide(p, t, NULL).after_ns == 2 * S);
  t.retry_after_ns = 1 * MS;
  CHECK(decide(p, t, NULL).after_ns == 25 * MS);
  t.retry_after_ns = 21 * S; /* above max_retry_after (20 s) */
  CHECK(decide(p, t, NULL).give_up_reason == GUARDS_GIVE_UP_REASON_RETRY_AFTER_TOO_LONG);
  /* The wait plus min_attempt_time (1 ms) must fit, strictly, in the time left. */
  guards_retry_context dl = ctx_of(1, GUARDS_OUTCOME_TIMEOUT);
  dl.time_left_ns = 26 * MS;
  CHECK(decide(p, dl, NULL).give_up_reason == GUARDS_GIVE_UP_REASON_DEADLINE_EXCEEDED);
  dl.time_left_ns = 26 * MS + 1;
  CHECK(decide(p, dl, NULL).kind == GUARDS_RETRY_DECISION_KIND_RETRY);
  guards_retry_policy_free(p);
}

static void test_budget_is_asked_last(void) {
  guards_retry_budget_config bc;
  guards_retry_budget_config_default(&bc);
  bc.token_bucket.capacity = 1.0;
  bc.token_bucket.ratio = 0.0;
  guards_retry_budget *b = NULL;
  CHECK_RC(guards_retry_budget_new(&bc, &b), GUARDS_RESULT_OK);
  guards_retry_policy *p = policy_with(3, GUARDS_JITTER_NONE);
  /* A refusal by an earlier rule charges nothing. */
  CHECK(decide(p, ctx_of(1, GUARDS_OUTCOME_OVERLOADED), b).give_up_reason ==
        GUARDS_GIVE_UP_REASON_OVERLOADED);
  CHECK(decide(p, ctx_of(1, GUARDS_OUTCOME_TIMEOUT), b).kind == GUARDS_RETRY_DECISION_KIND_RETRY);
  CHECK(decide(p, ctx_of(1, GUARDS_OUTCOME_TIMEOUT), b).give_up_reason ==
        GUARDS_GIVE_UP_REASON_BUDGET_EXHAUSTED);
  guards_retry_budget_stats s;
  CHECK_RC(guards_retry_budget_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.withdrawals == 1 && s.refusals == 1);
  guards_retry_policy_free(p);
  guards_retry_budget_free(b);
}

static void test_same_seed_same_waits(void) {
  guards_retry_policy *a = policy_with(100, GUARDS_JITTER_FULL);
  guards_retry_policy *b = policy_with(100, GUARDS_JITTER_FULL);
  int differ = 0;
  for (uint32_t i = 1; i < 50; i++) {
    guards_retry_context c = ctx_of(i, GUARDS_OUTCOME_CONNECTION_ERROR);
    guards_retry_decision x = decide(a, c, NULL), y = decide(b, c, NULL);
    CHECK(x.after_ns == y.after_ns);
    uint64_t ceiling = i - 1 < 10 ? (25 * MS) << (i - 1) : 20 * S;
    CHECK(x.after_ns <= ceiling);
    differ |= x.after_ns != ceiling;
  }
  CHECK(differ); /* jittered, not the ceiling every time */
  guards_retry_policy_config got;
  CHECK_RC(guards_retry_policy_get_config(a, &got), GUARDS_RESULT_OK);
  CHECK(got.max_attempts == 100);
  guards_retry_policy_free(a);
  guards_retry_policy_free(b);
}

/* Every attempt timing out and every wait at its largest: 3 × 60 ms + 25 ms + 50 ms. */
static void test_worst_case_time(void) {
  guards_retry_policy *p = policy_with(3, GUARDS_JITTER_NONE);
  uint64_t t = 0;
  CHECK_RC(guards_retry_policy_worst_case_time(p, 60 * MS, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, 255 * MS);
  CHECK_RC(guards_retry_policy_worst_case_time(p, UINT64_MAX, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, UINT64_MAX); /* saturates */
  guards_retry_policy_free(p);
  p = policy_with(1, GUARDS_JITTER_FULL); /* one attempt: no wait */
  CHECK_RC(guards_retry_policy_worst_case_time(p, 60 * MS, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, 60 * MS);
  CHECK_RC(guards_retry_policy_worst_case_time(NULL, 60 * MS, &t), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_retry_policy_worst_case_time(p, 60 * MS, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_retry_policy_free(p);
}

/* A decision that waits draws one word; one that gives up draws none. */
static void test_next_u64_counts_draws(void) {
  guards_retry_policy *p = policy_with(3, GUARDS_JITTER_FULL); /* reseeded with 1 */
  guards_retry_policy *q = policy_with(3, GUARDS_JITTER_FULL);
  guards_retry_decision d;
  guards_retry_context give_up = ctx_of(1, GUARDS_OUTCOME_PERMANENT);
  CHECK_RC(guards_retry_policy_decide(p, 0, &give_up, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_RETRY_DECISION_KIND_GIVE_UP);
  uint64_t a = 0, b = 0;
  CHECK_RC(guards_retry_policy_next_u64(p, &a), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_policy_next_u64(q, &b), GUARDS_RESULT_OK);
  CHECK(a == b); /* nothing drawn by the give-up */
  guards_retry_context wait = ctx_of(1, GUARDS_OUTCOME_TIMEOUT);
  CHECK_RC(guards_retry_policy_decide(p, 0, &wait, NULL, &d), GUARDS_RESULT_OK);
  CHECK(d.kind == GUARDS_RETRY_DECISION_KIND_RETRY);
  CHECK_RC(guards_retry_policy_next_u64(q, &b), GUARDS_RESULT_OK); /* the word p's wait drew */
  CHECK_RC(guards_retry_policy_next_u64(p, &a), GUARDS_RESULT_OK);
  CHECK_RC(guards_retry_policy_next_u64(q, &b), GUARDS_RESULT_OK);
  CHECK(a == b);
  CHECK_RC(guards_retry_policy_next_u64(NULL, &a), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_retry_policy_next_u64(p, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_retry_policy_free(p);
  guards_retry_policy_free(q);
}

void retry_policy_tests(void) {
  run("retry_policy_next_u64_counts_draws", test_next_u64_counts_draws);
  run("retry_policy_worst_case_time", test_worst_case_time);
  run("retry_policy_defaults", test_defaults);
  run("retry_policy_seed_c3", test_seed_c3);
  run("retry_policy_outcome_classes", test_outcome_classes);
  run("retry_policy_waits_and_deadline", test_waits_and_deadline);
  run("retry_policy_budget_is_asked_last", test_budget_is_asked_last);
  run("retry_policy_same_seed_same_waits", test_same_seed_same_waits);
}
