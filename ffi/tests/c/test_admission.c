/* Admission: Basketly's C5 at the door (64 views, 80 reserves), 503 + Retry-After. */
#include "test.h"

static void test_c5_views_64_reserves_80(void) {
  guards_admission_config c;
  CHECK_RC(guards_admission_config_default(&c), GUARDS_RESULT_OK);
  CHECK(c.limits[0] == 80);
  for (int i = 1; i < 8; i++) CHECK(c.limits[i] == 64 && c.shares[i] == 1.0);
  CHECK(c.limit.algorithm == GUARDS_LIMIT_ALGORITHM_FIXED && c.limit.fixed == UINT64_MAX);
  CHECK(c.min_retry_after_ns == 1 * S && c.max_retry_after_ns == 60 * S);
  guards_admission *door = NULL;
  CHECK_RC(guards_admission_new(&c, &door), GUARDS_RESULT_OK);
  uint64_t now = 10 * S;
  guards_permit inside[64], reserve, refused;
  for (int i = 0; i < 64; i++) CHECK_RC(guards_admission_try_acquire(door, now, 3, &inside[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_admission_try_acquire(door, now, 3, &refused), GUARDS_RESULT_ADMISSION_LIMIT_REACHED);
  guards_rejection r;
  CHECK_RC(guards_last_rejection(&r), GUARDS_RESULT_OK);
  CHECK(r.code == GUARDS_RESULT_ADMISSION_LIMIT_REACHED && r.in_flight == 64 && r.limit == 64);
  CHECK(r.priority == 3 && r.has_retry_at == 1);
  CHECK(guards_retry_after_secs(r.retry_at_ns, now) == 1);
  /* A reserve still gets in: its limit is 80. */
  CHECK_RC(guards_admission_try_acquire(door, now, 0, &reserve), GUARDS_RESULT_OK);
  CHECK_RC(guards_admission_report(door, reserve, GUARDS_OUTCOME_SUCCESS, now + 40 * MS), GUARDS_RESULT_OK);
  for (int i = 0; i < 64; i++)
    CHECK_RC(guards_admission_report(door, inside[i], GUARDS_OUTCOME_SUCCESS, now + 5 * MS), GUARDS_RESULT_OK);
  guards_admission_stats s;
  CHECK_RC(guards_admission_get_stats(door, &s), GUARDS_RESULT_OK);
  CHECK(s.in_flight == 0 && s.admitted == 65 && s.succeeded == 65);
  CHECK(s.refused_limit_reached == 1 && s.refused_by_priority[3] == 1);
  CHECK_RC(guards_admission_report(door, reserve, GUARDS_OUTCOME_SUCCESS, now), GUARDS_RESULT_PERMIT_ALREADY_REPORTED);
  CHECK_RC(guards_admission_try_acquire(door, now, 8, &refused), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(detail_has("priority"));
  guards_admission_config got;
  CHECK_RC(guards_admission_get_config(door, &got), GUARDS_RESULT_OK);
  CHECK(got.limits[0] == 80 && got.limits[7] == 64);
  uint64_t out = 9;
  CHECK_RC(guards_admission_outstanding(door, &out), GUARDS_RESULT_OK);
  CHECK(out == 0);
  guards_admission_free(door);
}

static void test_adaptive_door_is_overloaded(void) {
  guards_admission_config c;
  guards_admission_config_default(&c);
  c.limit.algorithm = GUARDS_LIMIT_ALGORITHM_AIMD;
  c.limit.aimd.initial_limit = 3;
  guards_admission *door = NULL;
  CHECK_RC(guards_admission_new(&c, &door), GUARDS_RESULT_OK);
  guards_permit p[3], x;
  for (int i = 0; i < 3; i++) CHECK_RC(guards_admission_try_acquire(door, S, 1, &p[i]), GUARDS_RESULT_OK);
  CHECK_RC(guards_admission_try_acquire(door, S, 1, &x), GUARDS_RESULT_ADMISSION_OVERLOADED);
  for (int i = 0; i < 3; i++) CHECK_RC(guards_admission_report(door, p[i], GUARDS_OUTCOME_CANCELLED, S), GUARDS_RESULT_OK);
  guards_admission_stats s;
  CHECK_RC(guards_admission_get_stats(door, &s), GUARDS_RESULT_OK);
  CHECK(s.refused_overloaded == 1 && s.ignored == 3 && s.limit == 3);
  guards_admission_free(door);
}

/* The threshold each priority is held to: its own limit. */
static void test_threshold(void) {
  guards_admission_config c;
  guards_admission_config_default(&c);
  guards_admission *door = NULL;
  CHECK_RC(guards_admission_new(&c, &door), GUARDS_RESULT_OK);
  uint64_t t = 0;
  CHECK_RC(guards_admission_threshold(door, 0, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, c.limits[0]);
  CHECK_RC(guards_admission_threshold(door, 7, &t), GUARDS_RESULT_OK);
  CHECK_EQ_U64(t, c.limits[7]);
  t = 5;
  CHECK_RC(guards_admission_threshold(door, 8, &t), GUARDS_RESULT_INVALID_ARGUMENT);
  CHECK(t == 5 && detail_has("priority"));
  CHECK_RC(guards_admission_threshold(NULL, 0, &t), GUARDS_RESULT_NULL_ARGUMENT);
  CHECK_RC(guards_admission_threshold(door, 0, NULL), GUARDS_RESULT_NULL_ARGUMENT);
  guards_admission_free(door);
}

void admission_tests(void) {
  run("admission_threshold", test_threshold);
  run("admission_c5_views_64_reserves_80", test_c5_views_64_reserves_80);
  run("admission_adaptive_door_is_overloaded", test_adaptive_door_is_overloaded);
}
