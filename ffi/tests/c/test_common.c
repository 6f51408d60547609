/* Messages, version, the clock, names, the last failure's detail and rejection. */
#include "test.h"

#include <time.h>

static void test_messages_and_version(void) {
  CHECK(strcmp(guards_result_message(GUARDS_RESULT_OK), "ok") == 0);
  CHECK(strstr(guards_result_message(GUARDS_RESULT_BREAKER_OPEN), "open") != NULL);
  CHECK(strstr(guards_result_message(GUARDS_RESULT_QUEUE_FULL), "queue") != NULL);
  CHECK(strcmp(guards_result_message(9), "unknown result code") == 0);
  CHECK(strcmp(guards_result_message(UINT32_MAX), "unknown result code") == 0);
  CHECK(strlen(guards_version()) > 0);
  /* Every code in the header has its own message. */
  static const guards_result codes[] = {
      GUARDS_RESULT_OK, GUARDS_RESULT_NULL_ARGUMENT, GUARDS_RESULT_PANIC,
      GUARDS_RESULT_OUT_OF_MEMORY, GUARDS_RESULT_INVALID_ENUM, GUARDS_RESULT_INVALID_ARGUMENT,
      GUARDS_RESULT_WRONG_PHASE, GUARDS_RESULT_BUFFER_TOO_SMALL, GUARDS_RESULT_INVALID_HEADER,
      GUARDS_RESULT_CONFIG_NOT_FINITE, GUARDS_RESULT_CONFIG_NEGATIVE, GUARDS_RESULT_CONFIG_ZERO,
      GUARDS_RESULT_CONFIG_OUT_OF_RANGE, GUARDS_RESULT_CONFIG_INCONSISTENT,
      GUARDS_RESULT_CONFIG_UNKNOWN_FIELD, GUARDS_RESULT_CONFIG_WRONG_TYPE,
      GUARDS_RESULT_CONFIG_INVALID, GUARDS_RESULT_PERMIT_ALREADY_REPORTED,
      GUARDS_RESULT_PERMIT_WRONG_GUARD, GUARDS_RESULT_PERMIT_UNKNOWN,
      GUARDS_RESULT_PERMIT_SLOTS_EXHAUSTED, GUARDS_RESULT_BREAKER_OPEN,
      GUARDS_RESULT_BREAKER_HALF_OPEN_FULL, GUARDS_RESULT_KEYED_BREAKERS_FULL,
      GUARDS_RESULT_BULKHEAD_FULL, GUARDS_RESULT_LIMITER_LIMIT_REACHED,
      GUARDS_RESULT_LIMITER_PARTITION_CAP, GUARDS_RESULT_LIMITER_RESERVED,
      GUARDS_RESULT_ADMISSION_LIMIT_REACHED, GUARDS_RESULT_ADMISSION_OVERLOADED,
      GUARDS_RESULT_QUEUE_FULL, GUARDS_RESULT_RETRY_BUDGET_EXHAUSTED, GUARDS_RESULT_THROTTLED,
      GUARDS_RESULT_NO_DATA, GUARDS_RESULT_NOT_FOUND, GUARDS_RESULT_EMPTY,
  };
  size_t n = sizeof codes / sizeof codes[0];
  for (size_t i = 0; i < n; i++) {
    const char *m = guards_result_message(codes[i]);
    CHECK(strcmp(m, "unknown result code") != 0);
    for (size_t j = 0; j < i; j++) CHECK(strcmp(m, guards_result_message(codes[j])) != 0);
  }
}

static void test_clock_is_clock_monotonic(void) {
  for (int i = 0; i < 1000; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t g = guards_now_ns();
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t lo = (uint64_t)a.tv_sec * S + (uint64_t)a.tv_nsec;
    uint64_t hi = (uint64_t)b.tv_sec * S + (uint64_t)b.tv_nsec;
    CHECK(lo <= g && g <= hi);
  }
}

static void test_names(void) {
  CHECK(strcmp(guards_outcome_name(GUARDS_OUTCOME_SUCCESS), "success") == 0);
  CHECK(strcmp(guards_outcome_name(GUARDS_OUTCOME_CONNECTION_ERROR), "connection_error") == 0);
  CHECK(strcmp(guards_outcome_name(GUARDS_OUTCOME_CANCELLED), "cancelled") == 0);
  CHECK(guards_outcome_name(10) == NULL);
  CHECK(guards_outcome_name(UINT32_MAX) == NULL);
  /* Every outcome's name reads back as that outcome. */
  for (uint32_t o = 0; o <= GUARDS_OUTCOME_CANCELLED; o++) {
    const char *name = guards_outcome_name(o);
    uint32_t back = 99;
    CHECK_RC(guards_outcome_from_name(name, strlen(name), &back), GUARDS_RESULT_OK);
    CHECK(back == o);
  }
  uint32_t untouched = 7;
  CHECK_RC(guards_outcome_from_name("Timeout", 7, &untouched), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_outcome_from_name("timeouts", 8, &untouched), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_outcome_from_name("", 0, &untouched), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_outcome_from_name("\xff\xfe", 2, &untouched), GUARDS_RESULT_INVALID_ENUM);
  CHECK_RC(guards_outcome_from_name(NULL, 3, &untouched), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK(untouched == 7);

  CHECK(strcmp(guards_give_up_reason_name(GUARDS_GIVE_UP_REASON_ATTEMPTS_EXHAUSTED),
               "attempts_exhausted") == 0);
  CHECK(guards_give_up_reason_name(12) == NULL);
  /* Retry in one layer: everything but success, permanent, ignored and cancelled. */
  for (uint32_t r = 0; r <= GUARDS_GIVE_UP_REASON_CANCELLED; r++) {
    int passed_on = r == GUARDS_GIVE_UP_REASON_SUCCEEDED || r == GUARDS_GIVE_UP_REASON_PERMANENT ||
                    r == GUARDS_GIVE_UP_REASON_IGNORED || r == GUARDS_GIVE_UP_REASON_CANCELLED;
    CHECK(guards_give_up_should_propagate_as_overloaded(r) == !passed_on);
  }
  CHECK(!guards_give_up_should_propagate_as_overloaded(12));
}

static void test_keys(void) {
  /* FNV-1a 64 reference values (core's key_of). */
  uint64_t k = 0;
  CHECK_RC(guards_key_of("", 0, &k), GUARDS_RESULT_OK);
  CHECK(k == 0xcbf29ce484222325ull);
  CHECK_RC(guards_key_of(NULL, 0, &k), GUARDS_RESULT_OK);
  CHECK(k == 0xcbf29ce484222325ull);
  CHECK_RC(guards_key_of("a", 1, &k), GUARDS_RESULT_OK);
  CHECK(k == 0xaf63dc4c8601ec8cull);
  CHECK_RC(guards_key_of("foobar", 6, &k), GUARDS_RESULT_OK);
  CHECK(k == 0x85944171f73967e8ull);
  CHECK_RC(guards_key_of(NULL, 1, &k), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_key_of("a", 1, NULL), GUARDS_RESULT_NULL_ARGUMENT);
}

static void test_detail_truncation(void) {
  guards_bulkhead_config h = {0};
  guards_bulkhead *out = NULL;
  CHECK_RC(guards_bulkhead_new(&h, &out), GUARDS_RESULT_CONFIG_ZERO);
  char full[256], small[8];
  size_t n = guards_last_error_detail(full, sizeof full);
  CHECK(n == strlen(full));
  memset(small, 'x', sizeof small);
  CHECK(guards_last_error_detail(small, sizeof small) == n);
  CHECK(small[7] == '\0' && strlen(small) == 7 && strncmp(small, full, 7) == 0);
  CHECK(guards_last_error_detail(NULL, 0) == n);
  CHECK(guards_last_error_code() == GUARDS_RESULT_CONFIG_ZERO);
  /* Not a refusal: guards_last_rejection says so and keeps the failure. */
  guards_rejection r;
  memset(&r, 0x33, sizeof r);
  guards_rejection before = r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(memcmp(&r, &before, sizeof r) == 0);
  CHECK(guards_last_error_code() == GUARDS_RESULT_CONFIG_ZERO);
}

static void test_retry_after_secs(void) {
  CHECK(guards_retry_after_secs(10 * S, 10 * S) == 0);
  CHECK(guards_retry_after_secs(10 * S + 1, 10 * S) == 1);
  CHECK(guards_retry_after_secs(11 * S, 10 * S) == 1);
  CHECK(guards_retry_after_secs(11 * S + 1, 10 * S) == 2);
  CHECK(guards_retry_after_secs(5 * S, 10 * S) == 0);
  CHECK(guards_retry_after_secs(UINT64_MAX, 0) == UINT64_MAX / S + 1);
}

void common_tests(void) {
  run("messages_and_version", test_messages_and_version);
  run("clock_is_clock_monotonic", test_clock_is_clock_monotonic);
  run("names", test_names);
  run("keys", test_keys);
  run("detail_truncation", test_detail_truncation);
  run("retry_after_secs", test_retry_after_secs);
}
