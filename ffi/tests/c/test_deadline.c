/* Deadlines: the attempt budget, and the grpc-timeout and milliseconds header forms. */
#include "test.h"

static void test_attempt_budget(void) {
  guards_deadline_config c;
  CHECK_RC(guards_deadline_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.attempt_timeout_ns == 60 * MS && c.margin_ns == 1 * MS);
  uint64_t now = 100 * S;
  uint64_t request = guards_deadline_after(now, 2 * S);
  CHECK(request == 102 * S);
  CHECK(guards_deadline_after(UINT64_MAX - 5, 10) == GUARDS_NO_DEADLINE);
  CHECK(guards_deadline_time_left(request, now) == 2 * S);
  CHECK(guards_deadline_time_left(request, 103 * S) == 0);
  CHECK(guards_deadline_time_left(GUARDS_NO_DEADLINE, now) == GUARDS_NO_DEADLINE);

  guards_attempt_budget a;
  CHECK_RC(guards_deadline_attempt_budget(&c, request, now, &a), GUARDS_RESULT_OK);
  CHECK(a.kind == GUARDS_ATTEMPT_BUDGET_KIND_START && a.budget_ns == 59 * MS);
  /* 1.99 s later, 10 ms are left: the attempt gets 9 ms. */
  CHECK_RC(guards_deadline_attempt_budget(&c, request, now + 1990 * MS, &a), GUARDS_RESULT_OK);
  CHECK(a.kind == GUARDS_ATTEMPT_BUDGET_KIND_START && a.budget_ns == 9 * MS);
  CHECK_RC(guards_deadline_attempt_budget(&c, request, request - MS, &a), GUARDS_RESULT_OK);
  CHECK(a.kind == GUARDS_ATTEMPT_BUDGET_KIND_TOO_LITTLE_LEFT && a.left_ns == MS);
  CHECK_RC(guards_deadline_attempt_budget(&c, request, request, &a), GUARDS_RESULT_OK);
  CHECK(a.kind == GUARDS_ATTEMPT_BUDGET_KIND_EXPIRED);
  CHECK_RC(guards_deadline_attempt_budget(&c, GUARDS_NO_DEADLINE, now, &a), GUARDS_RESULT_OK);
  CHECK(a.kind == GUARDS_ATTEMPT_BUDGET_KIND_START && a.budget_ns == 59 * MS);

  guards_deadline_config bad = c;
  bad.margin_ns = bad.attempt_timeout_ns;
  CHECK_RC(guards_deadline_attempt_budget(&bad, request, now, &a), GUARDS_RESULT_CONFIG_INCONSISTENT);
  CHECK(detail_has("margin"));
  bad = c;
  bad.attempt_timeout_ns = 0;
  CHECK_RC(guards_deadline_attempt_budget(&bad, request, now, &a), GUARDS_RESULT_CONFIG_ZERO);
  CHECK(detail_has("attempt_timeout"));
}

static void test_grpc_timeout(void) {
  char buf[GUARDS_HEADER_VALUE_MAX];
  size_t n = 0;
  CHECK_RC(guards_grpc_timeout_format(59 * MS, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "59000000n") == 0 && n == 9);
  CHECK_RC(guards_grpc_timeout_format(2 * S, buf, sizeof buf, NULL), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "2000000u") == 0);
  CHECK_RC(guards_grpc_timeout_format(0, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "0n") == 0 && n == 2);
  CHECK_RC(guards_grpc_timeout_format(UINT64_MAX, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "5124095H") == 0);
  /* Too small: nothing written, the length needed reported. */
  char small[9];
  memset(small, 'x', sizeof small);
  CHECK_RC(guards_grpc_timeout_format(59 * MS, small, sizeof small, &n), GUARDS_RESULT_BUFFER_TOO_SMALL);
  CHECK(n == 9 && small[0] == 'x' && small[8] == 'x');
  CHECK_RC(guards_grpc_timeout_format(59 * MS, NULL, 0, &n), GUARDS_RESULT_BUFFER_TOO_SMALL);
  CHECK(n == 9);

  uint64_t t = 0;
  CHECK_RC(guards_grpc_timeout_parse("59m", 3, &t), GUARDS_RESULT_OK);
  CHECK(t == 59 * MS);
  CHECK_RC(guards_grpc_timeout_parse("1H", 2, &t), GUARDS_RESULT_OK);
  CHECK(t == 3600 * S);
  CHECK_RC(guards_grpc_timeout_parse("0n", 2, &t), GUARDS_RESULT_OK);
  CHECK(t == 0);
  /* The value need not be NUL-terminated: only `len` bytes are read. */
  CHECK_RC(guards_grpc_timeout_parse("7Sxyz", 2, &t), GUARDS_RESULT_OK);
  CHECK(t == 7 * S);
  static const struct {
    const char *value, *rule;
  } bad[] = {
      {"", "empty"},          {"59", "missing_unit"},       {"5s", "unknown_unit"},
      {"m", "no_digits"},     {"-5m", "invalid_character"}, {" 5m", "invalid_character"},
      {"123456789m", "too_many_digits"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    t = 77;
    CHECK_RC(guards_grpc_timeout_parse(bad[i].value, strlen(bad[i].value), &t),
             GUARDS_RESULT_INVALID_HEADER);
    CHECK(t == 77 && detail_has(bad[i].rule));
  }
  CHECK_RC(guards_grpc_timeout_parse(NULL, 0, &t), GUARDS_RESULT_INVALID_HEADER);
  CHECK_RC(guards_grpc_timeout_parse(NULL, 3, &t), GUARDS_RESULT_NULL_ARGUMENT);

  uint64_t deadline = 0;
  CHECK_RC(guards_deadline_from_grpc_timeout(100 * S, "2S", 2, &deadline), GUARDS_RESULT_OK);
  CHECK(deadline == 102 * S);
  CHECK_RC(guards_deadline_from_grpc_timeout(100 * S, "2s", 2, &deadline), GUARDS_RESULT_INVALID_HEADER);
  CHECK(deadline == 102 * S);
}

static void test_millis(void) {
  char buf[GUARDS_HEADER_VALUE_MAX];
  size_t n = 0;
  CHECK_RC(guards_millis_format(59 * MS + 999999, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "59") == 0 && n == 2);
  CHECK_RC(guards_millis_format(999999, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "0") == 0);
  CHECK_RC(guards_millis_format(UINT64_MAX, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "18446744073709") == 0);
  uint64_t t = 0;
  CHECK_RC(guards_millis_parse("0059", 4, &t), GUARDS_RESULT_OK);
  CHECK(t == 59 * MS);
  CHECK_RC(guards_millis_parse("", 0, &t), GUARDS_RESULT_INVALID_HEADER);
  CHECK(detail_has("empty"));
  CHECK_RC(guards_millis_parse("1.5", 3, &t), GUARDS_RESULT_INVALID_HEADER);
  CHECK(detail_has("invalid_character"));
  CHECK_RC(guards_millis_parse("18446744073710", 14, &t), GUARDS_RESULT_INVALID_HEADER);
  CHECK(detail_has("overflow"));
  uint64_t deadline = 0;
  CHECK_RC(guards_deadline_from_millis(S, "250", 3, &deadline), GUARDS_RESULT_OK);
  CHECK(deadline == S + 250 * MS);
}

void deadline_tests(void) {
  run("deadline_attempt_budget", test_attempt_budget);
  run("deadline_grpc_timeout", test_grpc_timeout);
  run("deadline_millis", test_millis);
}
