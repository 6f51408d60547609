/* HTTP answers into outcomes and Retry-After delays; HTTP-dates. */
#include "test.h"

static const uint64_t NOW = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */

static void classify(uint32_t status, const char *ra, uint32_t want, uint64_t want_after) {
  uint32_t o = 99;
  uint64_t after = 0;
  CHECK_RC(guards_http_outcome(status, ra, ra ? strlen(ra) : 0, NOW, &o, &after), GUARDS_RESULT_OK);
  if (o != want || after != want_after) {
    fprintf(stderr, "  status %u, Retry-After \"%s\": outcome %u (want %u), after %llu (want %llu)\n",
            status, ra ? ra : "(none)", o, want, (unsigned long long)after,
            (unsigned long long)want_after);
    atomic_store(&current_failed, 1);
  }
}

static void test_status_to_outcome(void) {
  const uint64_t NONE = GUARDS_NO_RETRY_AFTER;
  classify(200, NULL, GUARDS_OUTCOME_SUCCESS, NONE);
  classify(101, NULL, GUARDS_OUTCOME_SUCCESS, NONE);
  classify(302, "30", GUARDS_OUTCOME_SUCCESS, NONE); /* Retry-After kept only when throttled */
  classify(408, NULL, GUARDS_OUTCOME_TIMEOUT, NONE);
  classify(429, NULL, GUARDS_OUTCOME_THROTTLED, NONE);
  classify(429, "7", GUARDS_OUTCOME_THROTTLED, 7 * S);
  classify(503, "30", GUARDS_OUTCOME_THROTTLED, 30 * S);
  classify(503, " 30\t", GUARDS_OUTCOME_THROTTLED, 30 * S);
  classify(503, "soon", GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  classify(503, NULL, GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  classify(500, "30", GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  classify(404, NULL, GUARDS_OUTCOME_PERMANENT, NONE);
  classify(0, NULL, GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  classify(999, NULL, GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  classify(70000, NULL, GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  classify(UINT32_MAX, NULL, GUARDS_OUTCOME_OTHER_TRANSIENT, NONE);
  /* HTTP-dates: two minutes ahead, in the past, and the three forms. */
  classify(503, "Sun, 06 Nov 1994 08:51:37 GMT", GUARDS_OUTCOME_THROTTLED, 120 * S);
  classify(503, "Sunday, 06-Nov-94 08:51:37 GMT", GUARDS_OUTCOME_THROTTLED, 120 * S);
  classify(503, "Sun Nov  6 08:51:37 1994", GUARDS_OUTCOME_THROTTLED, 120 * S);
  classify(503, "Sun Nov  6 08:49:00 1994", GUARDS_OUTCOME_THROTTLED, 0);
  /* Absurd values saturate rather than wrap: every policy gives up on them. */
  classify(429, "99999999999999999999999999999", GUARDS_OUTCOME_THROTTLED, UINT64_MAX - 1);
  classify(429, "-5", GUARDS_OUTCOME_THROTTLED, NONE);
  /* An empty (but present) header is no Retry-After. */
  uint32_t o;
  uint64_t after;
  CHECK_RC(guards_http_outcome(503, "", 0, NOW, &o, &after), GUARDS_RESULT_OK);
  CHECK(o == GUARDS_OUTCOME_OTHER_TRANSIENT && after == NONE);
  /* Only `len` bytes are read. */
  CHECK_RC(guards_http_outcome(503, "12garbage", 2, NOW, &o, &after), GUARDS_RESULT_OK);
  CHECK(o == GUARDS_OUTCOME_THROTTLED && after == 12 * S);
  CHECK_RC(guards_http_outcome(503, NULL, 4, NOW, &o, &after), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_http_outcome(503, NULL, 0, NOW, NULL, &after), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_http_outcome(503, NULL, 0, NOW, &o, NULL), GUARDS_RESULT_NULL_ARGUMENT);
}

static void test_retry_after_and_dates(void) {
  uint64_t after = 0;
  CHECK_RC(guards_http_retry_after_parse("120", 3, NOW, &after), GUARDS_RESULT_OK);
  CHECK(after == 120 * S);
  CHECK_RC(guards_http_retry_after_parse("1.5", 3, NOW, &after), GUARDS_RESULT_OK);
  CHECK(after == GUARDS_NO_RETRY_AFTER);
  CHECK_RC(guards_http_retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", 29, NOW, &after),
           GUARDS_RESULT_OK);
  CHECK(after == 0);
  char buf[GUARDS_HTTP_DATE_MAX];
  size_t n = 0;
  CHECK_RC(guards_http_date_format(NOW, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "Sun, 06 Nov 1994 08:49:37 GMT") == 0 && n == 29);
  CHECK_RC(guards_http_date_format(0, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "Thu, 01 Jan 1970 00:00:00 GMT") == 0);
  CHECK_RC(guards_http_date_format(253402300799ull, buf, sizeof buf, &n), GUARDS_RESULT_OK);
  CHECK(strcmp(buf, "Fri, 31 Dec 9999 23:59:59 GMT") == 0);
  CHECK_RC(guards_http_date_format(253402300800ull, buf, sizeof buf, &n), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK_RC(guards_http_date_format(NOW, buf, 29, &n), GUARDS_RESULT_BUFFER_TOO_SMALL);
  CHECK(n == 29);
}

/* HTTP-dates in their three forms, to unix seconds (before 1970 too). */
static void test_date_parse(void) {
  const uint64_t now = 784111777;
  int64_t t = 0;
  const char *forms[] = {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
                         "Sun Nov  6 08:49:37 1994"};
  for (size_t i = 0; i < 3; i++) {
    t = 0;
    CHECK_RC(guards_http_date_parse(forms[i], strlen(forms[i]), now, &t), GUARDS_RESULT_OK);
    CHECK(t == 784111777);
  }
  const char *old = "Thu, 01 Jan 1960 00:00:00 GMT";
  CHECK_RC(guards_http_date_parse(old, strlen(old), now, &t), GUARDS_RESULT_OK);
  CHECK(t == -315619200);
  const char *bad[] = {"", "soon", " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT"};
  for (size_t i = 0; i < 4; i++) {
    t = 42;
    CHECK_RC(guards_http_date_parse(bad[i], strlen(bad[i]), now, &t), GUARDS_RESULT_INVALID_HEADER);
    CHECK(t == 42);
  }
  CHECK_RC(guards_http_date_parse(NULL, 0, now, &t), GUARDS_RESULT_INVALID_HEADER);
  CHECK_RC(guards_http_date_parse(NULL, 3, now, &t), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_http_date_parse(forms[0], strlen(forms[0]), now, NULL), GUARDS_RESULT_NULL_ARGUMENT);
}

void http_tests(void) {
  run("http_date_parse", test_date_parse);
  run("http_status_to_outcome", test_status_to_outcome);
  run("http_retry_after_and_dates", test_retry_after_and_dates);
}
