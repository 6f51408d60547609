/* Runs every test of the C suite (see test.h). */
#include "test.h"

atomic_int current_failed;
static int passed, failed;

void run(const char *name, void (*fn)(void)) {
  atomic_store(&current_failed, 0);
  fn();
  if (atomic_load(&current_failed)) {
    fprintf(stderr, "FAILED %s\n", name);
    failed++;
  } else {
    printf("ok %s\n", name);
    passed++;
  }
}

int detail_has(const char *needle) {
  char buf[512];
  size_t n = guards_last_error_detail(buf, sizeof buf);
  if (n > 0 && strstr(buf, needle) != NULL) return 1;
  fprintf(stderr, "  detail \"%s\" does not contain \"%s\"\n", n > 0 ? buf : "", needle);
  return 0;
}

int main(void) {
  common_tests();
  circuit_breaker_tests();
  keyed_breakers_tests();
  bulkhead_tests();
  fleet_tests();
  retry_budget_tests();
  retry_policy_tests();
  retry_driver_tests();
  backoff_tests();
  deadline_tests();
  http_tests();
  limiter_tests();
  admission_tests();
  queue_discipline_tests();
  latency_tracker_tests();
  hedging_tests();
  adaptive_throttle_tests();
  brownout_tests();
  thread_tests();
  bad_input_tests();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
