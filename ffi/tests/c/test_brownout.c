/* Brownout: fallback, fail fast or proceed, per operation (Basketly's C8), and the table. */
#include "test.h"

static guards_brownout *brownout_of(bool optional, bool exempt) {
  guards_brownout_config c;
  CHECK_RC(guards_brownout_config_default(&c), GUARDS_RESULT_OK);
  CHECK(!c.optional && !c.exempt && c.fallback_on == 0x7F);
  c.optional = optional;
  c.exempt = exempt;
  guards_brownout *b = NULL;
  CHECK_RC(guards_brownout_new(&c, &b), GUARDS_RESULT_OK);
  return b;
}

static uint32_t on_refusal(guards_brownout *b, uint32_t kind) {
  uint32_t d = 99;
  CHECK_RC(guards_brownout_on_refusal(b, kind, &d), GUARDS_RESULT_OK);
  return d;
}

static void test_decisions(void) {
  guards_brownout *badges = brownout_of(true, false);
  guards_brownout *reserve = brownout_of(false, false);
  guards_brownout *health = brownout_of(false, true);
  CHECK(on_refusal(badges, GUARDS_REFUSAL_KIND_BREAKER_OPEN) == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
  CHECK(on_refusal(reserve, GUARDS_REFUSAL_KIND_BREAKER_OPEN) == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  CHECK(on_refusal(health, GUARDS_REFUSAL_KIND_BULKHEAD_FULL) == GUARDS_BROWNOUT_DECISION_PROCEED);
  /* An exempt call that failed itself cannot proceed: it is required, fail fast. */
  CHECK(on_refusal(health, GUARDS_REFUSAL_KIND_TIMEOUT) == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  uint32_t d = 99;
  CHECK_RC(guards_brownout_on_refusal(badges, 7, &d), GUARDS_RESULT_INVALID_ENUM);
  CHECK(d == 99);

  /* report(): the call contract's brownout column. */
  CHECK_RC(guards_brownout_report(badges, GUARDS_OUTCOME_SUCCESS, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_NONE);
  CHECK_RC(guards_brownout_report(badges, GUARDS_OUTCOME_TIMEOUT, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
  CHECK_RC(guards_brownout_report(badges, GUARDS_OUTCOME_PERMANENT, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_NONE);
  CHECK_RC(guards_brownout_report(badges, GUARDS_OUTCOME_CANCELLED, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_NONE);
  CHECK_RC(guards_brownout_on_full(badges), GUARDS_RESULT_OK);
  guards_brownout_stats s;
  CHECK_RC(guards_brownout_get_stats(badges, &s), GUARDS_RESULT_OK);
  CHECK(s.full == 2 && s.degraded == 2 && s.errors == 0 && s.proceeded == 0);
  CHECK_RC(guards_brownout_get_stats(health, &s), GUARDS_RESULT_OK);
  CHECK(s.proceeded == 1 && s.errors == 1);

  /* Fallback only for the kinds listed. */
  guards_brownout_config c;
  guards_brownout_config_default(&c);
  c.optional = true;
  c.fallback_on = 1u << GUARDS_REFUSAL_KIND_TIMEOUT;
  guards_brownout *narrow = NULL;
  CHECK_RC(guards_brownout_new(&c, &narrow), GUARDS_RESULT_OK);
  CHECK(on_refusal(narrow, GUARDS_REFUSAL_KIND_TIMEOUT) == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
  CHECK(on_refusal(narrow, GUARDS_REFUSAL_KIND_FAILED) == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  guards_brownout_config got;
  CHECK_RC(guards_brownout_get_config(narrow, &got), GUARDS_RESULT_OK);
  CHECK(got.optional && got.fallback_on == 1u << GUARDS_REFUSAL_KIND_TIMEOUT);
  guards_brownout_free(narrow);
  guards_brownout_free(badges);
  guards_brownout_free(reserve);
  guards_brownout_free(health);
}

static void test_table(void) {
  guards_brownout_operation ops[3];
  const char *names[3] = {"cart.badges", "cart.items", "health"};
  for (int i = 0; i < 3; i++) {
    CHECK_RC(guards_key_of(names[i], strlen(names[i]), &ops[i].key), GUARDS_RESULT_OK);
    CHECK_RC(guards_brownout_config_default(&ops[i].config), GUARDS_RESULT_OK);
  }
  ops[0].config.optional = true;
  ops[2].config.exempt = true;
  guards_brownout_table *t = NULL;
  CHECK_RC(guards_brownout_table_new(ops, 3, &t), GUARDS_RESULT_OK);
  uint32_t d = 0;
  CHECK_RC(guards_brownout_table_on_refusal(t, ops[0].key, GUARDS_REFUSAL_KIND_BREAKER_OPEN, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
  CHECK_RC(guards_brownout_table_on_refusal(t, ops[1].key, GUARDS_REFUSAL_KIND_BREAKER_OPEN, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  CHECK_RC(guards_brownout_table_on_refusal(t, ops[2].key, GUARDS_REFUSAL_KIND_THROTTLED, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_PROCEED);
  CHECK_RC(guards_brownout_table_report(t, ops[1].key, GUARDS_OUTCOME_SUCCESS, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_NONE);
  CHECK_RC(guards_brownout_table_on_full(t, ops[1].key), GUARDS_RESULT_OK);
  /* An unknown operation is required: fail fast, and counted. */
  CHECK_RC(guards_brownout_table_on_refusal(t, 12345, GUARDS_REFUSAL_KIND_BREAKER_OPEN, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  CHECK_RC(guards_brownout_table_report(t, 12345, GUARDS_OUTCOME_TIMEOUT, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  CHECK_RC(guards_brownout_table_on_full(t, 12345), GUARDS_RESULT_NOT_FOUND);
  guards_brownout_stats s;
  CHECK_RC(guards_brownout_table_get_stats(t, 12345, &s), GUARDS_RESULT_NOT_FOUND);
  CHECK_RC(guards_brownout_table_get_stats(t, ops[1].key, &s), GUARDS_RESULT_OK);
  CHECK(s.full == 2 && s.errors == 1);
  CHECK_RC(guards_brownout_table_totals(t, &s), GUARDS_RESULT_OK);
  CHECK(s.full == 2 && s.errors == 1 && s.degraded == 1 && s.proceeded == 1);
  uint64_t unknown = 0;
  CHECK_RC(guards_brownout_table_unknown(t, &unknown), GUARDS_RESULT_OK);
  CHECK(unknown == 3);
  guards_brownout_table_free(t);

  /* A key given twice is refused; an empty table is fine. */
  ops[1].key = ops[0].key;
  t = NULL;
  CHECK_RC(guards_brownout_table_new(ops, 3, &t), GUARDS_RESULT_CONFIG_INCONSISTENT);
  CHECK(t == NULL && detail_has("key"));
  CHECK_RC(guards_brownout_table_new(NULL, 0, &t), GUARDS_RESULT_OK);
  CHECK_RC(guards_brownout_table_on_refusal(t, 1, GUARDS_REFUSAL_KIND_FAILED, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  guards_brownout_table_free(t);
}

/* The pure decision: what on_refusal would decide, counting nothing. */
static void test_decide(void) {
  guards_brownout_config c;
  guards_brownout_config_default(&c);
  c.optional = true;
  c.fallback_on = 1u << GUARDS_REFUSAL_KIND_THROTTLED;
  guards_brownout *b = NULL;
  CHECK_RC(guards_brownout_new(&c, &b), GUARDS_RESULT_OK);
  uint32_t d = 99;
  CHECK_RC(guards_brownout_decide(b, GUARDS_REFUSAL_KIND_THROTTLED, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_SERVE_FALLBACK);
  CHECK_RC(guards_brownout_decide(b, GUARDS_REFUSAL_KIND_TIMEOUT, &d), GUARDS_RESULT_OK);
  CHECK(d == GUARDS_BROWNOUT_DECISION_FAIL_FAST);
  guards_brownout_stats s;
  CHECK_RC(guards_brownout_get_stats(b, &s), GUARDS_RESULT_OK);
  CHECK(s.degraded == 0 && s.errors == 0 && s.full == 0 && s.proceeded == 0);
  d = 99;
  CHECK_RC(guards_brownout_decide(b, 7, &d), GUARDS_RESULT_INVALID_ENUM);
  CHECK(d == 99);
  CHECK_RC(guards_brownout_decide(NULL, 0, &d), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_brownout_decide(b, 0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_brownout_free(b);
}

void brownout_tests(void) {
  run("brownout_decide", test_decide);
  run("brownout_decisions", test_decisions);
  run("brownout_table", test_table);
}
